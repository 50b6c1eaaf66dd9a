#include "support/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace dlrig::test {
namespace {

std::string snapshot(const std::string &name) {
  return fixture("snapshots/" + name);
}

std::vector<std::string> finding_ids(const std::string &json_text) {
  std::vector<std::string> ids;
  auto j = nlohmann::json::parse(json_text); // alive for the whole loop
  for (const auto &f : j["findings"])
    ids.push_back(f["id"].get<std::string>());
  return ids;
}

bool has(const std::vector<std::string> &v, const std::string &x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(DoctorCli, HealthySnapshotExitsZero) {
  auto r = run_dlrig({"doctor", "--from", snapshot("healthy-desktop.json")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("checks passed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\033["), std::string::npos); // stdout is not a TTY: no colour
}

TEST(DoctorCli, CpuTorchFailsWithExitTwo) {
  auto r = run_dlrig({"doctor", "--json", "--from", snapshot("desktop-cpu-torch.json")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["context"]["host"], "tower");
  EXPECT_EQ(j["context"]["driver_version"], "550.54.15");
  EXPECT_EQ(j["context"]["source"], snapshot("desktop-cpu-torch.json"));
  auto ids = finding_ids(r.out);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), "torch.cpu-only-build");
  EXPECT_TRUE(has(ids, "env.cuda-launch-blocking"));
  for (const auto &f : j["findings"])
    for (const char *key : {"id", "severity", "title", "evidence", "why", "fix"})
      EXPECT_TRUE(f.contains(key)) << key;
}

TEST(DoctorCli, WarningsOnlyExitOne) {
  auto r = run_dlrig({"doctor", "--json", "--from", snapshot("laptop-egpu-hot.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto ids = finding_ids(r.out);
  EXPECT_TRUE(has(ids, "link.egpu-bandwidth"));
  EXPECT_TRUE(has(ids, "gpu.thermal-throttle"));
}

TEST(DoctorCli, OnlyNarrowsTheAreas) {
  auto r = run_dlrig(
      {"doctor", "--json", "--only", "env", "--from", snapshot("desktop-cpu-torch.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(finding_ids(r.out), std::vector<std::string>{"env.cuda-launch-blocking"});
}

TEST(DoctorCli, MarkdownOutput) {
  auto r = run_dlrig({"doctor", "--markdown", "--from", snapshot("desktop-cpu-torch.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("| FAIL | `torch.cpu-only-build` |"), std::string::npos) << r.out;
}

TEST(DoctorCli, DataPathOnAHardDisk) {
  auto r = run_dlrig({"doctor", "--json", "--data", "/mnt/archive/imagenet", "--from",
                      snapshot("healthy-desktop.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(has(finding_ids(r.out), "host.dataset-on-slow-disk"));
}

TEST(DoctorCli, ListAndExplain) {
  auto list = run_dlrig({"doctor", "--list-checks"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("gpu.fabric-manager"), std::string::npos);
  auto ex = run_dlrig({"doctor", "--explain", "link.p2p-blocked"});
  EXPECT_EQ(ex.exit_code, 0);
  EXPECT_NE(ex.out.find("NCCL_P2P_DISABLE=1"), std::string::npos) << ex.out;
}

TEST(DoctorCli, UsageErrors) {
  auto ex = run_dlrig({"doctor", "--explain", "kernel.noveau"});
  EXPECT_EQ(ex.exit_code, 64);
  EXPECT_NE(ex.err.find("kernel.nouveau-loaded"), std::string::npos) << ex.err;
  auto only = run_dlrig({"doctor", "--only", "gpus", "--from", snapshot("healthy-desktop.json")});
  EXPECT_EQ(only.exit_code, 64);
  EXPECT_NE(only.err.find("gpu"), std::string::npos);
  EXPECT_EQ(run_dlrig({"doctor", "--json", "--markdown"}).exit_code, 64);
}

TEST(DoctorCli, BadInputExits65) {
  EXPECT_EQ(run_dlrig({"doctor", "--from", "/nonexistent/snap.json"}).exit_code, 65);
  std::string path = "/tmp/dlrig-doctor-bad.json";
  std::ofstream(path) << "{\"schema_version\": 99}";
  auto r = run_dlrig({"doctor", "--from", path});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

} // namespace
} // namespace dlrig::test

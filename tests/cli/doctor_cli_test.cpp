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
  EXPECT_EQ(j["snapshot"]["host"], "tower");
  EXPECT_EQ(j["snapshot"]["driver_version"], "550.54.15");
  EXPECT_EQ(j["context"]["source"]["kind"], "file");
  EXPECT_EQ(j["context"]["source"]["path"], snapshot("desktop-cpu-torch.json"));
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

namespace dlrig::test {
namespace {

// The fixture machines of the foundation issue, probed through --sysroot with the fake NVML
// answering from each machine's nvml.json.
struct MachineRun {
  int exit_code;
  std::vector<std::string> ids;
  std::string err;
};

MachineRun doctor_on(const std::string &machine, std::vector<std::string> extra = {}) {
  std::vector<std::string> env;
  std::string scenario = fixture(machine) + "/nvml.json";
  if (std::ifstream(scenario).good())
    env = {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
           "DLRIG_FAKE_NVML_SCENARIO=" + scenario};
  std::vector<std::string> args = {"doctor", "--json", "--sysroot", fixture(machine)};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_dlrig(args, env);
  MachineRun m{r.exit_code, {}, r.err};
  if (!r.out.empty())
    m.ids = finding_ids(r.out);
  return m;
}

std::string show(const std::vector<std::string> &ids) {
  std::string s;
  for (const auto &i : ids)
    s += i + " ";
  return s;
}

TEST(DoctorFixtures, LaptopWithoutGpuIsClean) {
  auto m = doctor_on("laptop-no-gpu");
  EXPECT_EQ(m.exit_code, 0) << show(m.ids) << m.err;
}

TEST(DoctorFixtures, HealthyDesktopIsClean) {
  auto m = doctor_on("desktop-rtx4090");
  EXPECT_EQ(m.exit_code, 0) << show(m.ids) << m.err;
}

TEST(DoctorFixtures, DesktopDataOnTheHardDisk) {
  auto m = doctor_on("desktop-rtx4090", {"--data", "/data/imagenet"});
  EXPECT_EQ(m.exit_code, 1) << show(m.ids) << m.err;
  EXPECT_TRUE(has(m.ids, "host.dataset-on-slow-disk")) << show(m.ids);
}

TEST(DoctorFixtures, EgpuLaptopWarnsAboutTheThunderboltLink) {
  auto m = doctor_on("laptop-egpu-3080");
  EXPECT_EQ(m.exit_code, 1) << show(m.ids) << m.err;
  EXPECT_TRUE(has(m.ids, "link.egpu-bandwidth")) << show(m.ids);
  EXPECT_FALSE(has(m.ids, "link.pcie-downtrained")) << show(m.ids);
  EXPECT_FALSE(has(m.ids, "link.slot-narrow")) << show(m.ids);
}

TEST(DoctorFixtures, HealthyServerIsClean) {
  auto m = doctor_on("server-8xh100");
  EXPECT_EQ(m.exit_code, 0) << show(m.ids) << m.err;
}

TEST(DoctorFixtures, ServerDatasetsOnNfs) {
  auto m = doctor_on("server-8xh100", {"--data", "/datasets/laion"});
  EXPECT_EQ(m.exit_code, 1) << show(m.ids) << m.err;
  EXPECT_TRUE(has(m.ids, "host.dataset-on-slow-disk")) << show(m.ids);
}

TEST(DoctorFixtures, Mi300xNodeIsClean) {
  auto m = doctor_on("node-mi300x");
  EXPECT_EQ(m.exit_code, 0) << show(m.ids) << m.err;
}

TEST(DoctorFixtures, ContainerWithSmallShm) {
  auto m = doctor_on("container-shm64");
  EXPECT_TRUE(has(m.ids, "host.shm-small")) << show(m.ids);
  EXPECT_GE(m.exit_code, 1) << m.err;
}

} // namespace
} // namespace dlrig::test

namespace dlrig::test {
namespace {

// The software fixtures (issue 3), probed without NVML and with the environment each models.
MachineRun doctor_sw(const std::string &machine, const std::vector<std::string> &env) {
  auto r = run_dlrig({"doctor", "--json", "--no-nvml", "--sysroot", fixture(machine)}, env);
  MachineRun m{r.exit_code, {}, r.err};
  if (!r.out.empty())
    m.ids = finding_ids(r.out);
  return m;
}

const std::vector<std::string> kVenv = {"PATH=/home/user/venv/bin:/usr/bin:/bin",
                                        "VIRTUAL_ENV=/home/user/venv", "HOME=/home/user"};

TEST(DoctorSoftwareFixtures, VenvTorch251HasNothingWrongWithItsSoftware) {
  auto m = doctor_sw("sw-venv-torch251", kVenv);
  // The fixture's /proc/cpuinfo lists one CPU, which host.cpu-cores-per-gpu rightly reports;
  // nothing else may be at warn or fail.
  EXPECT_LT(m.exit_code, 2) << show(m.ids) << m.err;
  for (const char *id : {"gpu.none-visible", "torch.cpu-only-build", "torch.arch-unsupported",
                         "driver.too-old-for-torch", "cuda.ld-library-path-shadows",
                         "cuda.multiple-toolkits", "kernel.nouveau-loaded"})
    EXPECT_FALSE(has(m.ids, id)) << id;
}

TEST(DoctorSoftwareFixtures, LeftoverVariablesAndTakenPort) {
  auto env = kVenv;
  env.insert(env.end(), {"MASTER_PORT=631", "NCCL_DEBUG=INFO", "CUDA_LAUNCH_BLOCKING=1"});
  auto m = doctor_sw("sw-venv-torch251", env);
  EXPECT_EQ(m.exit_code, 2) << m.err;
  for (const char *id : {"dist.master-port-in-use", "dist.nccl-env", "env.cuda-launch-blocking"})
    EXPECT_TRUE(has(m.ids, id)) << id << " in " << show(m.ids);
}

TEST(DoctorSoftwareFixtures, CpuTorchOnAGpuMachine) {
  auto m = doctor_sw("sw-cpu-torch", kVenv);
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_TRUE(has(m.ids, "torch.cpu-only-build")) << show(m.ids);
}

TEST(DoctorSoftwareFixtures, TwoToolkitsWithLdLibraryPathAtTheOlder) {
  auto m =
      doctor_sw("sw-two-toolkits",
                {"PATH=/usr/local/cuda-12.4/bin:/home/user/venv/bin:/usr/bin:/bin",
                 "LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64", "CUDA_HOME=/usr/local/cuda-12.4",
                 "VIRTUAL_ENV=/home/user/venv", "HOME=/home/user"});
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_TRUE(has(m.ids, "cuda.ld-library-path-shadows")) << show(m.ids);
  EXPECT_TRUE(has(m.ids, "cuda.multiple-toolkits")) << show(m.ids);
}

TEST(DoctorSoftwareFixtures, StubAheadOfTheDriver) {
  auto m = doctor_sw("sw-two-toolkits",
                     {"PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64/stubs",
                      "HOME=/home/user"});
  EXPECT_TRUE(has(m.ids, "driver.stub-libcuda")) << show(m.ids);
}

TEST(DoctorSoftwareFixtures, CondaCu118BesideSystemCuda124) {
  auto m = doctor_sw("sw-conda-cu118",
                     {"PATH=/home/user/miniconda3/envs/torch118/bin:/home/user/miniconda3/condabin:"
                      "/usr/local/cuda-12.4/bin:/usr/bin:/bin",
                      "CONDA_PREFIX=/home/user/miniconda3/envs/torch118",
                      "CONDA_DEFAULT_ENV=torch118", "HOME=/home/user"});
  EXPECT_TRUE(has(m.ids, "cuda.toolkit-mismatches-torch")) << show(m.ids);
}

TEST(DoctorSoftwareFixtures, DockerContainerWithoutTheNvidiaRuntime) {
  auto m = doctor_sw("container-no-runtime", {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"});
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_TRUE(has(m.ids, "container.no-gpu-runtime")) << show(m.ids);
}

TEST(DoctorSoftwareFixtures, Wsl2WithTheWindowsDriverIsNotFlagged) {
  auto m = doctor_sw("wsl2", kVenv);
  EXPECT_FALSE(has(m.ids, "wsl.driver-inside")) << show(m.ids);
  EXPECT_FALSE(has(m.ids, "driver.no-kernel-module")) << show(m.ids);
  EXPECT_LT(m.exit_code, 2) << show(m.ids) << m.err;
}

} // namespace
} // namespace dlrig::test

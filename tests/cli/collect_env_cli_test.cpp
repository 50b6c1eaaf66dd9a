// `doctor --from` and `info --from` on collect_env reports (tests/data/collect_env/), and the
// readiness verdict of `doctor --json` on the fixture machines.
#include "support/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace dlrig::test {
namespace {

std::string report(const std::string &name) {
  return fixture("collect_env/" + name);
}

TEST(CollectEnvCli, DoctorOnAHealthyReport) {
  auto r = run_dlrig({"doctor", "--from", report("v3-torch2.1-rtx4090.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("Can PyTorch use a GPU here? Yes: torch 2.1.2+cu121 (CUDA 12.1) in "
                        "collect_env's python will use GPU 0 (NVIDIA GeForce RTX 4090)",
                        0),
            0u)
      << r.out;
  // It says which checks could not run on a report, and why.
  EXPECT_NE(r.out.find("Not run:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a collect_env report does not include NVML readings"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("not run (not in a collect_env report)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Most of the snapshot is unknown"), std::string::npos) << r.out;
  // cuBLASLt needs a listing of the library folders, which a report lacks: not run, never a
  // warning (the report's GPU and CUDA torch would otherwise make it fire). NCCL, with one GPU and
  // no distributed launch, does not apply.
  EXPECT_NE(r.out.find("cuda (1 check): a collect_env report does not list the files in the "
                       "library folders"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 not applicable"), std::string::npos) << r.out;
}

// A GPU name the knowledge base does not know leaves its compute capability unknown: the checks
// that need it say they could not decide instead of passing.
TEST(CollectEnvCli, UnknownGpuNameCannotPassTheArchCheck) {
  auto r = run_dlrig({"doctor", "--json", "--from", report("v3-unknown-gpu-name.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  int undecided = 0;
  for (const auto &f : j["findings"])
    if (f["id"] == "torch.arch-unsupported" || f["id"] == "torch.triton-unsupported") {
      EXPECT_EQ(f["severity"], "info");
      EXPECT_NE(f["title"].get<std::string>().find("NVIDIA RTX PRO 9900 Zeta"), std::string::npos)
          << f;
      ++undecided;
    }
  EXPECT_EQ(undecided, 2) << r.out;
}

TEST(CollectEnvCli, DoctorJsonFindsTheOldDriver) {
  auto r = run_dlrig({"doctor", "--json", "--from", report("current-driver-too-old.txt")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["context"]["source"]["kind"], "file");
  EXPECT_EQ(j["verdict"]["gpu_ready"], false);
  EXPECT_EQ(j["verdict"]["decided_by"], "driver.too-old-for-torch");
  bool found = false;
  for (const auto &f : j["findings"])
    found = found || f["id"] == "driver.too-old-for-torch";
  EXPECT_TRUE(found) << r.out;
  EXPECT_GT(j["summary"]["not_run"].get<int>(), 30);
  for (const auto &n : j["not_run"])
    EXPECT_TRUE(n.contains("reason"));
}

TEST(CollectEnvCli, DoctorMarkdownStartsWithTheVerdict) {
  auto r = run_dlrig({"doctor", "--markdown", "--from", report("current-cpu-torch-wsl2.txt")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("**Can PyTorch use a GPU here? No: torch 2.5.1"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| FAIL | `torch.cpu-only-build` |"), std::string::npos) << r.out;
}

TEST(CollectEnvCli, InfoShowsWhatTheReportSays) {
  auto r = run_dlrig({"info", "--from", report("v2-torch1.10-2xa100.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NVIDIA A100-SXM4-40GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("470.223.02"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.10.2+cu113"), std::string::npos) << r.out;
  auto j = run_dlrig({"info", "--json", "--from", report("v2-torch1.10-2xa100.txt")});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["notes"][0]["field"], "*");
  EXPECT_EQ(doc["notes"][0]["source"], "collect_env");
  EXPECT_TRUE(doc["host"]["memory"]["total_bytes"].is_null()); // the report does not say
  EXPECT_EQ(doc["gpus"].size(), 2u);
}

// What a report does not print is unknown in `info`, never "none" or "not found".
TEST(CollectEnvCli, InfoSaysUnknownForWhatAReportDoesNotPrint) {
  auto r = run_dlrig({"info", "--from", report("no-gpu-cpu-torch.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("No GPU found on the PCI bus"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU  unknown: the report lists no GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libcuda.so.1         n/a (not in a collect_env report)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("not found"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("none of AVX2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  collect_env's python  3.11.2"), std::string::npos) << r.out;

  auto nv = run_dlrig({"info", "--from", report("v1-torch1.4-gtx1080ti.txt")});
  EXPECT_EQ(nv.exit_code, 0) << nv.err;
  auto health = nv.out.find("NVIDIA GPU state and health");
  ASSERT_NE(health, std::string::npos) << nv.out;
  auto row = nv.out.find("\n  0 ", health);
  ASSERT_NE(row, std::string::npos) << nv.out;
  auto line = nv.out.substr(row + 1, nv.out.find('\n', row + 1) - row - 1);
  EXPECT_EQ(line.find("none"), std::string::npos) << line;
}

TEST(CollectEnvCli, InfoJsonOfAReportIsASnapshotTheDoctorReadsTheSameWay) {
  auto j = run_dlrig({"info", "--json", "--from", report("v3-torch2.1-rtx4090.txt")});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto saved = scratch("from-report.json");
  std::ofstream(saved) << j.out;
  auto a = run_dlrig({"doctor", "--json", "--from", saved.string()});
  auto b = run_dlrig({"doctor", "--json", "--from", report("v3-torch2.1-rtx4090.txt")});
  ASSERT_EQ(a.exit_code, b.exit_code) << a.err << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["summary"], jb["summary"]);
  EXPECT_EQ(ja["verdict"], jb["verdict"]);
}

TEST(CollectEnvCli, MalformedReportNamesFileAndLineAndExits65) {
  auto path = scratch("bad-report.txt");
  std::ofstream(path) << "Collecting environment information...\nPyTorch version: 2.1.0\n"
                         "Is CUDA available: perhaps\n";
  auto r = run_dlrig({"doctor", "--from", path.string()});
  EXPECT_EQ(r.exit_code, 65) << r.out;
  EXPECT_NE(r.err.find(path.string() + ":3: Is CUDA available \"perhaps\""), std::string::npos)
      << r.err;
  EXPECT_EQ(run_dlrig({"info", "--from", path.string()}).exit_code, 65);
}

// The verdict on the fixture machines probed with the fake NVML (doctor_cli_test.cpp's set-up).
nlohmann::json verdict_on(const std::string &machine) {
  std::vector<std::string> env;
  std::string scenario = fixture(machine) + "/nvml.json";
  if (std::ifstream(scenario).good())
    env = {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
           "DLRIG_FAKE_NVML_SCENARIO=" + scenario};
  auto r = run_dlrig({"doctor", "--json", "--sysroot", fixture(machine)}, env);
  EXPECT_FALSE(r.out.empty()) << r.err;
  return r.out.empty() ? nlohmann::json{} : nlohmann::json::parse(r.out)["verdict"];
}

TEST(VerdictCli, FixtureMachines) {
  auto none = verdict_on("laptop-no-gpu");
  EXPECT_EQ(none["ready"], "no");
  EXPECT_EQ(none["answer"].get<std::string>().rfind(
                "no NVIDIA or AMD GPU on the PCI bus: PyTorch will run on the CPU", 0),
            0u)
      << none;
  // GPUs and a working driver but no Python environment with torch: what to install.
  for (const char *machine : {"server-8xh100", "desktop-rtx4090"}) {
    auto v = verdict_on(machine);
    EXPECT_EQ(v["ready"], "no") << machine << v;
    EXPECT_EQ(v["answer"].get<std::string>().rfind("no PyTorch in any Python environment found", 0),
              0u)
        << machine << v;
    ASSERT_EQ(v["fix"].size(), 1u) << machine << v;
    EXPECT_NE(v["fix"][0].get<std::string>().find("download.pytorch.org/whl/cu"), std::string::npos)
        << v;
  }
  auto amd = verdict_on("node-mi300x");
  EXPECT_NE(amd["answer"].get<std::string>().find("install a ROCm build"), std::string::npos)
      << amd;
}

TEST(VerdictCli, LaptopWithoutGpuIsNotAllPassed) {
  auto r = run_dlrig({"doctor", "--sysroot", fixture("laptop-no-gpu")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("not applicable"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("60 checks passed"), std::string::npos) << r.out;
}

// collect_env from a real machine (one NVIDIA H200, torch 2.11.0+cu130, 2026-11-26): read whole,
// nothing to fix.
TEST(CollectEnvCli, RealH200Report) {
  auto r = run_dlrig({"doctor", "--from", report("h200-torch2.11-cu130.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("Can PyTorch use a GPU here? Yes: torch 2.11.0+cu130 (CUDA 13.0) in "
                        "collect_env's python will use GPU 0 (NVIDIA H200)",
                        0),
            0u)
      << r.out;
  auto info = run_dlrig({"info", "--from", report("h200-torch2.11-cu130.txt"), "--json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  auto j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j.at("nvidia").at("driver_version"), "580.159.04");
  EXPECT_EQ(j.at("host").at("cpu").at("threads"), 16) << j.at("host").at("cpu").dump();
  // The lines that have a snapshot field now, not only a parser check.
  const auto &sw = j.at("software");
  EXPECT_EQ(sw.at("cmake_version"), "4.4.3");
  EXPECT_EQ(sw.at("libc_version"), "glibc-2.39");
  EXPECT_TRUE(sw.at("clang_version").is_null());       // "Could not collect"
  EXPECT_TRUE(sw.at("hip_runtime_version").is_null()); // "N/A"
  const auto &torch = sw.at("python_envs")[0].at("torch");
  EXPECT_EQ(torch.at("debug_build"), false);
  EXPECT_EQ(torch.at("xnnpack"), true);
  EXPECT_EQ(sw.at("python_envs")[0].at("deep").at("xpu_available"), false);
  auto text = run_dlrig({"info", "--from", report("h200-torch2.11-cu130.txt")});
  EXPECT_NE(text.out.find("C library"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("XNNPACK on"), std::string::npos) << text.out;
}

} // namespace
} // namespace dlrig::test

// The readiness verdict and the not-applicable outcome, on the hand-built machines, the fixture
// machines of tests/data (probed without NVML, as the software fixtures are) and the collect_env
// reports of tests/data/collect_env.
#include "dlrig/doctor/facts.hpp"
#include "dlrig/doctor/report.hpp"
#include "dlrig/probe/collect_env.hpp"
#include "dlrig/probe/probe.hpp"
#include "unit/doctor/machines.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace dlrig::doctor {
namespace {

Snapshot probed(const std::string &machine, Environment env = {}) {
  Sysroot fs(std::string(DLRIG_TEST_DATA) + "/" + machine);
  ProbeOptions options;
  options.sysroot = fs.root();
  options.skip_nvml = true;
  env["DLRIG_PCI_IDS"] = std::string(DLRIG_TEST_DATA) + "/pci.ids";
  return probe_machine(fs, env, options);
}

Snapshot report(const std::string &name) {
  std::ifstream in(std::string(DLRIG_TEST_DATA) + "/collect_env/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = probe::parse_collect_env(ss.str());
  EXPECT_TRUE(r) << name;
  return r ? probe::collect_env_snapshot(*r, kb::builtin()) : Snapshot{};
}

DoctorReport doctor(const Snapshot &s) {
  return run_doctor(s, kb::builtin(), {});
}

const CheckResult &result(const DoctorReport &r, std::string_view id) {
  for (const auto &cr : r.results)
    if (cr.check->id == id)
      return cr;
  throw std::runtime_error("no check " + std::string(id));
}

const Environment kVenv = {{"PATH", "/home/user/venv/bin:/usr/bin:/bin"},
                           {"VIRTUAL_ENV", "/home/user/venv"},
                           {"HOME", "/home/user"}};

TEST(Verdict, HealthyServerUsesItsEightGpus) {
  auto r = run_doctor(test::healthy_server(), test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::yes) << r.verdict.answer;
  EXPECT_EQ(r.verdict.gpus.size(), 8u);
  EXPECT_EQ(r.verdict.build, OptStr("CUDA 12.4"));
  EXPECT_NE(r.verdict.answer.find("will use GPU 0 (NVIDIA H100"), std::string::npos)
      << r.verdict.answer;
  EXPECT_NE(r.verdict.answer.find("and 7 more"), std::string::npos) << r.verdict.answer;
}

// NVIDIA GPUs on the bus and NVML not read: the checks that read only NVML's readings found
// nothing because they read nothing, so they did not pass; the checks that read more still run.
TEST(Verdict, NvmlOnlyChecksAreNotRunWhenNvmlWasNotRead) {
  const char *nvml_only[] = {"gpu.thermal-throttle", "gpu.power-throttle",  "gpu.ecc-errors",
                             "gpu.retired-pages",    "gpu.persistence-off", "gpu.mig-enabled",
                             "gpu.compute-mode",     "gpu.memory-in-use",   "gpu.display-attached"};
  const Snapshot read = test::healthy_server();
  ASSERT_EQ(read.nvidia.nvml_status, "ok");
  auto ok = doctor(read);
  for (const char *id : nvml_only)
    EXPECT_FALSE(result(ok, id).not_run) << id;
  for (const char *status : {"timed-out", "init-failed", "not-found", "not-probed"}) {
    Snapshot s = read;
    s.nvidia.nvml_status = status;
    for (auto &g : s.gpus)
      g.nvml.reset();
    auto r = doctor(s);
    for (const char *id : nvml_only) {
      const auto &cr = result(r, id);
      EXPECT_FALSE(cr.passed()) << status << " " << id;
      ASSERT_TRUE(cr.not_run) << status << " " << id;
      EXPECT_NE(cr.not_run->find("NVML's readings are unknown"), std::string::npos) << *cr.not_run;
    }
    EXPECT_FALSE(result(r, "gpu.none-visible").not_run) << status;
    EXPECT_FALSE(result(r, "gpu.nvml-not-responding").not_run) << status;
  }
}

TEST(Verdict, LaptopWithoutGpuRunsOnTheCpuAndCountsGpuChecksNotApplicable) {
  auto s = probed("laptop-no-gpu");
  auto r = doctor(s);
  EXPECT_EQ(r.verdict.ready, Readiness::no);
  EXPECT_EQ(r.verdict.answer.rfind("no NVIDIA or AMD GPU on the PCI bus: PyTorch will run on the "
                                   "CPU",
                                   0),
            0u)
      << r.verdict.answer;
  // Not "Nothing to fix. 60 checks passed": the GPU, driver and torch checks did not apply.
  EXPECT_TRUE(result(r, "gpu.thermal-throttle").not_applicable);
  EXPECT_FALSE(result(r, "gpu.thermal-throttle").passed());
  EXPECT_TRUE(result(r, "driver.too-old-for-torch").not_applicable);
  EXPECT_TRUE(result(r, "torch.cpu-only-build").not_applicable);
  EXPECT_TRUE(result(r, "host.cpu-cores-per-gpu").not_applicable);
  EXPECT_FALSE(result(r, "host.shm-small").not_applicable); // a CPU machine still loads data
  EXPECT_GE(r.not_applicable(), 30u);
  EXPECT_LT(r.count(Severity::ok), 20u);
  auto line = summary_line(r);
  EXPECT_NE(line.find(fmt::format("{} not applicable", r.not_applicable())), std::string::npos)
      << line;
  auto j = to_json(r);
  EXPECT_EQ(j["summary"]["not_applicable"], r.not_applicable());
  EXPECT_EQ(j["not_applicable"].size(), r.not_applicable());
  EXPECT_EQ(j["verdict"]["gpu_ready"], false);
  EXPECT_EQ(render_text(r, false).rfind("Can PyTorch use a GPU here? No: no NVIDIA or AMD GPU", 0),
            0u);
}

TEST(Verdict, CpuTorchOnAGpuMachineIsANo) {
  auto r = doctor(probed("sw-cpu-torch", kVenv));
  EXPECT_EQ(r.verdict.ready, Readiness::no) << r.verdict.answer;
  EXPECT_EQ(r.verdict.decided_by, OptStr("torch.cpu-only-build"));
  EXPECT_FALSE(r.verdict.fix.empty());
}

TEST(Verdict, VenvTorchOnTheDesktopIsAYes) {
  auto r = doctor(probed("sw-venv-torch251", kVenv));
  EXPECT_EQ(r.verdict.ready, Readiness::yes) << r.verdict.answer;
  EXPECT_EQ(r.verdict.python, OptStr("/home/user/venv/bin/python3"));
  EXPECT_EQ(r.verdict.build, OptStr("CUDA 12.4"));
}

TEST(Verdict, ContainerWithoutTheNvidiaRuntime) {
  auto r = doctor(probed("container-no-runtime", {{"PATH", "/usr/local/bin:/usr/bin:/bin"}}));
  EXPECT_EQ(r.verdict.ready, Readiness::no) << r.verdict.answer;
  EXPECT_EQ(r.verdict.decided_by, OptStr("container.no-gpu-runtime"));
}

// A failure that leaves CUDA no GPU decides the verdict, with the finding's title and fix.
TEST(Verdict, CudaVisibleDevicesNamingNoGpuHereIsANo) {
  auto s = test::healthy_desktop();
  s.software.env["CUDA_VISIBLE_DEVICES"] = "1";
  auto r = run_doctor(s, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::no) << r.verdict.answer;
  EXPECT_EQ(r.verdict.decided_by, OptStr("env.cuda-visible-devices"));
  EXPECT_NE(r.verdict.answer.find("CUDA_VISIBLE_DEVICES=1 names GPUs that are not here"),
            std::string::npos)
      << r.verdict.answer;
  ASSERT_FALSE(r.verdict.fix.empty());
  EXPECT_NE(r.verdict.fix[0].find("export CUDA_VISIBLE_DEVICES=0"), std::string::npos);
  // A later entry that matches nothing hides only what follows it: GPU 0 is still used.
  s.software.env["CUDA_VISIBLE_DEVICES"] = "0,3";
  r = run_doctor(s, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::yes) << r.verdict.answer;
}

TEST(Verdict, ProhibitedComputeModeIsANoOnlyWhenEveryGpuIsProhibited) {
  auto s = test::healthy_desktop();
  for (auto &g : s.gpus)
    if (g.nvml)
      g.nvml->compute_mode = "prohibited";
  auto r = run_doctor(s, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::no) << r.verdict.answer;
  EXPECT_EQ(r.verdict.decided_by, OptStr("gpu.compute-mode"));
  EXPECT_NE(r.verdict.answer.find("is in compute mode prohibited"), std::string::npos);
  ASSERT_EQ(r.verdict.fix.size(), 1u);
  EXPECT_NE(r.verdict.fix[0].find("-c DEFAULT"), std::string::npos);

  auto server = test::healthy_server();
  server.gpus[0].nvml->compute_mode = "prohibited";
  r = run_doctor(server, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::yes) << r.verdict.answer;
  EXPECT_EQ(r.verdict.gpus.size(), 7u); // the prohibited GPU is left out
  for (auto &g : server.gpus)
    g.nvml->compute_mode = "prohibited";
  r = run_doctor(server, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::no) << r.verdict.answer;
  EXPECT_NE(r.verdict.answer.find("as are the other 7 GPUs"), std::string::npos)
      << r.verdict.answer;
}

TEST(Verdict, NvswitchServerWithoutFabricManagerIsANo) {
  auto s = test::healthy_server();
  s.software.services.fabricmanager_running = false;
  for (auto &g : s.gpus)
    g.nvml->fabric_state.reset();
  auto r = run_doctor(s, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::no) << r.verdict.answer;
  EXPECT_EQ(r.verdict.decided_by, OptStr("gpu.fabric-manager"));
  EXPECT_FALSE(r.verdict.fix.empty());
}

TEST(Verdict, BlackwellOnTheProprietaryModuleIsANo) {
  auto s = test::healthy_desktop();
  s.software.kernel.nvidia_open = false;
  s.software.kernel.nvidia.license = "NVIDIA";
  s.gpus[0].nvml->compute_capability = "12.0";
  auto r = run_doctor(s, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::no) << r.verdict.answer;
  EXPECT_EQ(r.verdict.decided_by, OptStr("kernel.open-module-required"));
}

TEST(Verdict, NoTorchOnAGpuMachineSaysWhatToInstall) {
  auto s = test::healthy_desktop();
  s.software.python_envs[0].torch.reset();
  auto r = run_doctor(s, test::test_kb(), {});
  EXPECT_EQ(r.verdict.ready, Readiness::no);
  EXPECT_EQ(r.verdict.answer.rfind("no PyTorch in any Python environment found", 0), 0u)
      << r.verdict.answer;
  ASSERT_EQ(r.verdict.fix.size(), 1u);
  EXPECT_NE(r.verdict.fix[0].find("--index-url https://download.pytorch.org/whl/cu"),
            std::string::npos)
      << r.verdict.fix[0];
  // The torch checks do not apply without torch.
  EXPECT_TRUE(result(r, "torch.companion-mismatch").not_applicable);
}

TEST(Verdict, UnknownWhenTheSnapshotIsEmpty) {
  auto r = doctor(Snapshot{});
  EXPECT_EQ(r.verdict.ready, Readiness::unknown) << r.verdict.answer;
  EXPECT_EQ(r.not_applicable(), 0u); // nothing is known absent either
}

TEST(Verdict, CollectEnvReports) {
  struct Case {
    const char *file;
    Readiness ready;
    const char *in_answer;
    const char *decided_by;
  };
  const Case cases[] = {
      {"v3-torch2.1-rtx4090.txt", Readiness::yes,
       "torch 2.1.2+cu121 (CUDA 12.1) in collect_env's python will use GPU 0 (NVIDIA GeForce RTX "
       "4090)",
       nullptr},
      {"v2-torch1.10-2xa100.txt", Readiness::yes, "GPU 0 (NVIDIA A100-SXM4-40GB) and 1 more",
       nullptr},
      {"rocm-mi300x.txt", Readiness::yes, "(ROCm 6.0.32830-d62f6a171)", nullptr},
      {"current-driver-too-old.txt", Readiness::no, "", "driver.too-old-for-torch"},
      {"current-cpu-torch-wsl2.txt", Readiness::no, "CPU-only", "torch.cpu-only-build"},
      {"no-gpu-cpu-torch.txt", Readiness::no,
       "torch 2.3.0+cpu (CPU-only) in collect_env's python is a CPU-only build: PyTorch will run "
       "on the CPU",
       nullptr},
  };
  for (const auto &c : cases) {
    auto r = doctor(report(c.file));
    EXPECT_EQ(r.verdict.ready, c.ready) << c.file << ": " << r.verdict.answer;
    EXPECT_NE(r.verdict.answer.find(c.in_answer), std::string::npos)
        << c.file << ": " << r.verdict.answer;
    EXPECT_EQ(r.verdict.decided_by, c.decided_by ? OptStr(c.decided_by) : std::nullopt) << c.file;
  }
}

TEST(CollectEnvDoctor, RunsOnlyTheChecksTheReportCanDecide) {
  auto r = doctor(report("v3-torch2.1-rtx4090.txt"));
  // NVML readings, kernel modules, limits: not in the report, so not run (never "passed").
  for (const char *id : {"gpu.thermal-throttle", "kernel.nouveau-loaded", "host.shm-small",
                         "link.pcie-downtrained", "env.cuda-visible-devices"}) {
    const auto &cr = result(r, id);
    ASSERT_TRUE(cr.not_run) << id;
    EXPECT_NE(cr.not_run->find("a collect_env report does not include"), std::string::npos) << id;
  }
  for (auto id : collect_env_checks())
    EXPECT_FALSE(result(r, id).not_run) << id << ": " << result(r, id).not_run.value_or("");
  EXPECT_TRUE(result(r, "driver.too-old-for-torch").passed());
  EXPECT_NE(render_text(r, false).find("a collect_env report does not include NVML readings"),
            std::string::npos);
}

// A report whose GPU line says "Could not collect": the checks that decide on the GPUs did not
// pass, they could not run.
TEST(CollectEnvDoctor, ChecksThatNeedTheGpusAreNotRunWhenTheReportListsNone) {
  std::ifstream in(std::string(DLRIG_TEST_DATA) + "/collect_env/v3-torch2.1-rtx4090.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto line = text.find("GPU models and configuration: ");
  ASSERT_NE(line, std::string::npos);
  text.replace(line, text.find('\n', line) - line,
               "GPU models and configuration: Could not collect");
  auto parsed = probe::parse_collect_env(text);
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto r = doctor(probe::collect_env_snapshot(*parsed, kb::builtin()));
  for (const char *id :
       {"torch.arch-unsupported", "torch.triton-unsupported", "torch.tf32-off-by-default",
        "host.cpu-cores-per-gpu", "torch.vendor-mismatch", "torch.cpu-only-build"}) {
    const auto &cr = result(r, id);
    EXPECT_FALSE(cr.passed()) << id;
    ASSERT_TRUE(cr.not_run) << id;
    EXPECT_NE(cr.not_run->find("the GPUs are unknown"), std::string::npos) << *cr.not_run;
  }
  // What does not depend on the GPUs still runs.
  EXPECT_TRUE(result(r, "torch.companion-mismatch").passed());
}

TEST(CollectEnvDoctor, EveryCoveredCheckExists) {
  for (auto id : collect_env_checks())
    EXPECT_NE(find_check(id), nullptr) << id;
}

TEST(CollectEnvDoctor, DriverTooOldForTheWheelFails) {
  auto r = doctor(report("current-driver-too-old.txt"));
  EXPECT_EQ(r.exit_code(), ExitCode::failures);
  EXPECT_EQ(result(r, "driver.too-old-for-torch").worst(), Severity::fail);
}

TEST(CollectEnvDoctor, CpuTorchWithoutSuffixFails) {
  auto r = doctor(report("current-cpu-torch-wsl2.txt"));
  EXPECT_EQ(result(r, "torch.cpu-only-build").worst(), Severity::fail);
  // WSL2 from the kernel release: the container checks do not apply.
  EXPECT_TRUE(result(r, "container.no-gpu-runtime").not_applicable);
}

// A report from Windows: Windows driver numbers (Table 3's Windows column) and fixes a Windows
// user can run, never apt, ubuntu-drivers or modprobe.
TEST(CollectEnvDoctor, WindowsReportGetsWindowsDriversAndFixes) {
  auto s = report("windows-rtx3060-driver-too-old.txt");
  EXPECT_TRUE(on_windows(s));
  EXPECT_TRUE(windows_driver(s));
  auto r = doctor(s);
  const auto &too_old = result(r, "driver.too-old-for-torch");
  ASSERT_EQ(too_old.findings.size(), 1u);
  const auto &f = too_old.findings[0];
  ASSERT_FALSE(f.fix.empty());
  EXPECT_NE(f.fix[0].find("upgrade the Windows driver to 551.61 or newer"), std::string::npos)
      << f.fix[0];
  bool evidence = false;
  for (const auto &e : f.evidence)
    evidence = evidence || (e.key == "min_windows_driver_for_cuda_12.4" && e.value == "551.61");
  EXPECT_TRUE(evidence);
  for (const auto &cr : r.results)
    for (const auto &finding : cr.findings)
      for (const auto &line : finding.fix)
        for (const char *linux_only : {"apt ", "ubuntu-drivers", "modprobe", "rmmod", "export "})
          EXPECT_EQ(line.find(linux_only), std::string::npos) << finding.id << ": " << line;
  for (const auto &line : r.verdict.fix)
    EXPECT_EQ(line.find("sudo"), std::string::npos) << line;
}

TEST(CollectEnvDoctor, WindowsDriverMinimumsComeFromTable3) {
  EXPECT_EQ(min_driver_windows(kb::builtin(), "12.4"),
            OptStr("551.61")); // GA, not Update 1's 551.78
  EXPECT_EQ(min_driver_windows(kb::builtin(), "12.4.1"), OptStr("551.61"));
  EXPECT_EQ(min_driver_windows(kb::builtin(), "11.8"), OptStr("520.06"));
  EXPECT_EQ(min_driver_windows(kb::builtin(), "13.0"), std::nullopt); // Table 3 says N/A
  // A Windows 551.23 driver is below 12.4's 551.61 though its branch is 12.4's Linux one.
  Snapshot s;
  s.host.os.distro_name = "Microsoft Windows 11 Pro";
  s.nvidia.driver_version = "551.23";
  EXPECT_EQ(driver_cuda(s, kb::builtin()), OptStr("12.3"));
  s.host.os.distro_name = "Ubuntu 22.04.4 LTS";
  EXPECT_EQ(driver_cuda(s, kb::builtin()), OptStr("12.4"));
}

} // namespace
} // namespace dlrig::doctor

#include "support/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
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

// On this machine a --data path that is not there is refused: it was judged by the root's disk
// (the longest mount point above it) and passed. A saved snapshot's path (above) is another
// machine's and is not looked for here.
TEST(DoctorCli, ADataPathThisMachineLacksIsAUsageError) {
  auto r = run_dlrig({"doctor", "--json", "--data", "/nonexistent/dlrig-imagenet"});
  EXPECT_EQ(r.exit_code, 64) << r.out << r.err;
  EXPECT_NE(r.err.find("--data /nonexistent/dlrig-imagenet: no such file or directory"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  auto here = run_dlrig({"doctor", "--json", "--data", scratch("").string()});
  EXPECT_NE(here.exit_code, 64) << here.err;
  EXPECT_EQ(here.err.find("--data"), std::string::npos) << here.err;
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
  std::string out = {};
  // The severity of the first finding with this id; "" when none.
  std::string severity(const std::string &id) const {
    if (out.empty())
      return "";
    auto j = nlohmann::json::parse(out);
    for (const auto &f : j["findings"])
      if (f["id"] == id)
        return f["severity"].get<std::string>();
    return "";
  }
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

// The 8xH100 server seen from inside a Docker container: /proc lists only the container's
// processes, so Fabric Manager is not among them. NVML's fabric state decides; without it the
// check cannot decide, and says so, rather than failing.
TEST(DoctorFixtures, NvswitchServerInAContainer) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / "dlrig-doctor-nvswitch-container";
  fs::remove_all(root);
  fs::copy(fixture("server-8xh100"), root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::ofstream(root / ".dockerenv");
  for (const char *pid : {"2104", "2188"}) // nvidia-persistenced, nv-fabricmanager: the host's
    fs::remove_all(root / "proc" / pid);
  auto run = [&](const fs::path &scenario) {
    auto r = run_dlrig({"doctor", "--json", "--sysroot", root.string()},
                       {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                        "DLRIG_FAKE_NVML_SCENARIO=" + scenario.string()});
    MachineRun m{r.exit_code, {}, r.err, r.out};
    if (!r.out.empty())
      m.ids = finding_ids(r.out);
    return m;
  };
  // The fixture's NVML reports every GPU's fabric registration completed: nothing to say.
  auto completed = run(root / "nvml.json");
  EXPECT_EQ(completed.severity("gpu.fabric-manager"), "") << show(completed.ids) << completed.err;
  // An NVML that does not report the fabric state: unknown (info), never a failure.
  auto scenario = nlohmann::json::parse(std::ifstream(root / "nvml.json"));
  for (auto &g : scenario["gpus"])
    g.erase("fabric");
  std::ofstream(root / "nvml-no-fabric.json") << scenario.dump();
  auto unknown = run(root / "nvml-no-fabric.json");
  EXPECT_EQ(unknown.severity("gpu.fabric-manager"), "info") << show(unknown.ids) << unknown.err;
  EXPECT_LT(unknown.exit_code, 2) << show(unknown.ids);
  // Registration not started: Fabric Manager is missing on the host.
  for (auto &g : scenario["gpus"])
    g["fabric"] = {{"state", 1}};
  std::ofstream(root / "nvml-not-started.json") << scenario.dump();
  auto missing = run(root / "nvml-not-started.json");
  EXPECT_EQ(missing.severity("gpu.fabric-manager"), "fail") << show(missing.ids);
  fs::remove_all(root);
}

TEST(DoctorFixtures, ServerDatasetsOnNfs) {
  auto m = doctor_on("server-8xh100", {"--data", "/datasets/laion"});
  EXPECT_EQ(m.exit_code, 1) << show(m.ids) << m.err;
  EXPECT_TRUE(has(m.ids, "host.dataset-on-slow-disk")) << show(m.ids);
}

// An NVML that stops answering (a GPU fallen off the bus hangs nvidia-smi the same way): doctor
// and info say so once --nvml-timeout has passed, readiness is decided by it, and both exit while
// NVML is still asleep. The pipe run_dlrig reads reaches its end: the stuck NVML holds no stream.
TEST(DoctorFixtures, AnNvmlThatHangsIsReportedNotWaitedFor) {
  auto scenario = nlohmann::json::parse(std::ifstream(fixture("desktop-rtx4090") + "/nvml.json"));
  scenario["hang_ms"] = {{"nvmlInit_v2", 120000}};
  auto path = scratch("nvml-hang.json");
  std::ofstream(path) << scenario.dump();
  const std::vector<std::string> env = {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                        "DLRIG_FAKE_NVML_SCENARIO=" + path.string()};
  auto r = run_dlrig(
      {"doctor", "--json", "--nvml-timeout", "0.5", "--sysroot", fixture("desktop-rtx4090")}, env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  MachineRun m{r.exit_code, finding_ids(r.out), r.err, r.out};
  EXPECT_EQ(m.severity("gpu.nvml-not-responding"), "fail") << show(m.ids);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"]["ready"], "no");
  EXPECT_EQ(j["verdict"]["decided_by"], "gpu.nvml-not-responding");
  auto info =
      run_dlrig({"info", "--nvml-timeout", "0.5", "--sysroot", fixture("desktop-rtx4090")}, env);
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("no answer: NVML did not answer within 0.5 s"), std::string::npos)
      << info.out;
  // The same machine whose NVML answers in time has nothing of the kind.
  auto healthy = doctor_on("desktop-rtx4090");
  EXPECT_EQ(healthy.exit_code, 0) << show(healthy.ids) << healthy.err;
}

// A GPU that has fallen off the bus answers NVML's calls with GPU_IS_LOST. Alone, it decides that
// PyTorch cannot use a GPU; beside a healthy one, PyTorch uses the other and the failure stays.
TEST(DoctorFixtures, AGpuFallenOffTheBusIsAFailure) {
  // The desktop's own environment (its .dlrig/env): torch 2.5.1+cu124 in a venv.
  auto run = [](const std::string &scenario_file, int lost, int after_calls,
                std::string command = "doctor") {
    auto scenario = nlohmann::json::parse(std::ifstream(scenario_file));
    scenario["gpus"][lost]["lost_after_calls"] = after_calls;
    auto path = scratch("nvml-lost.json");
    std::ofstream(path) << scenario.dump();
    auto r = run_dlrig({command, "--json", "--sysroot", fixture("desktop-rtx4090")},
                       {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                        "DLRIG_FAKE_NVML_SCENARIO=" + path.string(),
                        "PATH=/home/user/venv/bin:/usr/bin:/bin", "VIRTUAL_ENV=/home/user/venv",
                        "HOME=/home/user"});
    return MachineRun{r.exit_code, finding_ids(r.out), r.err, r.out};
  };
  auto alone = run(fixture("desktop-rtx4090") + "/nvml.json", 0, 0);
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_EQ(alone.severity("gpu.fallen-off-bus"), "fail") << show(alone.ids);
  auto verdict = nlohmann::json::parse(alone.out)["verdict"];
  EXPECT_EQ(verdict["decided_by"], "gpu.fallen-off-bus") << verdict.dump();
  EXPECT_EQ(verdict["ready"], "no");

  // Lost after NVML gave its bus id (handle, PCI info, name, UUID answered).
  auto beside = run(fixture("nvml/two-4090-pcie.json"), 1, 4);
  EXPECT_EQ(beside.exit_code, 2) << beside.err;
  EXPECT_EQ(beside.severity("gpu.fallen-off-bus"), "fail") << show(beside.ids);
  auto j = nlohmann::json::parse(beside.out);
  for (const auto &f : j["findings"]) {
    if (f["id"] == "gpu.fallen-off-bus") {
      EXPECT_EQ(f["title"],
                "GPU 1 (0000:41:00.0) has fallen off the bus: NVML answers GPU_IS_LOST");
    }
  }
  EXPECT_EQ(j["verdict"]["ready"], "yes") << j["verdict"].dump();
  ASSERT_EQ(j["verdict"]["gpus"].size(), 1u) << j["verdict"].dump();
  EXPECT_NE(j["verdict"]["gpus"][0].get<std::string>().find("0000:01:00.0"), std::string::npos);
  // The snapshot says which GPU, by NVML index and bus id.
  auto snap = nlohmann::json::parse(run(fixture("nvml/two-4090-pcie.json"), 1, 4, "info").out);
  EXPECT_EQ(snap["nvidia"]["lost_gpus"],
            nlohmann::json::parse(R"([{"index": 1, "bdf": "0000:41:00.0"}])"));
}

// Two GeForce RTX 3090 with P2P on driver 545 in the Ryzen desktop: NCCL uses P2P between two
// GPUs on an AMD CPU at any distance, and that driver hangs it.
TEST(DoctorFixtures, TwoGeforceCardsDoingP2pOnAHangingDriver) {
  std::vector<std::string> env = {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                                  "DLRIG_FAKE_NVML_SCENARIO=" +
                                      fixture("nvml/two-3090-p2p-545.json")};
  auto r = run_dlrig({"doctor", "--json", "--sysroot", fixture("desktop-rtx4090")}, env);
  auto ids = finding_ids(r.out);
  EXPECT_TRUE(has(ids, "link.geforce-p2p-hang")) << show(ids) << r.err;
  env.push_back("NCCL_P2P_DISABLE=1");
  auto fixed = run_dlrig({"doctor", "--json", "--sysroot", fixture("desktop-rtx4090")}, env);
  EXPECT_FALSE(has(finding_ids(fixed.out), "link.geforce-p2p-hang")) << fixed.out;
  // The same pair of RTX 4090 that report P2P unsupported is left alone.
  auto gns = run_dlrig({"doctor", "--json", "--sysroot", fixture("desktop-rtx4090")},
                       {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
                        "DLRIG_FAKE_NVML_SCENARIO=" + fixture("nvml/two-4090-pcie.json")});
  EXPECT_FALSE(has(finding_ids(gns.out), "link.geforce-p2p-hang")) << gns.out;
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
  MachineRun m{r.exit_code, {}, r.err, r.out};
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
  for (const char *id :
       {"gpu.none-visible", "torch.cpu-only-build", "torch.arch-unsupported",
        "driver.too-old-for-torch", "cuda.ld-library-path-shadows", "cuda.multiple-toolkits",
        "kernel.nouveau-loaded", "cuda.cublaslt-not-found", "dist.nccl-not-found"})
    EXPECT_FALSE(has(m.ids, id)) << id;
}

// torch 2.5.1+cu124 on two GPUs, installed without its nvidia wheels, no toolkit: neither
// libcublasLt nor libnccl anywhere. Both checks warn and name every folder they looked in.
TEST(DoctorSoftwareFixtures, TorchWithoutItsCudaLibrariesWarnsNamingWhereItLooked) {
  auto m = doctor_sw("sw-torch-no-libs", kVenv);
  EXPECT_EQ(m.severity("cuda.cublaslt-not-found"), "warn") << show(m.ids) << m.err;
  EXPECT_EQ(m.severity("dist.nccl-not-found"), "warn") << show(m.ids);
  auto j = nlohmann::json::parse(m.out);
  for (const auto &f : j["findings"])
    if (f["id"] == "cuda.cublaslt-not-found") {
      const std::string looked = f["evidence"]["looked_in"].get<std::string>();
      EXPECT_NE(looked.find("/home/user/venv/lib/python3.11/site-packages/nvidia/cublas/lib; "
                            "/home/user/venv/lib/python3.11/site-packages/torch/lib"),
                std::string::npos)
          << looked;
      EXPECT_NE(looked.find("/usr/lib/x86_64-linux-gnu"), std::string::npos) << looked;
      EXPECT_EQ(f["fix"][0], "/home/user/venv/bin/pip install nvidia-cublas-cu12") << f.dump();
    }
  // DLRIG_CUBLASLT_LIBRARY naming a file that exists there is what dlrig bench would load.
  auto given = kVenv;
  given.push_back("DLRIG_CUBLASLT_LIBRARY=/home/user/venv/lib/python3.11/site-packages/torch/"
                  "version.py");
  EXPECT_FALSE(has(doctor_sw("sw-torch-no-libs", given).ids, "cuda.cublaslt-not-found"));
}

// No false alarm: a CPU-only torch, a machine without a GPU, one GPU (NCCL unused).
TEST(DoctorSoftwareFixtures, LibraryChecksStayQuietWhereTheyDoNotApply) {
  for (const char *machine : {"sw-cpu-torch", "laptop-no-gpu", "sw-venv-torch251"}) {
    auto m = doctor_sw(machine, kVenv);
    EXPECT_FALSE(has(m.ids, "cuda.cublaslt-not-found")) << machine << ": " << show(m.ids);
    EXPECT_FALSE(has(m.ids, "dist.nccl-not-found")) << machine << ": " << show(m.ids);
  }
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
  // Nothing there builds CUDA extensions: a note, not a warning.
  EXPECT_EQ(m.severity("cuda.toolkit-mismatches-torch"), "info");
}

TEST(DoctorSoftwareFixtures, ToolkitMismatchWarnsWhereExtensionsAreBuilt) {
  // The same machine with flash-attn compiled here and a torch_extensions JIT cache.
  auto m = doctor_sw("sw-ext-build",
                     {"PATH=/home/user/miniconda3/envs/torch118/bin:/home/user/miniconda3/condabin:"
                      "/usr/local/cuda-12.4/bin:/usr/bin:/bin",
                      "CONDA_PREFIX=/home/user/miniconda3/envs/torch118",
                      "CONDA_DEFAULT_ENV=torch118", "HOME=/home/user"});
  EXPECT_EQ(m.severity("cuda.toolkit-mismatches-torch"), "warn") << show(m.ids);
  EXPECT_NE(m.out.find("flash-attn==2.5.8 was compiled here"), std::string::npos);
  EXPECT_NE(m.out.find("/home/user/.cache/torch_extensions"), std::string::npos);
}

TEST(DoctorSoftwareFixtures, DockerContainerWithoutTheNvidiaRuntime) {
  auto m = doctor_sw("container-no-runtime", {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"});
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_TRUE(has(m.ids, "container.no-gpu-runtime")) << show(m.ids);
}

TEST(DoctorSoftwareFixtures, Wsl2WithALinuxDriverBehindWslsLibrary) {
  // /usr/lib/wsl/lib sorts first in the loader's order; the Linux driver's copy comes second.
  auto m = doctor_sw("wsl2-driver-inside", kVenv);
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_EQ(m.severity("wsl.driver-inside"), "fail") << show(m.ids);
  EXPECT_NE(m.out.find("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), std::string::npos);
}

TEST(DoctorSoftwareFixtures, SystemCudnnBesideTheBundledOne) {
  // Ubuntu's cuDNN 9.0 in an ld.so.conf folder beside the wheel's 9.1.0.70, with a sub-library
  // the wheel lacks.
  auto m = doctor_sw("sw-system-cudnn", kVenv);
  EXPECT_EQ(m.severity("cuda.system-cudnn"), "warn") << show(m.ids);
  EXPECT_NE(m.out.find("lacks libcudnn_engines_tensor_ir.so.9"), std::string::npos) << m.out;
  EXPECT_FALSE(has(m.ids, "cuda.ld-library-path-shadows")) << show(m.ids);
  // The same folder on LD_LIBRARY_PATH puts the older minor ahead: torch refuses it.
  auto env = kVenv;
  env.push_back("LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu");
  auto ld = doctor_sw("sw-system-cudnn", env);
  EXPECT_EQ(ld.exit_code, 2) << ld.err;
  EXPECT_EQ(ld.severity("cuda.ld-library-path-shadows"), "fail") << show(ld.ids);
  EXPECT_FALSE(has(ld.ids, "cuda.system-cudnn")) << show(ld.ids);
}

TEST(DoctorSoftwareFixtures, Wsl2WithTheWindowsDriverIsNotFlagged) {
  auto m = doctor_sw("wsl2", kVenv);
  EXPECT_FALSE(has(m.ids, "wsl.driver-inside")) << show(m.ids);
  EXPECT_FALSE(has(m.ids, "driver.no-kernel-module")) << show(m.ids);
  EXPECT_LT(m.exit_code, 2) << show(m.ids) << m.err;
}

// The captured H200 VM (tests/data/h200-vm): healthy; its 125.9 GiB of RAM below the GPU's
// 140.4 GiB is the one warning, and nothing else fires on a real machine.
TEST(DoctorFixtures, CapturedH200VmWarnsOnlyThatRamIsBelowVram) {
  auto m = doctor_on("h200-vm");
  EXPECT_EQ(m.exit_code, 1) << show(m.ids) << m.err;
  EXPECT_EQ(m.ids, std::vector<std::string>{"host.ram-vs-vram"}) << show(m.ids);
}

// The H200's own deep snapshot (tests/data/snapshots/h200-vm.json): a system cuDNN 9.14 beside the
// 9.19 torch bundles, where torch trained ResNet-50 through cuDNN without error. The snapshot was
// taken before folders' sub-libraries were listed, so the check cannot decide; it must not warn.
TEST(DoctorFixtures, RealH200SnapshotHasNoCudnnFalseAlarm) {
  auto r = run_dlrig({"doctor", "--json", "--from", fixture("snapshots/h200-vm.json")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> warned;
  for (const auto &f : j.at("findings")) {
    if (f.at("id") == "cuda.system-cudnn") {
      EXPECT_EQ(f.at("severity"), "info") << f.dump();
    }
    if (f.at("severity") == "warn" || f.at("severity") == "fail")
      warned.push_back(f.at("id").get<std::string>());
  }
  EXPECT_EQ(warned, std::vector<std::string>{"host.ram-vs-vram"}) << r.out;
}

// The captured H100 VM (tests/data/h100-vm): healthy, and its 125.9 GiB of RAM above the GPU's
// 79.6 GiB, so nothing fires at all (no Python environment is in the capture).
TEST(DoctorFixtures, CapturedH100VmIsClean) {
  auto m = doctor_on("h100-vm");
  EXPECT_EQ(m.exit_code, 0) << show(m.ids) << m.err;
  EXPECT_TRUE(m.ids.empty()) << show(m.ids);
}

// The H100's own snapshot (tests/data/snapshots/h100-vm.json, torch 2.11.0+cu130 in a venv): the
// answer doctor gave on that machine, "Yes" and two notes (the arch list the snapshot does not
// hold, TF32 off by default), nothing to fix.
TEST(DoctorFixtures, RealH100SnapshotAnswersYesWithTwoNotes) {
  auto r = run_dlrig({"doctor", "--from", fixture("snapshots/h100-vm.json")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Can PyTorch use a GPU here? Yes: torch 2.11.0+cu130 (CUDA 13.0)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Nothing to fix. 2 notes"), std::string::npos) << r.out;
  auto j = run_dlrig({"doctor", "--json", "--from", fixture("snapshots/h100-vm.json")});
  const auto doc = nlohmann::json::parse(j.out);
  std::vector<std::string> ids;
  for (const auto &f : doc.at("findings")) {
    EXPECT_EQ(f.at("severity"), "info") << f.dump();
    ids.push_back(f.at("id").get<std::string>());
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"torch.arch-unsupported", "torch.tf32-off-by-default"}))
      << j.out;
}

} // namespace
} // namespace dlrig::test

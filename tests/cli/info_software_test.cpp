// The software section on each software fixture: what the snapshot and `dlrig info` must show.
#include "support/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>

namespace dlrig::test {
namespace {

using nlohmann::json;

json snapshot_of(const std::string &machine, const std::vector<std::string> &env,
                 std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"snapshot", "--no-nvml", "--sysroot", fixture(machine)};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_dlrig(args, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

std::string info_of(const std::string &machine, const std::vector<std::string> &env) {
  auto r = run_dlrig({"info", "--no-nvml", "--sysroot", fixture(machine)}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

bool has(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

const json &env_named(const json &sw, const std::string &name) {
  for (const auto &e : sw["python_envs"])
    if (e["name"] == name)
      return e;
  static const json none;
  ADD_FAILURE() << "no Python env named " << name << " in " << sw["python_envs"].dump();
  return none;
}

const std::vector<std::string> kVenvEnv = {"PATH=/home/user/venv/bin:/usr/bin:/bin",
                                           "VIRTUAL_ENV=/home/user/venv", "HOME=/home/user"};

TEST(InfoSoftwareCli, VenvTorch251IsAHealthyWorkstation) {
  auto s = snapshot_of("sw-venv-torch251", kVenvEnv);
  const auto &sw = s["software"];
  EXPECT_EQ(sw["kernel"]["nvidia"]["loaded"], true);
  EXPECT_EQ(sw["kernel"]["nvidia"]["version"], "550.54.15");
  EXPECT_EQ(sw["kernel"]["nvidia_open"], false);
  EXPECT_EQ(sw["kernel"]["nvidia"]["license"], "NVIDIA");
  EXPECT_EQ(sw["kernel"]["nouveau"]["loaded"], false);
  EXPECT_EQ(sw["kernel"]["nouveau"]["blacklisted"], true);
  EXPECT_EQ(sw["kernel"]["nvidia_uvm"]["loaded"], true);
  EXPECT_EQ(sw["kernel"]["iommu"], "default");
  EXPECT_EQ(sw["kernel"]["secure_boot"], false);
  EXPECT_EQ(sw["services"]["persistenced_running"], true);
  for (const auto &node : sw["device_nodes"]) {
    EXPECT_EQ(node["exists"], true) << node.dump();
    EXPECT_EQ(node["accessible"], true) << node.dump();
  }
  ASSERT_EQ(sw["driver_libraries"]["libcuda"].size(), 1u);
  EXPECT_EQ(sw["driver_libraries"]["libcuda"][0]["path"], "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(sw["driver_libraries"]["libcuda"][0]["version"], "550.54.15");
  EXPECT_EQ(sw["driver_libraries"]["libnvidia_ml"][0]["version"], "550.54.15");
  EXPECT_EQ(sw["driver_libraries"]["stub_ahead"], false);
  ASSERT_EQ(sw["cuda_toolkits"].size(), 1u);
  EXPECT_EQ(sw["cuda_toolkits"][0]["version"], "12.4.131");
  EXPECT_EQ(sw["cuda_selection"]["usr_local_cuda"], "/usr/local/cuda-12.4");
  EXPECT_TRUE(sw["cuda_selection"]["by_ld_library_path"].is_null());

  // PATH's python3 is the active venv's; the distribution's /usr/bin/python3 is found too.
  ASSERT_EQ(sw["python_envs"].size(), 2u);
  const auto &venv = sw["python_envs"][0];
  EXPECT_EQ(sw["python_envs"][1]["interpreter"], "/usr/bin/python3");
  EXPECT_EQ(sw["python_envs"][1]["found_by"], nlohmann::json::array({"system"}));
  EXPECT_TRUE(sw["python_envs"][1]["torch"].is_null());
  EXPECT_EQ(venv["kind"], "venv");
  EXPECT_EQ(venv["active"], true);
  EXPECT_EQ(venv["python_version"], "3.11.4");
  EXPECT_EQ(venv["torch"]["version"], "2.5.1+cu124");
  EXPECT_EQ(venv["torch"]["variant"], "cu124");
  EXPECT_EQ(venv["torch"]["cuda"], "12.4");
  EXPECT_EQ(venv["torch"]["cudnn"], "9.1.0.70");
  EXPECT_EQ(venv["torch"]["nccl"], "2.21.5");
  EXPECT_TRUE(venv["torch"]["arch_list"].empty()); // unknown without --deep
  EXPECT_TRUE(venv["torch"]["arch_list_source"].is_null());
  EXPECT_EQ(venv["torchvision"], "0.20.1+cu124");
  EXPECT_EQ(venv["torchaudio"], "2.5.1+cu124");
  EXPECT_EQ(venv["transformers"], "4.46.3");
  EXPECT_TRUE(sw["python_envs"][1]["transformers"].is_null());
  EXPECT_EQ(venv["nvidia_wheels"]["nvidia-cudnn-cu12"], "9.1.0.70");
  EXPECT_TRUE(venv["deep"].is_null()); // no interpreter ran
  EXPECT_EQ(sw["master_port"], 29500);
  EXPECT_EQ(sw["master_port_in_use"], false);
  EXPECT_EQ(sw["host_compiler_version"], "12");
  EXPECT_EQ(sw["runtime"]["kind"], "bare-metal");
  EXPECT_FALSE(sw["env"].contains("LD_LIBRARY_PATH"));

  auto text = info_of("sw-venv-torch251", kVenvEnv);
  EXPECT_TRUE(has(text, "Software: kernel and driver")) << text;
  EXPECT_TRUE(has(text, "loaded 550.54.15 (proprietary module)")) << text;
  EXPECT_TRUE(has(text, "2.5.1+cu124")) << text;
  EXPECT_TRUE(has(text, "transformers 4.46.3")) << text;
  EXPECT_TRUE(has(text, "(active)")) << text;
  EXPECT_TRUE(has(text, "bare-metal")) << text;
}

TEST(InfoSoftwareCli, MasterPortInUseAndNcclVariables) {
  auto env = kVenvEnv;
  env.insert(env.end(), {"MASTER_PORT=631", "NCCL_P2P_DISABLE=1", "NCCL_DEBUG=INFO",
                         "CUDA_LAUNCH_BLOCKING=1", "UNRELATED=x"});
  auto sw = snapshot_of("sw-venv-torch251", env)["software"];
  EXPECT_EQ(sw["master_port"], 631);
  EXPECT_EQ(sw["master_port_in_use"], true); // the fixture's /proc/net/tcp listens on 631
  EXPECT_EQ(sw["env"]["NCCL_P2P_DISABLE"], "1");
  EXPECT_EQ(sw["env"]["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(sw["env"]["CUDA_LAUNCH_BLOCKING"], "1");
  EXPECT_FALSE(sw["env"].contains("UNRELATED"));
  auto text = info_of("sw-venv-torch251", env);
  EXPECT_TRUE(has(text, "MASTER_PORT 631")) << text;
  EXPECT_TRUE(has(text, "in use")) << text;
}

TEST(InfoSoftwareCli, CpuTorchOnAGpuMachine) {
  auto sw = snapshot_of("sw-cpu-torch", kVenvEnv)["software"];
  EXPECT_EQ(sw["kernel"]["nvidia"]["loaded"], true);
  EXPECT_EQ(sw["driver_libraries"]["libcuda"][0]["version"], "550.54.15");
  const auto &venv = env_named(sw, "venv");
  EXPECT_EQ(venv["torch"]["version"], "2.5.1+cpu");
  EXPECT_EQ(venv["torch"]["variant"], "cpu");
  EXPECT_TRUE(venv["torch"]["cuda"].is_null());
  EXPECT_TRUE(venv["torch"]["cudnn"].is_null());
  EXPECT_EQ(venv["torchvision"], "0.20.1+cpu");
  auto text = info_of("sw-cpu-torch", kVenvEnv);
  EXPECT_TRUE(has(text, "2.5.1+cpu")) << text;
}

TEST(InfoSoftwareCli, TwoToolkitsWithLdLibraryPathAtTheOlder) {
  std::vector<std::string> env = {"PATH=/usr/local/cuda-12.4/bin:/home/user/venv/bin:/usr/bin:/bin",
                                  "LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64",
                                  "CUDA_HOME=/usr/local/cuda-12.4", "VIRTUAL_ENV=/home/user/venv",
                                  "HOME=/home/user"};
  auto sw = snapshot_of("sw-two-toolkits", env)["software"];
  ASSERT_EQ(sw["cuda_toolkits"].size(), 2u);
  EXPECT_EQ(sw["cuda_toolkits"][0]["root"], "/usr/local/cuda-11.8");
  EXPECT_EQ(sw["cuda_toolkits"][0]["version"], "11.8.89"); // from version.txt
  EXPECT_EQ(sw["cuda_toolkits"][1]["root"], "/usr/local/cuda-12.4");
  EXPECT_EQ(sw["cuda_toolkits"][1]["version"], "12.4.131"); // from version.json
  EXPECT_EQ(sw["cuda_selection"]["by_path"], "/usr/local/cuda-12.4");
  EXPECT_EQ(sw["cuda_selection"]["by_cuda_home"], "/usr/local/cuda-12.4");
  EXPECT_EQ(sw["cuda_selection"]["by_ld_library_path"], "/usr/local/cuda-11.8");
  EXPECT_EQ(sw["driver_libraries"]["search_path"][0], "/usr/local/cuda-11.8/lib64");
  bool shadowing_cudnn = false;
  for (const auto &lib : sw["libraries"]["cudnn"])
    if (lib["version"] == "8.9.2" && lib["via_ld_library_path"] == true)
      shadowing_cudnn = true;
  EXPECT_TRUE(shadowing_cudnn) << sw["libraries"]["cudnn"].dump();
  EXPECT_EQ(sw["env"]["LD_LIBRARY_PATH"], "/usr/local/cuda-11.8/lib64");
  // The venv's torch still bundles its own cuDNN 9.
  EXPECT_EQ(env_named(sw, "venv")["torch"]["cudnn"], "9.1.0.70");

  auto r = run_dlrig({"info", "--no-nvml", "--sysroot", fixture("sw-two-toolkits")}, env);
  EXPECT_TRUE(has(r.out, "LD_LIBRARY_PATH")) << r.out;
  EXPECT_TRUE(has(r.out, "PATH, CUDA_HOME, /usr/local/cuda")) << r.out;
}

TEST(InfoSoftwareCli, StubAheadOfTheDriver) {
  std::vector<std::string> env = {
      "PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64/stubs", "HOME=/home/user"};
  auto sw = snapshot_of("sw-two-toolkits", env)["software"];
  auto libcuda = sw["driver_libraries"]["libcuda"];
  ASSERT_EQ(libcuda.size(), 2u) << libcuda.dump();
  EXPECT_EQ(libcuda[0]["origin"], "toolkit-stub");
  EXPECT_EQ(libcuda[1]["version"], "550.54.15");
  EXPECT_EQ(sw["driver_libraries"]["stub_ahead"], true);
}

TEST(InfoSoftwareCli, CondaCu118BesideSystemCuda124) {
  std::vector<std::string> env = {
      "PATH=/home/user/miniconda3/envs/torch118/bin:/home/user/miniconda3/condabin:"
      "/usr/local/cuda-12.4/bin:/usr/bin:/bin",
      "CONDA_PREFIX=/home/user/miniconda3/envs/torch118", "CONDA_DEFAULT_ENV=torch118",
      "HOME=/home/user"};
  auto sw = snapshot_of("sw-conda-cu118", env)["software"];
  ASSERT_EQ(sw["cuda_toolkits"].size(), 1u);
  EXPECT_EQ(sw["cuda_toolkits"][0]["version"], "12.4.131");
  EXPECT_EQ(sw["cuda_selection"]["by_path"], "/usr/local/cuda-12.4");
  const auto &env118 = env_named(sw, "torch118");
  EXPECT_EQ(env118["kind"], "conda");
  EXPECT_EQ(env118["active"], true);
  EXPECT_EQ(env118["python_version"], "3.10");
  EXPECT_EQ(env118["torch"]["version"], "2.1.2");
  EXPECT_TRUE(env118["torch"]["variant"].is_null());
  EXPECT_EQ(env118["torch"]["cuda"], "11.8");
  EXPECT_EQ(env118["torch"]["cudnn"], "8.7.0.84"); // the conda cudnn package
  EXPECT_EQ(env118["torch"]["nccl"], "2.18.3.1");
  const auto &base = env_named(sw, "base");
  EXPECT_EQ(base["python_version"], "3.12");
  EXPECT_TRUE(base["torch"].is_null());
  auto text = info_of("sw-conda-cu118", env);
  EXPECT_TRUE(has(text, "conda torch118")) << text;
  EXPECT_TRUE(has(text, "11.8")) << text;
}

TEST(InfoSoftwareCli, DockerContainerWithoutTheNvidiaRuntime) {
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"};
  auto sw = snapshot_of("container-no-runtime", env)["software"];
  EXPECT_EQ(sw["runtime"]["kind"], "container");
  EXPECT_EQ(sw["runtime"]["container_engine"], "docker");
  EXPECT_EQ(sw["runtime"]["nvidia_runtime"], false);
  EXPECT_TRUE(sw["driver_libraries"]["libcuda"].empty());
  for (const auto &node : sw["device_nodes"])
    EXPECT_EQ(node["exists"], false) << node.dump();
  // The host's modules show through /proc/modules even so.
  EXPECT_EQ(sw["kernel"]["nvidia"]["loaded"], true);
  EXPECT_TRUE(sw["kernel"]["proc_driver_version"].is_null());
  const auto &sys = sw["python_envs"][0];
  EXPECT_EQ(sys["kind"], "system");
  EXPECT_EQ(sys["torch"]["version"], "2.5.1+cu124");
  EXPECT_EQ(sys["site_packages"], "/usr/local/lib/python3.10/dist-packages");
  auto text = info_of("container-no-runtime", env);
  EXPECT_TRUE(has(text, "container (docker), no GPU injected")) << text;
  EXPECT_TRUE(has(text, "libcuda.so.1         not found")) << text;
  EXPECT_TRUE(has(text, "nvidiactl missing")) << text;
}

TEST(InfoSoftwareCli, Kubernetes) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "KUBERNETES_SERVICE_HOST=10.96.0.1"};
  auto sw = snapshot_of("container-no-runtime", env)["software"];
  EXPECT_EQ(sw["runtime"]["container_engine"], "kubernetes");
}

TEST(InfoSoftwareCli, Wsl2) {
  std::vector<std::string> env = {"PATH=/home/user/venv/bin:/usr/bin:/bin",
                                  "VIRTUAL_ENV=/home/user/venv", "HOME=/home/user"};
  auto sw = snapshot_of("wsl2", env)["software"];
  EXPECT_EQ(sw["runtime"]["kind"], "wsl2");
  ASSERT_EQ(sw["driver_libraries"]["libcuda"].size(), 1u);
  EXPECT_EQ(sw["driver_libraries"]["libcuda"][0]["path"], "/usr/lib/wsl/lib/libcuda.so.1");
  EXPECT_EQ(sw["driver_libraries"]["libcuda"][0]["origin"], "wsl");
  EXPECT_TRUE(sw["driver_libraries"]["libcuda"][0]["version"].is_null());
  EXPECT_EQ(sw["kernel"]["nvidia"]["loaded"], false); // no Linux driver inside WSL
  EXPECT_EQ(env_named(sw, "venv")["python_version"], "3.12.3");
  auto text = info_of("wsl2", env);
  EXPECT_TRUE(has(text, "wsl2")) << text;
  EXPECT_TRUE(has(text, "/usr/lib/wsl/lib/libcuda.so.1")) << text;
}

TEST(InfoSoftwareCli, NoInterpreterRunsWithoutDeep) {
  // The hanging fake interpreter would take the whole limit if it were started.
  auto start = std::chrono::steady_clock::now();
  auto sw = snapshot_of("sw-venv-torch251", {"PATH=/usr/bin:/bin"},
                        {"--python", "/opt/fake/hang/bin/python3"})["software"];
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  for (const auto &e : sw["python_envs"])
    EXPECT_TRUE(e["deep"].is_null()) << e.dump();
}

TEST(InfoSoftwareCli, DeepWithFakeInterpreters) {
  std::vector<std::string> extra = {"--deep", "--deep-timeout", "1"};
  for (const char *name : {"good", "nocuda", "hang", "crash", "garbage", "fails", "notexec"})
    extra.insert(extra.end(), {"--python", std::string("/opt/fake/") + name + "/bin/python3"});
  auto start = std::chrono::steady_clock::now();
  auto sw =
      snapshot_of("sw-venv-torch251", {"PATH=/usr/bin:/bin", "HOME=/home/user"}, extra)["software"];
  auto took = std::chrono::steady_clock::now() - start;
  // All run in parallel under one limit: about 1 s, never 1 s per interpreter.
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  std::map<std::string, json> deep;
  for (const auto &e : sw["python_envs"])
    deep[e["interpreter"].get<std::string>()] = e["deep"];
  auto of = [&](const std::string &name) { return deep["/opt/fake/" + name + "/bin/python3"]; };
  EXPECT_EQ(of("good")["ran"], true);
  EXPECT_EQ(of("good")["cuda_available"], true);
  EXPECT_EQ(of("good")["device_count"], 1);
  EXPECT_EQ(of("good")["arch_list"].size(), 7u);
  EXPECT_EQ(of("nocuda")["cuda_available"], false);
  EXPECT_TRUE(has(of("nocuda")["error"].get<std::string>(), "too old")) << of("nocuda");
  EXPECT_EQ(of("hang")["ran"], false);
  EXPECT_TRUE(has(of("hang")["error"].get<std::string>(), "no answer within 1.0 s"));
  EXPECT_TRUE(of("hang")["cuda_available"].is_null());
  EXPECT_TRUE(has(of("crash")["error"].get<std::string>(), "signal 11")) << of("crash");
  EXPECT_TRUE(has(of("garbage")["error"].get<std::string>(), "not a JSON object"));
  EXPECT_TRUE(has(of("fails")["error"].get<std::string>(), "exited with code 1"));
  EXPECT_TRUE(has(of("notexec")["error"].get<std::string>(), "not run"));
  // The fixture's /usr/bin/python3 is not a script inside the fixture: never run.
  EXPECT_TRUE(has(deep["/usr/bin/python3"]["error"].get<std::string>(), "not run"));
}

TEST(InfoSoftwareCli, DeepArchListFillsTorch) {
  // The fake environment holds torch files; its interpreter answers with the arch list.
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/home/user"};
  std::vector<std::string> python = {"--python", "/opt/fake/good/bin/python3"};
  auto find = [](const json &sw) {
    for (const auto &e : sw["python_envs"])
      if (e["interpreter"] == "/opt/fake/good/bin/python3")
        return e;
    return json();
  };
  auto plain = find(snapshot_of("sw-venv-torch251", env, python)["software"]);
  EXPECT_EQ(plain["torch"]["version"], "2.5.1+cu124");
  EXPECT_TRUE(plain["torch"]["arch_list"].empty());
  python.insert(python.begin(), {"--deep", "--deep-timeout", "5"});
  auto deep = find(snapshot_of("sw-venv-torch251", env, python)["software"]);
  EXPECT_EQ(deep["torch"]["arch_list"].size(), 7u) << deep.dump();
  EXPECT_EQ(deep["torch"]["arch_list_source"], "deep");
  auto r = run_dlrig({"info", "--no-nvml", "--sysroot", fixture("sw-venv-torch251"), "--deep",
                      "--python", "/opt/fake/good/bin/python3"},
                     env);
  EXPECT_TRUE(has(r.out, "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90")) << r.out;
  EXPECT_TRUE(has(r.out, "deep: cuda available, 1 devices")) << r.out;
}

TEST(InfoSoftwareCli, Server8xH100IsHealthy) {
  auto s = snapshot_of("server-8xh100", kVenvEnv);
  const auto &sw = s["software"];
  EXPECT_EQ(sw["kernel"]["nvidia"]["version"], "550.54.15");
  EXPECT_EQ(sw["kernel"]["nvidia_uvm"]["loaded"], true);
  EXPECT_EQ(sw["kernel"]["nvidia_peermem"]["loaded"], true);
  EXPECT_EQ(sw["kernel"]["nouveau"]["loaded"], false);
  EXPECT_EQ(sw["kernel"]["iommu"], "pt");
  EXPECT_EQ(sw["kernel"]["iommu_groups"], true);
  EXPECT_EQ(sw["services"]["persistenced_running"], true);
  EXPECT_EQ(sw["services"]["fabricmanager_running"], true);
  EXPECT_EQ(sw["services"]["nvswitch_present"], true); // 4 NVSwitches, class 0x068000
  int gpu_nodes = 0;
  for (const auto &node : sw["device_nodes"]) {
    EXPECT_EQ(node["exists"], true) << node.dump();
    EXPECT_EQ(node["accessible"], true) << node.dump();
    auto path = node["path"].get<std::string>();
    if (path.size() == 12 && path.rfind("/dev/nvidia", 0) == 0)
      ++gpu_nodes; // /dev/nvidia0 .. /dev/nvidia7
  }
  EXPECT_EQ(gpu_nodes, 8);
  EXPECT_EQ(sw["driver_libraries"]["libcuda"][0]["version"], "550.54.15");
  EXPECT_EQ(sw["driver_libraries"]["stub_ahead"], false);
  EXPECT_EQ(sw["driver_libraries"]["compat_ahead"], false);
  EXPECT_EQ(sw["cuda_toolkits"][0]["version"], "12.4.131");
  const auto &venv = env_named(sw, "venv");
  EXPECT_EQ(venv["torch"]["version"], "2.5.1+cu124");
  EXPECT_EQ(venv["torch"]["cudnn"], "9.1.0.70");
  EXPECT_EQ(venv["torch"]["nccl"], "2.21.5");
  EXPECT_EQ(sw["master_port_in_use"], false);
  EXPECT_EQ(sw["runtime"]["kind"], "bare-metal");
  // Eight GPUs behind PCIe switches: the bridges are listed, ACS unknown without root.
  EXPECT_FALSE(sw["acs"].empty());
  for (const auto &b : sw["acs"])
    EXPECT_TRUE(b["redirect_enabled"].is_null()) << b.dump();
  auto text = info_of("server-8xh100", kVenvEnv);
  EXPECT_TRUE(has(text, "running (NVSwitch present)")) << text;
}

TEST(InfoSoftwareCli, DesktopRtx4090IsHealthy) {
  auto sw = snapshot_of("desktop-rtx4090", kVenvEnv)["software"];
  EXPECT_EQ(sw["kernel"]["nvidia"]["loaded"], true);
  EXPECT_EQ(sw["kernel"]["nouveau"]["blacklisted"], true);
  EXPECT_EQ(sw["services"]["nvswitch_present"], false);
  EXPECT_EQ(sw["driver_libraries"]["libcuda"][0]["version"], "550.54.15");
  EXPECT_TRUE(sw["cuda_toolkits"].empty());
  EXPECT_FALSE(sw["env"].contains("LD_LIBRARY_PATH"));
  const auto &venv = env_named(sw, "venv");
  EXPECT_EQ(venv["active"], true);
  EXPECT_EQ(venv["python_version"], "3.12.3");
  EXPECT_EQ(venv["torch"]["variant"], "cu124");
  EXPECT_TRUE(sw["acs"].empty()); // one GPU: no bridge between GPUs
}

TEST(InfoSoftwareCli, RedactTakesTheUserOutOfPaths) {
  auto r = run_dlrig(
      {"snapshot", "--no-nvml", "--redact", "--sysroot", fixture("sw-venv-torch251")}, kVenvEnv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(r.out, "/home/user")) << r.out;
  auto sw = json::parse(r.out)["software"];
  EXPECT_EQ(sw["python_envs"][0]["interpreter"], "~/venv/bin/python3");
}

TEST(InfoSoftwareCli, JsonRoundTripKeepsTheSoftware) {
  auto snap = run_dlrig({"snapshot", "--no-nvml", "--sysroot", fixture("sw-two-toolkits")},
                        {"PATH=/usr/local/cuda-12.4/bin:/usr/bin:/bin",
                         "LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64", "HOME=/home/user"});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  std::string path = "/tmp/dlrig-sw-roundtrip.json";
  FILE *f = std::fopen(path.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs(snap.out.c_str(), f);
  std::fclose(f);
  auto again = run_dlrig({"info", "--json", "--from", path});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  // Everything but the envelope's context (this run's time, command line and source).
  auto a = nlohmann::json::parse(snap.out), b = nlohmann::json::parse(again.out);
  a.erase("context");
  b.erase("context");
  EXPECT_EQ(a, b);
}

} // namespace
} // namespace dlrig::test

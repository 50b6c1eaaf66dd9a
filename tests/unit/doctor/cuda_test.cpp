#include "unit/doctor/machines.hpp"

#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

Snapshot two_toolkits() {
  Snapshot s = healthy_desktop();
  s.software.cuda_toolkits = {
      CudaToolkit{"/usr/local/cuda-11.8", "11.8", "/usr/local/cuda-11.8/bin/nvcc", {"usr-local"}},
      CudaToolkit{
          "/usr/local/cuda-12.4", "12.4", "/usr/local/cuda-12.4/bin/nvcc", {"usr-local", "path"}}};
  s.software.cuda_selection.by_path = "/usr/local/cuda-12.4";
  s.software.cuda_selection.usr_local_cuda = "/usr/local/cuda-12.4";
  return s;
}

TEST(DoctorCuda, LdLibraryPathShadowsTheWheel) {
  Snapshot s = two_toolkits();
  s.software.env["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.8/lib64:/opt/other/lib";
  s.software.cuda_selection.by_ld_library_path = "/usr/local/cuda-11.8";
  s.software.libraries.cudnn = {
      FoundLibrary{"/usr/local/cuda-11.8/lib64/libcudnn.so.8", "8.9.2", "system", std::nullopt}};
  auto f = run_check("cuda.ld-library-path-shadows", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail); // cuDNN 8 against torch's 9
  EXPECT_EQ(f[0].fix[0], "export LD_LIBRARY_PATH=/opt/other/lib");
}

TEST(DoctorCuda, LdLibraryPathWarnsForSameMajorAndIgnoresPipCopies) {
  Snapshot s = healthy_desktop();
  s.software.env["LD_LIBRARY_PATH"] = "/usr/lib/cudnn";
  s.software.libraries.cudnn = {
      FoundLibrary{"/usr/lib/cudnn/libcudnn.so.9", "9.5.1", "system", std::nullopt}};
  EXPECT_EQ(worst("cuda.ld-library-path-shadows", s), Severity::warn);
  s.software.libraries.cudnn[0].origin = "pip";
  EXPECT_TRUE(run_check("cuda.ld-library-path-shadows", s).empty());
  EXPECT_TRUE(run_check("cuda.ld-library-path-shadows", healthy_desktop()).empty());
}

// torch refuses an older cuDNN minor than it was built with (torch/backends/cudnn/__init__.py):
// on LD_LIBRARY_PATH, ahead of the bundled 9.1, a 9.0 is a failure, not a warning.
TEST(DoctorCuda, LdLibraryPathOlderCudnnMinorFails) {
  Snapshot s = healthy_desktop();
  s.software.env["LD_LIBRARY_PATH"] = "/usr/lib/cudnn";
  s.software.libraries.cudnn = {
      FoundLibrary{"/usr/lib/cudnn/libcudnn.so.9.0.0", "9.0.0", "system", true}};
  auto f = run_check("cuda.ld-library-path-shadows", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_NE(f[0].title.find("older minor"), std::string::npos) << f[0].title;
  // The same patch level as torch's is only the shadowing warning.
  s.software.libraries.cudnn[0].version = "9.1.0";
  EXPECT_EQ(worst("cuda.ld-library-path-shadows", s), Severity::warn);
}

Snapshot with_system_cudnn(std::string version) {
  Snapshot s = healthy_desktop();
  s.software.driver_libraries.search_path = {"/usr/local/lib", "/lib/x86_64-linux-gnu",
                                             "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"};
  s.software.libraries.cudnn = {
      FoundLibrary{"/home/ana/venv/lib/python3.11/site-packages/nvidia/cudnn/lib", "9.1.0.70",
                   "pip", false},
      FoundLibrary{"/usr/lib/x86_64-linux-gnu/libcudnn.so." + version, version, "system", false}};
  s.software.python_envs[0].site_packages = "/home/ana/venv/lib/python3.11/site-packages";
  return s;
}

// The cuDNN 9 wheel's sub-libraries (cuDNN 9 installation guide, "cuDNN library components").
const std::vector<std::string> kCudnn9Wheel = {"libcudnn_adv.so.9",
                                               "libcudnn_cnn.so.9",
                                               "libcudnn_engines_precompiled.so.9",
                                               "libcudnn_engines_runtime_compiled.so.9",
                                               "libcudnn_graph.so.9",
                                               "libcudnn_heuristic.so.9",
                                               "libcudnn_ops.so.9"};

TEST(DoctorCuda, SystemCudnnOnTheDefaultLoaderPath) {
  // Beside the bundled 9.1.0.70, a 9.0 from ld.so.conf mixes in only through a sub-library the
  // bundle lacks: cuDNN opens them by name, and the loader looks past torch's folders for it.
  Snapshot s = with_system_cudnn("9.0.0");
  s.software.libraries.cudnn[0].members = kCudnn9Wheel;
  s.software.libraries.cudnn[1].members =
      std::vector<std::string>{"libcudnn_cnn.so.9", "libcudnn_ops.so.9"};
  // A complete bundle: nothing mixes in (an H200 with a system 9.14 beside torch's 9.19 trained
  // ResNet-50 through cuDNN, docs/doctor.md).
  EXPECT_TRUE(run_check("cuda.system-cudnn", s).empty());
  s.software.libraries.cudnn[1].members->push_back("libcudnn_engines_tensor_ir.so.9");
  auto f = run_check("cuda.system-cudnn", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warn);
  EXPECT_NE(f[0].title.find("lacks libcudnn_engines_tensor_ir.so.9"), std::string::npos)
      << f[0].title;
  // Folders the snapshot did not list (an older snapshot): the check cannot decide.
  f = run_check("cuda.system-cudnn", with_system_cudnn("9.0.0"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::info);
  EXPECT_EQ(f[0].title.rfind("Could not check: whether the cuDNN torch bundles lacks", 0), 0u)
      << f[0].title;
  EXPECT_EQ(run_check("cuda.system-cudnn", with_system_cudnn("9.1.0")).size(), 0u);
  EXPECT_EQ(run_check("cuda.system-cudnn", with_system_cudnn("8.9.7")).size(), 0u); // .so.8
  // A torch without a bundled cuDNN loads the system copy: an older minor than the 9.1.0.70 it
  // was built with (the knowledge base's row for 2.5.1+cu124) fails; a newer one is accepted.
  Snapshot unbundled = with_system_cudnn("9.0.0");
  unbundled.software.python_envs[0].torch->cudnn.reset();
  unbundled.software.libraries.cudnn.erase(unbundled.software.libraries.cudnn.begin());
  f = run_check("cuda.system-cudnn", unbundled);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::fail);
  EXPECT_EQ(f[0].fix[0].rfind("pip install nvidia-cudnn-cu12==9.1.0.70", 0), 0u) << f[0].fix[0];
  Snapshot newer = with_system_cudnn("9.5.1");
  newer.software.python_envs[0].torch->cudnn.reset();
  EXPECT_TRUE(run_check("cuda.system-cudnn", newer).empty());
  // On LD_LIBRARY_PATH it is cuda.ld-library-path-shadows' finding, not this one's.
  Snapshot ld = with_system_cudnn("9.0.0");
  ld.software.env["LD_LIBRARY_PATH"] = "/usr/lib/x86_64-linux-gnu";
  ld.software.libraries.cudnn[1].via_ld_library_path = true;
  EXPECT_TRUE(run_check("cuda.system-cudnn", ld).empty());
  EXPECT_EQ(worst("cuda.ld-library-path-shadows", ld), Severity::fail);
  // A toolkit folder the loader does not search is not reached.
  Snapshot toolkit = with_system_cudnn("9.0.0");
  toolkit.software.libraries.cudnn[1].path = "/usr/local/cuda-12.4/lib64/libcudnn.so.9.0.0";
  EXPECT_TRUE(run_check("cuda.system-cudnn", toolkit).empty());
}

TEST(DoctorCuda, MultipleToolkitsDisagree) {
  Snapshot s = two_toolkits();
  s.software.cuda_selection.by_cuda_home = "/usr/local/cuda-11.8";
  auto f = run_check("cuda.multiple-toolkits", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "export CUDA_HOME=/usr/local/cuda-12.4"); // torch is cu124
  EXPECT_TRUE(run_check("cuda.multiple-toolkits", two_toolkits()).empty());
}

TEST(DoctorCuda, ToolkitNewerThanDriver) {
  Snapshot s = two_toolkits();
  s.software.cuda_toolkits[1] =
      CudaToolkit{"/usr/local/cuda-12.8", "12.8.61", "/usr/local/cuda-12.8/bin/nvcc", {"path"}};
  s.software.cuda_selection.by_path = "/usr/local/cuda-12.8";
  auto f = run_check("cuda.toolkit-newer-than-driver", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].fix[0].find("570.26"), std::string::npos) << f[0].fix[0];
  EXPECT_TRUE(run_check("cuda.toolkit-newer-than-driver", two_toolkits()).empty());
}

TEST(DoctorCuda, ToolkitMismatchesTorch) {
  Snapshot s = two_toolkits();
  s.software.cuda_selection.by_cuda_home = "/usr/local/cuda-11.8";
  s.software.env["CUDA_HOME"] = "/usr/local/cuda-11.8";
  auto f = run_check("cuda.toolkit-mismatches-torch", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warn); // CUDA_HOME set: extensions are built with it
  EXPECT_EQ(f[0].fix[0], "export CUDA_HOME=/usr/local/cuda-12.4");
  EXPECT_TRUE(run_check("cuda.toolkit-mismatches-torch", two_toolkits()).empty());
}

// /usr/local/cuda at another CUDA major than torch's is harmless until something compiles
// against torch: a note, and a warning once the machine shows extension builds.
TEST(DoctorCuda, ToolkitMismatchIsANoteUnlessExtensionsAreBuilt) {
  Snapshot s = two_toolkits();
  s.software.cuda_selection.by_path.reset();
  s.software.cuda_selection.usr_local_cuda = "/usr/local/cuda-11.8";
  auto f = run_check("cuda.toolkit-mismatches-torch", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::info);
  EXPECT_EQ(f[0].fix[0], "before building a CUDA extension: export CUDA_HOME=/usr/local/cuda-12.4");
  EXPECT_EQ(alarms(s), std::vector<std::string>{});

  Snapshot jit = s;
  jit.software.torch_extensions_cache = "/home/ana/.cache/torch_extensions";
  EXPECT_EQ(worst("cuda.toolkit-mismatches-torch", jit), Severity::warn);
  Snapshot built = s;
  built.software.python_envs[0].built_here = {"flash-attn==2.6.3"};
  f = run_check("cuda.toolkit-mismatches-torch", built);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warn);
  EXPECT_EQ(f[0].fix[0], "export CUDA_HOME=/usr/local/cuda-12.4");
  Snapshot arch = s;
  arch.software.env["TORCH_CUDA_ARCH_LIST"] = "8.9";
  EXPECT_EQ(worst("cuda.toolkit-mismatches-torch", arch), Severity::warn);
}

TEST(DoctorCuda, NoToolkitIsInfo) {
  EXPECT_EQ(worst("cuda.no-toolkit", healthy_desktop()), Severity::info);
  EXPECT_EQ(worst("cuda.no-toolkit", two_toolkits()), Severity::ok);
}

// ---- cuda.cublaslt-not-found ---------------------------------------------------------------

// What the probe lists on a machine whose venv lacks the nvidia wheels (no file anywhere).
LibraryFiles nothing_found() {
  return LibraryFiles{{"/home/ana/venv/lib/python3.11/site-packages/nvidia/cublas/lib",
                       "/home/ana/venv/lib/python3.11/site-packages/torch/lib",
                       "/usr/lib/x86_64-linux-gnu"},
                      {}};
}

TEST(DoctorCuda, CublasLtFoundPasses) {
  EXPECT_TRUE(run_check("cuda.cublaslt-not-found", healthy_desktop()).empty());
  EXPECT_TRUE(run_check("cuda.cublaslt-not-found", healthy_server()).empty());
}

TEST(DoctorCuda, CublasLtNowhereWarnsNamingEveryFolderAndTheFix) {
  Snapshot s = healthy_desktop();
  s.software.cublaslt_files = nothing_found();
  s.software.python_envs[0].root = "/home/ana/venv";
  auto f = run_check("cuda.cublaslt-not-found", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::warn);
  EXPECT_EQ(f[0].title, "cuBLASLt (libcublasLt.so*) is in none of the 3 folders looked in: "
                        "PyTorch's GPU matmuls and dlrig bench's gpu.gemm.* cannot load it");
  std::string looked;
  for (const auto &e : f[0].evidence)
    if (e.key == "looked_in")
      looked = e.value;
  EXPECT_EQ(looked, "/home/ana/venv/lib/python3.11/site-packages/nvidia/cublas/lib; "
                    "/home/ana/venv/lib/python3.11/site-packages/torch/lib; "
                    "/usr/lib/x86_64-linux-gnu");
  ASSERT_EQ(f[0].fix.size(), 3u);
  EXPECT_EQ(f[0].fix[0], "/home/ana/venv/bin/pip install nvidia-cublas-cu12");
  EXPECT_EQ(f[0].fix[1], "/home/ana/venv/bin/pip install --force-reinstall torch==2.5.1 "
                         "--index-url https://download.pytorch.org/whl/cu124");
  EXPECT_EQ(f[0].fix[2],
            "or, with a copy elsewhere: export DLRIG_CUBLASLT_LIBRARY=/path/to/libcublasLt.so.12");
  // A CUDA 13 torch: no -cu13 wheel named, the reinstall brings nvidia/cu13/lib.
  s.software.python_envs[0].torch->cuda = "13.0";
  s.software.python_envs[0].torch->variant = "cu130";
  s.software.python_envs[0].torch->version = "2.9.0+cu130";
  f = run_check("cuda.cublaslt-not-found", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "/home/ana/venv/bin/pip install --force-reinstall torch==2.9.0 "
                         "--index-url https://download.pytorch.org/whl/cu130");
}

TEST(DoctorCuda, CublasLtIsNoConcernWithoutAGpuOrACudaTorch) {
  Snapshot cpu_only = healthy_desktop(); // no GPU on the bus: a CPU-only machine
  cpu_only.software.cublaslt_files = nothing_found();
  cpu_only.gpus.clear();
  EXPECT_TRUE(run_check("cuda.cublaslt-not-found", cpu_only).empty());
  Snapshot cpu_torch = healthy_desktop(); // a +cpu build
  cpu_torch.software.cublaslt_files = nothing_found();
  cpu_torch.software.python_envs[0].torch->cuda = std::nullopt;
  EXPECT_TRUE(run_check("cuda.cublaslt-not-found", cpu_torch).empty());
  Snapshot no_torch = healthy_desktop();
  no_torch.software.cublaslt_files = nothing_found();
  no_torch.software.python_envs[0].torch = std::nullopt;
  EXPECT_TRUE(run_check("cuda.cublaslt-not-found", no_torch).empty());
}

TEST(DoctorCuda, CublasLtWithoutAListingCannotBeChecked) {
  Snapshot s = healthy_desktop();
  s.software.cublaslt_files = std::nullopt; // an older snapshot
  auto f = run_check("cuda.cublaslt-not-found", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::info);
  EXPECT_EQ(f[0].title.rfind("Could not check", 0), 0u) << f[0].title;
}

TEST(DoctorCuda, CublasLtInACondaEnvironmentSaysConda) {
  Snapshot s = healthy_desktop();
  s.software.cublaslt_files = nothing_found();
  auto &e = s.software.python_envs[0];
  e.kind = "conda";
  e.root = "/home/ana/miniconda3/envs/train";
  auto f = run_check("cuda.cublaslt-not-found", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "conda install -p /home/ana/miniconda3/envs/train -c nvidia libcublas");
}

} // namespace
} // namespace dlrig::doctor::test

// The cuBLASLt seam (platform/cublaslt.*): where the library is looked for (the torch
// environment's copy first), what a library without a function gives, and the version texts. The
// fake cuBLASLt (tests/fake_cublaslt) runs gpu.gemm end to end in bench/gpu_test.cpp and the CLI
// tests.
#include "dlrig/platform/cublaslt.hpp"
#include "dlrig/platform/nccl.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dlrig::cublaslt {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path &p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "";
}

TEST(CublasLtSeam, VersionsReadAsTheLibraryWritesThem) {
  EXPECT_EQ(version_text(120405), "12.4.5");
  EXPECT_EQ(version_text(130100), "13.1.0");
  EXPECT_EQ(cuda_version_text(12040), "12.4");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
}

TEST(CublasLtSeam, TheActiveTorchEnvironmentsCopyComesFirstThenToolkitsThenTheLoader) {
  const fs::path root = fs::temp_directory_path() / "dlrig_cublaslt_candidates";
  fs::remove_all(root);
  touch(root / "venv/site-packages/nvidia/cublas/lib/libcublasLt.so.12");
  touch(root / "conda/site-packages/nvidia/cu13/lib/libcublasLt.so.13");
  touch(root / "conda/site-packages/nvidia/cu13/lib/libcublasLt.so.13.1.0.3");
  touch(root / "cuda-12.4/lib64/libcublasLt.so");
  touch(root / "cuda-12.4/lib64/libcublasLt.so.12");
  fs::create_directories(root / "notorch/site-packages/nvidia/cublas/lib");
  Snapshot s;
  PythonEnv inactive, active, without;
  inactive.interpreter = (root / "conda/bin/python").string();
  inactive.site_packages = (root / "conda/site-packages").string();
  inactive.torch = TorchInstall{};
  active.interpreter = (root / "venv/bin/python").string();
  active.root = (root / "venv").string();
  active.active = true;
  active.site_packages = (root / "venv/site-packages").string();
  active.torch = TorchInstall{};
  without.interpreter = "/usr/bin/python3";
  without.site_packages = (root / "notorch/site-packages").string();
  s.software.python_envs = {inactive, without, active};
  CudaToolkit tk;
  tk.root = (root / "cuda-12.4").string();
  s.software.cuda_toolkits = {tk};
  auto c = candidates(&s, std::nullopt);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0].path, (root / "venv/site-packages/nvidia/cublas/lib/libcublasLt.so.12").string());
  EXPECT_NE(c[0].origin.find("torch environment"), std::string::npos) << c[0].origin;
  EXPECT_NE(c[0].origin.find((root / "venv").string()), std::string::npos) << c[0].origin;
  EXPECT_EQ(c[1].path, (root / "conda/site-packages/nvidia/cu13/lib/libcublasLt.so.13").string());
  EXPECT_EQ(c[2].path, (root / "cuda-12.4/lib64/libcublasLt.so.12").string());
  EXPECT_EQ(c[2].origin, "the CUDA toolkit " + tk.root);
  EXPECT_EQ(c[3].path, "libcublasLt.so.13");
  EXPECT_EQ(c[5].origin, "the loader's search path");
  // The environment variable wins alone; no snapshot gives the loader's names.
  auto o = candidates(&s, std::string("/x/libcublasLt.so.12"));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].origin, "DLRIG_CUBLASLT_LIBRARY");
  EXPECT_EQ(candidates(nullptr, std::nullopt).size(), 3u);
  fs::remove_all(root);
}

// What the probe records for doctor (software.cublaslt_files): the same places listed through a
// sysroot, every folder named, a conda environment's lib and the loader's folders included.
TEST(CublasLtSeam, TheProbesListingNamesEveryFolderAndFindsThroughTheSysroot) {
  const fs::path root = fs::temp_directory_path() / "dlrig_cublaslt_files";
  fs::remove_all(root);
  touch(root / "opt/conda/envs/t/lib/libcublasLt.so.11");
  touch(root / "usr/lib/x86_64-linux-gnu/libcublasLt.so.12");
  fs::create_directories(root / "home/u/venv/lib/site-packages/nvidia/cublas/lib");
  Snapshot s;
  PythonEnv venv, conda;
  venv.interpreter = "/home/u/venv/bin/python";
  venv.root = "/home/u/venv";
  venv.active = true;
  venv.site_packages = "/home/u/venv/lib/site-packages";
  venv.torch = TorchInstall{};
  venv.torch->path = "/home/u/venv/lib/site-packages/torch";
  conda.interpreter = "/opt/conda/envs/t/bin/python";
  conda.root = "/opt/conda/envs/t";
  conda.kind = "conda";
  conda.torch = TorchInstall{};
  s.software.python_envs = {conda, venv};
  s.software.driver_libraries.search_path = {"/usr/lib/x86_64-linux-gnu"};
  const Sysroot sysroot(root.string());
  auto f = library_files(s, std::nullopt, library_search(), sysroot);
  EXPECT_EQ(f.looked_in,
            (std::vector<std::string>{"/home/u/venv/lib/site-packages/nvidia/cublas/lib",
                                      "/home/u/venv/lib/site-packages/torch/lib",
                                      "/opt/conda/envs/t/lib", "/usr/lib/x86_64-linux-gnu"}));
  ASSERT_EQ(f.found.size(), 2u);
  EXPECT_EQ(f.found[0].path, "/opt/conda/envs/t/lib/libcublasLt.so.11");
  EXPECT_EQ(f.found[0].origin, "the torch environment /opt/conda/envs/t (conda, lib)");
  EXPECT_EQ(f.found[1].path, "/usr/lib/x86_64-linux-gnu/libcublasLt.so.12");
  EXPECT_EQ(f.found[1].origin, "the loader's search path");
  // The variable alone: a path is found when it exists (in the sysroot), a bare name in the
  // loader's folders.
  auto given = library_files(s, std::string("/opt/conda/envs/t/lib/libcublasLt.so.11"),
                             library_search(), sysroot);
  ASSERT_EQ(given.found.size(), 1u);
  EXPECT_EQ(given.found[0].origin, "DLRIG_CUBLASLT_LIBRARY");
  EXPECT_TRUE(library_files(s, std::string("/nowhere/libcublasLt.so.12"), library_search(), sysroot)
                  .found.empty());
  EXPECT_EQ(library_files(s, std::string("libcublasLt.so.12"), library_search(), sysroot)
                .found.at(0)
                .path,
            "/usr/lib/x86_64-linux-gnu/libcublasLt.so.12");
  fs::remove_all(root);
}

TEST(CublasLtSeam, TheFakeLoadsWithItsVersionAndOrigin) {
  setenv("DLRIG_FAKE_CUBLASLT_SCENARIO", DLRIG_TEST_DATA "/fake_cublaslt/h100.json", 1);
  Library l = Library::open({{DLRIG_FAKE_CUBLASLT, "test"}});
  ASSERT_TRUE(l.ready()) << l.error();
  EXPECT_EQ(l.version(), 120405u);
  EXPECT_EQ(l.cudart_version(), 12040u);
  EXPECT_EQ(l.origin(), "test");
  EXPECT_EQ(l.status_text(kNotSupported),
            "CUBLAS_STATUS_NOT_SUPPORTED (15): the functionality requested is not supported");
}

TEST(CublasLtSeam, ALibraryWithoutAFunctionIsPassedOverWithItsName) {
  Library l =
      Library::open({{DLRIG_FAKE_CUBLASLT_OLD, "old"}, {"/nonexistent/libcublasLt.so.12", "gone"}});
  ASSERT_FALSE(l.ready());
  EXPECT_NE(l.error().find("lacks cublasLtMatmulAlgoGetHeuristic"), std::string::npos) << l.error();
  EXPECT_NE(l.error().find("/nonexistent/libcublasLt.so.12"), std::string::npos) << l.error();
  Library none = Library::open({{"libdlrig-absent-cublasLt.so.12", "loader"}});
  EXPECT_EQ(none.error(), "cuBLASLt not found (tried libdlrig-absent-cublasLt.so.12)");
}

TEST(CublasLtSeam, MissingRequiredIgnoresTheOptionalFunctions) {
  EntryPoints t = resolve([](const char *name) -> void * {
    static int x;
    std::string n(name);
    return n == "cublasLtGetStatusName" || n == "cublasLtGetCudartVersion" ? nullptr : &x;
  });
  EXPECT_TRUE(missing_required(t).empty());
  EntryPoints none = resolve([](const char *) -> void * { return nullptr; });
  EXPECT_EQ(missing_required(none).size(), 13u);
}

// An NCCL before 2.14 has no ncclCommInitRankConfig: it still loads (a job's communicator is then
// made with the blocking ncclCommInitRank); ncclCommInitRank itself is required.
TEST(NcclSeam, MissingRequiredIgnoresTheOptionalFunctions) {
  auto without = [](std::vector<std::string> hidden) {
    return nccl::resolve([hidden](const char *name) -> void * {
      static int x;
      return std::find(hidden.begin(), hidden.end(), name) == hidden.end() ? &x : nullptr;
    });
  };
  EXPECT_TRUE(
      nccl::missing_required(without({"ncclGetErrorString", "ncclCommInitRankConfig"})).empty());
  EXPECT_EQ(nccl::missing_required(without({"ncclCommInitRank"})),
            std::vector<std::string>{"ncclCommInitRank"});
}

// The real libraries, where this machine has them (a CUDA toolkit at /usr/local/cuda, or
// DLRIG_TEST_CUDA_LIB naming its lib folder): every function of dlrig's tables is exported under
// the name the table gives, and the version reads. Needs no GPU (nothing is initialised).
std::string toolkit_lib() {
  const char *env = std::getenv("DLRIG_TEST_CUDA_LIB");
  return env && *env ? env : "/usr/local/cuda/lib64";
}

TEST(CublasLtSeam, TheToolkitsLibraryExportsEveryFunctionDlrigCalls) {
  Snapshot s;
  CudaToolkit tk;
  tk.root = fs::path(toolkit_lib()).parent_path().string();
  s.software.cuda_toolkits = {tk};
  auto c = candidates(&s, std::nullopt);
  if (c.empty() || c.front().path.find('/') == std::string::npos)
    GTEST_SKIP() << "no libcublasLt.so in " << toolkit_lib();
  Library l = Library::open({c.front()});
  ASSERT_TRUE(l.ready()) << l.error();
  EXPECT_GE(l.version(), 110000u) << version_text(l.version());
  EXPECT_TRUE(l.cudart_version());
  EXPECT_TRUE(l.api().get_status_name);
  EXPECT_EQ(l.status_text(kNotSupported).rfind("CUBLAS_STATUS_NOT_SUPPORTED (15)", 0), 0u)
      << l.status_text(kNotSupported);
}

TEST(NcclSeam, TheToolkitsLibraryExportsEveryFunctionDlrigCalls) {
  Snapshot s;
  CudaToolkit tk;
  tk.root = fs::path(toolkit_lib()).parent_path().string();
  s.software.cuda_toolkits = {tk};
  auto c = nccl::candidates(&s, std::nullopt);
  if (c.empty() || c.front().path.find('/') == std::string::npos)
    GTEST_SKIP() << "no libnccl.so in " << toolkit_lib();
  nccl::Library l = nccl::Library::open({c.front()});
  ASSERT_TRUE(l.ready()) << l.error();
  EXPECT_GE(l.version(), 2700) << nccl::version_text(l.version());
  EXPECT_EQ(nccl::version_text(22809), "2.28.9");
  EXPECT_EQ(nccl::version_text(2708), "2.7.8");
}

} // namespace
} // namespace dlrig::cublaslt

// probe_software on small sysroots built here: odd files leave fields unknown, never a crash.
#include "dlrig/probe/probe.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace dlrig {
namespace {

namespace stdfs = std::filesystem;

class SoftwareProbeTest : public ::testing::Test {
protected:
  void SetUp() override {
    root = stdfs::temp_directory_path() /
           ("dlrig-sw-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(root);
    stdfs::create_directories(root);
  }
  void TearDown() override { stdfs::remove_all(root); }
  void file(const std::string &path, const std::string &text) {
    auto full = root / path.substr(1);
    stdfs::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary) << text;
  }
  void link(const std::string &path, const std::string &target) {
    auto full = root / path.substr(1);
    stdfs::create_directories(full.parent_path());
    stdfs::create_symlink(target, full);
  }
  SoftwareInfo probe(Environment env) {
    Sysroot fs(root.string());
    ProbeOptions options;
    options.sysroot = root.string();
    snap = Snapshot{};
    ProbeContext ctx{fs, std::move(env), options, snap};
    probe_software(ctx);
    return snap.software;
  }
  stdfs::path root;
  Snapshot snap;
};

TEST_F(SoftwareProbeTest, EmptyRootIsUnknownNotAbsent) {
  auto sw = probe({});
  EXPECT_FALSE(sw.kernel.nvidia.loaded);
  EXPECT_FALSE(sw.kernel.iommu);
  EXPECT_FALSE(sw.services.persistenced_running);
  EXPECT_FALSE(sw.master_port_in_use);
  EXPECT_FALSE(sw.runtime.kind);
  EXPECT_TRUE(sw.python_envs.empty());
  EXPECT_TRUE(sw.cuda_toolkits.empty());
  for (const auto &node : sw.device_nodes)
    EXPECT_FALSE(node.exists) << node.path; // /dev itself is not there: unknown
  EXPECT_FALSE(snap.notes.empty());
}

// collect_env's "Libc version", "Clang version" and "CMake version" from files on a live probe:
// glibc's banner inside libc.so.6, clang's versioned binary, CMake's module folder.
TEST_F(SoftwareProbeTest, ToolchainVersionsFromTheirFiles) {
  file("/lib/x86_64-linux-gnu/libc.so.6",
       std::string("\x7f"
                   "ELF") +
           std::string(2, '\0') + "junk" + std::string(1, '\0') +
           "GNU C Library (Debian GLIBC 2.36-9+deb12u7) stable release version 2.36.\nCopyright");
  file("/usr/lib/llvm-14/bin/clang", "");
  link("/usr/bin/clang-14", "../lib/llvm-14/bin/clang");
  link("/usr/bin/clang", "clang-14");
  file("/usr/share/cmake-3.25/Modules/CMake.cmake", "");
  file("/usr/bin/cmake", "");
  auto sw = probe({});
  EXPECT_EQ(sw.libc_version, OptStr("glibc-2.36"));
  EXPECT_EQ(sw.cmake_version, OptStr("3.25"));
  EXPECT_EQ(sw.clang_version, OptStr("14")); // /usr/bin/clang -> clang-14 -> llvm-14/bin/clang
}

TEST_F(SoftwareProbeTest, ToolchainVersionsUnknownWithoutTheirFiles) {
  file("/lib64/libc.so.6", "no banner here");
  file("/usr/share/cmake-3.25/x", "");
  file("/usr/share/cmake-3.28/x", ""); // two CMakes, no /usr/bin/cmake: unknown
  auto sw = probe({});
  EXPECT_FALSE(sw.libc_version.has_value());
  EXPECT_FALSE(sw.cmake_version.has_value());
  EXPECT_FALSE(sw.clang_version.has_value());
}

TEST_F(SoftwareProbeTest, OddVersionFilesAreUnknown) {
  file("/proc/modules", std::string("\0\0\xff garbage\n", 12));
  file("/proc/driver/nvidia/version", "\n\n");
  file("/proc/net/tcp", "not a table\n  1: zz:zz zz:zz 0A\n");
  file("/usr/local/cuda-12.4/bin/nvcc", "");
  file("/usr/local/cuda-12.4/version.json", "{\"cuda\": {\"version\": [12, 4]}}");
  file("/usr/local/cuda-x/version.txt", "CUDA Version twelve\n");
  file("/usr/local/cuda-x/bin/nvcc", "");
  file("/home/u/venv/pyvenv.cfg", "version = ???\n");
  file("/home/u/venv/bin/python3", "");
  file("/home/u/venv/lib/python3.11/site-packages/torch/version.py",
       "import os\n__version__ = os.environ['X']\n");
  file("/home/u/venv/lib/python3.11/site-packages/not-a-dist.dist-info/METADATA", "");
  file("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "");
  file("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n/usr/lib/x86_64-linux-gnu\n");
  file("/etc/ld.so.conf.d/loop.conf", "include /etc/ld.so.conf\n"); // an include loop
  auto sw = probe({{"PATH", "/home/u/venv/bin:/usr/bin"},
                   {"VIRTUAL_ENV", "/home/u/venv"},
                   {"MASTER_PORT", "not-a-port"}});
  EXPECT_FALSE(sw.kernel.nvidia.version);
  EXPECT_FALSE(sw.kernel.proc_driver_version);
  ASSERT_EQ(sw.cuda_toolkits.size(), 2u);
  EXPECT_EQ(sw.cuda_toolkits[0].version, "12.4"); // version.json odd: the folder name says it
  EXPECT_FALSE(sw.cuda_toolkits[1].version);      // cuda-x: nothing says it
  ASSERT_EQ(sw.python_envs.size(), 1u);
  EXPECT_EQ(sw.python_envs[0].python_version, "3.11"); // from lib/python3.11
  ASSERT_TRUE(sw.python_envs[0].torch);
  EXPECT_FALSE(sw.python_envs[0].torch->version);
  EXPECT_FALSE(sw.python_envs[0].torch->variant);
  ASSERT_EQ(sw.driver_libraries.libcuda.size(), 1u);
  EXPECT_FALSE(sw.driver_libraries.libcuda[0].version); // a plain file: no version in its name
  EXPECT_FALSE(sw.master_port);
  EXPECT_FALSE(sw.master_port_in_use);
}

TEST_F(SoftwareProbeTest, LoaderOrderFollowsLdSoConfIncludes) {
  file("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  file("/etc/ld.so.conf.d/00-compat.conf", "/usr/local/cuda-12.4/compat\n");
  file("/etc/ld.so.conf.d/x86_64-linux-gnu.conf", "/usr/lib/x86_64-linux-gnu\n");
  file("/etc/ld.so.conf.d/notes.txt", "/not/included\n");
  file("/usr/local/cuda-12.4/compat/libcuda.so.550.54.15", "");
  link("/usr/local/cuda-12.4/compat/libcuda.so.1", "libcuda.so.550.54.15");
  file("/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01", "");
  link("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.535.183.01");
  auto sw = probe({{"PATH", "/usr/bin"}});
  const auto &dl = sw.driver_libraries;
  ASSERT_EQ(dl.libcuda.size(), 2u);
  EXPECT_EQ(dl.libcuda[0].origin, "compat");
  EXPECT_EQ(dl.libcuda[0].version, "550.54.15");
  EXPECT_EQ(dl.libcuda[1].version, "535.183.01");
  EXPECT_EQ(dl.compat_ahead, true);
  EXPECT_EQ(std::count(dl.search_path.begin(), dl.search_path.end(), "/not/included"), 0);
}

// CUDA 13's toolkit ships libnccl.so.2 and libcublas.so.13 with no fuller file name (as on the
// 2-core VM this was found on): the headers beside them state 2.28.9 and 13.1.0.3.
TEST_F(SoftwareProbeTest, LibraryVersionsComeFromHeadersWhenFileNamesHaveOnlyTheMajor) {
  file("/usr/local/cuda-13.0/bin/nvcc", "");
  file("/usr/local/cuda-13.0/lib64/libnccl.so.2", "");
  file("/usr/local/cuda-13.0/lib64/libcublas.so.13", "");
  file("/usr/local/cuda-13.0/include/nccl.h",
       "#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n"
       "#define NCCL_SUFFIX \"\"\n");
  file("/usr/local/cuda-13.0/include/cublas_api.h",
       "#define CUBLAS_VER_MAJOR 13\n#define CUBLAS_VER_MINOR 1\n#define CUBLAS_VER_PATCH 0\n"
       "#define CUBLAS_VER_BUILD 3\n");
  // A header of another major next to a library is not used.
  file("/opt/old/lib/libnccl.so.3", "");
  file("/opt/old/include/nccl.h", "#define NCCL_MAJOR 2\n#define NCCL_MINOR 18\n");
  auto sw =
      probe({{"PATH", "/usr/local/cuda-13.0/bin:/usr/bin"}, {"LD_LIBRARY_PATH", "/opt/old/lib"}});
  auto version_of = [](const std::vector<FoundLibrary> &libs, const std::string &dir) -> OptStr {
    for (const auto &l : libs)
      if (l.path.rfind(dir, 0) == 0)
        return l.version;
    return std::nullopt;
  };
  EXPECT_EQ(version_of(sw.libraries.nccl, "/usr/local/cuda-13.0/"), "2.28.9");
  EXPECT_EQ(version_of(sw.libraries.cublas, "/usr/local/cuda-13.0/"), "13.1.0.3");
  EXPECT_EQ(version_of(sw.libraries.nccl, "/opt/old/"), "3");
}

// Environments off PATH that users run: Debian's python3-torch under /usr, a virtualenvwrapper
// env, a project's .venv, pyenv versions. Before, only PATH's first python3, VIRTUAL_ENV,
// CONDA_PREFIX and conda's roots were looked at, and nothing said where.
TEST_F(SoftwareProbeTest, EnvironmentsOffPathAreFoundAndTheSearchIsListed) {
  file("/home/u/proj/.venv/pyvenv.cfg", "version = 3.12.3\n");
  file("/home/u/proj/.venv/bin/python3", "");
  link("/usr/bin/python3", "python3.11");
  file("/usr/bin/python3.11", "");
  file("/usr/lib/python3/dist-packages/torch/version.py", "__version__ = '2.6.0'\ncuda = None\n");
  file("/home/u/.virtualenvs/train/pyvenv.cfg", "version = 3.10.12\n");
  file("/home/u/.virtualenvs/train/bin/python3", "");
  file("/home/u/.virtualenvs/not-an-env/README", "");
  file("/home/u/.pyenv/versions/3.11.9/bin/python3", "");
  auto sw = probe(
      {{"PATH", "/home/u/proj/.venv/bin:/usr/bin"}, {"HOME", "/home/u"}, {"PWD", "/home/u/proj"}});
  auto find = [&](const std::string &interpreter) -> const PythonEnv * {
    for (const auto &e : sw.python_envs)
      if (e.interpreter == interpreter)
        return &e;
    return nullptr;
  };
  const auto *system = find("/usr/bin/python3");
  ASSERT_TRUE(system);
  EXPECT_EQ(system->found_by, std::vector<std::string>{"system"});
  ASSERT_TRUE(system->torch);
  EXPECT_EQ(system->torch->version, "2.6.0");
  EXPECT_EQ(system->torch->cpu_only, true); // cuda = None: CPU-only without a +cpu suffix
  const auto *project = find("/home/u/proj/.venv/bin/python3");
  ASSERT_TRUE(project);
  EXPECT_EQ(project->found_by, (std::vector<std::string>{"path", "home"}));
  ASSERT_TRUE(find("/home/u/.virtualenvs/train/bin/python3"));
  ASSERT_TRUE(find("/home/u/.pyenv/versions/3.11.9/bin/python3"));
  EXPECT_EQ(sw.python_envs.size(), 4u); // not-an-env is no environment
  auto searched = [&](const std::string &place) {
    return std::find(sw.python_search.begin(), sw.python_search.end(), place) !=
           sw.python_search.end();
  };
  EXPECT_TRUE(searched("/usr/bin/python3"));
  EXPECT_TRUE(searched("/home/u/.virtualenvs/*"));
  EXPECT_TRUE(searched("/home/u/proj/.venv"));
  EXPECT_TRUE(searched("/home/u/.conda (conda, and its envs/)"));
}

// HOME with a trailing slash (or HOME=/) joins as Python's os.path.expanduser joins it: the
// places searched and the environments found carry no double slash.
TEST_F(SoftwareProbeTest, AHomeWithATrailingSlashJoinsWithoutADoubleSlash) {
  file("/home/u/.venv/pyvenv.cfg", "version = 3.12.3\n");
  file("/home/u/.venv/bin/python3", "");
  auto sw = probe({{"PATH", "/usr/bin"}, {"HOME", "/home/u//"}});
  ASSERT_EQ(sw.python_envs.size(), 1u);
  EXPECT_EQ(sw.python_envs[0].interpreter, "/home/u/.venv/bin/python3");
  for (const auto &place : sw.python_search)
    EXPECT_EQ(place.find("//"), std::string::npos) << place;
  auto at_root = probe({{"PATH", "/usr/bin"}, {"HOME", "/"}});
  EXPECT_NE(std::find(at_root.python_search.begin(), at_root.python_search.end(),
                      "/miniconda3 (conda, and its envs/)"),
            at_root.python_search.end());
}

TEST_F(SoftwareProbeTest, ModulesFromSysModuleWhenProcModulesIsMissing) {
  file("/sys/module/nvidia/version", "570.86.15\n");
  file("/sys/module/nvidia/taint", "O\n");
  file("/proc/cmdline", "intel_iommu=on iommu=pt\n");
  auto sw = probe({});
  EXPECT_EQ(sw.kernel.nvidia.loaded, true);
  EXPECT_EQ(sw.kernel.nvidia.version, "570.86.15");
  EXPECT_EQ(sw.kernel.nvidia_open, true);
  EXPECT_EQ(sw.kernel.nvidia.license, "Dual MIT/GPL");
  EXPECT_EQ(sw.kernel.nouveau.loaded, false);
  EXPECT_EQ(sw.kernel.iommu, "pt");
}

} // namespace
} // namespace dlrig

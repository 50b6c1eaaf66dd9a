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
  auto f = run_check("cuda.toolkit-mismatches-torch", s);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix[0], "export CUDA_HOME=/usr/local/cuda-12.4");
  EXPECT_TRUE(run_check("cuda.toolkit-mismatches-torch", two_toolkits()).empty());
}

TEST(DoctorCuda, NoToolkitIsInfo) {
  EXPECT_EQ(worst("cuda.no-toolkit", healthy_desktop()), Severity::info);
  EXPECT_EQ(worst("cuda.no-toolkit", two_toolkits()), Severity::ok);
}

} // namespace
} // namespace dlrig::doctor::test

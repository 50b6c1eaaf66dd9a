#include "dlrig/platform/fs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dlrig {
namespace {

namespace stdfs = std::filesystem;

class SysrootTest : public ::testing::Test {
protected:
  void SetUp() override {
    root = stdfs::temp_directory_path() / ("dlrig-fs-" + std::to_string(::getpid()));
    stdfs::create_directories(root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0");
    stdfs::create_directories(root / "sys/bus/pci/devices");
    stdfs::create_directory_symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                                    root / "sys/bus/pci/devices/0000:01:00.0");
    std::ofstream(root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/vendor") << "0x10de\n";
    std::ofstream(root / "empty");
    stdfs::create_directories(root / ".dlrig");
    std::ofstream(root / ".dlrig/statvfs") << "/dev/shm 67108864 67100000\n";
  }
  void TearDown() override { stdfs::remove_all(root); }
  stdfs::path root;
};

TEST_F(SysrootTest, ReadsUnderTheRootOnly) {
  Sysroot fs(root.string());
  EXPECT_EQ(read_trimmed(fs, "/sys/bus/pci/devices/0000:01:00.0/vendor"), "0x10de");
  EXPECT_FALSE(fs.read("/etc/hostname").ok()); // exists on the real machine, not in the fixture
  EXPECT_FALSE(read_trimmed(fs, "/empty"));
}

TEST_F(SysrootTest, CanonicalStaysInsideTheRoot) {
  Sysroot fs(root.string());
  EXPECT_EQ(fs.canonical("/sys/bus/pci/devices/0000:01:00.0"),
            "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0");
}

TEST_F(SysrootTest, DiskUsageComesFromTheFixtureTable) {
  Sysroot fs(root.string());
  auto du = fs.disk_usage("/dev/shm");
  ASSERT_TRUE(du);
  EXPECT_EQ(du->total_bytes, 67108864u);
  EXPECT_FALSE(fs.disk_usage("/"));
}

} // namespace
} // namespace dlrig

#include "dlrig/platform/fs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

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

// Issue 11.5: a FIFO, a device or a folder is refused without a blocking open.
TEST_F(SysrootTest, SpecialFilesAreRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((root / "sys/fifo").c_str(), 0600), 0);
  Sysroot fs(root.string());
  auto fifo = fs.read("/sys/fifo");
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().message.find("FIFO"), std::string::npos) << fifo.error().message;
  auto dir = fs.read("/sys");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("folder"), std::string::npos) << dir.error().message;
  EXPECT_FALSE(read_trimmed(fs, "/sys/fifo"));
  auto zero = Sysroot("/").read("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("device"), std::string::npos) << zero.error().message;
}

TEST_F(SysrootTest, RegularFileReaderCapsTheSize) {
  std::ofstream(root / "big") << std::string(5000, 'x');
  auto big = read_regular_file((root / "big").string(), 4096, "snapshot file");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().kind, ErrorKind::bad_input);
  EXPECT_NE(big.error().message.find("5000 bytes is too large for a snapshot file"),
            std::string::npos)
      << big.error().message;
  auto ok = read_regular_file((root / "big").string(), 5000);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->size(), 5000u);
  auto missing = read_regular_file((root / "nope").string(), 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::not_found);
  ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0600), 0);
  auto why = not_a_regular_file((root / "fifo").string());
  ASSERT_TRUE(why);
  EXPECT_NE(why->message.find("a FIFO (named pipe), not a regular file"), std::string::npos)
      << why->message;
  EXPECT_FALSE(not_a_regular_file((root / "big").string()));
}

TEST_F(SysrootTest, FileHeadReadsThePrefixAndTellsTheWholeSize) {
  std::ofstream(root / "big") << std::string(5000, 'x') << "tail";
  auto head = read_regular_file_head((root / "big").string(), 8);
  ASSERT_TRUE(head.ok()) << head.error().message;
  EXPECT_EQ(head->bytes, "xxxxxxxx");
  EXPECT_EQ(head->size, 5004u);
  auto all = read_regular_file_head((root / "big").string(), 1 << 20);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->bytes.size(), 5004u);
  EXPECT_EQ(all->bytes.substr(5000), "tail");
  ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0600), 0);
  auto fifo = read_regular_file_head((root / "fifo").string(), 8); // refused, not waited on
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().message.find("FIFO"), std::string::npos) << fifo.error().message;
  auto missing = read_regular_file_head((root / "nope").string(), 8);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::not_found);
}

// Lines across the reader's 64 KiB chunks come whole; the last one needs no newline; a line
// longer than the limit is refused at its number.
TEST_F(SysrootTest, ReadLinesHandsOverEachLineWhole) {
  const std::string long_line(100000, 'x');
  std::ofstream(root / "lines") << "a\n" << long_line << "\n\nlast";
  std::vector<std::string> got;
  auto each = [&](std::string_view l) { got.emplace_back(l); };
  EXPECT_FALSE(read_lines((root / "lines").string(), 1 << 20, each));
  EXPECT_EQ(got, (std::vector<std::string>{"a", long_line, "", "last"}));
  got.clear();
  auto refused = read_lines((root / "lines").string(), 50000, each, "recording");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, ErrorKind::bad_input);
  EXPECT_NE(refused->message.find("line 2 is longer than 0 MiB: not a recording"),
            std::string::npos)
      << refused->message;
  EXPECT_EQ(got, std::vector<std::string>{"a"});
  ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0600), 0);
  auto fifo = read_lines((root / "fifo").string(), 1 << 20, each); // refused, not waited on
  ASSERT_TRUE(fifo);
  EXPECT_NE(fifo->message.find("FIFO"), std::string::npos) << fifo->message;
}

TEST_F(SysrootTest, ListDirectoryGivesSortedNamesAndNothingForWhatIsNotAFolder) {
  stdfs::create_directories(root / "list/b");
  std::ofstream(root / "list/c");
  std::ofstream(root / "list/a");
  EXPECT_EQ(list_directory((root / "list").string()), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(list_directory((root / "list/a").string()).empty());
  EXPECT_TRUE(list_directory((root / "nope").string()).empty());
  stdfs::create_directory_symlink(root / "loop", root / "loop");
  EXPECT_TRUE(list_directory((root / "loop").string()).empty()); // ELOOP, not an exception
  EXPECT_EQ(Sysroot(root.string()).list("/list"), list_directory((root / "list").string()));
}

} // namespace
} // namespace dlrig

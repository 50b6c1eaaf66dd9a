#include "dlrig/probe/parse.hpp"
#include "dlrig/probe/read.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dlrig::probe {
namespace {

namespace stdfs = std::filesystem;

// A machine root with a good file, a garbage file and a directory where a file should be.
class ReadParseNote : public ::testing::Test {
protected:
  void SetUp() override {
    stdfs::remove_all(root_);
    stdfs::create_directories(root_ / "sys/dev/unreadable");
    std::ofstream(root_ / "sys/dev/good") << "42\n";
    std::ofstream(root_ / "sys/dev/garbage") << "forty-two\n";
    std::ofstream(root_ / "sys/dev/blank") << " \n";
  }
  void TearDown() override { stdfs::remove_all(root_); }

  std::optional<std::uint64_t> number(const std::string &path, const IfMissing &if_missing) {
    ProbeContext ctx{fs_, {}, {}, snap_};
    return read_parsed(ctx, path, "x.value", parse_u64, if_missing);
  }

  static stdfs::path test_root() {
    return stdfs::temp_directory_path() /
           ("dlrig-read-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  stdfs::path root_ = test_root();
  Sysroot fs_{root_.string()};
  Snapshot snap_;
};

TEST_F(ReadParseNote, GoodFileGivesTheValueAndNoNote) {
  EXPECT_EQ(number("/sys/dev/good", IfMissing::note()), 42u);
  EXPECT_EQ(number("/sys/dev/good", IfMissing::skip()), 42u);
  EXPECT_TRUE(snap_.notes.empty());
}

TEST_F(ReadParseNote, MissingFileIsNotedOnlyWhenExpected) {
  EXPECT_EQ(number("/sys/dev/absent", IfMissing::skip()), std::nullopt);
  EXPECT_TRUE(snap_.notes.empty());

  EXPECT_EQ(number("/sys/dev/absent", IfMissing::note()), std::nullopt);
  ASSERT_EQ(snap_.notes.size(), 1u);
  EXPECT_EQ(snap_.notes[0].field, "x.value");
  EXPECT_EQ(snap_.notes[0].source, "/sys/dev/absent");
  EXPECT_NE(snap_.notes[0].reason.find("No such file"), std::string::npos);

  // An expected file can say what its absence means.
  EXPECT_EQ(number("/sys/dev/absent", IfMissing::note("not provided by this driver")),
            std::nullopt);
  ASSERT_EQ(snap_.notes.size(), 2u);
  EXPECT_EQ(snap_.notes[1].reason, "not provided by this driver");
}

TEST_F(ReadParseNote, UnreadableFileIsAlwaysNotedWithPathAndReason) {
  for (const auto &if_missing : {IfMissing::skip(), IfMissing::note("never used here")}) {
    snap_.notes.clear();
    EXPECT_EQ(number("/sys/dev/unreadable", if_missing), std::nullopt);
    ASSERT_EQ(snap_.notes.size(), 1u);
    EXPECT_EQ(snap_.notes[0].source, "/sys/dev/unreadable");
    EXPECT_NE(snap_.notes[0].reason.find("/sys/dev/unreadable"), std::string::npos);
    EXPECT_NE(snap_.notes[0].reason, "never used here");
  }
}

TEST_F(ReadParseNote, GarbageIsAlwaysNotedWithTheParsersReason) {
  for (const auto &if_missing : {IfMissing::skip(), IfMissing::note()}) {
    snap_.notes.clear();
    EXPECT_EQ(number("/sys/dev/garbage", if_missing), std::nullopt);
    ASSERT_EQ(snap_.notes.size(), 1u);
    EXPECT_EQ(snap_.notes[0].source, "/sys/dev/garbage");
    EXPECT_NE(snap_.notes[0].reason.find("expected a whole number"), std::string::npos);
  }
}

TEST_F(ReadParseNote, TextWithoutParser) {
  ProbeContext ctx{fs_, {}, {}, snap_};
  EXPECT_EQ(read_text(ctx, "/sys/dev/good", "x.text", IfMissing::note()), "42\n");
  EXPECT_EQ(read_text(ctx, "/sys/dev/absent", "x.text", IfMissing::skip()), std::nullopt);
  EXPECT_TRUE(snap_.notes.empty());
  // A blank one-line attribute is garbage for parse_trimmed.
  EXPECT_EQ(read_parsed(ctx, "/sys/dev/blank", "x.name", parse_trimmed, IfMissing::note()),
            std::nullopt);
  ASSERT_EQ(snap_.notes.size(), 1u);
  EXPECT_EQ(snap_.notes[0].reason, "empty");
  EXPECT_EQ(parse_trimmed("  node-7\n").value(), "node-7");
}

} // namespace
} // namespace dlrig::probe

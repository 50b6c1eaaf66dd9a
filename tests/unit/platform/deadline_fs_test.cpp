#include "dlrig/platform/deadline_fs.hpp"
#include "dlrig/probe/probe.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace dlrig {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Answers every path with its own name, except the "slow" paths (every path when all_slow), which
// block for a long time as amdgpu's pcie_bw does. Static: an abandoned read may still be running
// after a test ends.
class SlowFs final : public FileSystem {
public:
  explicit SlowFs(bool all_slow = false) : all_slow_(all_slow) {}
  Result<std::string> read(const std::string &path, std::size_t) const override {
    if (all_slow_ || path.find("slow") != std::string::npos) {
      ++slow_reads;
      std::this_thread::sleep_for(3s);
    }
    return path;
  }
  std::vector<std::string> list(const std::string &) const override { return {}; }
  bool exists(const std::string &) const override { return all_slow_; }
  bool is_directory(const std::string &) const override { return false; }
  std::optional<std::string> readlink(const std::string &) const override { return {}; }
  std::optional<std::string> canonical(const std::string &) const override { return {}; }
  bool accessible_rw(const std::string &) const override { return false; }
  std::optional<DiskUsage> disk_usage(const std::string &) const override { return {}; }
  mutable std::atomic<int> slow_reads{0};

private:
  bool all_slow_;
};

const SlowFs &slow_fs() {
  static const SlowFs *fs = new SlowFs; // never destroyed: abandoned reads outlive the tests
  return *fs;
}

TEST(DeadlineFs, PassesAnswersThrough) {
  DeadlineFileSystem fs(slow_fs(), 1000ms, 5000ms);
  for (int i = 0; i < 100; ++i) {
    auto r = fs.read("/sys/a" + std::to_string(i));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r.value(), "/sys/a" + std::to_string(i));
  }
  EXPECT_TRUE(fs.timed_out().empty());
}

TEST(DeadlineFs, AbandonsABlockingFileAndGoesOn) {
  DeadlineFileSystem fs(slow_fs(), 100ms, 5000ms);
  auto start = Clock::now();
  auto r = fs.read("/sys/class/drm/card0/device/pcie_bw_slow");
  auto took = Clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pcie_bw_slow"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("no answer within 100 ms"), std::string::npos);
  EXPECT_LT(took, 2s); // the file would have taken 3 s
  // The next read gets a fresh worker and its answer.
  auto next = fs.read("/sys/fast");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next.value(), "/sys/fast");
  EXPECT_EQ(fs.timed_out(), std::vector<std::string>{"/sys/class/drm/card0/device/pcie_bw_slow"});
}

TEST(DeadlineFs, StopsReadingOnceTheTotalIsSpent) {
  DeadlineFileSystem fs(slow_fs(), 200ms, 300ms);
  auto start = Clock::now();
  EXPECT_FALSE(fs.read("/sys/slow1").ok()); // waits 200 ms
  EXPECT_FALSE(fs.read("/sys/slow2").ok()); // waits the 100 ms left
  auto third = fs.read("/sys/fast");        // refused at once
  EXPECT_LT(Clock::now() - start, 2s);
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().message.find("300 ms in all"), std::string::npos)
      << third.error().message;
  EXPECT_EQ(fs.timed_out().size(), 2u);
  EXPECT_EQ(fs.skipped(), 1u);
}

TEST(DeadlineFs, ProbeNotesABlockingFileAndFinishes) {
  // Every read blocks: the whole probe must still end, within its budget, with notes.
  static const SlowFs *all_slow = new SlowFs(true);
  ProbeOptions options;
  options.sysroot = "/fixture";
  options.skip_nvml = true;
  options.file_timeout = 50ms;
  options.read_budget = 200ms;
  auto start = Clock::now();
  auto snap = probe_machine(*all_slow, {}, options);
  EXPECT_LT(Clock::now() - start, 2500ms); // one blocking file alone would take 3 s
  bool blocked = false, skipped = false;
  for (const auto &n : snap.notes) {
    blocked |= n.reason.find("no answer within 50 ms") != std::string::npos;
    skipped |= n.reason.find("the probe's limit") != std::string::npos;
  }
  EXPECT_TRUE(blocked);
  EXPECT_TRUE(skipped);
}

} // namespace
} // namespace dlrig

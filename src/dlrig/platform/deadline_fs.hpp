#pragma once
// A FileSystem that gives every read a deadline. Some sysfs attributes block inside the kernel
// (amdgpu's pcie_bw sleeps for a second while it counts PCIe traffic; a GPU that fell off the bus
// can stall a driver's show() for longer), and no flag makes such a read() return early: the
// sleep is uninterruptible. So reads run on a worker thread and the caller waits at most
// `per_file`; a read that does not answer is abandoned (its thread finishes on its own when the
// kernel returns, and a fresh worker serves the next read) and reported as an error naming the
// file. All reads together may wait at most `total`: past it, reads fail at once. Every other
// call (list, stat, readlink) goes straight to the inner FileSystem: stat never blocks on sysfs.
//
// The inner FileSystem must outlive any abandoned read (the probe's Sysroot lives until the
// process exits). Reads are serialised: one read in flight at a time.
#include "dlrig/platform/fs.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dlrig {

class DeadlineFileSystem final : public FileSystem {
public:
  using Clock = std::chrono::steady_clock;
  DeadlineFileSystem(const FileSystem &inner, std::chrono::milliseconds per_file,
                     std::chrono::milliseconds total);
  ~DeadlineFileSystem() override;
  DeadlineFileSystem(const DeadlineFileSystem &) = delete;
  DeadlineFileSystem &operator=(const DeadlineFileSystem &) = delete;

  Result<std::string> read(const std::string &path, std::size_t max_bytes = 1 << 20) const override;
  std::vector<std::string> list(const std::string &path) const override {
    return inner_.list(path);
  }
  bool exists(const std::string &path) const override { return inner_.exists(path); }
  bool is_directory(const std::string &path) const override { return inner_.is_directory(path); }
  std::optional<std::string> readlink(const std::string &path) const override {
    return inner_.readlink(path);
  }
  std::optional<std::string> canonical(const std::string &path) const override {
    return inner_.canonical(path);
  }
  bool accessible_rw(const std::string &path) const override { return inner_.accessible_rw(path); }
  std::optional<DiskUsage> disk_usage(const std::string &path) const override {
    return inner_.disk_usage(path);
  }

  // Files whose read was abandoned at the per-file deadline, in order.
  std::vector<std::string> timed_out() const;
  // Reads refused because the total budget was spent.
  std::size_t skipped() const;

  struct Worker; // the reader thread's shared state (deadline_fs.cpp)

private:
  const FileSystem &inner_;
  std::chrono::milliseconds per_file_;
  std::chrono::milliseconds total_;
  mutable std::mutex call_;
  mutable Clock::duration waited_{};
  mutable std::shared_ptr<Worker> worker_;
  mutable std::vector<std::string> timed_out_;
  mutable std::size_t skipped_ = 0;
};

} // namespace dlrig

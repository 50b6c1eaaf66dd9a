#pragma once
// The host side of a sample, read through the FileSystem seam (--sysroot): CPU utilisation from
// /proc/stat, RAM from /proc/meminfo, the training data's disk throughput from /proc/diskstats
// (the device found through /proc/self/mountinfo), and a GPU process's user and command line
// from /proc/PID/status, /proc/PID/cmdline and /etc/passwd. Parsers are pure and apart from the
// reader.
#include "dlrig/monitor/sample.hpp"
#include "dlrig/platform/fs.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::monitor {

// The "cpu " line of /proc/stat in clock ticks: busy (user, nice, system, irq, softirq, steal)
// and the total with idle and iowait. nullopt when there is no such line.
struct CpuTimes {
  std::uint64_t busy = 0;
  std::uint64_t total = 0;
};
std::optional<CpuTimes> parse_proc_stat(std::string_view text);
// Share of the interval the CPUs were busy (0-1); nullopt when no time passed or the counters
// went back (a different boot).
std::optional<double> cpu_ratio(const CpuTimes &before, const CpuTimes &after);

// One /proc/diskstats line: sectors are 512 bytes whatever the device's sector size
// (Documentation/admin-guide/iostats.rst).
struct DiskStat {
  unsigned major = 0;
  unsigned minor = 0;
  std::string name;
  std::uint64_t sectors_read = 0;
  std::uint64_t sectors_written = 0;
};
std::vector<DiskStat> parse_diskstats(std::string_view text);

// The mount holding path (the longest mount point that is a prefix of it) in /proc/self/mountinfo:
// its device numbers and mount point. path must be absolute and canonical.
struct MountDevice {
  unsigned major = 0;
  unsigned minor = 0;
  std::string mount_point;
};
std::optional<MountDevice> mount_for(std::string_view mountinfo, std::string_view path);

// The diskstats entry of these device numbers (a partition counts its own I/O); nullptr if none.
const DiskStat *find_disk(const std::vector<DiskStat> &disks, unsigned major, unsigned minor);

// uid -> user name from /etc/passwd.
std::map<unsigned, std::string> parse_passwd(std::string_view text);
// The real UID on the "Uid:" line of /proc/PID/status.
std::optional<unsigned> parse_status_uid(std::string_view text);
// /proc/PID/cmdline (NUL-separated arguments) as one line; nullopt when empty (a kernel thread
// or a process that exited).
std::optional<std::string> parse_cmdline(std::string_view raw);

// Why --data PATH cannot be measured, seen through fs: nullopt when the path exists (its disk may
// still be unknown: a mount with no /proc/diskstats entry gives no rate), else "no such file or
// directory". A path that does not exist would fall to the longest mount point that prefixes it,
// the root: another disk than the user's data.
std::optional<std::string> data_path_problem(const FileSystem &fs, const std::string &path);

// Reads the host's readings; rates come from the previous read of the same reader (the first
// read has none).
class HostReader {
public:
  // data_path: --data, a path on the machine seen through fs; empty for none.
  HostReader(const FileSystem &fs, std::string data_path);
  // now: seconds on a monotonic clock.
  HostSample read(double now);
  // The user and command of a process; visible false when /proc/PID is not there.
  void describe(ProcessSample &p) const;

private:
  const FileSystem &fs_;
  std::string data_path_;
  std::optional<MountDevice> data_mount_;
  std::optional<std::string> data_device_;
  std::optional<CpuTimes> cpu_;
  std::optional<DiskStat> disk_;
  double disk_time_ = 0;
  std::map<unsigned, std::string> users_;
};

} // namespace dlrig::monitor

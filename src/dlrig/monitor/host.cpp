#include "dlrig/monitor/host.hpp"

#include "dlrig/probe/parse.hpp"

#include <charconv>
#include <sstream>

namespace dlrig::monitor {

namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
      ++i;
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    if (i > start)
      out.push_back(line.substr(start, i - start));
  }
  return out;
}

template <class T> std::optional<T> number(std::string_view text) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return v;
}

template <class F> void for_each_line(std::string_view text, F f) {
  while (!text.empty()) {
    auto nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
}

// mountinfo escapes space, tab, newline and backslash as \040 \011 \012 \134.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() &&
        s.substr(i + 1, 3).find_first_not_of("01234567") == std::string_view::npos) {
      unsigned v = 0;
      for (char c : s.substr(i + 1, 3))
        v = v * 8 + static_cast<unsigned>(c - '0');
      out += static_cast<char>(v);
      i += 3;
      continue;
    }
    out += s[i];
  }
  return out;
}

bool under(std::string_view path, std::string_view mount) {
  if (mount == "/")
    return true;
  return path.substr(0, mount.size()) == mount &&
         (path.size() == mount.size() || path[mount.size()] == '/');
}

} // namespace

std::optional<CpuTimes> parse_proc_stat(std::string_view text) {
  std::optional<CpuTimes> out;
  for_each_line(text, [&](std::string_view line) {
    if (out || line.substr(0, 4) != "cpu ")
      return;
    auto w = words(line);
    // cpu user nice system idle iowait irq softirq steal guest guest_nice
    if (w.size() < 5)
      return;
    std::uint64_t v[8] = {};
    for (std::size_t i = 1; i < w.size() && i <= 8; ++i) {
      auto n = number<std::uint64_t>(w[i]);
      if (!n)
        return;
      v[i - 1] = *n;
    }
    CpuTimes t;
    t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.total = t.busy + v[3] + v[4];
    out = t;
  });
  return out;
}

std::optional<double> cpu_ratio(const CpuTimes &before, const CpuTimes &after) {
  if (after.total <= before.total || after.busy < before.busy)
    return std::nullopt;
  double r = static_cast<double>(after.busy - before.busy) /
             static_cast<double>(after.total - before.total);
  return r > 1 ? 1.0 : r;
}

std::vector<DiskStat> parse_diskstats(std::string_view text) {
  std::vector<DiskStat> out;
  for_each_line(text, [&](std::string_view line) {
    auto w = words(line);
    // major minor name reads merged sectors_read ms writes merged sectors_written ...
    if (w.size() < 10)
      return;
    auto major = number<unsigned>(w[0]);
    auto minor = number<unsigned>(w[1]);
    auto read = number<std::uint64_t>(w[5]);
    auto written = number<std::uint64_t>(w[9]);
    if (!major || !minor || !read || !written)
      return;
    out.push_back({*major, *minor, std::string(w[2]), *read, *written});
  });
  return out;
}

std::optional<MountDevice> mount_for(std::string_view mountinfo, std::string_view path) {
  std::optional<MountDevice> best;
  for_each_line(mountinfo, [&](std::string_view line) {
    // id parent major:minor root mount_point options ... - fstype source super_options
    auto w = words(line);
    if (w.size() < 5)
      return;
    auto colon = w[2].find(':');
    if (colon == std::string_view::npos)
      return;
    auto major = number<unsigned>(w[2].substr(0, colon));
    auto minor = number<unsigned>(w[2].substr(colon + 1));
    if (!major || !minor)
      return;
    std::string mount = unescape_octal(w[4]);
    if (!under(path, mount))
      return;
    if (!best || mount.size() >= best->mount_point.size())
      best = MountDevice{*major, *minor, mount};
  });
  return best;
}

const DiskStat *find_disk(const std::vector<DiskStat> &disks, unsigned major, unsigned minor) {
  for (const auto &d : disks)
    if (d.major == major && d.minor == minor)
      return &d;
  return nullptr;
}

std::map<unsigned, std::string> parse_passwd(std::string_view text) {
  std::map<unsigned, std::string> out;
  for_each_line(text, [&](std::string_view line) {
    // name:password:uid:gid:gecos:home:shell
    auto c1 = line.find(':');
    if (c1 == std::string_view::npos || c1 == 0)
      return;
    auto c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos)
      return;
    auto c3 = line.find(':', c2 + 1);
    auto uid = number<unsigned>(
        line.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1));
    if (uid)
      out.emplace(*uid, std::string(line.substr(0, c1)));
  });
  return out;
}

std::optional<unsigned> parse_status_uid(std::string_view text) {
  std::optional<unsigned> out;
  for_each_line(text, [&](std::string_view line) {
    if (out || line.substr(0, 4) != "Uid:")
      return;
    auto w = words(line.substr(4));
    if (!w.empty())
      out = number<unsigned>(w[0]);
  });
  return out;
}

std::optional<std::string> parse_cmdline(std::string_view raw) {
  std::string out(raw);
  while (!out.empty() && out.back() == '\0')
    out.pop_back();
  for (char &c : out)
    if (c == '\0')
      c = ' ';
  if (out.empty())
    return std::nullopt;
  return out;
}

std::optional<std::string> data_path_problem(const FileSystem &fs, const std::string &path) {
  if (!fs.exists(path))
    return std::string("no such file or directory");
  return std::nullopt;
}

// --- the reader ----------------------------------------------------------------------------------

HostReader::HostReader(const FileSystem &fs, std::string data_path)
    : fs_(fs), data_path_(std::move(data_path)) {
  if (auto passwd = fs_.read("/etc/passwd"))
    users_ = parse_passwd(*passwd);
  if (data_path_.empty())
    return;
  std::string path = fs_.canonical(data_path_).value_or(data_path_);
  if (auto mi = fs_.read("/proc/self/mountinfo"))
    data_mount_ = mount_for(*mi, path);
  if (data_mount_) {
    if (auto stats = fs_.read("/proc/diskstats")) {
      auto disks = parse_diskstats(*stats);
      if (const DiskStat *d = find_disk(disks, data_mount_->major, data_mount_->minor))
        data_device_ = d->name;
    }
  }
}

HostSample HostReader::read(double now) {
  HostSample h;
  if (auto stat = fs_.read("/proc/stat"))
    if (auto t = parse_proc_stat(*stat)) {
      if (cpu_)
        h.cpu_utilization_ratio = cpu_ratio(*cpu_, *t);
      cpu_ = t;
    }
  if (auto mem = fs_.read("/proc/meminfo"))
    if (auto m = probe::parse_meminfo(*mem)) {
      if (m->total_bytes)
        h.memory_total_bytes = static_cast<double>(*m->total_bytes);
      if (m->available_bytes)
        h.memory_available_bytes = static_cast<double>(*m->available_bytes);
    }
  if (!data_path_.empty()) {
    h.data_path = data_path_;
    h.data_device = data_device_;
  }
  if (data_mount_) {
    if (auto stats = fs_.read("/proc/diskstats")) {
      auto disks = parse_diskstats(*stats);
      if (const DiskStat *d = find_disk(disks, data_mount_->major, data_mount_->minor)) {
        if (disk_ && now > disk_time_ && d->sectors_read >= disk_->sectors_read &&
            d->sectors_written >= disk_->sectors_written) {
          double dt = now - disk_time_;
          h.data_read_bytes_per_second =
              static_cast<double>(d->sectors_read - disk_->sectors_read) * 512.0 / dt;
          h.data_write_bytes_per_second =
              static_cast<double>(d->sectors_written - disk_->sectors_written) * 512.0 / dt;
        }
        disk_ = *d;
        disk_time_ = now;
      }
    }
  }
  return h;
}

void HostReader::describe(ProcessSample &p) const {
  const std::string dir = "/proc/" + std::to_string(p.pid);
  auto status = fs_.read(dir + "/status");
  if (!status) {
    p.visible = fs_.exists(dir);
    return;
  }
  p.visible = true;
  if (auto uid = parse_status_uid(*status)) {
    auto it = users_.find(*uid);
    p.user = it != users_.end() ? it->second : std::to_string(*uid);
  }
  if (auto cmd = fs_.read(dir + "/cmdline", 4096))
    p.command = parse_cmdline(*cmd);
}

} // namespace dlrig::monitor

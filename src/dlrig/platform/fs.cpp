#include "dlrig/platform/fs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/statvfs.h>
#include <unistd.h>

namespace dlrig {

namespace stdfs = std::filesystem;

Sysroot::Sysroot(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
  if (root_.empty())
    root_ = "/";
}

std::string Sysroot::host_path(const std::string& path) const {
  if (live())
    return path;
  return root_ + (path.empty() || path.front() != '/' ? "/" : "") + path;
}

Result<std::string> Sysroot::read(const std::string& path, std::size_t max_bytes) const {
  std::ifstream in(host_path(path), std::ios::binary);
  if (!in)
    return make_error(path + ": " + std::strerror(errno));
  // Grows with the file instead of allocating max_bytes up front: a megabyte buffer per sysfs
  // attribute costs page faults that dominated `dlrig info` (perf/info.sh).
  std::string data;
  std::error_code ec;
  auto size = stdfs::file_size(host_path(path), ec); // procfs says 0, sysfs 4096: only a hint
  if (!ec && size > 0)
    data.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(size, max_bytes)));
  char chunk[16384];
  while (data.size() < max_bytes && in) {
    in.read(chunk, static_cast<std::streamsize>(std::min(sizeof chunk, max_bytes - data.size())));
    data.append(chunk, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad())
    return make_error(path + ": read failed: " + std::strerror(errno));
  return data;
}

std::vector<std::string> Sysroot::list(const std::string& path) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (stdfs::directory_iterator it(host_path(path), ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool Sysroot::exists(const std::string& path) const {
  std::error_code ec;
  return stdfs::exists(host_path(path), ec);
}

bool Sysroot::is_directory(const std::string& path) const {
  std::error_code ec;
  return stdfs::is_directory(host_path(path), ec);
}

std::optional<std::string> Sysroot::readlink(const std::string& path) const {
  std::error_code ec;
  auto target = stdfs::read_symlink(host_path(path), ec);
  if (ec)
    return std::nullopt;
  return target.string();
}

std::optional<std::string> Sysroot::canonical(const std::string& path) const {
  std::error_code ec;
  auto real = stdfs::canonical(host_path(path), ec).string();
  if (ec)
    return std::nullopt;
  if (live())
    return real;
  // Resolve the root the same way, so the prefix matches even when it holds a link itself.
  auto root = stdfs::canonical(root_, ec).string();
  if (ec || real.compare(0, root.size(), root) != 0)
    return std::nullopt; // a link that leaves the fixture tree: fail closed
  auto inside = real.substr(root.size());
  return inside.empty() ? "/" : inside;
}

bool Sysroot::accessible_rw(const std::string& path) const {
  if (live())
    return ::access(path.c_str(), R_OK | W_OK) == 0;
  if (!exists(path))
    return false;
  auto denied = read(".dlrig/inaccessible", 1 << 16);
  if (!denied)
    return true;
  std::istringstream lines(*denied);
  for (std::string line; std::getline(lines, line);)
    if (line == path)
      return false;
  return true;
}

std::optional<DiskUsage> Sysroot::disk_usage(const std::string& path) const {
  if (live()) {
    struct statvfs st {};
    if (::statvfs(path.c_str(), &st) != 0)
      return std::nullopt;
    return DiskUsage{static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize,
                     static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize};
  }
  auto table = read(".dlrig/statvfs", 1 << 16);
  if (!table)
    return std::nullopt;
  std::istringstream lines(*table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string mountpoint;
    std::uint64_t total = 0, free = 0;
    if (fields >> mountpoint >> total >> free && mountpoint == path)
      return DiskUsage{total, free};
  }
  return std::nullopt;
}

std::optional<std::string> read_trimmed(const FileSystem& fs, const std::string& path) {
  auto data = fs.read(path, 1 << 16);
  if (!data)
    return std::nullopt;
  auto& s = *data;
  auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return std::nullopt;
  auto end = s.find_last_not_of(" \t\r\n\0");
  return s.substr(begin, end - begin + 1);
}

} // namespace dlrig

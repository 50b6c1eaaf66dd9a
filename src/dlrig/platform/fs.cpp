#include "dlrig/platform/fs.hpp"

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <sstream>
#include <sys/stat.h>
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

std::string Sysroot::host_path(const std::string &path) const {
  if (live())
    return path;
  return root_ + (path.empty() || path.front() != '/' ? "/" : "") + path;
}

namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  return "not a regular file";
}

Error open_error(const std::string &path, int err) {
  if (err == ENOENT || err == ENOTDIR)
    return make_error(ErrorKind::not_found, path + ": no such file");
  if (err == EACCES || err == EPERM)
    return make_error(ErrorKind::io, path + ": permission denied (check the file's permissions "
                                            "and its folders')");
  return make_error(ErrorKind::io, path + ": " + std::strerror(err));
}

// Reads an open descriptor up to max_bytes (+1 when `detect_more`, to tell a larger file).
Result<std::string> read_fd(int fd, const std::string &path, std::size_t max_bytes,
                            std::size_t hint, bool detect_more) {
  std::string data;
  if (hint > 0)
    data.reserve(std::min(hint, max_bytes) + (detect_more ? 1 : 0));
  std::size_t limit = max_bytes + (detect_more ? 1 : 0);
  char chunk[16384];
  while (data.size() < limit) {
    ssize_t n = ::read(fd, chunk, std::min(sizeof chunk, limit - data.size()));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        break; // nothing more without blocking
      return make_error(ErrorKind::io, path + ": read failed: " + std::strerror(errno));
    }
    if (n == 0)
      break;
    data.append(chunk, static_cast<std::size_t>(n));
  }
  return data;
}

} // namespace

std::optional<Error> not_a_regular_file(const std::string &path) {
  if (path.empty())
    return make_error(ErrorKind::usage, "an empty path names no file");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return open_error(path, errno);
  if (!S_ISREG(st.st_mode))
    return make_error(ErrorKind::bad_input,
                      path + ": is " + kind_of(st.st_mode) + ", not a regular file");
  return std::nullopt;
}

// A regular file opened for reading without blocking, and its size; the caller closes it.
Result<std::pair<int, std::uint64_t>> open_regular_file(const std::string &path) {
  if (auto why = not_a_regular_file(path))
    return *why;
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return open_error(path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { // replaced between stat and open
    ::close(fd);
    return make_error(ErrorKind::bad_input, path + ": not a regular file");
  }
  return std::make_pair(fd, static_cast<std::uint64_t>(st.st_size));
}

Result<FileHead> read_regular_file_head(const std::string &path, std::size_t max_bytes) {
  DLRIG_TRY(auto opened, open_regular_file(path));
  auto [fd, size] = opened;
  auto data = read_fd(fd, path, max_bytes,
                      static_cast<std::size_t>(std::min<std::uint64_t>(size, max_bytes)), false);
  ::close(fd);
  if (!data)
    return data.error();
  return FileHead{std::move(*data), size};
}

Result<std::string> read_regular_file(const std::string &path, std::size_t max_bytes,
                                      const std::string &what) {
  DLRIG_TRY(auto opened, open_regular_file(path));
  auto [fd, size] = opened;
  if (size > max_bytes) {
    ::close(fd);
    return make_error(ErrorKind::bad_input,
                      fmt::format("{}: {} bytes is too large for a {} (at most {} MiB)", path, size,
                                  what, max_bytes >> 20));
  }
  auto data = read_fd(fd, path, max_bytes, static_cast<std::size_t>(size), true);
  ::close(fd);
  if (data && data->size() > max_bytes) // grew while read
    return make_error(
        ErrorKind::bad_input,
        fmt::format("{}: larger than {} MiB, too large for a {}", path, max_bytes >> 20, what));
  return data;
}

Result<std::string> Sysroot::read(const std::string &path, std::size_t max_bytes) const {
  // Non-blocking open, and only regular files: a FIFO or a device inside a fixture tree (or a
  // character device on the live machine) never blocks the probe. sysfs/procfs attributes are
  // regular files whose st_size is only a hint (procfs says 0, sysfs 4096).
  auto host = host_path(path);
  int fd = ::open(host.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return make_error(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorKind::bad_input,
                      path + ": is " + kind_of(st.st_mode) + ", not a regular file; not read");
  }
  auto data = read_fd(fd, path, max_bytes, static_cast<std::size_t>(st.st_size), false);
  ::close(fd);
  return data;
}

std::optional<Error> read_lines(const std::string &path, std::size_t max_line,
                                const std::function<void(std::string_view)> &each,
                                const std::string &what) {
  auto opened = open_regular_file(path);
  if (!opened)
    return opened.error();
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } file{opened->first};
  std::size_t line_no = 1;
  auto too_long = [&] {
    return make_error(ErrorKind::bad_input,
                      fmt::format("{}: line {} is longer than {} MiB: not a {}", path, line_no,
                                  max_line >> 20, what));
  };
  std::string carry; // the start of a line that goes on in the next chunk
  std::vector<char> chunk(std::size_t{1} << 16);
  for (;;) {
    ssize_t n = ::read(file.fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return make_error(ErrorKind::io, path + ": read failed: " + std::strerror(errno));
    if (n == 0)
      break;
    std::string_view rest(chunk.data(), static_cast<std::size_t>(n));
    for (auto nl = rest.find('\n'); nl != std::string_view::npos; nl = rest.find('\n')) {
      if (carry.size() + nl > max_line)
        return too_long();
      if (carry.empty()) {
        each(rest.substr(0, nl));
      } else {
        carry.append(rest.substr(0, nl));
        each(carry);
        carry.clear();
      }
      rest.remove_prefix(nl + 1);
      ++line_no;
    }
    if (carry.size() + rest.size() > max_line)
      return too_long();
    carry.append(rest);
  }
  if (!carry.empty())
    each(carry); // the last line, without a newline
  return std::nullopt;
}

std::vector<std::string> list_directory(const std::string &path) {
  std::vector<std::string> names;
  std::error_code ec;
  for (stdfs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Sysroot::list(const std::string &path) const {
  return list_directory(host_path(path));
}

bool Sysroot::exists(const std::string &path) const {
  std::error_code ec;
  return stdfs::exists(host_path(path), ec);
}

bool Sysroot::is_directory(const std::string &path) const {
  std::error_code ec;
  return stdfs::is_directory(host_path(path), ec);
}

std::optional<std::string> Sysroot::readlink(const std::string &path) const {
  std::error_code ec;
  auto target = stdfs::read_symlink(host_path(path), ec);
  if (ec)
    return std::nullopt;
  return target.string();
}

std::optional<std::string> Sysroot::canonical(const std::string &path) const {
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

bool Sysroot::accessible_rw(const std::string &path) const {
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

std::optional<DiskUsage> Sysroot::disk_usage(const std::string &path) const {
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

std::optional<std::string> read_trimmed(const FileSystem &fs, const std::string &path) {
  auto data = fs.read(path, 1 << 16);
  if (!data)
    return std::nullopt;
  auto &s = *data;
  auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos)
    return std::nullopt;
  auto end = s.find_last_not_of(" \t\r\n\0");
  return s.substr(begin, end - begin + 1);
}

} // namespace dlrig

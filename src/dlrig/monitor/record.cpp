// The recording file of `dlrig watch --record` (record.hpp).
#include "dlrig/monitor/record.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace dlrig::monitor {

namespace {

Error cannot_write(const std::string &path, int err) {
  return make_error(ErrorKind::io, fmt::format("--record {}: cannot write the recording ({})", path,
                                               std::strerror(err)));
}

Error exists(const std::string &path) {
  return make_error(ErrorKind::usage,
                    fmt::format("--record {}: the file exists (a recording?); dlrig leaves it as "
                                "it is: give another file, or add --overwrite to replace it",
                                path));
}

} // namespace

Result<Recording> Recording::open(const std::string &path, bool overwrite) {
  struct stat st {};
  const bool present = ::stat(path.c_str(), &st) == 0;
  int flags = O_WRONLY | O_CLOEXEC;
  if (!present || S_ISREG(st.st_mode))
    // O_EXCL: a file created between the stat and the open is refused too.
    flags |= O_CREAT | (overwrite ? O_TRUNC : O_EXCL);
  if (present && S_ISREG(st.st_mode) && !overwrite)
    return exists(path);
  // A FIFO is opened without waiting for a reader (a blocking open would wait for ever when none
  // comes); once open, writes block as usual while the reader catches up.
  const bool fifo = present && S_ISFIFO(st.st_mode);
  int fd = ::open(path.c_str(), flags | (fifo ? O_NONBLOCK : 0), 0644);
  if (fd < 0 && fifo && errno == ENXIO)
    return make_error(ErrorKind::io,
                      fmt::format("--record {}: a FIFO (named pipe) that no process reads: start "
                                  "its reader first",
                                  path));
  if (fd < 0)
    return errno == EEXIST ? exists(path) : cannot_write(path, errno);
  if (fifo)
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return Recording(fd, path);
}

Recording::Recording(Recording &&other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

Recording &Recording::operator=(Recording &&other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

Recording::~Recording() {
  close();
}

std::optional<Error> Recording::write(std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd_, text.data(), text.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return cannot_write(path_, n < 0 ? errno : EIO);
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return std::nullopt;
}

std::optional<Error> Recording::close() {
  if (fd_ < 0)
    return std::nullopt;
  int rc = ::close(std::exchange(fd_, -1));
  if (rc != 0 && errno != EINTR)
    return cannot_write(path_, errno);
  return std::nullopt;
}

} // namespace dlrig::monitor

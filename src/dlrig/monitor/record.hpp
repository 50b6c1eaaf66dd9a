#pragma once
// The file `dlrig watch --record FILE` writes: opened once, each sample's text written whole as it
// comes (no buffering: a killed watch keeps every sample before it), every write checked.
//
// An existing regular file is a recording someone kept: it is refused unless overwrite says to
// replace it (ErrorKind::usage, the file left as it is). A device or a FIFO (/dev/stdout, a pipe
// to another program) is written to as it is. A write that fails (a full disk, /dev/full) is
// ErrorKind::io, naming the file and the reason.
#include "dlrig/core/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace dlrig::monitor {

class Recording {
public:
  static Result<Recording> open(const std::string &path, bool overwrite);
  Recording(Recording &&other) noexcept;
  Recording &operator=(Recording &&other) noexcept;
  Recording(const Recording &) = delete;
  Recording &operator=(const Recording &) = delete;
  ~Recording();

  std::optional<Error> write(std::string_view text);
  // Closes the file; what close() reports (a deferred write error on some file systems) too.
  std::optional<Error> close();
  const std::string &path() const { return path_; }

private:
  Recording(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

} // namespace dlrig::monitor

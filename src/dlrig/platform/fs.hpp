#pragma once
// The seam between dlrig and the machine's files. Every probe reads /sys, /proc, /dev, /etc, /usr
// and the rest through a FileSystem rooted at a directory: "/" on the live machine, a fixture tree
// in tests (--sysroot DIR). Paths given to it are absolute paths on the probed machine; a
// fixture root never falls through to the real machine.
#include "dlrig/core/result.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dlrig {

struct DiskUsage {
  std::uint64_t total_bytes = 0;
  std::uint64_t free_bytes = 0; // available to an unprivileged user
};

class FileSystem {
public:
  virtual ~FileSystem() = default;
  // Whole file; an error says why (missing, permission, not a regular file...). Reads at most
  // max_bytes. A FIFO, a device or a folder is refused without opening it for a blocking read:
  // sysfs and procfs attributes are regular files.
  virtual Result<std::string> read(const std::string &path,
                                   std::size_t max_bytes = 1 << 20) const = 0;
  // Entry names of a directory, sorted; empty when it is missing or unreadable.
  virtual std::vector<std::string> list(const std::string &path) const = 0;
  virtual bool exists(const std::string &path) const = 0;
  virtual bool is_directory(const std::string &path) const = 0;
  // Target text of a symbolic link, nullopt when path is not a link.
  virtual std::optional<std::string> readlink(const std::string &path) const = 0;
  // Follows every link and returns the absolute path on the probed machine.
  virtual std::optional<std::string> canonical(const std::string &path) const = 0;
  // Whether this process may open path for reading and writing.
  virtual bool accessible_rw(const std::string &path) const = 0;
  // Capacity of the filesystem holding path; nullopt when unknown.
  virtual std::optional<DiskUsage> disk_usage(const std::string &path) const = 0;
};

// Files under a root directory. With root "/" this is the live machine. Under a fixture root,
// disk_usage answers from ROOT/.dlrig/statvfs (lines "MOUNTPOINT TOTAL_BYTES FREE_BYTES") and
// accessible_rw from ROOT/.dlrig/inaccessible (one path per line), never from the real machine.
class Sysroot final : public FileSystem {
public:
  explicit Sysroot(std::string root = "/");
  const std::string &root() const { return root_; }
  bool live() const { return root_ == "/"; }

  Result<std::string> read(const std::string &path, std::size_t max_bytes = 1 << 20) const override;
  std::vector<std::string> list(const std::string &path) const override;
  bool exists(const std::string &path) const override;
  bool is_directory(const std::string &path) const override;
  std::optional<std::string> readlink(const std::string &path) const override;
  std::optional<std::string> canonical(const std::string &path) const override;
  bool accessible_rw(const std::string &path) const override;
  std::optional<DiskUsage> disk_usage(const std::string &path) const override;

private:
  std::string host_path(const std::string &path) const;
  std::string root_;
};

// Why a path cannot be read as a regular file, without blocking: stat() only, never open(). Kinds:
// not_found (missing), io (permission denied), bad_input (a folder, FIFO, socket or device).
// Messages name the path and the reason in dlrig's words. Used before dlopen() of a library path
// (a FIFO given as DLRIG_NVML_LIBRARY would block dlopen forever) and by read_regular_file.
std::optional<Error> not_a_regular_file(const std::string &path);

// The whole of a regular file, at most max_bytes: opened non-blocking (O_NONBLOCK), refused with
// a clear message when it is not a regular file or is larger than max_bytes (the message gives
// both sizes). `what` names the file's role in messages ("snapshot file").
Result<std::string> read_regular_file(const std::string &path, std::size_t max_bytes,
                                      const std::string &what = "file");

// The first max_bytes of a regular file (all of it when shorter) and the file's size, refused as
// read_regular_file refuses what is not a regular file: for a large file whose header alone is
// read (a safetensors checkpoint).
struct FileHead {
  std::string bytes;
  std::uint64_t size = 0;
};
Result<FileHead> read_regular_file_head(const std::string &path, std::size_t max_bytes);

// A regular file's lines, one at a time and without their newline, handed to `each`: a file of any
// size is read in constant memory. Refused unopened as read_regular_file refuses what is not a
// regular file; a line longer than max_line bytes is a bad_input error naming the file, `what`
// and the line's number; a failed read an io error. What `each` throws goes through.
std::optional<Error> read_lines(const std::string &path, std::size_t max_line,
                                const std::function<void(std::string_view)> &each,
                                const std::string &what = "file");

// The names of a folder's entries, sorted; empty when it is not a folder or cannot be listed, what
// was listed when an entry cannot be read (never throws: a range-for over directory_iterator
// throws on a failed step even when constructed with an error_code).
std::vector<std::string> list_directory(const std::string &path);

// Trimmed contents of a small sysfs/procfs attribute file; nullopt when missing, unreadable or
// empty.
std::optional<std::string> read_trimmed(const FileSystem &fs, const std::string &path);

} // namespace dlrig

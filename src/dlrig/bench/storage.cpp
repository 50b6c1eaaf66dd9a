#include "dlrig/bench/storage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <memory>
#include <mutex>
#include <random>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace dlrig::bench {
namespace {

constexpr std::size_t kAlign = 4096;
constexpr std::uint64_t kRandomBytes = 4096;

std::atomic<bool> g_stop{false};
// The temp file's path for the signal handler: written before the file is created, cleared
// (first byte set to 0) after it is removed. A handler reads it with no lock.
char g_temp_path[PATH_MAX];
volatile std::sig_atomic_t g_temp_armed = 0;

struct AlignedFree {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char, AlignedFree>;

Buffer aligned_buffer(std::size_t bytes) {
  void *p = nullptr;
  if (posix_memalign(&p, kAlign, bytes) != 0)
    throw std::bad_alloc();
  return Buffer(static_cast<unsigned char *>(p));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

// One file to read: a descriptor, its size and (temp file) the seed of its content.
struct Target {
  std::filesystem::path path;
  std::unique_ptr<Fd> fd;
  std::uint64_t size = 0;
};

// Removes the temp file on every path out of run_storage (error, exception, normal end).
struct TempFileGuard {
  ~TempFileGuard() { remove_storage_temp_file(); }
};

std::string errno_text(int e) {
  return std::strerror(e);
}

// Opens for reading with O_DIRECT when the filesystem takes it; else buffered, the cache dropped
// with posix_fadvise and a note saying the figure may include it.
Result<std::unique_ptr<Fd>> open_read(const std::filesystem::path &p, bool &direct,
                                      std::string &note) {
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd >= 0) {
    direct = true;
    return std::make_unique<Fd>(fd);
  }
  if (errno != EINVAL)
    return make_error(
        errno == ENOENT ? ErrorKind::not_found : ErrorKind::io,
        fmt::format("{}: cannot open for reading: {}", p.string(), errno_text(errno)));
  fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(ErrorKind::io, fmt::format("{}: cannot open for reading: {}", p.string(),
                                                 errno_text(errno)));
  direct = false;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  note = "the filesystem refuses O_DIRECT (tmpfs, or a FUSE/overlay mount): read through the "
         "page cache after posix_fadvise(DONTNEED); the figure may include the cache";
  return std::make_unique<Fd>(fd);
}

void fill_block(unsigned char *buf, std::uint64_t offset, std::uint64_t bytes, std::uint64_t seed) {
  auto *w = reinterpret_cast<std::uint64_t *>(buf);
  const std::uint64_t first = offset / 8;
  for (std::uint64_t i = 0; i < bytes / 8; ++i)
    w[i] = storage_word(seed, first + i);
}

// Writes the temp file; ENOSPC (real or the test hook) removes it and says so.
Result<bool> write_temp(int fd, const StorageOptions &opt, std::uint64_t seed,
                        std::vector<std::uint64_t> &sums, const std::filesystem::path &path) {
  const auto block = opt.block_bytes;
  auto buf = aligned_buffer(block);
  sums.clear();
  for (std::uint64_t off = 0; off < opt.file_bytes; off += block) {
    if (g_stop.load())
      return make_error(ErrorKind::io, "stopped while writing the temporary file; removed");
    const auto n = std::min(block, opt.file_bytes - off);
    fill_block(buf.get(), off, n, seed);
    sums.push_back(storage_checksum(buf.get(), n));
    std::uint64_t done = 0;
    while (done < n) {
      ssize_t w;
      if (opt.test_enospc_after && off + done >= *opt.test_enospc_after) {
        w = -1;
        errno = ENOSPC;
      } else {
        w = ::pwrite(fd, buf.get() + done, n - done, static_cast<off_t>(off + done));
      }
      if (w < 0) {
        if (errno == EINTR)
          continue;
        const int e = errno;
        if (e == ENOSPC || e == EDQUOT)
          return make_error(
              ErrorKind::io,
              fmt::format("the disk filled up while dlrig wrote its temporary file {} ({} of {} "
                          "MiB written); the file was removed. Free some space or point --data "
                          "at another filesystem",
                          path.string(), (off + done) >> 20, opt.file_bytes >> 20));
        return make_error(ErrorKind::io, fmt::format("writing the temporary file {}: {}; the file "
                                                     "was removed",
                                                     path.string(), errno_text(e)));
      }
      done += static_cast<std::uint64_t>(w);
    }
  }
  if (::fsync(fd) != 0)
    return make_error(ErrorKind::io, fmt::format("fsync of the temporary file {}: {}; the file was "
                                                 "removed",
                                                 path.string(), errno_text(errno)));
  return true;
}

// One sequential pass over every target: queue_depth threads take the next block in turn.
// Returns B/s; counts mismatches against `sums` (temp file) or folds the checksum (dataset).
struct SeqPass {
  double bytes_per_s = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t checksum = 0;
  bool stopped = false;
  std::optional<Error> error;
};

SeqPass sequential_pass(const std::vector<Target> &targets, const StorageOptions &opt,
                        const std::vector<std::uint64_t> *sums, bool corrupt) {
  struct Job {
    std::size_t target;
    std::uint64_t offset;
  };
  std::vector<Job> jobs;
  for (std::size_t t = 0; t < targets.size(); ++t)
    for (std::uint64_t off = 0; off < targets[t].size; off += opt.block_bytes)
      jobs.push_back({t, off});
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> bytes{0}, mismatches{0}, checksum{0};
  std::mutex err_mutex;
  SeqPass out;
  const unsigned qd = std::max(1u, opt.queue_depth);
  const double t0 = now_s();
  auto worker = [&] {
    auto buf = aligned_buffer(opt.block_bytes);
    for (;;) {
      if (g_stop.load())
        return;
      const auto j = next.fetch_add(1);
      if (j >= jobs.size())
        return;
      const auto &tg = targets[jobs[j].target];
      const auto want = std::min<std::uint64_t>(opt.block_bytes, tg.size - jobs[j].offset);
      // O_DIRECT needs an aligned length: the tail of a file is read as a whole 4 KiB unit.
      const auto ask = (want + kAlign - 1) / kAlign * kAlign;
      std::uint64_t got = 0;
      while (got < want) {
        const ssize_t r = ::pread(tg.fd->fd, buf.get() + got, ask - got,
                                  static_cast<off_t>(jobs[j].offset + got));
        if (r < 0 && errno == EINTR)
          continue;
        if (r <= 0) {
          std::lock_guard lock(err_mutex);
          if (!out.error)
            out.error = make_error(ErrorKind::io,
                                   fmt::format("{}: read at byte {} failed: {}", tg.path.string(),
                                               jobs[j].offset + got,
                                               r < 0 ? errno_text(errno) : "unexpected end"));
          return;
        }
        got += static_cast<std::uint64_t>(r);
      }
      if (corrupt && j == 0)
        buf.get()[want / 2] ^= 0x5a;
      const auto sum = storage_checksum(buf.get(), want);
      if (sums) {
        if ((*sums)[jobs[j].offset / opt.block_bytes] != sum)
          mismatches.fetch_add(1);
      } else {
        // Order-independent fold so the dataset checksum does not depend on thread timing.
        checksum.fetch_add(sum ^ (jobs[j].offset * 0x9e3779b97f4a7c15ull + jobs[j].target));
      }
      bytes.fetch_add(want);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < qd; ++i)
    threads.emplace_back(worker);
  for (auto &t : threads)
    t.join();
  const double dt = now_s() - t0;
  out.stopped = g_stop.load();
  out.bytes_per_s = dt > 0 ? static_cast<double>(bytes.load()) / dt : 0;
  out.mismatches = mismatches.load();
  out.checksum = checksum.load();
  return out;
}

struct RandPass {
  double iops = 0;
  std::uint64_t mismatches = 0;
  bool stopped = false;
  std::optional<Error> error;
};

// The targets a 4 KiB read fits in.
std::vector<std::size_t> random_targets(const std::vector<Target> &targets) {
  std::vector<std::size_t> usable;
  for (std::size_t t = 0; t < targets.size(); ++t)
    if (targets[t].size >= kRandomBytes)
      usable.push_back(t);
  return usable;
}

// Whether the 4 KiB read at byte `off` of the temp file holds what the generator wrote there.
bool random_block_matches(std::uint64_t seed, std::uint64_t off, const unsigned char *block) {
  const auto *w = reinterpret_cast<const std::uint64_t *>(block);
  for (std::uint64_t i = 0; i < kRandomBytes / 8; ++i)
    if (w[i] != storage_word(seed, off / 8 + i))
      return false;
  return true;
}

// usable: random_targets(targets), not empty.
RandPass random_pass(const std::vector<Target> &targets, const std::vector<std::size_t> &usable,
                     const StorageOptions &opt, std::optional<std::uint64_t> seed,
                     std::uint64_t pass) {
  RandPass out;
  const unsigned qd = std::max(1u, opt.queue_depth);
  std::atomic<std::uint64_t> issued{0}, done{0}, mismatches{0};
  std::mutex err_mutex;
  const double t0 = now_s();
  const double deadline = t0 + opt.random_seconds;
  auto worker = [&](unsigned id) {
    auto buf = aligned_buffer(kRandomBytes);
    std::mt19937_64 rng(0x243f6a8885a308d3ull ^ (pass << 32) ^ id);
    for (std::uint64_t mine = 0;; ++mine) {
      if (g_stop.load() || issued.fetch_add(1) >= opt.random_reads)
        return;
      if (mine % 64 == 63 && now_s() > deadline)
        return;
      const auto &tg = targets[usable[rng() % usable.size()]];
      const auto off = (rng() % (tg.size / kRandomBytes)) * kRandomBytes;
      ssize_t r;
      do
        r = ::pread(tg.fd->fd, buf.get(), kRandomBytes, static_cast<off_t>(off));
      while (r < 0 && errno == EINTR);
      if (r != static_cast<ssize_t>(kRandomBytes)) {
        std::lock_guard lock(err_mutex);
        if (!out.error)
          out.error = make_error(ErrorKind::io, fmt::format("{}: 4 KiB read at byte {} failed: {}",
                                                            tg.path.string(), off,
                                                            r < 0 ? errno_text(errno) : "short"));
        return;
      }
      if (opt.test_corrupt_read && id == 0 && mine == 0)
        buf.get()[kRandomBytes / 2] ^= 0x5a;
      if (seed && !random_block_matches(*seed, off, buf.get()))
        mismatches.fetch_add(1);
      done.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < qd; ++i)
    threads.emplace_back(worker, i);
  for (auto &t : threads)
    t.join();
  const double dt = now_s() - t0;
  out.stopped = g_stop.load();
  out.iops = dt > 0 ? static_cast<double>(done.load()) / dt : 0;
  out.mismatches = mismatches.load();
  return out;
}

// Random reads as fio's libaio engine makes them: one thread keeps queue_depth O_DIRECT requests in
// flight through Linux AIO, called through its system calls (no library; io_uring is off in some
// kernels and containers). On 2 vCPUs, 32 blocking threads lost a quarter of fio's IOPS to
// context switches (docs/bench.md). nullopt when the kernel refuses AIO here (io_setup or the
// first io_submit fails): the caller falls back to threads. Only for O_DIRECT descriptors:
// buffered AIO would block in io_submit.
std::optional<RandPass> random_pass_aio(const std::vector<Target> &targets,
                                        const std::vector<std::size_t> &usable,
                                        const StorageOptions &opt,
                                        std::optional<std::uint64_t> seed, std::uint64_t pass) {
  RandPass out;
  const unsigned qd = std::max(1u, opt.queue_depth);
  aio_context_t ctx = 0;
  if (::syscall(SYS_io_setup, qd, &ctx) != 0)
    return std::nullopt;
  struct Slot {
    Buffer buf;
    iocb cb{};
    const Target *target = nullptr;
  };
  std::vector<Slot> slots(qd);
  std::mt19937_64 rng(0x243f6a8885a308d3ull ^ (pass << 32));
  std::uint64_t issued = 0, done = 0, in_flight = 0;
  auto prepare = [&](std::size_t i) {
    Slot &sl = slots[i];
    sl.target = &targets[usable[rng() % usable.size()]];
    const auto off = (rng() % (sl.target->size / kRandomBytes)) * kRandomBytes;
    sl.cb = iocb{};
    sl.cb.aio_data = i;
    sl.cb.aio_lio_opcode = IOCB_CMD_PREAD;
    sl.cb.aio_fildes = static_cast<std::uint32_t>(sl.target->fd->fd);
    sl.cb.aio_buf = reinterpret_cast<std::uint64_t>(sl.buf.get());
    sl.cb.aio_nbytes = kRandomBytes;
    sl.cb.aio_offset = static_cast<std::int64_t>(off);
    ++issued;
  };
  // Submits what is prepared; false when the kernel took none.
  auto submit = [&](std::vector<iocb *> &batch) {
    std::size_t at = 0;
    while (at < batch.size()) {
      long n =
          ::syscall(SYS_io_submit, ctx, static_cast<long>(batch.size() - at), batch.data() + at);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return false;
      at += static_cast<std::size_t>(n);
      in_flight += static_cast<std::uint64_t>(n);
    }
    batch.clear();
    return true;
  };
  std::vector<iocb *> batch;
  for (std::size_t i = 0; i < qd && issued < opt.random_reads; ++i) {
    slots[i].buf = aligned_buffer(kRandomBytes);
    prepare(i);
    batch.push_back(&slots[i].cb);
  }
  const double t0 = now_s();
  const double deadline = t0 + opt.random_seconds;
  if (!submit(batch)) {
    ::syscall(SYS_io_destroy, ctx); // waits for any request the kernel did take
    return std::nullopt;
  }
  std::vector<io_event> events(qd);
  bool more = true;
  while (in_flight > 0) {
    timespec wait{1, 0};
    long n = ::syscall(SYS_io_getevents, ctx, 1L, static_cast<long>(qd), events.data(), &wait);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      out.error = make_error(ErrorKind::io, fmt::format("io_getevents: {}", errno_text(errno)));
      break;
    }
    if (more && (g_stop.load() || now_s() > deadline))
      more = false;
    for (long e = 0; e < n; ++e) {
      --in_flight;
      Slot &sl = slots[events[e].data];
      const auto off = static_cast<std::uint64_t>(sl.cb.aio_offset);
      if (events[e].res != static_cast<std::int64_t>(kRandomBytes)) {
        if (!out.error)
          out.error = make_error(
              ErrorKind::io,
              fmt::format("{}: 4 KiB read at byte {} failed: {}", sl.target->path.string(), off,
                          events[e].res < 0 ? errno_text(static_cast<int>(-events[e].res))
                                            : std::string("short")));
        more = false;
        continue;
      }
      if (opt.test_corrupt_read && done == 0)
        sl.buf.get()[kRandomBytes / 2] ^= 0x5a;
      if (seed && !random_block_matches(*seed, off, sl.buf.get()))
        ++out.mismatches;
      ++done;
      // The next request goes in at once, as fio's libaio engine does by default
      // (iodepth_batch_submit=1): gathering a batch per io_getevents and submitting it together
      // left the device's queue emptier and gave 74-78k IOPS against 98-120k one by one on the
      // CI VM's virtio disk (fio 83-111k, alternated; docs/bench.md).
      if (more && issued < opt.random_reads) {
        prepare(static_cast<std::size_t>(events[e].data));
        batch.push_back(&sl.cb);
        if (!submit(batch)) {
          if (!out.error)
            out.error = make_error(ErrorKind::io, fmt::format("io_submit: {}", errno_text(errno)));
          batch.clear();
        }
      }
    }
  }
  const double dt = now_s() - t0;
  ::syscall(SYS_io_destroy, ctx);
  out.stopped = g_stop.load();
  out.iops = dt > 0 ? static_cast<double>(done) / dt : 0;
  return out;
}

// The regular files a --data path names: itself, or none (a directory means temp-file mode).
Result<std::vector<Target>> open_dataset(const std::vector<std::filesystem::path> &paths,
                                         StorageResult &res) {
  std::vector<Target> out;
  for (const auto &p : paths) {
    bool direct = false;
    auto fd = open_read(p, direct, res.cache_note);
    if (!fd)
      return fd.error();
    struct stat st {};
    if (::fstat(fd.value()->fd, &st) != 0 || !S_ISREG(st.st_mode))
      return make_error(ErrorKind::io, fmt::format("{}: not a regular file", p.string()));
    res.direct = out.empty() ? direct : (res.direct && direct);
    out.push_back({p, std::move(fd.value()), static_cast<std::uint64_t>(st.st_size)});
    res.bytes += static_cast<std::uint64_t>(st.st_size);
  }
  return out;
}

} // namespace

std::uint64_t storage_word(std::uint64_t seed, std::uint64_t i) noexcept {
  std::uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t storage_checksum(const void *data, std::size_t bytes) noexcept {
  const auto *p = static_cast<const unsigned char *>(data);
  std::uint64_t acc[4] = {1, 2, 3, 4};
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32)
    for (int k = 0; k < 4; ++k) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      acc[k] = ((acc[k] << 7) | (acc[k] >> 57)) + w;
    }
  std::uint64_t h = acc[0] ^ (acc[1] * 3) ^ (acc[2] * 5) ^ (acc[3] * 7);
  for (; i < bytes; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ bytes;
}

void request_storage_stop() noexcept {
  g_stop.store(true);
}
void reset_storage_stop() noexcept {
  g_stop.store(false);
}
bool storage_stop_requested() noexcept {
  return g_stop.load();
}

void remove_storage_temp_file() noexcept {
  if (g_temp_armed && g_temp_path[0] != '\0') {
    ::unlink(g_temp_path);
    g_temp_armed = 0;
  }
}

namespace {
volatile std::sig_atomic_t g_signals = 0;
extern "C" void storage_signal_handler(int sig) {
  remove_storage_temp_file();
  request_storage_stop();
  g_signals = g_signals + 1;
  if (g_signals > 1) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}
} // namespace

void install_storage_signal_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = storage_signal_handler;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

Result<StorageResult> run_storage(const StorageOptions &opt) {
  if (opt.block_bytes == 0 || opt.block_bytes % kAlign != 0)
    return make_error(ErrorKind::usage, "storage.read: the block size must be a multiple of 4 KiB");
  StorageResult res;
  res.queue_depth = std::max(1u, opt.queue_depth);
  std::vector<std::filesystem::path> data = opt.data;
  if (data.empty())
    data.push_back(std::filesystem::current_path());
  std::error_code ec;
  bool any_dir = false;
  for (const auto &p : data) {
    const auto st = std::filesystem::status(p, ec);
    if (ec || !std::filesystem::exists(st)) {
      if (ec == std::errc::permission_denied)
        return make_error(ErrorKind::io, fmt::format("--data {}: permission denied", p.string()));
      return make_error(ErrorKind::not_found,
                        fmt::format("--data {}: no such file or directory", p.string()));
    }
    if (std::filesystem::is_directory(st))
      any_dir = true;
    else if (!std::filesystem::is_regular_file(st))
      return make_error(ErrorKind::io,
                        fmt::format("--data {}: not a regular file or directory", p.string()));
  }
  if (any_dir && data.size() > 1)
    return make_error(ErrorKind::usage,
                      "--data: give either one directory (dlrig writes a temporary file there) or "
                      "existing files (read only), not both");
  res.where = data.front();

  std::vector<Target> targets;
  std::vector<std::uint64_t> sums;
  std::optional<std::uint64_t> seed;
  TempFileGuard guard;
  if (any_dir) {
    const auto &dir = data.front();
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      return make_error(ErrorKind::io,
                        fmt::format("--data {}: cannot write a temporary file there ({}); give a "
                                    "writable directory, or existing files for a read-only pass",
                                    dir.string(), errno_text(errno)));
    struct statvfs vfs {};
    if (::statvfs(dir.c_str(), &vfs) == 0) {
      const auto avail = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      if (avail < opt.file_bytes + opt.free_margin_bytes)
        return make_error(ErrorKind::io,
                          fmt::format("--data {}: {} MiB free, the test file needs {} MiB plus {} "
                                      "MiB left over; free some space, use --quick (a smaller "
                                      "file) or point --data at another filesystem",
                                      dir.string(), avail >> 20, opt.file_bytes >> 20,
                                      opt.free_margin_bytes >> 20));
    }
    seed = std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32);
    const auto path = dir / fmt::format(".dlrig-bench-{}-{:x}.tmp", ::getpid(), *seed & 0xffffff);
    if (path.string().size() >= sizeof g_temp_path)
      return make_error(ErrorKind::usage, "--data: path too long");
    std::strcpy(g_temp_path, path.c_str());
    g_temp_armed = 1;
    // O_DIRECT for the write as well, so the file's pages are not left in the cache.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EINVAL)
      fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      g_temp_armed = 0;
      return make_error(ErrorKind::io, fmt::format("cannot create the temporary file {}: {}",
                                                   path.string(), errno_text(errno)));
    }
    {
      Fd wfd(fd);
      auto w = write_temp(fd, opt, *seed, sums, path);
      if (!w)
        return w.error();
    }
    bool direct = false;
    auto rfd = open_read(path, direct, res.cache_note);
    if (!rfd)
      return rfd.error();
    res.direct = direct;
    res.bytes = opt.file_bytes;
    targets.push_back({path, std::move(rfd.value()), opt.file_bytes});
  } else {
    res.temp_file = false;
    auto t = open_dataset(data, res);
    if (!t)
      return t.error();
    targets = std::move(t.value());
    if (res.bytes == 0)
      return make_error(ErrorKind::bad_input,
                        fmt::format("--data {}: the file{} hold{} no byte: nothing to read; give "
                                    "files that hold data, or a directory for a temporary file",
                                    res.where.string(), data.size() > 1 ? "s" : "",
                                    data.size() > 1 ? "" : "s"));
  }

  std::uint64_t mismatches = 0;
  const auto usable = random_targets(targets);
  if (opt.random && usable.empty())
    return make_error(ErrorKind::bad_input,
                      fmt::format("--data {}: no file of at least {} bytes, which a random {} KiB "
                                  "read needs; give a larger file",
                                  res.where.string(), kRandomBytes, kRandomBytes / 1024));
  for (unsigned pass = 0; pass < std::max(1u, opt.passes); ++pass) {
    if (!res.direct)
      for (const auto &t : targets)
        ::posix_fadvise(t.fd->fd, 0, 0, POSIX_FADV_DONTNEED);
    if (opt.sequential) {
      auto s = sequential_pass(targets, opt, seed ? &sums : nullptr, opt.test_corrupt_read);
      if (s.error)
        return *s.error;
      if (s.stopped) {
        res.stopped = true;
        break;
      }
      res.seq_bytes_per_s.push_back(s.bytes_per_s);
      mismatches += s.mismatches;
      if (pass == 0)
        res.checksum = s.checksum;
    }
    if (!opt.random || usable.empty())
      continue;
    std::optional<RandPass> aio;
    if (res.direct && !opt.test_no_aio)
      aio = random_pass_aio(targets, usable, opt, seed, pass);
    res.random_engine = aio ? "linux-aio" : "threads";
    auto r = aio ? std::move(*aio) : random_pass(targets, usable, opt, seed, pass);
    if (r.error)
      return *r.error;
    if (r.stopped) {
      res.stopped = true;
      break;
    }
    res.rand_iops.push_back(r.iops);
    mismatches += r.mismatches;
  }
  if (seed && (!res.seq_bytes_per_s.empty() || !res.rand_iops.empty()))
    res.verified = mismatches == 0;
  return res;
}

std::string storage_class(double bps) {
  // Typical interface limits (docs/bench.md cites each): a hard disk streams ~0.1–0.3 GB/s;
  // SATA III carries 6 Gb/s = 0.6 GB/s; NVMe on PCIe x4 after encoding: 3.0 3.94 GB/s,
  // 4.0 7.88, 5.0 15.75 (Wikipedia "PCI Express").
  if (bps < 0.30e9)
    return "a hard disk, USB stick or network share class";
  if (bps < 0.62e9)
    return "a SATA SSD class (SATA III carries at most 0.6 GB/s)";
  if (bps < 3.94e9)
    return "an NVMe SSD on PCIe 3.0 x4 class (or a slower NVMe)";
  if (bps < 7.88e9)
    return "an NVMe SSD on PCIe 4.0 x4 class";
  return "PCIe 5.0 NVMe, several drives or memory class";
}

std::string storage_verdict(const StorageResult &r, const std::optional<std::string> &mount_kind) {
  if (r.seq_bytes_per_s.empty() && r.rand_iops.empty())
    return "storage: not measured";
  std::string s = "storage: ";
  if (!r.seq_bytes_per_s.empty())
    s += fmt::format("{:.2f} GB/s sequential", median(r.seq_bytes_per_s) / 1e9);
  if (!r.rand_iops.empty())
    s += fmt::format("{}{:.0f} IOPS random 4 KiB (queue depth {})",
                     r.seq_bytes_per_s.empty() ? "" : ", ", median(r.rand_iops), r.queue_depth);
  // The class comes from the sequential rate, on a disk. tmpfs takes O_DIRECT since Linux 6.6 and
  // still reads memory.
  if (mount_kind == "tmpfs")
    s += " — tmpfs: these files are in memory, not on a disk (the rate is no disk's)";
  else if (mount_kind == "network")
    s += " — a network filesystem: the rate is the network's and the server's, not a local disk's";
  else if (!r.seq_bytes_per_s.empty())
    s += " — " + storage_class(median(r.seq_bytes_per_s));
  if (!r.cache_note.empty())
    s += "; " + r.cache_note;
  if (r.verified && !*r.verified)
    s += "; VERIFICATION FAILED: what was read differs from what was written";
  return s;
}

} // namespace dlrig::bench

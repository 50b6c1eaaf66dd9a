#pragma once
// storage.read: what the disk under a path delivers, sequential (1 MiB blocks) and random 4 KiB
// reads, with the page cache kept out of the figure (O_DIRECT; where the filesystem refuses it,
// posix_fadvise(DONTNEED) and a note that the figure may include the cache).
//
// Two modes:
// - temp file: `data` is a directory (default the working directory). dlrig writes a file of
//   random content there (refused when free space is short), fsyncs it, reads it back and deletes
//   it. Every block read is checked against what was written.
// - dataset: `data` names regular files. A read-only pass over them (opened O_RDONLY, never
//   written); the checksum of what was read is reported, there is nothing to compare it with.
//
// In flight: sequential reads use `queue_depth` threads, each with its own pread on the shared
// descriptor (with one 1 MiB request per thread the syscall cost is far below the transfer
// time). Random 4 KiB reads use Linux AIO from one thread, as fio's libaio engine does, through
// its system calls (no library; io_uring is disabled in some kernels and containers): 32
// blocking threads on 2 vCPUs lost a quarter of fio's IOPS to context switches (docs/bench.md).
// Without O_DIRECT, or where the kernel refuses AIO, they fall back to the threads.
//
// Thread safety: run_storage may be called from one thread at a time (the temp-file registry
// below is process-wide).
#include "dlrig/core/result.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::bench {

struct StorageOptions {
  std::vector<std::filesystem::path> data;       // empty: the working directory
  std::uint64_t file_bytes = 256ull << 20;       // temp-file mode: size of the file written
  std::uint64_t block_bytes = 1ull << 20;        // sequential request size
  unsigned queue_depth = 8;                      // requests in flight (threads)
  std::uint64_t random_reads = 20000;            // 4 KiB reads per random pass (capped by time)
  double random_seconds = 2.0;                   // time cap of one random pass
  unsigned passes = 3;                           // passes of each kind; the median is reported
  bool sequential = true;                        // run the sequential passes
  bool random = true;                            // run the random 4 KiB passes
  std::uint64_t free_margin_bytes = 64ull << 20; // left free on the filesystem after writing
  // Test hook: writing the temp file fails with ENOSPC once this many bytes are written.
  std::optional<std::uint64_t> test_enospc_after;
  // Test hook: flips one byte of the first block each pass reads (verification must catch it).
  bool test_corrupt_read = false;
  // Test hook: the random reads use the blocking threads, as where the kernel refuses AIO.
  bool test_no_aio = false;
};

struct StorageResult {
  bool temp_file = true;       // false: read-only pass over the user's files
  std::filesystem::path where; // the directory or first file measured
  std::uint64_t bytes = 0;     // bytes in the file(s) measured
  bool direct = false;         // O_DIRECT was used
  std::string cache_note;      // why the figure may include the page cache (empty: it doesn't)
  unsigned queue_depth = 0;
  // How the random reads were kept in flight: "linux-aio" (one thread, Linux AIO, as fio's libaio
  // engine; with O_DIRECT where the kernel allows it) or "threads" (one blocking pread per
  // thread); empty when no random pass ran.
  std::string random_engine;
  std::vector<double> seq_bytes_per_s; // one per pass (B/s, 1e9 = 1 GB/s)
  std::vector<double> rand_iops;       // one per pass (4 KiB reads per second)
  std::optional<bool> verified;        // temp file: every block matched; dataset: nullopt
  std::uint64_t checksum = 0;          // dataset: checksum of the first pass's bytes
  bool stopped = false;                // a stop was requested; passes so far are kept
};

// Runs the measurement. Errors: not_found (a --data path does not exist), io (unreadable, free
// space short, the disk filled up while writing; the temp file is removed in every case), usage.
Result<StorageResult> run_storage(const StorageOptions &opt);

// Asks a running measurement to stop after the request in progress (async-signal-safe).
void request_storage_stop() noexcept;
void reset_storage_stop() noexcept;
// True once a stop was requested (a signal): the bench runner stops before the next benchmark.
bool storage_stop_requested() noexcept;

// Removes the temp file being written or read, if any. Async-signal-safe (one unlink of a path
// kept in a static buffer): a SIGINT handler calls it.
void remove_storage_temp_file() noexcept;

// Installs SIGINT/SIGTERM handlers that remove the temp file, request a stop and, on a second
// signal, restore the default action and re-raise. For use where no other handler is installed.
void install_storage_signal_cleanup();

// The 64-bit word of the temp file's content at byte offset 8*i (splitmix64 of seed and i), so
// any block can be checked without keeping the file in memory.
std::uint64_t storage_word(std::uint64_t seed, std::uint64_t i) noexcept;
// The checksum used for blocks: sum over the 64-bit words with a rotate (order-sensitive).
std::uint64_t storage_checksum(const void *data, std::size_t bytes) noexcept;

// "0.48 GB/s sequential, 42,000 IOPS random 4 KiB — an NVMe SSD on PCIe 3.0": a plain-words
// verdict from the median figures; the class comes from typical interface limits (docs/bench.md),
// except on a mount whose kind (the snapshot's: tmpfs, network) says the rate is not a local
// disk's, where the verdict says that instead.
std::string storage_verdict(const StorageResult &r,
                            const std::optional<std::string> &mount_kind = std::nullopt);
// The class of a device from its sequential read rate (B/s).
std::string storage_class(double seq_bytes_per_s);

} // namespace dlrig::bench

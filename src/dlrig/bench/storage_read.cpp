// storage.read: storage.hpp's run_storage as a family of the harness. Two benchmarks, each one
// run_storage call: sequential 1 MiB reads (GB/s) and random 4 KiB reads (IOPS), O_DIRECT with
// `queue_depth` requests in flight, on a temporary file in --data DIR (default the working
// directory; written, fsynced, read back, verified and deleted) or read only over --data FILE.
// One sample is one pass over the file (sequential) or one time-capped random pass; the passes
// run inside run_storage, so the Sampler gets a fixed count per tier (like STREAM's 10 passes).
// Expectation (sequential only, O_DIRECT only): from the filesystem's device class in the
// snapshot's mounts, the interface rate of the next slower interface (docs/bench.md).
#include "dlrig/bench/bench.hpp"
#include "dlrig/bench/storage.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace dlrig::bench {
namespace {

constexpr unsigned kQueueDepth = 8;

StorageOptions options_for(const Context &ctx, bool sequential) {
  StorageOptions o;
  if (ctx.data)
    o.data = {std::filesystem::path(*ctx.data)};
  o.queue_depth = kQueueDepth;
  o.sequential = sequential;
  o.random = !sequential;
  // Per tier: file size, passes, random reads per pass and its time cap.
  struct Size {
    std::uint64_t file_bytes;
    unsigned passes;
    std::uint64_t random_reads;
    double random_seconds;
  };
  const Size size = ctx.small                     ? Size{8ull << 20, 2, 500, 0.2}
                    : ctx.tier == Tier::quick     ? Size{256ull << 20, 3, 20000, 0.5}
                    : ctx.tier == Tier::sustained ? Size{4ull << 30, 10, 5000000, 10}
                                                  : Size{1ull << 30, 5, 200000, 2};
  o.file_bytes = size.file_bytes;
  o.passes = size.passes;
  o.random_reads = size.random_reads;
  o.random_seconds = size.random_seconds;
  // Test hook DLRIG_BENCH_STORAGE_MIB=N: a temporary file of N MiB (the SIGINT test needs one
  // that takes a while to write and read).
  if (const char *mib = std::getenv("DLRIG_BENCH_STORAGE_MIB"); mib && std::atoi(mib) > 0)
    o.file_bytes = static_cast<std::uint64_t>(std::atoi(mib)) << 20;
  o.test_corrupt_read = ctx.corrupt;
  return o;
}

// The snapshot's mount holding `p` (the longest mount point that is a prefix of its path).
const Mount *mount_of(const Snapshot *snap, const std::filesystem::path &p) {
  if (!snap)
    return nullptr;
  std::error_code ec;
  auto abs = std::filesystem::weakly_canonical(p, ec);
  if (ec)
    return nullptr;
  const std::string s = abs.string();
  const Mount *best = nullptr;
  for (const auto &m : snap->host.mounts) {
    const auto &mp = m.mountpoint;
    bool under = s == mp || mp == "/" ||
                 (s.rfind(mp, 0) == 0 && s.size() > mp.size() && s[mp.size()] == '/');
    if (under && (!best || mp.size() > best->mountpoint.size()))
      best = &m;
  }
  return best;
}

} // namespace

std::optional<Expectation> storage_expectation(const std::optional<std::string> &kind) {
  // The floor is the interface rate of the next slower interface: a drive reading below what
  // that interface carries is not delivering its class (a downtrained link, thermal throttling,
  // a failing drive). SATA revision 3.0 carries 6 Gb/s = 600 MB/s and revision 2.0 3 Gb/s =
  // 300 MB/s after 8b/10b encoding (https://en.wikipedia.org/wiki/SATA#Revisions).
  if (kind == "nvme")
    return Expectation{0.6, false,
                       "an NVMe SSD should out-read the SATA III interface (0.6 GB/s); below it, "
                       "check the PCIe link (lspci -vv LnkSta), the drive's temperature and health",
                       "https://en.wikipedia.org/wiki/SATA#SATA_revision_3.0_(6_Gbit/s)"};
  if (kind == "sata-ssd")
    return Expectation{0.3, false,
                       "a SATA SSD should out-read the SATA II interface (0.3 GB/s); below it, the "
                       "link may run at 3 Gb/s (port or cable) or the drive is failing",
                       "https://en.wikipedia.org/wiki/SATA#SATA_revision_2.0_(3_Gbit/s)"};
  return std::nullopt; // hard disks, network shares, tmpfs, virtual disks: no floor
}

namespace {

Outcome run_read(bool sequential, const Context &ctx, Sampler &s) {
  auto opt = options_for(ctx, sequential);
  auto res = run_storage(opt);
  if (!res)
    throw std::runtime_error(res.error().message);
  const auto &r = res.value();
  const auto &rates = sequential ? r.seq_bytes_per_s : r.rand_iops;
  if (rates.empty())
    throw std::runtime_error(r.stopped ? "interrupted before the first pass ended"
                                       : "no pass completed");
  Outcome o;
  if (sequential) {
    o.work = static_cast<double>(r.bytes);
    o.work_unit = "B";
    o.rate_unit = "GB/s";
  } else {
    o.work = 1; // one 4 KiB read: the rate is reads per second
    o.work_unit = "read";
    o.rate_unit = "IOPS";
    o.rate_scale = 1;
  }
  for (double rate : rates)
    if (rate > 0)
      s.add(o.work / rate);
  if (r.verified && !*r.verified)
    o.verification_error = "what was read differs from what dlrig wrote (block checksums / 4 KiB "
                           "words against the generator)";
  const Mount *m = mount_of(ctx.snapshot, r.where);
  std::optional<std::string> kind = m ? m->kind : std::nullopt;
  if (sequential && r.direct && !ctx.small)
    o.expectation = storage_expectation(kind);
  o.details = {
      {"mode", r.temp_file ? "temporary file (written, read back, deleted)"
                           : "read-only pass over --data files"},
      {"path", r.where.string()},
      {"file_bytes", r.bytes},
      {"request_bytes", sequential ? opt.block_bytes : 4096},
      {"queue_depth", r.queue_depth},
      {"in_flight", sequential || r.random_engine != "linux-aio"
                        ? "one thread per request, blocking pread"
                        : "Linux AIO (io_submit/io_getevents) from one thread, as fio's libaio"},
      {"page_cache", r.direct ? "bypassed: O_DIRECT for the write and every read" : r.cache_note},
      {"verified", r.verified ? Json(*r.verified) : Json(nullptr)},
      {"checksum", r.temp_file ? Json(nullptr) : Json(r.checksum)},
      {"device_class", m && m->kind ? Json(*m->kind) : Json(nullptr)},
      {"device", m && m->device ? Json(*m->device) : Json(nullptr)},
      {"verdict", storage_verdict(r, kind)}};
  // As the runner words a sampling that Ctrl-C cut short (details.interrupted is text or absent).
  if (r.stopped)
    o.details["interrupted"] =
        fmt::format("cut short by Ctrl-C (SIGINT/SIGTERM) after {} passes, before the stopping "
                    "rule was met",
                    rates.size());
  return o;
}

Benchmark read_benchmark(bool sequential) {
  Benchmark b;
  b.id = sequential ? "storage.read.seq" : "storage.read.rand";
  b.family = "storage.read";
  b.summary = sequential ? "sequential reads, 1 MiB requests, 8 in flight, O_DIRECT (GB/s)"
                         : "random 4 KiB reads, 8 in flight, O_DIRECT (IOPS)";
  b.needs = "free space for a temporary file in --data DIR (default the working directory: 256 "
            "MiB --quick, 1 GiB, 4 GiB --long), or --data FILE to read only";
  b.can_run = [](const Context &) { return std::optional<std::string>{}; };
  b.configs = [sequential](const Context &ctx) {
    auto o = options_for(ctx, sequential);
    std::error_code ec;
    bool dir = !ctx.data || std::filesystem::is_directory(*ctx.data, ec);
    return std::vector<Config>{
        {fmt::format("{} qd={}{}", sequential ? "1 MiB" : "4 KiB", o.queue_depth,
                     dir ? fmt::format(" temp {} MiB", o.file_bytes >> 20)
                         : std::string(" --data files")),
         {}}};
  };
  b.run = [sequential](const Config &, const Context &ctx, Sampler &s) {
    return run_read(sequential, ctx, s);
  };
  return b;
}

} // namespace

std::vector<Benchmark> storage_read_benchmarks() {
  return {read_benchmark(true), read_benchmark(false)};
}

} // namespace dlrig::bench

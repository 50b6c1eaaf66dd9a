// The GPU families of dlrig bench through the CUDA driver API (docs/bench.md, "GPU"):
//   gpu.memory.{copy,triad,sm_copy}   device memory bandwidth, buffers >= 4 x L2, read + write
//                                      bytes counted (STREAM's convention)
//   gpu.h2d / gpu.d2h .{pinned,pageable}, gpu.bidir.pinned
//                                      host <-> device copies, size sweep, checked against the
//                                      raw rate of the link (a figure above it is an error)
//   gpu.launch.{sync,queued}           kernel launch latency
//   gpu.p2p.{unidir,bidir}             every pair of GPUs: capability, bandwidth, data verified
// Every copy's data is compared with what was sent; device memory is freed on every path (owning
// handles); a GPU that answers a sticky error is not touched again (gpu.hpp).
#include "dlrig/bench/gpu.hpp"
#include "dlrig/kb/kb.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace dlrig::bench {
namespace {

using namespace gpu;
constexpr double kMiB = 1024.0 * 1024.0;

Json device_details(const Device &d) {
  const auto &drv = Runtime::get().driver();
  return {{"gpu", d.ordinal},
          {"name", d.name},
          {"bus_id", d.bus_id},
          {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"sms", d.sms},
          {"l2_bytes", d.l2_bytes},
          {"driver_version", drv.version()},
          {"driver_library", drv.library_path()},
          {"resolved_by", drv.resolved_by()}};
}

std::string size_label(double bytes) {
  return bytes >= 1024 * kMiB ? fmt::format("{:.0f} GiB", bytes / 1024 / kMiB)
                              : fmt::format("{:.0f} MiB", bytes / kMiB);
}

// One config per usable GPU and size: params {ordinal, bytes}.
std::vector<Config> per_gpu(const std::vector<double> &sizes) {
  std::vector<Config> out;
  for (int g : Runtime::get().usable())
    for (double s : sizes)
      out.push_back({fmt::format("gpu{} {}", g, size_label(s)), {double(g), s}});
  return out;
}

Outcome bytes_outcome(double bytes) {
  Outcome o;
  o.work = bytes;
  o.work_unit = "B";
  o.rate_unit = "GB/s";
  return o;
}

// The corrupt test hook: one flipped byte in what is about to be verified.
void maybe_corrupt(const Context &ctx, unsigned char *p, std::size_t bytes) {
  if (ctx.corrupt && bytes > 0)
    p[bytes / 2] ^= 0x5a;
}

// Reads device memory back and checks it against the pattern.
std::optional<std::string> verify_device(const Context &ctx, cuda::DevicePtr src, std::size_t bytes,
                                         std::uint64_t seed) {
  std::unique_ptr<unsigned char[]> back(new unsigned char[bytes]);
  DLRIG_CU(memcpy_dtoh, back.get(), src, bytes);
  maybe_corrupt(ctx, back.get(), bytes);
  return check_pattern(back.get(), bytes, seed);
}

// Uploads the pattern into device memory.
void upload_pattern(cuda::DevicePtr dst, std::size_t bytes, std::uint64_t seed) {
  std::unique_ptr<unsigned char[]> host(new unsigned char[bytes]);
  fill_pattern(host.get(), bytes, seed);
  DLRIG_CU(memcpy_htod, dst, host.get(), bytes);
}

// ---- device memory ----------------------------------------------------------------------------

enum class MemKernel { copy, triad, sm_copy };

std::vector<Config> memory_configs(const Context &ctx) {
  std::vector<Config> out;
  Runtime &rt = Runtime::get();
  for (int g : rt.usable()) {
    const Device &d = rt.devices()[static_cast<std::size_t>(g)];
    double floor = ctx.small                     ? 1 * kMiB
                   : ctx.tier == Tier::quick     ? 64 * kMiB
                   : ctx.tier == Tier::sustained ? 1024 * kMiB
                                                 : 256 * kMiB;
    double bytes = std::max(floor, 4.0 * static_cast<double>(d.l2_bytes));
    bytes = std::ceil(bytes / kMiB) * kMiB;
    out.push_back({fmt::format("gpu{} {}/buffer", g, size_label(bytes)), {double(g), bytes}});
  }
  return out;
}

// Device buffers of `bytes`, sized from the GPU's free memory (cuMemGetInfo: other processes may
// hold most of it) and stepping down further (halving, never below 4 x L2) when the GPU is still
// out of memory; `note` says what happened.
std::vector<std::unique_ptr<DeviceBuffer>> allocate(const Device &d, std::size_t count,
                                                    std::size_t &bytes, std::string &note) {
  const std::size_t wanted = bytes;
  const auto floor = static_cast<std::size_t>(std::max<std::int64_t>(4 * d.l2_bytes, 1 << 20));
  std::string why = "out of memory";
  std::size_t free = 0, total = 0;
  const auto &api = Runtime::get().driver().api();
  if (api.mem_get_info && api.mem_get_info(&free, &total) == cuda::kSuccess && total > 0) {
    // Leave a tenth of what is free to the driver and the other processes.
    while (bytes / 2 >= floor && static_cast<double>(count) * static_cast<double>(bytes) >
                                     0.9 * static_cast<double>(free))
      bytes /= 2;
    if (bytes != wanted)
      why = fmt::format("{} of {} free (other processes hold the rest)", size_label(double(free)),
                        size_label(double(total)));
  }
  for (;;) {
    try {
      std::vector<std::unique_ptr<DeviceBuffer>> out;
      for (std::size_t i = 0; i < count; ++i)
        out.push_back(std::make_unique<DeviceBuffer>(bytes));
      if (bytes != wanted)
        note = fmt::format("{} for {} buffers of {}: stepped down to {}", why, count,
                           size_label(double(wanted)), size_label(double(bytes)));
      return out;
    } catch (const cuda::Error &e) {
      if (e.code() != cuda::kErrorOutOfMemory || bytes / 2 < floor)
        throw;
      bytes /= 2;
      why = "out of memory";
    }
  }
}

std::optional<double> memory_peak(const Context &ctx, const Device &d, std::string &assumption) {
  const auto &kb = kb::builtin();
  const kb::GpuSpec *spec = nullptr;
  if (const dlrig::Gpu *g = snapshot_gpu(ctx, d); g && g->vendor_id && g->device_id)
    spec = kb.find_gpu_by_pci(*g->vendor_id, *g->device_id);
  if (!spec)
    spec = kb.find_gpu(d.name);
  if (!spec || !spec->memory_bandwidth_bytes_per_s) {
    assumption = "memory bandwidth of \"" + d.name + "\" not in the knowledge base";
    return std::nullopt;
  }
  assumption = fmt::format("spec memory bandwidth of {} (data/gpus.csv)", spec->name);
  return *spec->memory_bandwidth_bytes_per_s / 1e9;
}

// Triad inputs: doubles in [1, 2) from the pattern (never NaN, never zero).
double triad_input(std::uint64_t seed, std::uint64_t i) {
  return 1.0 + static_cast<double>(pattern_word(seed, i) >> 11) * 0x1.0p-53;
}
constexpr double kTriadScalar = 3.0;

Outcome run_memory(MemKernel k, const Config &c, const Context &ctx, Sampler &s) {
  Runtime &rt = Runtime::get();
  Device &d = device_for(c);
  return rt.guarded(d, [&] {
    auto bytes = static_cast<std::size_t>(c.params.at(1));
    std::string note;
    auto bufs = allocate(d, k == MemKernel::triad ? 3 : 2, bytes, note);
    Stream stream;
    const std::uint64_t seed = 0x6d656d + static_cast<std::uint64_t>(k);
    Outcome o;
    std::function<void()> pass;
    if (k == MemKernel::triad) {
      std::uint64_t n = bytes / sizeof(double);
      std::vector<double> host(n);
      for (std::uint64_t i = 0; i < n; ++i)
        host[i] = triad_input(seed, i);
      DLRIG_CU(memcpy_htod, bufs[1]->ptr(), host.data(), n * sizeof(double));
      for (std::uint64_t i = 0; i < n; ++i)
        host[i] = triad_input(seed + 1, i);
      DLRIG_CU(memcpy_htod, bufs[2]->ptr(), host.data(), n * sizeof(double));
      cuda::Function f = rt.kernel(d, "dlrig_triad");
      Grid g = grid_for(d, n);
      cuda::DevicePtr a = bufs[0]->ptr(), b = bufs[1]->ptr(), cc = bufs[2]->ptr();
      double scalar = kTriadScalar;
      pass = [&, f, g, a, b, cc, scalar, n]() mutable {
        launch(d, f, g, stream.get(), {&a, &b, &cc, &scalar, &n});
      };
      o = bytes_outcome(24.0 * static_cast<double>(n));
    } else {
      upload_pattern(bufs[0]->ptr(), bytes, seed);
      if (k == MemKernel::copy) {
        pass = [&] {
          DLRIG_CU(memcpy_dtod_async, bufs[1]->ptr(), bufs[0]->ptr(), bytes, stream.get());
        };
      } else {
        cuda::Function f = rt.kernel(d, "dlrig_copy");
        std::uint64_t n16 = bytes / 16;
        Grid g = grid_for(d, n16);
        cuda::DevicePtr dst = bufs[1]->ptr(), src = bufs[0]->ptr();
        pass = [&, f, g, dst, src, n16]() mutable {
          launch(d, f, g, stream.get(), {&dst, &src, &n16});
        };
      }
      o = bytes_outcome(2.0 * static_cast<double>(bytes));
    }
    bool gated = false;
    StateLog log(d);
    time_streams(d, {&stream}, pass); // untimed warm-up
    while (s.more()) {
      Timed t = time_streams(d, {&stream}, pass);
      gated = t.gated;
      s.add(t.seconds);
    }
    // Verify the output of the last pass.
    if (k == MemKernel::triad) {
      std::uint64_t n = bytes / sizeof(double);
      std::vector<double> a(n);
      DLRIG_CU(memcpy_dtoh, a.data(), bufs[0]->ptr(), n * sizeof(double));
      maybe_corrupt(ctx, reinterpret_cast<unsigned char *>(a.data()), n * sizeof(double));
      for (std::uint64_t i = 0; i < n && !o.verification_error; ++i) {
        double want = triad_input(seed, i) + kTriadScalar * triad_input(seed + 1, i);
        // One rounding apart at most (the GPU may fuse the multiply-add).
        if (!(std::fabs(a[i] - want) <= 4e-16 * std::fabs(want)))
          o.verification_error = fmt::format("a[{}] is {} but should be {}", i, a[i], want);
      }
    } else {
      o.verification_error = verify_device(ctx, bufs[1]->ptr(), bytes, seed);
    }
    std::string assumption;
    o.peak = memory_peak(ctx, d, assumption);
    o.peak_assumption = assumption;
    o.details = device_details(d);
    o.details["buffer_bytes"] = bytes;
    log.into(o.details);
    o.details["bytes_convention"] = "read + write: 2 x buffer per copy, 24 B per element for triad";
    o.details["timing"] = gated ? "CUDA events, gated by the hold kernel" : "CUDA events";
    if (!note.empty())
      o.details["note"] = note;
    return o;
  });
}

Benchmark memory(MemKernel k, const char *name, const char *what) {
  return {
      std::string("gpu.memory.") + name,
      "gpu.memory",
      what,
      "1 GPU, 2-3 buffers of 4 x L2",
      [](const Context &) { return needs_gpus(1); },
      memory_configs,
      [k](const Config &c, const Context &ctx, Sampler &s) { return run_memory(k, c, ctx, s); }};
}

// ---- host <-> device --------------------------------------------------------------------------

enum class Dir { h2d, d2h, bidir };

std::vector<double> transfer_sizes(const Context &ctx) {
  if (ctx.small)
    return {1 * kMiB};
  switch (ctx.tier) {
  case Tier::quick:
    return {4 * kMiB, 64 * kMiB};
  case Tier::standard:
    return {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB};
  case Tier::sustained:
    return {16 * kMiB, 256 * kMiB, 1024 * kMiB};
  }
  return {64 * kMiB};
}

// PCIe generation of a transfer rate per lane.
std::optional<int> pcie_generation(double gts) {
  static const double rates[] = {2.5, 5, 8, 16, 32, 64};
  for (int g = 1; g <= 6; ++g)
    if (std::fabs(gts - rates[g - 1]) < 0.1)
      return g;
  return std::nullopt;
}

// The most the path from the host to this GPU can carry per direction: the lowest of every PCIe
// link's maximum (generation and width both ends agree on, as the probe read them), from the
// knowledge base's PCIe rows. Thunderbolt/USB4 controllers report meaningless link figures for the
// tunnel, so their hops are left out and the path is capped at the fastest eGPU tunnel the
// knowledge base lists. nullopt when no link was read.
struct LinkCeiling {
  double bytes_per_s = 0;
  std::string what;
};
std::optional<LinkCeiling> link_ceiling(const Context &ctx, const Device &d) {
  const dlrig::Gpu *g = snapshot_gpu(ctx, d);
  if (!g)
    return std::nullopt;
  const auto &kb = kb::builtin();
  std::optional<LinkCeiling> best;
  auto consider = [&](const PcieLink &l) {
    if (!l.max_gts || !l.max_width)
      return;
    auto gen = pcie_generation(*l.max_gts);
    if (!gen)
      return;
    auto rate = kb.pcie_bytes_per_s(*gen, *l.max_width);
    if (!rate)
      return;
    if (!best || *rate < best->bytes_per_s)
      best = LinkCeiling{*rate,
                         fmt::format("PCIe {}.0 x{} ({:g} GT/s)", *gen, *l.max_width, *l.max_gts)};
  };
  consider(g->link);
  for (const auto &hop : g->path)
    if (hop.kind.value_or("") != "thunderbolt")
      consider(hop.link);
  if (g->behind_thunderbolt.value_or(false)) {
    double tunnel = 0;
    std::string name;
    for (const auto &l : kb.links)
      if ((l.kind == "thunderbolt" || l.kind == "usb4") && l.theoretical_bytes_per_s &&
          *l.theoretical_bytes_per_s > tunnel) {
        tunnel = *l.theoretical_bytes_per_s;
        name = l.name;
      }
    if (tunnel > 0 && (!best || tunnel < best->bytes_per_s))
      best = LinkCeiling{tunnel, "a Thunderbolt/USB4 tunnel (at most " + name + ")"};
    else if (best)
      best->what += " behind a Thunderbolt/USB4 dock";
  }
  return best;
}

std::string link_verdict(double rate, const LinkCeiling &c) {
  double share = rate / (c.bytes_per_s / 1e9);
  std::string head = fmt::format("{}: {:.1f} GB/s of raw {:.1f} ({:.0f} %)", c.what, rate,
                                 c.bytes_per_s / 1e9, 100 * share);
  if (share >= 0.6)
    return head + ", as expected for that link";
  if (share >= 0.35)
    return head + ": about half of the raw rate: a link one generation lower or half as wide, "
                  "or host memory on the remote NUMA node";
  return head + ": a quarter or less of the raw rate: a downtrained link (Gen1 or x1), a riser, "
                "or pageable memory";
}

Outcome run_transfer(Dir dir, bool pinned, const Config &c, const Context &ctx, Sampler &s) {
  Runtime &rt = Runtime::get();
  Device &d = device_for(c);
  return rt.guarded(d, [&] {
    auto bytes = static_cast<std::size_t>(c.params.at(1));
    const std::uint64_t seed = 0x6c696e6b;
    const dlrig::Gpu *snap = snapshot_gpu(ctx, d);
    // Host buffers are allocated and touched by this thread, bound to the GPU's node.
    NumaBinding numa(snap ? snap->numa_node : std::nullopt);
    const double ways = dir == Dir::bidir ? 2 : 1;
    if (auto why = lacks_free_memory(
            d, ways * static_cast<double>(bytes),
            dir == Dir::bidir ? fmt::format("2 buffers of {}", size_label(double(bytes)))
                              : fmt::format("a buffer of {}", size_label(double(bytes)))))
      throw Skip(*why);
    {
      std::ifstream in("/proc/meminfo");
      std::string meminfo((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (auto why =
              too_little_host(2.0 * static_cast<double>(bytes), mem_available(meminfo),
                              fmt::format("2 {} buffers of {}", pinned ? "pinned" : "pageable",
                                          size_label(double(bytes)))))
        throw Skip(*why);
    }
    DeviceBuffer dev(bytes);
    std::optional<DeviceBuffer> dev2;
    if (dir == Dir::bidir)
      dev2.emplace(bytes);
    std::unique_ptr<PinnedBuffer> pin_src, pin_dst;
    std::unique_ptr<unsigned char[]> page_src, page_dst;
    unsigned char *src = nullptr, *dst = nullptr; // host sides
    if (pinned) {
      pin_src = std::make_unique<PinnedBuffer>(bytes);
      pin_dst = std::make_unique<PinnedBuffer>(bytes);
      src = pin_src->data();
      dst = pin_dst->data();
    } else {
      page_src.reset(new unsigned char[bytes]);
      page_dst.reset(new unsigned char[bytes]);
      src = page_src.get();
      dst = page_dst.get();
    }
    fill_pattern(src, bytes, seed);
    std::memset(dst, 0, bytes);
    // What D2H reads: the pattern, on the device (dev, or dev2 for bidir).
    cuda::DevicePtr d2h_src = dir == Dir::bidir ? dev2->ptr() : dev.ptr();
    if (dir != Dir::h2d)
      upload_pattern(d2h_src, bytes, seed + 1);
    Stream s1, s2;
    bool gated = false;
    auto pass = [&] {
      if (dir != Dir::d2h)
        DLRIG_CU(memcpy_htod_async, dev.ptr(), static_cast<const void *>(src), bytes, s1.get());
      if (dir != Dir::h2d)
        DLRIG_CU(memcpy_dtoh_async, static_cast<void *>(dst), d2h_src, bytes,
                 (dir == Dir::bidir ? s2 : s1).get());
    };
    auto one = [&]() -> double {
      if (pinned) {
        std::vector<const Stream *> streams{&s1};
        if (dir == Dir::bidir)
          streams.push_back(&s2);
        Timed t = time_streams(d, streams, pass);
        gated = t.gated;
        return t.seconds;
      }
      // Pageable: the driver stages through its own pinned buffers; the host clock around the
      // synchronous copy is the time (bandwidthTest's method).
      auto t0 = std::chrono::steady_clock::now();
      if (dir == Dir::h2d)
        DLRIG_CU(memcpy_htod, dev.ptr(), static_cast<const void *>(src), bytes);
      else
        DLRIG_CU(memcpy_dtoh, static_cast<void *>(dst), d2h_src, bytes);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    StateLog log(d); // pinned: read during each pass; pageable: right after it
    auto timed = [&] {
      double seconds = one();
      if (!pinned)
        log.read();
      return seconds;
    };
    timed(); // untimed warm-up
    while (s.more())
      s.add(timed());

    // The link as NVML sees it while one more (untimed) pass runs.
    std::string no_link;
    std::optional<LinkNow> link;
    if (pinned) {
      pass();
      link = link_now(d, no_link);
      DLRIG_CU(stream_synchronize, s1.get());
      DLRIG_CU(stream_synchronize, s2.get());
    } else {
      link = link_now(d, no_link);
    }
    Outcome o = bytes_outcome((dir == Dir::bidir ? 2.0 : 1.0) * static_cast<double>(bytes));
    o.details = device_details(d);
    if (link) {
      o.details["link_during_transfer"] = {{"gen", link->gen},
                                           {"width", link->width},
                                           {"gen_max", link->gen_max},
                                           {"width_max", link->width_max}};
      if ((link->gen_max && link->gen < link->gen_max) ||
          (link->width_max && link->width < link->width_max))
        o.details["link_note"] = fmt::format(
            "the link ran at Gen{} x{} during the copy, below its maximum Gen{} x{}: a downtrained "
            "link, a riser, or the wrong slot",
            link->gen, link->width, link->gen_max, link->width_max);
    } else {
      o.details["link_during_transfer"] = nullptr;
      o.details["link_note"] = "link not read during the copy: " + no_link;
    }
    if (dir != Dir::d2h)
      o.verification_error = verify_device(ctx, dev.ptr(), bytes, seed);
    if (dir != Dir::h2d && !o.verification_error) {
      maybe_corrupt(ctx, dst, bytes);
      o.verification_error = check_pattern(dst, bytes, seed + 1);
    }
    o.details["bytes"] = bytes;
    log.into(o.details);
    o.details["host_memory"] = pinned ? "pinned (cuMemHostAlloc)" : "pageable (new[])";
    o.details["timing"] = pinned ? (gated ? "CUDA events, gated by the hold kernel" : "CUDA events")
                                 : "host clock around a synchronous copy";
    o.details["bytes_convention"] =
        dir == Dir::bidir ? "bytes of both directions (2 x size)" : "bytes copied one way";
    Summary sum = summarize(s.samples());
    auto ceiling = link_ceiling(ctx, d);
    if (ceiling) {
      o.peak = ways * ceiling->bytes_per_s / 1e9;
      o.peak_assumption =
          fmt::format("raw rate{} of {}, the narrowest link on the path "
                      "(knowledge base, data/links.csv)",
                      dir == Dir::bidir ? " of both directions" : " per direction", ceiling->what);
      if (sum.n > 0 && sum.min > 0) {
        double best = o.work / sum.min / 1e9;
        double median = o.work / sum.median / 1e9;
        if (best > *o.peak && !o.verification_error)
          o.verification_error = fmt::format(
              "{:.2f} GB/s is above the raw rate of the link, {:.2f} GB/s ({}): a timing error, "
              "not a record",
              best, *o.peak, ceiling->what);
        o.details["verdict"] = link_verdict(median / ways, *ceiling);
      }
    } else {
      o.peak_assumption = "the link to this GPU is not in the snapshot: not checked against a raw "
                          "rate";
    }
    if (snap && snap->numa_node)
      o.details["numa_node"] = *snap->numa_node;
    o.details["numa_binding"] = numa.what();
    return o;
  });
}

Benchmark transfer(Dir dir, bool pinned) {
  const char *dname = dir == Dir::h2d ? "h2d" : dir == Dir::d2h ? "d2h" : "bidir";
  std::string what = dir == Dir::h2d   ? "host to device copy"
                     : dir == Dir::d2h ? "device to host copy"
                                       : "both directions at once (two streams)";
  return {fmt::format("gpu.{}.{}", dname, pinned ? "pinned" : "pageable"),
          std::string("gpu.") + dname,
          fmt::format("{}, {} host memory, size sweep, checked against the link's raw rate", what,
                      pinned ? "pinned" : "pageable"),
          "1 GPU",
          [](const Context &) { return needs_gpus(1); },
          [](const Context &ctx) { return per_gpu(transfer_sizes(ctx)); },
          [dir, pinned](const Config &c, const Context &ctx, Sampler &s) {
            return run_transfer(dir, pinned, c, ctx, s);
          }};
}

// ---- launch latency ---------------------------------------------------------------------------

constexpr int kLaunchBatch = 100;

Outcome run_launch(bool queued, const Config &c, const Context &, Sampler &s) {
  Runtime &rt = Runtime::get();
  Device &d = device_for(c);
  return rt.guarded(d, [&] {
    cuda::Function f = rt.kernel(d, "dlrig_empty");
    Stream stream;
    auto batch = [&]() -> double {
      if (queued) {
        Timed t = time_streams(d, {&stream}, [&] {
          for (int i = 0; i < kLaunchBatch; ++i)
            launch(d, f, Grid{1, 1}, stream.get(), {});
        });
        return t.seconds / kLaunchBatch;
      }
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kLaunchBatch; ++i) {
        launch(d, f, Grid{1, 1}, stream.get(), {});
        DLRIG_CU(stream_synchronize, stream.get());
      }
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
             kLaunchBatch;
    };
    StateLog log(d); // queued: read during each batch; sync: right after it
    auto timed = [&] {
      double seconds = batch();
      if (!queued)
        log.read();
      return seconds;
    };
    timed(); // warm-up
    while (s.more())
      s.add(timed());
    DLRIG_CU(stream_synchronize, stream.get()); // any launch failure surfaces here
    Outcome o;
    o.work = 1;
    o.work_unit = "launch";
    o.rate_unit = "launches/s";
    o.rate_scale = 1;
    o.details = device_details(d);
    Summary sum = summarize(s.samples());
    o.details["latency_us_median"] = sum.median * 1e6;
    log.into(o.details);
    o.details["method"] =
        queued ? fmt::format("{} empty kernels queued behind the hold kernel, CUDA events: GPU "
                             "time per launch",
                             kLaunchBatch)
               : fmt::format("launch + cuStreamSynchronize, host clock, mean of {} per sample",
                             kLaunchBatch);
    return o;
  });
}

Benchmark launch_bench(bool queued) {
  return {queued ? "gpu.launch.queued" : "gpu.launch.sync",
          "gpu.launch",
          queued ? "back-to-back empty kernels: GPU time per launch (latency = 1 / rate)"
                 : "empty kernel launch + synchronize round trip (latency = 1 / rate)",
          "1 GPU",
          [](const Context &) { return needs_gpus(1); },
          [](const Context &) {
            std::vector<Config> out;
            for (int g : Runtime::get().usable())
              out.push_back({fmt::format("gpu{}", g), {double(g)}});
            return out;
          },
          [queued](const Config &c, const Context &ctx, Sampler &s) {
            return run_launch(queued, c, ctx, s);
          }};
}

// ---- peer to peer -----------------------------------------------------------------------------

std::optional<std::string> p2p_can_run() {
  if (auto why = needs_gpus(2))
    return why;
  const auto &drv = Runtime::get().driver();
  const auto &api = drv.api();
  if (!api.memcpy_peer_async || !api.device_can_access_peer || !api.ctx_enable_peer_access)
    return drv.library_path() + " lacks the peer-to-peer functions (cuMemcpyPeerAsync, "
                                "cuDeviceCanAccessPeer, cuCtxEnablePeerAccess)";
  return std::nullopt;
}

double p2p_size(const Context &ctx) {
  return ctx.small                     ? 1 * kMiB
         : ctx.tier == Tier::quick     ? 64 * kMiB
         : ctx.tier == Tier::sustained ? 1024 * kMiB
                                       : 256 * kMiB;
}

// Enables peer access from `from`'s context to `to`'s memory when the driver says it can.
bool enable_peer(Device &from, Device &to) {
  const auto &drv = Runtime::get().driver();
  int can = 0;
  DLRIG_CU(device_can_access_peer, &can, from.handle, to.handle);
  if (!can)
    return false;
  Runtime::get().use(from.ordinal);
  cuda::Result r = drv.api().ctx_enable_peer_access(to.context, 0u);
  if (r != cuda::kSuccess && r != cuda::kErrorPeerAccessAlreadyEnabled)
    throw cuda::Error(r, "cuCtxEnablePeerAccess", "cuCtxEnablePeerAccess: " + drv.error_text(r));
  return true;
}

Outcome run_p2p(bool bidir, const Config &c, const Context &ctx, Sampler &s) {
  Runtime &rt = Runtime::get();
  Device &a = device_for(c, 0);
  Device &b = device_for(c, 1);
  return rt.guarded(a, [&] {
    return rt.guarded(b, [&] {
      auto bytes = static_cast<std::size_t>(c.params.at(2));
      // Both ends' free memory first: a busy GPU skips the pair, naming the bytes.
      const std::string size = size_label(double(bytes));
      if (auto why = lacks_free_memory(a, 2.0 * static_cast<double>(bytes),
                                       fmt::format("2 buffers of {} (send, receive)", size)))
        throw Skip(*why);
      if (auto why = lacks_free_memory(b, (bidir ? 2.0 : 1.0) * static_cast<double>(bytes),
                                       bidir ? fmt::format("2 buffers of {} (receive, send)", size)
                                             : fmt::format("a buffer of {} (receive)", size)))
        throw Skip(*why);
      bool ab = enable_peer(a, b), ba = enable_peer(b, a);
      rt.use(b.ordinal);
      DeviceBuffer on_b(bytes);
      std::optional<DeviceBuffer> back_on_b;
      if (bidir)
        back_on_b.emplace(bytes);
      if (bidir)
        upload_pattern(back_on_b->ptr(), bytes, 0x62); // what b sends
      rt.use(a.ordinal);
      DeviceBuffer on_a(bytes), recv_on_a(bytes);
      upload_pattern(on_a.ptr(), bytes, 0x61);
      Stream s1, s2;
      auto pass = [&] {
        // a -> b on the first stream; b -> a on the second (bidir).
        DLRIG_CU(memcpy_peer_async, on_b.ptr(), b.context, on_a.ptr(), a.context, bytes, s1.get());
        if (bidir)
          DLRIG_CU(memcpy_peer_async, recv_on_a.ptr(), a.context, back_on_b->ptr(), b.context,
                   bytes, s2.get());
      };
      std::vector<const Stream *> streams{&s1};
      if (bidir)
        streams.push_back(&s2);
      StateLog log(a);                // the sending GPU
      time_streams(a, streams, pass); // warm-up
      while (s.more())
        s.add(time_streams(a, streams, pass).seconds);
      // on_b now holds a's pattern, recv_on_a (bidir) b's.
      Outcome o = bytes_outcome((bidir ? 2.0 : 1.0) * static_cast<double>(bytes));
      rt.use(b.ordinal);
      o.verification_error = verify_device(ctx, on_b.ptr(), bytes, 0x61);
      if (o.verification_error)
        *o.verification_error = fmt::format("GPU {} -> GPU {}: {} (peer copies that corrupt data "
                                            "are the GeForce P2P pitfall)",
                                            a.ordinal, b.ordinal, *o.verification_error);
      if (bidir && !o.verification_error) {
        rt.use(a.ordinal);
        std::unique_ptr<unsigned char[]> got(new unsigned char[bytes]);
        DLRIG_CU(memcpy_dtoh, got.get(), recv_on_a.ptr(), bytes);
        maybe_corrupt(ctx, got.get(), bytes);
        if (auto bad = check_pattern(got.get(), bytes, 0x62))
          o.verification_error = fmt::format("GPU {} -> GPU {}: {}", b.ordinal, a.ordinal, *bad);
      }
      o.details = device_details(a);
      o.details["peer"] = device_details(b);
      log.into(o.details);
      o.details["peer_access"] = {{"a_to_b", ab}, {"b_to_a", ba}};
      o.details["path"] = ab && ba ? "peer access (NVLink or PCIe P2P)"
                                   : "no peer access: the driver stages the copy through host "
                                     "memory";
      o.details["bytes_convention"] = bidir ? "both directions (2 x size)" : "bytes copied";
      o.peak_assumption = "the peer link's raw rate is not looked up yet";
      return o;
    });
  });
}

std::vector<Config> p2p_configs(bool bidir, const Context &ctx) {
  std::vector<Config> out;
  auto gpus = Runtime::get().usable();
  double bytes = p2p_size(ctx);
  for (int i : gpus)
    for (int j : gpus)
      if (bidir ? i < j : i != j)
        out.push_back(
            {fmt::format("gpu{}{}gpu{} {}", i, bidir ? "<->" : "->", j, size_label(bytes)),
             {double(i), double(j), bytes}});
  return out;
}

Benchmark p2p(bool bidir) {
  return {bidir ? "gpu.p2p.bidir" : "gpu.p2p.unidir",
          "gpu.p2p",
          bidir ? "GPU <-> GPU both directions at once, every pair, data verified"
                : "GPU -> GPU copy (cuMemcpyPeerAsync), every ordered pair, data verified",
          "2 GPUs",
          [](const Context &) { return p2p_can_run(); },
          [bidir](const Context &ctx) { return p2p_configs(bidir, ctx); },
          [bidir](const Config &c, const Context &ctx, Sampler &s) {
            return run_p2p(bidir, c, ctx, s);
          }};
}

} // namespace

std::vector<Benchmark> gpu_benchmarks() {
  return gpu::watching_faults(
      {memory(MemKernel::copy, "copy",
              "device-to-device copy (cuMemcpyDtoDAsync), read + write bytes counted"),
       memory(MemKernel::triad, "triad", "STREAM triad kernel a = b + s*c on doubles"),
       memory(MemKernel::sm_copy, "sm_copy", "SM-driven copy kernel (16-byte words)"),
       transfer(Dir::h2d, true), transfer(Dir::h2d, false), transfer(Dir::d2h, true),
       transfer(Dir::d2h, false), transfer(Dir::bidir, true), launch_bench(false),
       launch_bench(true), p2p(false), p2p(true)});
}

} // namespace dlrig::bench

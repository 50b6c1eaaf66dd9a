// The GPU families' shared runtime (gpu.hpp): the driver, devices, contexts, the embedded kernels,
// owning handles and the gated event timer.
#include "dlrig/bench/gpu.hpp"
#include "dlrig/platform/nvml.hpp"
#include "dlrig/probe/parse.hpp"

#include <fmt/format.h>

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>

namespace dlrig::bench::gpu {

namespace {
std::string cuda_library() {
  const char *env = std::getenv("DLRIG_CUDA_LIBRARY");
  return env && *env ? env : "libcuda.so.1";
}

// How long the hold kernel waits for the host before it gives up (it never should: the host
// releases it right after queueing one pass).
constexpr unsigned long long kHoldTimeoutNs = 10'000'000'000ULL;

// The GPUs lost in this process (mark_lost), kept apart from the Runtime so that faults() never
// opens the driver.
std::mutex g_faults_mutex;
std::vector<std::string> g_faults;
} // namespace

std::vector<std::string> faults() {
  std::lock_guard<std::mutex> lock(g_faults_mutex);
  return g_faults;
}

Runtime &Runtime::get() {
  // Never destroyed: the driver stays loaded until the process ends (unloading libcuda while the
  // driver's threads run is unsafe).
  static Runtime *r = new Runtime();
  return *r;
}

Runtime::Runtime() : driver_(cuda::Driver::open(cuda_library())) {
  if (!driver_.ready())
    return;
  const auto &api = driver_.api();
  // What every GPU family calls; a driver without one of them is too old (or not a driver).
  for (const auto &[bound, name] : std::initializer_list<std::pair<bool, const char *>>{
           {bool(api.device_get_count), api.device_get_count.name()},
           {bool(api.device_get), api.device_get.name()},
           {bool(api.device_get_name), api.device_get_name.name()},
           {bool(api.device_get_attribute), api.device_get_attribute.name()},
           {bool(api.device_total_mem), api.device_total_mem.name()},
           {bool(api.device_primary_ctx_retain), api.device_primary_ctx_retain.name()},
           {bool(api.ctx_set_current), api.ctx_set_current.name()},
           {bool(api.mem_alloc), api.mem_alloc.name()},
           {bool(api.mem_free), api.mem_free.name()},
           {bool(api.mem_host_alloc), api.mem_host_alloc.name()},
           {bool(api.mem_free_host), api.mem_free_host.name()},
           {bool(api.memcpy_htod), api.memcpy_htod.name()},
           {bool(api.memcpy_dtoh), api.memcpy_dtoh.name()},
           {bool(api.memcpy_htod_async), api.memcpy_htod_async.name()},
           {bool(api.memcpy_dtoh_async), api.memcpy_dtoh_async.name()},
           {bool(api.memcpy_dtod_async), api.memcpy_dtod_async.name()},
           {bool(api.stream_create), api.stream_create.name()},
           {bool(api.stream_destroy), api.stream_destroy.name()},
           {bool(api.stream_wait_event), api.stream_wait_event.name()},
           {bool(api.stream_synchronize), api.stream_synchronize.name()},
           {bool(api.event_create), api.event_create.name()},
           {bool(api.event_destroy), api.event_destroy.name()},
           {bool(api.event_record), api.event_record.name()},
           {bool(api.event_synchronize), api.event_synchronize.name()},
           {bool(api.event_elapsed_time), api.event_elapsed_time.name()},
           {bool(api.module_load_data_ex), api.module_load_data_ex.name()},
           {bool(api.module_get_function), api.module_get_function.name()},
           {bool(api.launch_kernel), api.launch_kernel.name()}})
    if (!bound) {
      no_devices_ = fmt::format("the CUDA driver {} lacks {} (too old for dlrig: CUDA 11.0 or "
                                "newer is needed)",
                                driver_.library_path(), name);
      return;
    }
  int count = 0;
  if (!api.device_get_count || api.device_get_count(&count) != cuda::kSuccess || count <= 0) {
    no_devices_ = "no CUDA device (cuDeviceGetCount found none)";
    return;
  }
  for (int i = 0; i < count; ++i) {
    Device d;
    d.ordinal = i;
    try {
      cuda::call(driver_, api.device_get, &d.handle, i);
      char name[256] = {};
      cuda::call(driver_, api.device_get_name, name, static_cast<int>(sizeof name) - 1, d.handle);
      d.name = name;
      char bus[64] = {};
      if (api.device_get_pci_bus_id &&
          api.device_get_pci_bus_id(bus, static_cast<int>(sizeof bus) - 1, d.handle) ==
              cuda::kSuccess)
        d.bus_id = bus;
      // An attribute the driver does not give stays 0 (unknown): the families fall back.
      auto attr = [&](int a) {
        int v = 0;
        if (api.device_get_attribute(&v, a, d.handle) != cuda::kSuccess)
          v = 0;
        return v;
      };
      d.cc_major = attr(cuda::kAttrComputeCapabilityMajor);
      d.cc_minor = attr(cuda::kAttrComputeCapabilityMinor);
      d.sms = attr(cuda::kAttrMultiprocessorCount);
      d.max_threads = attr(cuda::kAttrMaxThreadsPerBlock);
      d.l2_bytes = attr(cuda::kAttrL2CacheSize);
      d.can_map_host = attr(cuda::kAttrCanMapHostMemory) != 0;
      cuda::call(driver_, api.device_total_mem, &d.total_bytes, d.handle);
    } catch (const cuda::Error &e) {
      d.lost = fmt::format("GPU {} could not be queried: {}", i, e.what());
    }
    devices_.push_back(std::move(d));
  }
}

std::optional<std::string> Runtime::unavailable() const {
  if (!driver_.ready())
    return driver_.error();
  if (no_devices_)
    return no_devices_;
  return std::nullopt;
}

std::vector<int> Runtime::usable() const {
  std::vector<int> out;
  for (auto &d : devices_)
    if (!d.lost)
      out.push_back(d.ordinal);
  return out;
}

void Runtime::mark_lost(Device &d, const std::string &why) {
  if (d.lost)
    return;
  d.lost = fmt::format("GPU {} ({}) failed and is not used again in this run: {}", d.ordinal,
                       d.name, why);
  std::lock_guard<std::mutex> lock(g_faults_mutex);
  g_faults.push_back(*d.lost);
}

Device &Runtime::use(int ordinal) {
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= devices_.size())
    throw std::runtime_error(fmt::format("no GPU {}", ordinal));
  watch_xids();
  Device &d = devices_[static_cast<std::size_t>(ordinal)];
  if (static_cast<std::size_t>(ordinal) < used_.size())
    used_[static_cast<std::size_t>(ordinal)] = true;
  if (d.lost)
    throw Skip(*d.lost);
  guarded(d, [&] {
    if (!d.context)
      DLRIG_CU(device_primary_ctx_retain, &d.context, d.handle);
    DLRIG_CU(ctx_set_current, d.context);
  });
  return d;
}

void Runtime::begin_configuration() {
  watch_xids(); // an Xid raised before this configuration belongs to the one before
  used_.assign(devices_.size(), false);
  lost_before_.assign(devices_.size(), false);
  for (std::size_t i = 0; i < devices_.size(); ++i)
    lost_before_[i] = devices_[i].lost.has_value();
}

std::optional<std::string> Runtime::lost_since_begin() const {
  for (std::size_t i = 0; i < devices_.size() && i < used_.size(); ++i)
    if (used_[i] && !lost_before_[i] && devices_[i].lost)
      return *devices_[i].lost + "; raised while this configuration ran, so its result is not kept";
  return std::nullopt;
}

std::optional<std::string> Runtime::end_configuration() {
  watch_xids();
  return lost_since_begin();
}

bool Runtime::lost_during_configuration() {
  const auto now = std::chrono::steady_clock::now();
  if (now - xids_read_ >= kXidPollInterval) {
    xids_read_ = now;
    watch_xids();
  }
  return lost_since_begin().has_value();
}

std::vector<Benchmark> watching_faults(std::vector<Benchmark> benchmarks) {
  for (Benchmark &b : benchmarks)
    b.run = [run = std::move(b.run)](const Config &c, const Context &ctx, Sampler &s) {
      Runtime &rt = Runtime::get();
      rt.begin_configuration();
      s.end_on_fault([&rt] { return rt.lost_during_configuration(); });
      Outcome o;
      try {
        o = run(c, ctx, s);
      } catch (const Skip &) {
        // A GPU lost mid-run (use() found it lost) fails the configuration, not skips it.
        if (auto why = rt.end_configuration())
          throw std::runtime_error(*why);
        throw;
      }
      if (auto why = rt.end_configuration())
        throw std::runtime_error(*why);
      return o;
    };
  return benchmarks;
}

cuda::Function Runtime::kernel(Device &d, const char *name) {
  if (d.module_error)
    throw std::runtime_error(*d.module_error);
  if (!d.module) {
    std::string info(16384, '\0'), error(16384, '\0');
    cuda::JitOption options[] = {cuda::kJitInfoLogBuffer, cuda::kJitInfoLogBufferSizeBytes,
                                 cuda::kJitErrorLogBuffer, cuda::kJitErrorLogBufferSizeBytes};
    void *values[] = {info.data(), reinterpret_cast<void *>(info.size() - 1), error.data(),
                      reinterpret_cast<void *>(error.size() - 1)};
    std::string ptx(kernels_ptx()); // NUL-terminated copy
    try {
      guarded(d, [&] {
        DLRIG_CU(module_load_data_ex, &d.module, static_cast<const void *>(ptx.c_str()), 4u,
                 options, values);
      });
    } catch (const cuda::Error &e) {
      std::string log(error.c_str());
      d.module_error = fmt::format("the embedded kernels did not load on GPU {}: {}{}{}", d.ordinal,
                                   e.what(), log.empty() ? "" : "; JIT log: ", log);
      if (e.code() == cuda::kErrorUnsupportedPtxVersion || e.code() == cuda::kErrorInvalidPtx)
        *d.module_error += " (the kernels are PTX ISA 7.0: the driver must support CUDA 11.0)";
      throw std::runtime_error(*d.module_error);
    }
    d.jit_log = info.c_str();
    // The hold kernel's flag and timed-out mark: pinned, mapped host memory.
    if (d.can_map_host) {
      void *host = nullptr;
      DLRIG_CU(mem_host_alloc, &host, 2 * sizeof(int),
               cuda::kMemHostAllocPortable | cuda::kMemHostAllocDeviceMap);
      d.hold_host = static_cast<int *>(host);
      d.hold_host[0] = d.hold_host[1] = 0;
      DLRIG_CU(mem_host_get_device_pointer, &d.hold_device, host, 0u);
    }
  }
  cuda::Function f = nullptr;
  guarded(d, [&] { DLRIG_CU(module_get_function, &f, d.module, name); });
  return f;
}

// --- handles -----------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  DLRIG_CU(mem_alloc, &ptr_, bytes);
}
DeviceBuffer::~DeviceBuffer() {
  const auto &api = Runtime::get().driver().api();
  if (ptr_ && api.mem_free)
    api.mem_free(ptr_);
}

PinnedBuffer::PinnedBuffer(std::size_t bytes, unsigned flags) : bytes_(bytes) {
  DLRIG_CU(mem_host_alloc, &ptr_, bytes, flags);
}
PinnedBuffer::~PinnedBuffer() {
  const auto &api = Runtime::get().driver().api();
  if (ptr_ && api.mem_free_host)
    api.mem_free_host(ptr_);
}

Stream::Stream() {
  DLRIG_CU(stream_create, &s_, cuda::kStreamNonBlocking);
}
Stream::~Stream() {
  const auto &api = Runtime::get().driver().api();
  if (s_ && api.stream_destroy)
    api.stream_destroy(s_);
}

Event::Event() {
  DLRIG_CU(event_create, &e_, cuda::kEventDefault);
}
Event::~Event() {
  const auto &api = Runtime::get().driver().api();
  if (e_ && api.event_destroy)
    api.event_destroy(e_);
}

double elapsed(const Event &start, const Event &end) {
  float ms = 0;
  DLRIG_CU(event_synchronize, end.get());
  DLRIG_CU(event_elapsed_time, &ms, start.get(), end.get());
  return static_cast<double>(ms) / 1e3;
}

Timed time_streams(Device &d, const std::vector<const Stream *> &streams,
                   const std::function<void()> &enqueue) {
  Runtime &rt = Runtime::get();
  Timed t;
  std::vector<std::unique_ptr<Event>> starts, ends;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    starts.push_back(std::make_unique<Event>());
    ends.push_back(std::make_unique<Event>());
  }
  cuda::Function hold = nullptr;
  if (!d.module_error && d.can_map_host) {
    try {
      hold = rt.kernel(d, "dlrig_hold");
    } catch (const std::runtime_error &) {
      hold = nullptr; // copies are still timed, without the gate
    }
  }
  if (hold && d.hold_host) {
    std::atomic_ref<int>(d.hold_host[0]).store(0);
    std::atomic_ref<int>(d.hold_host[1]).store(0);
    cuda::DevicePtr flag = d.hold_device, timed_out = d.hold_device + sizeof(int);
    unsigned long long timeout = kHoldTimeoutNs;
    launch(d, hold, Grid{1, 1}, streams.front()->get(), {&flag, &timeout, &timed_out});
    t.gated = true;
  }
  // The other streams wait for the first one's gate, so nothing starts before the release.
  std::optional<Event> gate;
  if (streams.size() > 1) {
    gate.emplace();
    DLRIG_CU(event_record, gate->get(), streams.front()->get());
    for (std::size_t i = 1; i < streams.size(); ++i)
      DLRIG_CU(stream_wait_event, streams[i]->get(), gate->get(), 0u);
  }
  for (std::size_t i = 0; i < streams.size(); ++i)
    DLRIG_CU(event_record, starts[i]->get(), streams[i]->get());
  enqueue();
  for (std::size_t i = 0; i < streams.size(); ++i)
    DLRIG_CU(event_record, ends[i]->get(), streams[i]->get());
  if (t.gated)
    std::atomic_ref<int>(d.hold_host[0]).store(1);
  // NVML's view while the pass runs.
  if (StateLog *log = StateLog::current(d))
    log->read();
  // From the first stream's start (every stream starts after it) to the last end.
  double latest = 0;
  for (std::size_t j = 0; j < streams.size(); ++j)
    latest = std::max(latest, elapsed(*starts[0], *ends[j]));
  if (t.gated && std::atomic_ref<int>(d.hold_host[1]).load() != 0)
    throw std::runtime_error("the hold kernel timed out before the host released it");
  t.seconds = latest;
  return t;
}

Grid grid_for(const Device &d, std::uint64_t n) {
  Grid g;
  g.threads = static_cast<unsigned>(std::clamp(d.max_threads, 32, 256));
  std::uint64_t want = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(d.sms) * 8);
  std::uint64_t needed = (n + g.threads - 1) / g.threads;
  g.blocks = static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(want, needed)));
  return g;
}

void launch(Device &d, cuda::Function f, Grid g, cuda::Stream s, std::vector<void *> params) {
  Runtime::get().guarded(d, [&] {
    DLRIG_CU(launch_kernel, f, g.blocks, 1u, 1u, g.threads, 1u, 1u, 0u, s, params.data(),
             static_cast<void **>(nullptr));
  });
}

// --- patterns ----------------------------------------------------------------------------------

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + index + 1;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x ? x : 1;
}

void fill_pattern(unsigned char *p, std::size_t bytes, std::uint64_t seed) {
  std::size_t words = bytes / 8;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w = pattern_word(seed, i);
    std::memcpy(p + 8 * i, &w, 8);
  }
  for (std::size_t i = words * 8; i < bytes; ++i)
    p[i] = static_cast<unsigned char>(pattern_word(seed, i) & 0xff);
}

std::optional<std::string> check_pattern(const unsigned char *p, std::size_t bytes,
                                         std::uint64_t seed) {
  std::size_t words = bytes / 8;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w = 0, want = pattern_word(seed, i);
    std::memcpy(&w, p + 8 * i, 8);
    if (w != want)
      return fmt::format("byte {} of {}: 0x{:016x} instead of 0x{:016x}", 8 * i, bytes, w, want);
  }
  for (std::size_t i = words * 8; i < bytes; ++i)
    if (p[i] != static_cast<unsigned char>(pattern_word(seed, i) & 0xff))
      return fmt::format("byte {} of {} differs", i, bytes);
  return std::nullopt;
}

// --- the snapshot ------------------------------------------------------------------------------

namespace {
// (domain, bus, device, function) of "dddd:bb:dd.f" with any domain width; nullopt if malformed.
std::optional<std::array<unsigned long, 4>> parse_bus_id(const std::string &s) {
  unsigned long dom = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%lx:%lx:%lx.%lx%c", &dom, &bus, &dev, &fn, &tail) != 4)
    return std::nullopt;
  return std::array<unsigned long, 4>{dom, bus, dev, fn};
}
} // namespace

bool same_bus_id(const std::string &a, const std::string &b) {
  auto x = parse_bus_id(a), y = parse_bus_id(b);
  return x && y && *x == *y;
}

const dlrig::Gpu *snapshot_gpu(const Context &ctx, const Device &d) {
  if (!ctx.snapshot || d.bus_id.empty())
    return nullptr;
  for (const auto &g : ctx.snapshot->gpus)
    if (same_bus_id(g.bdf, d.bus_id))
      return &g;
  return nullptr;
}

// --- NUMA ------------------------------------------------------------------------------------

std::optional<std::vector<int>> parse_cpu_list(const std::string &text) {
  std::vector<int> out;
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
    t.pop_back();
  if (t.empty())
    return std::nullopt;
  std::size_t at = 0;
  while (at <= t.size()) {
    std::size_t comma = t.find(',', at);
    std::string part = t.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int lo = -1, hi = -1;
    char extra = 0;
    if (std::sscanf(part.c_str(), "%d-%d%c", &lo, &hi, &extra) == 2) {
    } else if (std::sscanf(part.c_str(), "%d%c", &lo, &extra) == 1) {
      hi = lo;
    } else {
      return std::nullopt;
    }
    if (lo < 0 || hi < lo || hi >= CPU_SETSIZE)
      return std::nullopt;
    for (int c = lo; c <= hi; ++c)
      out.push_back(c);
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

namespace {
constexpr int kMpolDefault = 0, kMpolPreferred = 1; // <linux/mempolicy.h>
long set_mempolicy_call(int mode, const unsigned long *mask, unsigned long maxnode) {
  return syscall(SYS_set_mempolicy, mode, mask, maxnode);
}
} // namespace

NumaBinding::NumaBinding(std::optional<int> node) {
  if (!node || *node < 0) {
    what_ = "not bound: the GPU's NUMA node is unknown";
    return;
  }
  std::ifstream in(fmt::format("/sys/devices/system/node/node{}/cpulist", *node));
  std::string text;
  std::getline(in, text);
  auto cpus = parse_cpu_list(text);
  if (!cpus || cpus->empty()) {
    what_ = fmt::format("not bound: /sys/devices/system/node/node{}/cpulist unreadable", *node);
    return;
  }
  cpu_set_t old, want;
  CPU_ZERO(&want);
  for (int c : *cpus)
    CPU_SET(c, &want);
  if (sched_getaffinity(0, sizeof old, &old) == 0 &&
      sched_setaffinity(0, sizeof want, &want) == 0) {
    cpus_set_ = true;
    saved_cpus_.assign(reinterpret_cast<unsigned char *>(&old),
                       reinterpret_cast<unsigned char *>(&old) + sizeof old);
  }
  unsigned long mask[16] = {};
  if (*node < static_cast<int>(8 * sizeof mask)) {
    mask[static_cast<std::size_t>(*node) / (8 * sizeof(unsigned long))] |=
        1UL << (static_cast<unsigned>(*node) % (8 * sizeof(unsigned long)));
    memory_set_ = set_mempolicy_call(kMpolPreferred, mask, 8 * sizeof mask) == 0;
  }
  what_ = fmt::format(
      "thread on node {}'s CPUs ({}){}{}", *node, text, cpus_set_ ? "" : " refused by the kernel",
      memory_set_ ? ", memory preferred on that node" : ", memory policy unchanged");
}

NumaBinding::~NumaBinding() {
  if (cpus_set_) {
    cpu_set_t old;
    std::memcpy(&old, saved_cpus_.data(), sizeof old);
    sched_setaffinity(0, sizeof old, &old);
  }
  if (memory_set_)
    set_mempolicy_call(kMpolDefault, nullptr, 0);
}

namespace {
// The process's NVML session (DLRIG_NVML_LIBRARY, else libnvidia-ml.so.1), opened on first use,
// and this GPU's handle in it, matched by bus id; nullptr with `why` when NVML cannot say.
const nvml::Session *nvml_for(const Device &d, nvml::Device &handle, std::string &why) {
  static nvml::Session *session = [] {
    const char *env = std::getenv("DLRIG_NVML_LIBRARY");
    return new nvml::Session(nvml::Session::open(env && *env ? env : "libnvidia-ml.so.1"));
  }();
  if (!session->ready()) {
    why = "NVML: " + session->error();
    return nullptr;
  }
  const auto &t = session->table();
  unsigned count = 0;
  if (!t.device_get_count || t.device_get_count(&count) != nvml::kSuccess) {
    why = "NVML gave no device count";
    return nullptr;
  }
  for (unsigned i = 0; i < count; ++i) {
    auto h = nvml::device_handle(*session, i);
    if (!h.value)
      continue;
    nvml::PciInfo pci{};
    if (t.device_get_pci_info && t.device_get_pci_info(*h.value, &pci) == nvml::kSuccess &&
        same_bus_id(nvml::bus_id_text(pci), d.bus_id)) {
      handle = *h.value;
      return session;
    }
  }
  why = "NVML does not list a GPU at " + d.bus_id;
  return nullptr;
}
} // namespace

std::optional<LinkNow> link_now(const Device &d, std::string &why) {
  nvml::Device h{};
  const nvml::Session *session = nvml_for(d, h, why);
  if (!session)
    return std::nullopt;
  const auto &t = session->table();
  LinkNow l;
  bool ok = t.device_get_curr_pcie_link_generation && t.device_get_curr_pcie_link_width &&
            t.device_get_curr_pcie_link_generation(h, &l.gen) == nvml::kSuccess &&
            t.device_get_curr_pcie_link_width(h, &l.width) == nvml::kSuccess;
  if (!ok) {
    why = "NVML does not give this GPU's current PCIe link";
    return std::nullopt;
  }
  if (t.device_get_max_pcie_link_generation)
    t.device_get_max_pcie_link_generation(h, &l.gen_max);
  if (t.device_get_max_pcie_link_width)
    t.device_get_max_pcie_link_width(h, &l.width_max);
  return l;
}

std::optional<nvml::LiveSample> state_now(const Device &d, std::string &why) {
  nvml::Device h{};
  const nvml::Session *session = nvml_for(d, h, why);
  if (!session)
    return std::nullopt;
  return nvml::clock_sample(*session, h);
}

namespace {
// NVML nvmlClocksEventReasons bits
// (https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html); `slows`: the clock
// was lowered for heat or a hardware signal (what doctor's throttling check counts).
struct ReasonBit {
  std::uint64_t bit;
  const char *name;
  bool slows;
};
const ReasonBit kReasons[] = {{0x1, "gpu_idle", false},
                              {0x2, "applications_clocks_setting", false},
                              {0x4, "sw_power_cap", false},
                              {0x8, "hw_slowdown", true},
                              {0x10, "sync_boost", false},
                              {0x20, "sw_thermal_slowdown", true},
                              {0x40, "hw_thermal_slowdown", true},
                              {0x80, "hw_power_brake_slowdown", true},
                              {0x100, "display_clock_setting", false}};

thread_local StateLog *g_current_log = nullptr;
} // namespace

std::vector<std::string> clock_event_reasons(std::uint64_t mask, bool &slows) {
  std::vector<std::string> out;
  for (const auto &b : kReasons)
    if (mask & b.bit) {
      out.push_back(b.name);
      slows |= b.slows;
    }
  return out;
}

StateLog::StateLog(const Device &d) : d_(d), previous_(g_current_log) {
  g_current_log = this;
}
StateLog::~StateLog() {
  // Logs may end in any order (nccl.* holds one per rank): unlink this one wherever it is.
  if (g_current_log == this) {
    g_current_log = previous_;
    return;
  }
  for (StateLog *l = g_current_log; l; l = l->previous_)
    if (l->previous_ == this) {
      l->previous_ = previous_;
      return;
    }
}

StateLog *StateLog::current(const Device &d) {
  return g_current_log && &g_current_log->d_ == &d ? g_current_log : nullptr;
}

void StateLog::read() {
  if (why_not_)
    return;
  // One reading per kMinReadingInterval at most: a pass of a few microseconds (a small GEMM, a
  // launch round trip) would otherwise be timed a thousand times with NVML calls between.
  const auto now = std::chrono::steady_clock::now();
  if (last_ && now - *last_ < kMinReadingInterval)
    return;
  last_ = now;
  std::string why;
  auto st = state_now(d_, why);
  if (!st) {
    why_not_ = why;
    return;
  }
  Reading r;
  r.sm_clock_mhz = st->sm_clock_mhz.value;
  r.temperature_c = st->temperature_c.value;
  if (st->power_usage_mw.value)
    r.power_w = *st->power_usage_mw.value / 1e3;
  r.reasons = st->clocks_event_reasons.value;
  readings_.push_back(r);
}

void StateLog::into(Json &details) const {
  if (readings_.empty()) {
    details["gpu_state_samples"] = nullptr;
    if (!details.contains("gpu_state_note"))
      details["gpu_state_note"] =
          "clocks, power and temperature not read: " + why_not_.value_or("no timed pass");
    return;
  }
  std::optional<unsigned> sm_min, sm_max, temp_max;
  std::optional<double> power_max;
  std::uint64_t seen = 0;
  bool any_reasons = false;
  int throttled = 0;
  for (const auto &r : readings_) {
    if (r.sm_clock_mhz) {
      sm_min = std::min(sm_min.value_or(*r.sm_clock_mhz), *r.sm_clock_mhz);
      sm_max = std::max(sm_max.value_or(*r.sm_clock_mhz), *r.sm_clock_mhz);
    }
    if (r.temperature_c)
      temp_max = std::max(temp_max.value_or(*r.temperature_c), *r.temperature_c);
    if (r.power_w)
      power_max = std::max(power_max.value_or(*r.power_w), *r.power_w);
    if (r.reasons) {
      any_reasons = true;
      seen |= *r.reasons;
      bool slows = false;
      clock_event_reasons(*r.reasons, slows);
      throttled += slows ? 1 : 0;
    }
  }
  auto opt = [](const auto &v) { return v ? Json(*v) : Json(nullptr); };
  bool unused = false;
  Json reasons = Json::array();
  for (const auto &name : clock_event_reasons(seen, unused))
    reasons.push_back(name);
  details["gpu_state_samples"] = {
      {"readings", readings_.size()},
      {"throttled_readings", any_reasons ? Json(throttled) : Json(nullptr)},
      {"sm_clock_mhz", {{"min", opt(sm_min)}, {"max", opt(sm_max)}}},
      {"temperature_c_max", opt(temp_max)},
      {"power_w_max", opt(power_max)},
      {"clocks_event_reasons", any_reasons ? reasons : Json(nullptr)}};
  if (!any_reasons) {
    if (!details.contains("throttled"))
      details["throttled"] = nullptr;
    return;
  }
  bool before = details.contains("throttled") && details["throttled"].is_boolean() &&
                details["throttled"].get<bool>();
  details["throttled"] = before || throttled > 0;
  if (throttled > 0 && !details.contains("gpu_state_note"))
    details["gpu_state_note"] =
        fmt::format("the GPU lowered its clocks for heat or a hardware slowdown in {} of {} "
                    "passes: the rate is below what it delivers cool",
                    throttled, readings_.size());
}

namespace {
std::optional<std::string> g_withheld; // withhold_gpus()
} // namespace

void withhold_gpus(const Snapshot &snapshot) {
  if (snapshot.nvidia.nvml_status == "timed-out")
    g_withheld = "NVML did not answer when the machine was probed (doctor: "
                 "gpu.nvml-not-responding): a GPU or the driver has stopped responding, and the "
                 "GPU benchmarks would hang on it";
}

std::optional<std::string> needs_gpus(int count) {
  if (g_withheld)
    return g_withheld;
  Runtime &rt = Runtime::get();
  if (auto why = rt.unavailable())
    return why;
  auto n = static_cast<int>(rt.usable().size());
  if (n >= count)
    return std::nullopt;
  if (!rt.devices().empty() && n < static_cast<int>(rt.devices().size()))
    for (auto &d : rt.devices())
      if (d.lost && n == 0)
        return *d.lost;
  return count == 1 ? std::string("no usable GPU")
                    : fmt::format("needs {} GPUs, {} here", count, n);
}

namespace {
std::string bytes_text(double b) {
  const double mib = 1024.0 * 1024.0;
  return b >= 1024 * mib ? fmt::format("{:.1f} GiB", b / 1024 / mib)
                         : fmt::format("{:.1f} MiB", b / mib);
}
} // namespace

std::optional<std::string> too_little_free(const Device &d, double needed, const std::string &what,
                                           std::size_t free, std::size_t total) {
  if (needed <= 0.9 * static_cast<double>(free))
    return std::nullopt;
  return fmt::format("needs {:.0f} B ({}) of device memory on GPU {} ({}) for {}; {:.0f} B ({}) "
                     "of {} free, and a tenth of that stays for the driver and other processes",
                     needed, bytes_text(needed), d.ordinal, d.name, what, static_cast<double>(free),
                     bytes_text(static_cast<double>(free)), bytes_text(static_cast<double>(total)));
}

std::optional<std::string> lacks_free_memory(Device &d, double needed, const std::string &what) {
  Runtime &rt = Runtime::get();
  const auto &api = rt.driver().api();
  rt.use(d.ordinal);
  std::size_t free = 0, total = 0;
  if (!api.mem_get_info || api.mem_get_info(&free, &total) != cuda::kSuccess || total == 0)
    return std::nullopt;
  return too_little_free(d, needed, what, free, total);
}

std::optional<std::string> too_little_host(double needed, std::optional<double> available,
                                           const std::string &what) {
  if (!available || needed <= *available / 2)
    return std::nullopt;
  return fmt::format("needs {} of host memory ({:.0f} MiB) and only {:.0f} MiB is available "
                     "(MemAvailable): page-locked buffers that large could push the machine into "
                     "swap or the OOM killer",
                     what, needed / 1048576, *available / 1048576);
}

std::optional<double> mem_available(std::string_view meminfo) {
  auto m = probe::parse_meminfo(meminfo);
  if (!m || !m->available_bytes)
    return std::nullopt;
  return static_cast<double>(*m->available_bytes);
}

Device &device_for(const Config &c, std::size_t param) {
  return Runtime::get().use(static_cast<int>(c.params.at(param)));
}

void Runtime::watch_xids() {
  if (!xids_opened_) {
    xids_opened_ = true;
    const nvml::Session *session = nullptr;
    std::vector<nvml::Device> handles;
    for (const auto &d : devices_) {
      nvml::Device h{};
      std::string why;
      if (const nvml::Session *s = nvml_for(d, h, why)) {
        session = s;
        handles.push_back(h);
      }
    }
    if (session && !handles.empty())
      xids_ = std::make_unique<nvml::XidEvents>(*session, handles);
  }
  if (!xids_ || !xids_->ok())
    return;
  for (const auto &e : xids_->poll())
    for (auto &d : devices_) {
      nvml::Device h{};
      std::string why;
      if (nvml_for(d, h, why) && h == e.device)
        mark_lost(d, fmt::format("NVML reported Xid {} (NVIDIA's Xid catalogue: "
                                 "https://docs.nvidia.com/deploy/xid-errors/index.html)",
                                 e.xid));
    }
}

} // namespace dlrig::bench::gpu

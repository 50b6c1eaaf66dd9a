#pragma once
// What the GPU families of `dlrig bench` share (docs/bench.md, "GPU"): the CUDA driver loaded once
// per process (platform/cuda.hpp: DLRIG_CUDA_LIBRARY, else libcuda.so.1), the devices it sees,
// their primary contexts, the embedded PTX kernels JIT-compiled per device, owning handles for
// memory, streams and events, and the event timer gated by the hold kernel.
//
// A GPU that answers a sticky error (cuda::is_sticky: an illegal address, a launch failure, an
// uncorrectable ECC error, "unknown error" as a GPU that fell off the bus answers) is marked lost:
// the benchmark in progress fails with that reason, the results measured before it are kept, every
// later configuration on that GPU is skipped with the reason (Runtime::use throws Skip), and
// `dlrig bench` reports the fault and exits 2 (faults()).
#include "dlrig/bench/bench.hpp"
#include "dlrig/platform/cuda.hpp"
#include "dlrig/platform/nvml.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::bench::gpu {

// The PTX of src/dlrig/bench/kernels/dlrig_kernels.cu (generated at build time from the committed
// dlrig_kernels.ptx).
std::string_view kernels_ptx();

struct Device {
  int ordinal = 0;
  cuda::Device handle = 0;
  std::string name;
  std::string bus_id; // as the driver spells it, "0000:18:00.0"
  int cc_major = 0, cc_minor = 0, sms = 0, max_threads = 0;
  std::int64_t l2_bytes = 0;
  std::size_t total_bytes = 0;
  bool can_map_host = false;
  std::optional<std::string> lost; // why this GPU is not used again in this process

  // Set on first use.
  cuda::Context context = nullptr;
  cuda::Module module = nullptr;
  std::optional<std::string> module_error; // why the kernels did not load (with the JIT log)
  std::string jit_log;
  int *hold_host = nullptr;        // [0] the hold kernel's flag, [1] its timed-out mark
  cuda::DevicePtr hold_device = 0; // the same, as the device sees it
};

class Runtime {
public:
  // The process's runtime; the driver is opened on the first call.
  static Runtime &get();
  const cuda::Driver &driver() const { return driver_; }
  // Why no GPU benchmark can run here (the driver's reason, or no device); nullopt when one can.
  std::optional<std::string> unavailable() const;
  std::vector<Device> &devices() { return devices_; }
  // The devices not lost, in ordinal order.
  std::vector<int> usable() const;
  // Makes the device's primary context current (retaining it on first use). Throws Skip with the
  // reason when the device is lost. Before that it reads the Xid events NVML raised since the
  // last call (every GPU registered on the first one): a GPU with an Xid is marked lost, so its
  // remaining configurations are skipped, the results so far kept and the fault reported.
  Device &use(int ordinal);
  // One configuration's bracket (watching_faults): begin_configuration() reads the Xids raised so
  // far and forgets which GPUs were used; end_configuration() reads them once more and returns why
  // the configuration fails: a GPU it used (use()) was lost while it ran (an Xid, a sticky error),
  // so an Xid raised during a GPU's last configuration is seen too. nullopt when none was.
  void begin_configuration();
  std::optional<std::string> end_configuration();
  // While a configuration runs (the Sampler asks before each sample): reads the Xids raised so
  // far, at most every kXidPollInterval, and says whether a GPU the configuration used is lost,
  // so a --long configuration ends at its next sample instead of running on for its minute.
  bool lost_during_configuration();
  // The kernel `name` of the embedded PTX on this device (the module is JIT-compiled on first
  // use); throws with the JIT log when it does not load.
  cuda::Function kernel(Device &d, const char *name);
  // Calls f(); a cuda::Error with a sticky code marks the device lost and is rethrown as a
  // runtime_error saying so.
  template <class F> auto guarded(Device &d, F f) -> decltype(f()) {
    try {
      return f();
    } catch (const cuda::Error &e) {
      if (cuda::is_sticky(e.code()))
        mark_lost(d, e.what());
      throw;
    }
  }
  void mark_lost(Device &d, const std::string &why);

  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

private:
  Runtime();
  void watch_xids();
  std::optional<std::string> lost_since_begin() const;
  static constexpr std::chrono::milliseconds kXidPollInterval{100};
  std::chrono::steady_clock::time_point xids_read_{};
  cuda::Driver driver_;
  std::vector<Device> devices_;
  std::optional<std::string> no_devices_;
  std::unique_ptr<nvml::XidEvents> xids_; // null until the first use(), or without NVML events
  bool xids_opened_ = false;
  std::vector<bool> used_, lost_before_; // per device, since begin_configuration()
};

// The GPU families' benchmarks with their run bracketed by begin/end_configuration(): a
// configuration during which a GPU it used raised an Xid (or was lost) fails naming it, even when
// no later configuration would have read the event.
std::vector<Benchmark> watching_faults(std::vector<Benchmark> benchmarks);

// Shorthand: cuda::call on the process's driver, entry point by field name.
#define DLRIG_CU(field, ...)                                                                       \
  ::dlrig::cuda::call(::dlrig::bench::gpu::Runtime::get().driver(),                                \
                      ::dlrig::bench::gpu::Runtime::get().driver().api().field, __VA_ARGS__)

// Owning handles (freed without throwing; a failure to free is ignored: the context may be gone).
class DeviceBuffer {
public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  cuda::DevicePtr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

private:
  cuda::DevicePtr ptr_ = 0;
  std::size_t bytes_ = 0;
};

class PinnedBuffer { // cuMemHostAlloc, portable
public:
  explicit PinnedBuffer(std::size_t bytes, unsigned flags = cuda::kMemHostAllocPortable);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer &) = delete;
  PinnedBuffer &operator=(const PinnedBuffer &) = delete;
  unsigned char *data() const { return static_cast<unsigned char *>(ptr_); }
  std::size_t bytes() const { return bytes_; }

private:
  void *ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
public:
  Stream();
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  cuda::Stream get() const { return s_; }

private:
  cuda::Stream s_ = nullptr;
};

class Event {
public:
  Event();
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  cuda::Event get() const { return e_; }

private:
  cuda::Event e_ = nullptr;
};

// Seconds between two recorded events (after the second completed).
double elapsed(const Event &start, const Event &end);

// One timed pass: the hold kernel is queued first on `streams[0]` (when the kernels loaded), then
// a start event on each stream, enqueue(), an end event on each stream; the host releases the hold
// kernel once everything is queued and waits for the end events. Returns the seconds from the
// earliest start to the latest end. `gated` says whether the hold kernel was used.
struct Timed {
  double seconds = 0;
  bool gated = false;
};
Timed time_streams(Device &d, const std::vector<const Stream *> &streams,
                   const std::function<void()> &enqueue);

// Launch geometry for a grid-stride kernel over n items: enough blocks of 256 threads to fill
// every SM a few times, capped by n.
struct Grid {
  unsigned blocks = 1, threads = 256;
};
Grid grid_for(const Device &d, std::uint64_t n);
void launch(Device &d, cuda::Function f, Grid g, cuda::Stream s, std::vector<void *> params);

// Deterministic pseudo-random 64-bit words (splitmix64 of seed and index): never zeros.
std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index);
void fill_pattern(unsigned char *p, std::size_t bytes, std::uint64_t seed);
// nullopt when p holds the pattern, else where it first differs.
std::optional<std::string> check_pattern(const unsigned char *p, std::size_t bytes,
                                         std::uint64_t seed);

// The snapshot's record of this device (matched by PCI bus id), nullptr when none.
const dlrig::Gpu *snapshot_gpu(const Context &ctx, const Device &d);
// "0000:18:00.0" and "00000000:18:00.0" compare equal (the domain's width differs by tool).
bool same_bus_id(const std::string &a, const std::string &b);

// Binds the calling thread to the CPUs of a NUMA node and prefers that node for its new memory
// (set_mempolicy MPOL_PREFERRED), as nvbandwidth and DCGM do for host transfers (benchmarking.md
// §3: a remote node costs a P100 two thirds of its H2D rate); the destructor restores both.
// `what` says what was done, or why not (unknown node, no sysfs, refused by the kernel).
class NumaBinding {
public:
  explicit NumaBinding(std::optional<int> node);
  ~NumaBinding();
  NumaBinding(const NumaBinding &) = delete;
  NumaBinding &operator=(const NumaBinding &) = delete;
  const std::string &what() const { return what_; }

private:
  std::string what_;
  bool cpus_set_ = false, memory_set_ = false;
  std::vector<unsigned char> saved_cpus_; // cpu_set_t bytes
};
// "0-3,8-11" -> {0,1,2,3,8,9,10,11}; nullopt when malformed.
std::optional<std::vector<int>> parse_cpu_list(const std::string &text);

// The PCIe link of this GPU now, through NVML (DLRIG_NVML_LIBRARY, else libnvidia-ml.so.1; the
// GPU matched by bus id): called while a copy runs, because idle links downclock (DCGM checks
// generation and width only under load). nullopt with `why` when NVML cannot say.
struct LinkNow {
  unsigned gen = 0, width = 0, gen_max = 0, width_max = 0;
};
std::optional<LinkNow> link_now(const Device &d, std::string &why);
// Everything NVML says about this GPU now (clocks, power, temperature, clock-event reasons...),
// read while work runs; nullopt with `why` when NVML cannot say (same session and matching as
// link_now).
std::optional<nvml::LiveSample> state_now(const Device &d, std::string &why);

// The GPUs lost during this run, one line each (why, from mark_lost); empty when none was, or
// when no GPU benchmark ran (it does not open the driver).
std::vector<std::string> faults();

// NVML's SM clock, temperature, power and clock-event reasons read once per timed pass while the
// pass runs (time_streams reads the thread's current log after it released the queued work;
// pageable copies, timed by the host clock, read after each pass; at most one reading every
// kMinReadingInterval, the first pass always), summarised into a result's
// details: gpu_state_samples {readings, throttled_readings, sm_clock_mhz {min, max},
// temperature_c_max, power_w_max, clocks_event_reasons (every reason seen)}, throttled (a reading
// with a reason that lowers the clock: heat, a hardware slowdown) and gpu_state_note. A reading
// is nvml::clock_sample (five quick calls); the interval keeps them off passes of microseconds.
// Constructing one makes it the thread's current log; at most one is current. Several may live at
// once (one per GPU of a collective, read() called directly) and end in any order.
class StateLog {
public:
  explicit StateLog(const Device &d);
  ~StateLog();
  StateLog(const StateLog &) = delete;
  StateLog &operator=(const StateLog &) = delete;
  // One reading now; nothing once NVML could not say (the reason is kept).
  void read();
  // Adds the summary to details (keeps a throttled flag or note already there).
  void into(Json &details) const;
  // The thread's current log for this device, nullptr when none.
  static StateLog *current(const Device &d);

private:
  struct Reading {
    std::optional<unsigned> sm_clock_mhz, temperature_c;
    std::optional<double> power_w;
    std::optional<std::uint64_t> reasons;
  };
  static constexpr std::chrono::milliseconds kMinReadingInterval{10};
  const Device &d_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  std::vector<Reading> readings_;
  std::optional<std::string> why_not_;
  StateLog *previous_ = nullptr;
};

// The names of the nvmlClocksEventReasons bits in `mask`; `slows` is set when one of them lowered
// the clock for heat or a hardware signal (what doctor's throttling check counts).
std::vector<std::string> clock_event_reasons(std::uint64_t mask, bool &slows);

// Skip reason when fewer than `count` usable GPUs are there (nullopt when enough). The driver is
// opened on the first call, unless withhold_gpus() said why not.
std::optional<std::string> needs_gpus(int count);

// What the probe found (snapshot.nvidia): when NVML did not answer in time (nvml_status
// "timed-out": a GPU or the driver has stopped responding), every GPU benchmark is skipped with
// that reason and the driver is never opened, since cuInit and NVML would hang on the same GPU.
// Call it before the first needs_gpus().
void withhold_gpus(const Snapshot &snapshot);

// Free device memory against what one configuration needs (docs/bench.md, "Sizes"): the reason to
// skip it when `needed` bytes do not fit in 90 % of the `free` bytes cuMemGetInfo reported (a
// tenth is left to the driver and the other processes, as gpu.memory's sizing does), naming the
// bytes needed, what they are (`what`: "2 buffers of 256 MiB") and the bytes free of `total`;
// nullopt when it fits. Pure.
std::optional<std::string> too_little_free(const Device &d, double needed, const std::string &what,
                                           std::size_t free, std::size_t total);
// The same on the GPU now: makes it current and asks cuMemGetInfo; nullopt when it fits or when
// cuMemGetInfo does not answer (then the allocations decide).
std::optional<std::string> lacks_free_memory(Device &d, double needed, const std::string &what);

// Host memory for a transfer's buffers (pinned memory cannot be swapped out): a reason to skip
// when `needed` bytes are more than half of `available` (MemAvailable), naming both; nullopt
// when it fits or when `available` is unknown. Pure.
std::optional<std::string> too_little_host(double needed, std::optional<double> available,
                                           const std::string &what);
// MemAvailable from /proc/meminfo's text, in bytes; nullopt when absent or malformed.
std::optional<double> mem_available(std::string_view meminfo);

// gpu.gemm's floor (docs/bench.md, "Expectations"): half of `peak` (the catalog's dense peak for
// the precision, in the result's rate unit) for a GEMM whose every side is at least 4096, in the
// precisions with published large-GEMM measurements (fp32, tf32, fp16, bf16). nullopt when the
// peak is unknown, the shape is smaller, or the precision is fp8 or int8 (no guessed floor).
std::optional<Expectation> gemm_expectation(const std::string &precision,
                                            std::optional<double> peak,
                                            const std::string &rate_unit, double m, double n,
                                            double k);

// What NCCL_ALGO or NCCL_PROTO (`setting`, the text NCCL reads) requests for one collective
// (`function`, NCCL's name: "AllReduce", "AllGather", "ReduceScatter", "Broadcast"), parsed as
// NCCL's tuner parses it (src/graph/tuning.cc, parseList): from NCCL 2.24 (`version` code >=
// 22400) a list for every function first, then "function:list" entries separated by ';', each
// replacing the list of its function; before 2.24 one list for every function. A list is names
// separated by ',', a leading '^' meaning "all but these"; it is returned as written, so
// `requested` nullopt means that NCCL chooses freely for this function. `understood` false (and
// `requested` nullopt) when the text is not of that shape: a "function:" entry with an older or
// unknown version (0), an entry after the first without a function, an unknown function, an
// empty list. Pure.
struct NcclRequest {
  std::optional<std::string> requested;
  bool understood = true;
};
NcclRequest nccl_request(std::string_view setting, std::string_view function, int version);

// The device for a configuration's first parameter, checked: throws when lost.
Device &device_for(const Config &c, std::size_t param = 0);

} // namespace dlrig::bench::gpu

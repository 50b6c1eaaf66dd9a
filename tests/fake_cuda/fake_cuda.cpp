// A stand-in for libcuda.so.1, driven by the scenario file named in DLRIG_FAKE_CUDA_SCENARIO
// (format: docs/testing.md, "Fake libcuda"). It never touches a GPU: device memory is host memory,
// copies really copy (so dlrig's verification is real), the embedded kernels are recognised by
// name in the PTX dlrig loads and carried out on the host (triad, copy; empty and hold do nothing),
// and time is simulated: every stream has a clock that each operation advances by its bytes over
// the scenario's rate, events read that clock, so cuEventElapsedTime gives the scenario's rates
// back. Synchronous copies (pageable memory) really sleep for their simulated time, so a host
// clock measures them too.
//
// It fails closed: no scenario, an unreadable one or an invalid one fails cuInit; every call before
// cuInit answers CUDA_ERROR_NOT_INITIALIZED; a value the scenario does not give is
// CUDA_ERROR_NOT_SUPPORTED; a pointer outside every allocation is CUDA_ERROR_INVALID_VALUE (an
// address a kernel would fault on is CUDA_ERROR_ILLEGAL_ADDRESS); a kernel the loaded PTX does not
// define is CUDA_ERROR_NOT_FOUND.
//
// Injected faults: "errors" {symbol: code} per device (or at the top level for every call),
// "lost_after_calls" (the device answers "lost_error", default 999, to every call after that many),
// "corrupt" [kinds] (one byte of the destination flipped after each such operation: "htod",
// "dtoh", "dtod", "peer", "copy_kernel", "triad"), "jit_error" (cuModuleLoadDataEx answers
// CUDA_ERROR_INVALID_PTX with that text in the error log), "missing_symbols" (hidden from
// cuGetProcAddress_v2), "get_proc_address": false (cuGetProcAddress_v2 answers NOT_SUPPORTED, so
// dlrig falls back to dlsym), "init_error" (cuInit's answer), "interrupt_after_calls" (the process
// gets SIGINT once the device has answered that many calls: Ctrl-C in the middle of a benchmark).
// "lost_error": 214 is an uncorrectable ECC error (what an Xid 48 looks like to CUDA).
//
// DLRIG_FAKE_CUDA_LOG=PATH: at exit the fake writes there, as JSON, what was still allocated
// ({"device_allocations": n, "device_bytes": n, "pinned_allocations": n}), so a test can prove
// that dlrig freed its device memory.
//
// Its exports are generated from dlrig's entry-point table (platform/cuda_entry_points.hpp).
#include "dlrig/platform/cuda_entry_points.hpp"

#include "fake_common/fake_library.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace dlrig::cuda;
using dlrig::fake::CalledAs;
using dlrig::fake::find;
using dlrig::fake::g_symbol;
using nlohmann::json;

namespace {

struct FakeStream {
  int device = 0;
  double clock = 0; // seconds of simulated GPU time
  // Held by the fake NCCL (dlrig_fake_cuda_hold) while a collective waits for other ranks: true
  // until released; events recorded meanwhile share it.
  std::shared_ptr<bool> held;
};

struct FakeDevice {
  int index = 0;
  json spec;
  unsigned long long calls = 0;
  bool lost = false;
  bool lost_at_query =
      false;              // lost at the next cuEventQuery / cuStreamQuery (dlrig_fake_cuda_lose)
  FakeStream null_stream; // stream 0
};

struct FakeEvent {
  double t = 0;
  bool recorded = false;
  std::shared_ptr<bool> behind; // the hold of its stream when recorded, if any
};

bool pending(const FakeEvent &e) {
  return e.behind && *e.behind;
}
bool pending(const FakeStream &s) {
  return s.held && *s.held;
}

// The fake NCCL's progress function (dlrig_fake_cuda_hold): called whenever a held stream or an
// event behind a hold is queried or waited for.
void (*g_progress)() = nullptr;
void make_progress() {
  if (g_progress)
    g_progress();
}

// Waits while `still` holds (real CUDA waits for ever): at most DLRIG_FAKE_CUDA_HOLD_S seconds
// (default 30), then CUDA_ERROR_LAUNCH_TIMEOUT, failing closed.
template <class Still> Result wait_while(Still still, const char *what) {
  const char *env = std::getenv("DLRIG_FAKE_CUDA_HOLD_S");
  const double limit = env && *env ? std::atof(env) : 30;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  for (make_progress(); still(); make_progress()) {
    if (std::chrono::steady_clock::now() > until) {
      std::fprintf(stderr,
                   "fake libcuda: %s waited %g s for work that never finishes (a collective whose "
                   "other ranks never came; real CUDA would wait for ever)\n",
                   what, limit);
      return kErrorLaunchTimeout;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return kSuccess;
}

struct FakeFunction {
  std::string name;
  int device = 0;
};

struct FakeModule {
  std::set<std::string> entries;
  // Its functions, one handle per name as the driver's (freed with the module).
  std::map<std::string, std::unique_ptr<FakeFunction>> functions;
};

struct Allocation {
  std::size_t bytes = 0;
  int device = -1; // -1: pinned host memory
  std::unique_ptr<unsigned char[]> data;
};

struct State {
  bool initialised = false;
  json scenario;
  std::set<std::string> missing;
  std::vector<std::unique_ptr<FakeDevice>> devices;
  std::map<std::uintptr_t, Allocation> allocations; // by start address
  std::set<std::pair<int, int>> peer_enabled;
  std::set<FakeStream *> streams; // the streams cuStreamCreate made and not yet destroyed
  std::map<FakeEvent *, std::unique_ptr<FakeEvent>> events; // cuEventCreate's, not destroyed
  std::recursive_mutex mutex;
};

// Never destroyed: threads dlrig left inside a call may still use it at exit, and what it holds
// stays reachable for the leak checker (scripts/sanitize.sh).
State &state() {
  static State &s = *new State;
  return s;
}

thread_local FakeDevice *g_current = nullptr;

FakeDevice *device_at(int i) {
  auto &s = state();
  if (i < 0 || static_cast<std::size_t>(i) >= s.devices.size())
    return nullptr;
  return s.devices[static_cast<std::size_t>(i)].get();
}

// A call on one device: lost after "lost_after_calls", then the device's forced error of this
// symbol.
Result enter_device(FakeDevice &d) {
  if (d.lost)
    return static_cast<Result>(d.spec.value("lost_error", kErrorUnknown));
  if (const json *after = find(d.spec, {"lost_after_calls"});
      after && d.calls >= after->get<unsigned long long>()) {
    d.lost = true;
    return static_cast<Result>(d.spec.value("lost_error", kErrorUnknown));
  }
  ++d.calls;
  if (const json *after = find(d.spec, {"interrupt_after_calls"});
      after && d.calls == after->get<unsigned long long>())
    std::raise(SIGINT);
  if (const json *forced = find(d.spec, {"errors", g_symbol}))
    return forced->get<Result>();
  return kSuccess;
}

// Common prologue: initialisation, the top-level forced error, then the device's state.
Result enter(FakeDevice *d = nullptr) {
  auto &s = state();
  if (!s.initialised)
    return kErrorNotInitialized;
  if (const json *forced = find(s.scenario, {"errors", g_symbol}))
    return forced->get<Result>();
  return d ? enter_device(*d) : kSuccess;
}

#define FAKE_ENTER(...)                                                                            \
  std::lock_guard<std::recursive_mutex> lock(state().mutex);                                       \
  if (Result entered = enter(__VA_ARGS__); entered != kSuccess)                                    \
  return entered

#define FAKE_CONTEXT()                                                                             \
  if (!g_current)                                                                                  \
    return 201; /* CUDA_ERROR_INVALID_CONTEXT */                                                   \
  FAKE_ENTER(g_current)

// The allocation holding [p, p + n), or nullptr.
Allocation *allocation(std::uintptr_t p, std::size_t n) {
  auto &a = state().allocations;
  auto it = a.upper_bound(p);
  if (it == a.begin())
    return nullptr;
  --it;
  if (p < it->first || p + n > it->first + it->second.bytes || p + n < p)
    return nullptr;
  return &it->second;
}

// Rate in bytes/s of an operation kind on a device ("rates_gbs": {kind: GB/s}); 0 when not given.
double rate(const FakeDevice &d, const char *kind) {
  const json *r = find(d.spec, {"rates_gbs", kind});
  return r ? r->get<double>() * 1e9 : 0;
}

FakeStream &stream_of(Stream s, FakeDevice &d) {
  return s ? *reinterpret_cast<FakeStream *>(s) : d.null_stream;
}

// Advances the stream by bytes at the kind's rate; NOT_SUPPORTED when the scenario has no rate.
Result advance(FakeDevice &d, Stream s, const char *kind, double bytes) {
  double r = rate(d, kind);
  if (!(r > 0))
    return kErrorNotSupported;
  stream_of(s, d).clock += bytes / r;
  return kSuccess;
}

void maybe_corrupt(const FakeDevice &d, const char *kind, unsigned char *dst, std::size_t n) {
  const json *c = find(d.spec, {"corrupt"});
  if (!c || n == 0)
    return;
  for (const auto &k : *c)
    if (k == kind)
      dst[n / 2] ^= 0xff;
}

// Waits for the simulated time of a synchronous copy: spinning (sleep_for's timer slack, tens of
// microseconds, would dwarf a 1 MiB copy), sleeping only for what is longer than 2 ms.
void sleep_for(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  if (seconds > 2e-3)
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds - 1e-3));
  while (std::chrono::steady_clock::now() < until) {
  }
}

void load_scenario() {
  auto &s = state();
  s.devices.clear();
  s.missing.clear();
  const char *path = std::getenv("DLRIG_FAKE_CUDA_SCENARIO");
  if (!path || !*path)
    throw std::runtime_error("DLRIG_FAKE_CUDA_SCENARIO is not set");
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(std::string("cannot read ") + path);
  s.scenario = json::parse(in);
  if (const json *m = find(s.scenario, {"missing_symbols"}))
    for (const auto &name : *m)
      s.missing.insert(name.get<std::string>());
  int i = 0;
  if (const json *devs = find(s.scenario, {"devices"}))
    for (const auto &spec : *devs) {
      auto d = std::make_unique<FakeDevice>();
      d->index = i++;
      d->spec = spec;
      d->null_stream.device = d->index;
      s.devices.push_back(std::move(d));
    }
}

const char *error_name(Result r) {
  switch (r) {
  case kSuccess:
    return "CUDA_SUCCESS";
  case kErrorInvalidValue:
    return "CUDA_ERROR_INVALID_VALUE";
  case kErrorOutOfMemory:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case kErrorNotInitialized:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case kErrorNoDevice:
    return "CUDA_ERROR_NO_DEVICE";
  case kErrorInvalidDevice:
    return "CUDA_ERROR_INVALID_DEVICE";
  case kErrorPeerAccessUnsupported:
    return "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED";
  case kErrorInvalidPtx:
    return "CUDA_ERROR_INVALID_PTX";
  case kErrorInvalidHandle:
    return "CUDA_ERROR_INVALID_HANDLE";
  case kErrorNotFound:
    return "CUDA_ERROR_NOT_FOUND";
  case kErrorIllegalAddress:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case kErrorLaunchFailed:
    return "CUDA_ERROR_LAUNCH_FAILED";
  case kErrorNotSupported:
    return "CUDA_ERROR_NOT_SUPPORTED";
  case kErrorUnknown:
    return "CUDA_ERROR_UNKNOWN";
  case kErrorEccUncorrectable:
    return "CUDA_ERROR_ECC_UNCORRECTABLE";
  default:
    return nullptr;
  }
}

const char *error_string(Result r) {
  switch (r) {
  case kSuccess:
    return "no error";
  case kErrorOutOfMemory:
    return "out of memory";
  case kErrorLaunchFailed:
    return "unspecified launch failure";
  case kErrorNotSupported:
    return "operation not supported";
  case kErrorUnknown:
    return "unknown error";
  case kErrorEccUncorrectable:
    return "uncorrectable ECC error encountered";
  default:
    return error_name(r);
  }
}

// DLRIG_FAKE_CUDA_LOG: what is still allocated when the process exits.
void write_log() {
  auto &s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  std::size_t device = 0, bytes = 0, pinned = 0;
  for (const auto &[start, a] : s.allocations) {
    if (a.device >= 0) {
      ++device;
      bytes += a.bytes;
    } else {
      ++pinned;
    }
  }
  if (FILE *f = std::fopen(std::getenv("DLRIG_FAKE_CUDA_LOG"), "w")) {
    std::fputs(json{{"device_allocations", device},
                    {"device_bytes", bytes},
                    {"pinned_allocations", pinned}}
                   .dump()
                   .c_str(),
               f);
    std::fclose(f);
  }
}

namespace impl {

Result init(unsigned flags) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  auto &s = state();
  if (flags != 0)
    return kErrorInvalidValue;
  if (s.initialised) // like the driver's: once per process (handles stay valid)
    return kSuccess;
  try {
    load_scenario();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fake libcuda: %s\n", e.what());
    s.initialised = false;
    return kErrorNotInitialized;
  }
  if (const json *e = find(s.scenario, {"init_error"}))
    return e->get<Result>();
  s.initialised = true;
  if (const char *log = std::getenv("DLRIG_FAKE_CUDA_LOG"); log && *log)
    std::atexit(write_log);
  return kSuccess;
}

Result driver_get_version(int *version) {
  FAKE_ENTER();
  if (!version)
    return kErrorInvalidValue;
  const json *v = find(state().scenario, {"driver_version"});
  if (!v)
    return kErrorNotSupported;
  *version = v->get<int>();
  return kSuccess;
}

Result get_error_name(Result error, const char **text) {
  if (!text)
    return kErrorInvalidValue;
  *text = error_name(error);
  return *text ? kSuccess : kErrorInvalidValue;
}

Result get_error_string(Result error, const char **text) {
  if (!text)
    return kErrorInvalidValue;
  *text = error_string(error);
  return *text ? kSuccess : kErrorInvalidValue;
}

Result device_get_count(int *count) {
  FAKE_ENTER();
  if (!count)
    return kErrorInvalidValue;
  *count = static_cast<int>(state().devices.size());
  return kSuccess;
}

Result device_get(Device *device, int ordinal) {
  FakeDevice *d = device_at(ordinal);
  FAKE_ENTER(d);
  if (!device || !d)
    return kErrorInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

Result device_get_name(char *name, int length, Device device) {
  FakeDevice *d = device_at(device);
  if (!d)
    return kErrorInvalidDevice;
  FAKE_ENTER(d);
  const json *n = find(d->spec, {"name"});
  if (!n)
    return kErrorNotSupported;
  if (!name || length <= 0)
    return kErrorInvalidValue;
  std::snprintf(name, static_cast<std::size_t>(length), "%s", n->get<std::string>().c_str());
  return kSuccess;
}

Result device_get_pci_bus_id(char *bus_id, int length, Device device) {
  FakeDevice *d = device_at(device);
  if (!d)
    return kErrorInvalidDevice;
  FAKE_ENTER(d);
  const json *b = find(d->spec, {"bus_id"});
  if (!b)
    return kErrorNotSupported;
  if (!bus_id || length < 13)
    return kErrorInvalidValue;
  std::snprintf(bus_id, static_cast<std::size_t>(length), "%s", b->get<std::string>().c_str());
  return kSuccess;
}

Result device_get_attribute(int *value, int attribute, Device device) {
  FakeDevice *d = device_at(device);
  if (!d)
    return kErrorInvalidDevice;
  FAKE_ENTER(d);
  if (!value)
    return kErrorInvalidValue;
  const json &g = d->spec;
  const json *v = nullptr;
  switch (attribute) {
  case kAttrComputeCapabilityMajor:
  case kAttrComputeCapabilityMinor:
    if (const json *cc = find(g, {"compute_capability"}))
      v = &(*cc)[attribute == kAttrComputeCapabilityMajor ? 0 : 1];
    break;
  case kAttrMultiprocessorCount:
    v = find(g, {"sms"});
    break;
  case kAttrMaxThreadsPerBlock:
    v = find(g, {"max_threads_per_block"});
    break;
  case kAttrL2CacheSize:
    v = find(g, {"l2_bytes"});
    break;
  case kAttrCanMapHostMemory:
    v = find(g, {"can_map_host"});
    break;
  default:
    break;
  }
  if (!v)
    return kErrorNotSupported;
  *value = v->is_boolean() ? (v->get<bool>() ? 1 : 0) : v->get<int>();
  return kSuccess;
}

Result device_total_mem(std::size_t *bytes, Device device) {
  FakeDevice *d = device_at(device);
  if (!d)
    return kErrorInvalidDevice;
  FAKE_ENTER(d);
  const json *m = find(d->spec, {"memory_bytes"});
  if (!m)
    return kErrorNotSupported;
  if (!bytes)
    return kErrorInvalidValue;
  *bytes = m->get<std::size_t>();
  return kSuccess;
}

Result device_primary_ctx_retain(Context *context, Device device) {
  FakeDevice *d = device_at(device);
  if (!d)
    return kErrorInvalidDevice;
  FAKE_ENTER(d);
  if (!context)
    return kErrorInvalidValue;
  *context = reinterpret_cast<Context>(d);
  return kSuccess;
}

Result device_primary_ctx_release(Device device) {
  FakeDevice *d = device_at(device);
  if (!d)
    return kErrorInvalidDevice;
  FAKE_ENTER(d);
  return kSuccess;
}

Result ctx_set_current(Context context) {
  FAKE_ENTER();
  auto *d = reinterpret_cast<FakeDevice *>(context);
  for (auto &p : state().devices)
    if (p.get() == d) {
      g_current = d;
      return enter_device(*d);
    }
  if (!context) {
    g_current = nullptr;
    return kSuccess;
  }
  return 201;
}

Result ctx_synchronize() {
  FAKE_CONTEXT();
  const int device = g_current->index;
  return wait_while(
      [&] {
        for (FakeStream *s : state().streams)
          if (s->device == device && pending(*s))
            return true;
        return pending(g_current->null_stream);
      },
      "cuCtxSynchronize");
}

std::size_t used_bytes(int device) {
  std::size_t used = 0;
  for (auto &[p, a] : state().allocations)
    if (a.device == device)
      used += a.bytes;
  return used;
}

std::size_t free_bytes(const FakeDevice &d) {
  std::size_t total = d.spec.value("free_bytes", d.spec.value("memory_bytes", std::size_t(0)));
  std::size_t used = used_bytes(d.index);
  return used > total ? 0 : total - used;
}

Result mem_get_info(std::size_t *free, std::size_t *total) {
  FAKE_CONTEXT();
  if (!free || !total)
    return kErrorInvalidValue;
  *total = g_current->spec.value("memory_bytes", std::size_t(0));
  *free = free_bytes(*g_current);
  return kSuccess;
}

Result allocate(std::uintptr_t &out, std::size_t bytes, int device) {
  if (bytes == 0)
    return kErrorInvalidValue;
  Allocation a;
  a.bytes = bytes;
  a.device = device;
  a.data.reset(new (std::nothrow) unsigned char[bytes]);
  if (!a.data)
    return kErrorOutOfMemory;
  out = reinterpret_cast<std::uintptr_t>(a.data.get());
  state().allocations.emplace(out, std::move(a));
  return kSuccess;
}

Result mem_alloc(DevicePtr *pointer, std::size_t bytes) {
  FAKE_CONTEXT();
  if (!pointer)
    return kErrorInvalidValue;
  if (bytes > free_bytes(*g_current))
    return kErrorOutOfMemory;
  std::uintptr_t p = 0;
  if (Result r = allocate(p, bytes, g_current->index); r != kSuccess)
    return r;
  *pointer = p;
  return kSuccess;
}

Result mem_free(DevicePtr pointer) {
  FAKE_CONTEXT();
  auto &a = state().allocations;
  auto it = a.find(static_cast<std::uintptr_t>(pointer));
  if (it == a.end() || it->second.device < 0)
    return kErrorInvalidValue;
  a.erase(it);
  return kSuccess;
}

Result mem_host_alloc(void **pointer, std::size_t bytes, unsigned flags) {
  FAKE_CONTEXT();
  if (!pointer || (flags & ~7u))
    return kErrorInvalidValue;
  std::uintptr_t p = 0;
  if (Result r = allocate(p, bytes, -1); r != kSuccess)
    return r;
  *pointer = reinterpret_cast<void *>(p);
  return kSuccess;
}

Result mem_free_host(void *pointer) {
  FAKE_CONTEXT();
  auto &a = state().allocations;
  auto it = a.find(reinterpret_cast<std::uintptr_t>(pointer));
  if (it == a.end() || it->second.device >= 0)
    return kErrorInvalidValue;
  a.erase(it);
  return kSuccess;
}

Result mem_host_get_device_pointer(DevicePtr *device_pointer, void *host, unsigned flags) {
  FAKE_CONTEXT();
  Allocation *a = allocation(reinterpret_cast<std::uintptr_t>(host), 1);
  if (!device_pointer || flags != 0 || !a || a->device >= 0)
    return kErrorInvalidValue;
  if (!g_current->spec.value("can_map_host", false))
    return kErrorNotSupported;
  *device_pointer = reinterpret_cast<std::uintptr_t>(host); // unified addressing
  return kSuccess;
}

// A device range of the current device (or of a peer for peer copies).
unsigned char *device_range(DevicePtr p, std::size_t n, int device) {
  Allocation *a = allocation(static_cast<std::uintptr_t>(p), n);
  return a && a->device == device ? reinterpret_cast<unsigned char *>(p) : nullptr;
}

// Host memory: pinned allocations are checked; pageable memory (any other address) is trusted.
Result copy(unsigned char *dst, const unsigned char *src, std::size_t n, const char *corrupt_kind) {
  if (!dst || !src)
    return kErrorInvalidValue;
  std::memmove(dst, src, n);
  maybe_corrupt(*g_current, corrupt_kind, dst, n);
  return kSuccess;
}

Result memcpy_htod(DevicePtr dst, const void *src, std::size_t bytes) {
  FAKE_CONTEXT();
  unsigned char *d = device_range(dst, bytes, g_current->index);
  if (!d)
    return kErrorInvalidValue;
  double r = rate(*g_current, "htod_pageable");
  if (!(r > 0))
    return kErrorNotSupported;
  Result res = copy(d, static_cast<const unsigned char *>(src), bytes, "htod");
  sleep_for(static_cast<double>(bytes) / r);
  return res;
}

Result memcpy_dtoh(void *dst, DevicePtr src, std::size_t bytes) {
  FAKE_CONTEXT();
  unsigned char *s = device_range(src, bytes, g_current->index);
  if (!s)
    return kErrorInvalidValue;
  double r = rate(*g_current, "dtoh_pageable");
  if (!(r > 0))
    return kErrorNotSupported;
  Result res = copy(static_cast<unsigned char *>(dst), s, bytes, "dtoh");
  sleep_for(static_cast<double>(bytes) / r);
  return res;
}

// An async copy with host memory must use pinned memory for the simulated rate to apply; pageable
// host memory is accepted (as the driver does) at the pageable rate.
Result memcpy_htod_async(DevicePtr dst, const void *src, std::size_t bytes, Stream stream) {
  FAKE_CONTEXT();
  unsigned char *d = device_range(dst, bytes, g_current->index);
  if (!d)
    return kErrorInvalidValue;
  bool pinned = allocation(reinterpret_cast<std::uintptr_t>(src), bytes) != nullptr;
  if (Result r = advance(*g_current, stream, pinned ? "htod" : "htod_pageable",
                         static_cast<double>(bytes));
      r != kSuccess)
    return r;
  return copy(d, static_cast<const unsigned char *>(src), bytes, "htod");
}

Result memcpy_dtoh_async(void *dst, DevicePtr src, std::size_t bytes, Stream stream) {
  FAKE_CONTEXT();
  unsigned char *s = device_range(src, bytes, g_current->index);
  if (!s)
    return kErrorInvalidValue;
  bool pinned = allocation(reinterpret_cast<std::uintptr_t>(dst), bytes) != nullptr;
  if (Result r = advance(*g_current, stream, pinned ? "dtoh" : "dtoh_pageable",
                         static_cast<double>(bytes));
      r != kSuccess)
    return r;
  return copy(static_cast<unsigned char *>(dst), s, bytes, "dtoh");
}

Result memcpy_dtod_async(DevicePtr dst, DevicePtr src, std::size_t bytes, Stream stream) {
  FAKE_CONTEXT();
  unsigned char *d = device_range(dst, bytes, g_current->index);
  unsigned char *s = device_range(src, bytes, g_current->index);
  if (!d || !s)
    return kErrorInvalidValue;
  if (Result r = advance(*g_current, stream, "dtod", static_cast<double>(bytes)); r != kSuccess)
    return r;
  return copy(d, s, bytes, "dtod");
}

Result memcpy_peer_async(DevicePtr dst, Context dst_context, DevicePtr src, Context src_context,
                         std::size_t bytes, Stream stream) {
  FAKE_CONTEXT();
  auto *dd = reinterpret_cast<FakeDevice *>(dst_context);
  auto *sd = reinterpret_cast<FakeDevice *>(src_context);
  if (!dd || !sd)
    return 201;
  if (Result r = enter_device(*dd); r != kSuccess)
    return r;
  if (Result r = enter_device(*sd); r != kSuccess)
    return r;
  unsigned char *d = device_range(dst, bytes, dd->index);
  unsigned char *s = device_range(src, bytes, sd->index);
  if (!d || !s)
    return kErrorInvalidValue;
  // With peer access enabled between the two: the scenario's peer rate; without: staged through
  // host memory.
  auto &enabled = state().peer_enabled;
  bool direct = enabled.count({sd->index, dd->index}) || enabled.count({dd->index, sd->index});
  if (Result r =
          advance(*g_current, stream, direct ? "peer" : "peer_staged", static_cast<double>(bytes));
      r != kSuccess)
    return r;
  std::memmove(d, s, bytes);
  maybe_corrupt(*sd, "peer", d, bytes);
  return kSuccess;
}

Result memset_d8_async(DevicePtr dst, unsigned char value, std::size_t count, Stream stream) {
  FAKE_CONTEXT();
  unsigned char *d = device_range(dst, count, g_current->index);
  if (!d)
    return kErrorInvalidValue;
  if (Result r = advance(*g_current, stream, "dtod", static_cast<double>(count)); r != kSuccess)
    return r;
  std::memset(d, value, count);
  return kSuccess;
}

Result stream_create(Stream *stream, unsigned flags) {
  FAKE_CONTEXT();
  if (!stream || flags > 1)
    return kErrorInvalidValue;
  auto *s = new FakeStream;
  s->device = g_current->index;
  state().streams.insert(s);
  *stream = reinterpret_cast<Stream>(s);
  return kSuccess;
}

Result stream_destroy(Stream stream) {
  FAKE_CONTEXT();
  if (!stream)
    return kErrorInvalidHandle;
  state().streams.erase(reinterpret_cast<FakeStream *>(stream));
  delete reinterpret_cast<FakeStream *>(stream); // its hold lives on in the events behind it
  return kSuccess;
}

Result stream_wait_event(Stream stream, Event event, unsigned flags) {
  FAKE_CONTEXT();
  auto *e = reinterpret_cast<FakeEvent *>(event);
  if (!e || flags != 0)
    return kErrorInvalidHandle;
  FakeStream &s = stream_of(stream, *g_current);
  if (e->recorded && e->t > s.clock)
    s.clock = e->t;
  return kSuccess;
}

Result stream_synchronize(Stream stream) {
  FAKE_CONTEXT();
  FakeStream &s = stream_of(stream, *g_current);
  return wait_while([&] { return pending(s); }, "cuStreamSynchronize");
}

// "lose_gpu_at_op" with "when": "query": the current GPU is lost now.
bool lost_at_this_query() {
  if (!g_current->lost_at_query)
    return false;
  g_current->lost = true;
  return true;
}

Result stream_query(Stream stream) {
  FAKE_CONTEXT();
  if (lost_at_this_query())
    return static_cast<Result>(g_current->spec.value("lost_error", kErrorUnknown));
  FakeStream &s = stream_of(stream, *g_current);
  if (pending(s))
    make_progress();
  return pending(s) ? kErrorNotReady : kSuccess;
}

Result event_create(Event *event, unsigned flags) {
  FAKE_CONTEXT();
  if (!event || flags > 15)
    return kErrorInvalidValue;
  auto e = std::make_unique<FakeEvent>();
  *event = reinterpret_cast<Event>(e.get());
  state().events.emplace(e.get(), std::move(e));
  return kSuccess;
}

Result event_destroy(Event event) {
  FAKE_CONTEXT();
  if (!event || !state().events.erase(reinterpret_cast<FakeEvent *>(event)))
    return kErrorInvalidHandle;
  return kSuccess;
}

Result event_record(Event event, Stream stream) {
  FAKE_CONTEXT();
  auto *e = reinterpret_cast<FakeEvent *>(event);
  if (!e)
    return kErrorInvalidHandle;
  e->t = stream_of(stream, *g_current).clock;
  e->recorded = true;
  e->behind = pending(stream_of(stream, *g_current)) ? stream_of(stream, *g_current).held : nullptr;
  return kSuccess;
}

Result event_synchronize(Event event) {
  FAKE_CONTEXT();
  auto *e = reinterpret_cast<FakeEvent *>(event);
  if (!e)
    return kErrorInvalidHandle;
  return wait_while([&] { return pending(*e); }, "cuEventSynchronize");
}

Result event_query(Event event) {
  FAKE_CONTEXT();
  auto *e = reinterpret_cast<FakeEvent *>(event);
  if (!e)
    return kErrorInvalidHandle;
  if (lost_at_this_query())
    return static_cast<Result>(g_current->spec.value("lost_error", kErrorUnknown));
  if (pending(*e))
    make_progress();
  return pending(*e) ? kErrorNotReady : kSuccess;
}

Result event_elapsed_time(float *milliseconds, Event start, Event end) {
  FAKE_CONTEXT();
  auto *a = reinterpret_cast<FakeEvent *>(start);
  auto *b = reinterpret_cast<FakeEvent *>(end);
  if (!milliseconds || !a || !b || !a->recorded || !b->recorded)
    return kErrorInvalidHandle;
  if (pending(*a) || pending(*b))
    return kErrorNotReady;
  *milliseconds = static_cast<float>((b->t - a->t) * 1e3);
  return kSuccess;
}

Result device_can_access_peer(int *can_access, Device device, Device peer) {
  FakeDevice *d = device_at(device);
  FakeDevice *p = device_at(peer);
  if (!d || !p)
    return kErrorInvalidDevice;
  FAKE_ENTER(d);
  if (!can_access)
    return kErrorInvalidValue;
  *can_access = 0;
  if (const json *peers = find(state().scenario, {"peers"}))
    for (const auto &pair : *peers)
      if (pair.at(0).get<int>() == device && pair.at(1).get<int>() == peer)
        *can_access = 1;
  return kSuccess;
}

Result ctx_enable_peer_access(Context peer, unsigned flags) {
  FAKE_CONTEXT();
  auto *p = reinterpret_cast<FakeDevice *>(peer);
  if (!p || flags != 0)
    return kErrorInvalidValue;
  int can = 0;
  device_can_access_peer(&can, g_current->index, p->index);
  if (!can)
    return kErrorPeerAccessUnsupported;
  if (!state().peer_enabled.insert({g_current->index, p->index}).second)
    return kErrorPeerAccessAlreadyEnabled;
  return kSuccess;
}

Result module_load_data_ex(Module *module, const void *image, unsigned count, JitOption *options,
                           void **values) {
  FAKE_CONTEXT();
  if (!module || !image || (count && (!options || !values)))
    return kErrorInvalidValue;
  char *error_log = nullptr, *info_log = nullptr;
  std::size_t error_size = 0, info_size = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] == kJitErrorLogBuffer)
      error_log = static_cast<char *>(values[i]);
    else if (options[i] == kJitErrorLogBufferSizeBytes)
      error_size = reinterpret_cast<std::uintptr_t>(values[i]);
    else if (options[i] == kJitInfoLogBuffer)
      info_log = static_cast<char *>(values[i]);
    else if (options[i] == kJitInfoLogBufferSizeBytes)
      info_size = reinterpret_cast<std::uintptr_t>(values[i]);
  }
  auto log = [](char *buf, std::size_t size, const std::string &text) {
    if (buf && size > 0)
      std::snprintf(buf, size, "%s", text.c_str());
  };
  if (const json *e = find(state().scenario, {"jit_error"})) {
    log(error_log, error_size, e->get<std::string>());
    return kErrorInvalidPtx;
  }
  std::string ptx(static_cast<const char *>(image));
  if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) {
    log(error_log, error_size, "fake JIT: not PTX (no .version or .target)");
    return kErrorInvalidPtx;
  }
  auto *m = new FakeModule;
  static const std::regex entry(R"(\.entry\s+([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  for (std::sregex_iterator it(ptx.begin(), ptx.end(), entry), end; it != end; ++it)
    m->entries.insert((*it)[1].str());
  log(info_log, info_size, "fake JIT: " + std::to_string(m->entries.size()) + " entries");
  *module = reinterpret_cast<Module>(m);
  return kSuccess;
}

Result module_unload(Module module) {
  FAKE_CONTEXT();
  if (!module)
    return kErrorInvalidHandle;
  delete reinterpret_cast<FakeModule *>(module);
  return kSuccess;
}

Result module_get_function(Function *function, Module module, const char *name) {
  FAKE_CONTEXT();
  auto *m = reinterpret_cast<FakeModule *>(module);
  if (!function || !m || !name)
    return kErrorInvalidValue;
  if (!m->entries.count(name))
    return kErrorNotFound;
  auto &f = m->functions[name];
  if (!f)
    f = std::make_unique<FakeFunction>(FakeFunction{name, g_current->index});
  *function = reinterpret_cast<Function>(f.get());
  return kSuccess;
}

template <class T> T param(void **params, int i) {
  T v;
  std::memcpy(&v, params[i], sizeof v);
  return v;
}

Result launch_kernel(Function function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                     unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                     Stream stream, void **params, void **extra) {
  FAKE_CONTEXT();
  auto *f = reinterpret_cast<FakeFunction *>(function);
  if (!f || grid_x == 0 || grid_y == 0 || grid_z == 0 || block_x == 0 || block_y == 0 ||
      block_z == 0 || block_x * block_y * block_z > 1024 || shared_bytes > 48 * 1024 || extra)
    return kErrorInvalidValue;
  FakeDevice &d = *g_current;
  const double launch_s = d.spec.value("launch_us", 0.0) * 1e-6;
  stream_of(stream, d).clock += launch_s;
  if (f->name == "dlrig_empty")
    return kSuccess;
  if (!params)
    return kErrorInvalidValue;
  if (f->name == "dlrig_hold") {
    // The flag and the timed-out mark must be mapped host memory, as on a GPU.
    auto flag = param<DevicePtr>(params, 0), timed_out = param<DevicePtr>(params, 2);
    Allocation *a = allocation(static_cast<std::uintptr_t>(flag), sizeof(int));
    Allocation *b = allocation(static_cast<std::uintptr_t>(timed_out), sizeof(int));
    if (!a || !b || a->device >= 0 || b->device >= 0) {
      d.lost = true; // an illegal address is sticky: the context is gone
      return kErrorIllegalAddress;
    }
    return kSuccess;
  }
  if (f->name == "dlrig_triad") {
    auto a = param<DevicePtr>(params, 0), b = param<DevicePtr>(params, 1),
         c = param<DevicePtr>(params, 2);
    auto s = param<double>(params, 3);
    auto n = param<unsigned long long>(params, 4);
    double *pa = reinterpret_cast<double *>(device_range(a, 8 * n, d.index));
    double *pb = reinterpret_cast<double *>(device_range(b, 8 * n, d.index));
    double *pc = reinterpret_cast<double *>(device_range(c, 8 * n, d.index));
    if (!pa || !pb || !pc) {
      d.lost = true;
      return kErrorIllegalAddress;
    }
    if (Result r = advance(d, stream, "triad", 24.0 * static_cast<double>(n)); r != kSuccess)
      return r;
    for (unsigned long long i = 0; i < n; ++i)
      pa[i] = pb[i] + s * pc[i];
    maybe_corrupt(d, "triad", reinterpret_cast<unsigned char *>(pa), 8 * n);
    return kSuccess;
  }
  if (f->name == "dlrig_copy") {
    auto dst = param<DevicePtr>(params, 0), src = param<DevicePtr>(params, 1);
    auto n = param<unsigned long long>(params, 2);
    unsigned char *pd = device_range(dst, 16 * n, d.index);
    unsigned char *ps = device_range(src, 16 * n, d.index);
    if (!pd || !ps) {
      d.lost = true;
      return kErrorIllegalAddress;
    }
    if (Result r = advance(d, stream, "copy_kernel", 16.0 * static_cast<double>(n)); r != kSuccess)
      return r;
    std::memmove(pd, ps, 16 * n);
    maybe_corrupt(d, "copy_kernel", pd, 16 * n);
    return kSuccess;
  }
  return kErrorInvalidHandle;
}

} // namespace impl

} // namespace

// --- the exports, generated from the table -----------------------------------------------------

#define FAKE_EXPORT_ONE(line, name) FAKE_EXPORT_ONE_(name, DLRIG_PP_UNPAREN line)
#define FAKE_EXPORT_ONE_(...) FAKE_EXPORT_ONE__(__VA_ARGS__)
#define FAKE_EXPORT_ONE__(name, field, ret, params, args)                                          \
  extern "C" __attribute__((visibility("default"))) ret name params {                              \
    CalledAs called_as(#name);                                                                     \
    try {                                                                                          \
      return impl::field args;                                                                     \
    } catch (const std::exception &e) {                                                            \
      std::fprintf(stderr, "fake libcuda: %s: scenario value unusable: %s\n", #name, e.what());    \
      return kErrorUnknown;                                                                        \
    }                                                                                              \
  }
#define FAKE_EXPORT(field, ret, params, args, ...)                                                 \
  DLRIG_PP_FOR_EACH(FAKE_EXPORT_ONE, (field, ret, params, args), __VA_ARGS__)

DLRIG_CUDA_ENTRY_POINTS(FAKE_EXPORT)

// cuGetProcAddress_v2: every export by its base name ("cuMemAlloc" -> cuMemAlloc_v2), except the
// scenario's "missing_symbols"; answers NOT_SUPPORTED for everything when the scenario says
// "get_proc_address": false.
namespace {
std::string base_of(const char *symbol) {
  std::string s(symbol);
  auto at = s.rfind("_v");
  if (at != std::string::npos && at + 2 < s.size() &&
      s.find_first_not_of("0123456789", at + 2) == std::string::npos)
    return s.substr(0, at);
  return s;
}
#define FAKE_PROC_ONE(ctx, name) {base_of(#name), {#name, reinterpret_cast<void *>(&name)}},
#define FAKE_PROC(field, ret, params, args, ...) DLRIG_PP_FOR_EACH(FAKE_PROC_ONE, ~, __VA_ARGS__)
const std::map<std::string, std::pair<std::string, void *>> &procs() {
  static const std::map<std::string, std::pair<std::string, void *>> m{
      DLRIG_CUDA_ENTRY_POINTS(FAKE_PROC)};
  return m;
}
} // namespace

extern "C" __attribute__((visibility("default"))) Result
cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version, std::uint64_t flags,
                    int *symbol_status) {
  if (!symbol || !pfn)
    return kErrorInvalidValue;
  *pfn = nullptr;
  auto &s = state();
  // Before cuInit the scenario is not read yet: read it here for the lookup's sake.
  if (!s.initialised && s.scenario.is_null()) {
    try {
      load_scenario();
    } catch (const std::exception &) {
      // cuInit reports it; every symbol is still found.
    }
  }
  if (const json *g = find(s.scenario, {"get_proc_address"}); g && !g->get<bool>())
    return kErrorNotSupported;
  if (cuda_version < 12000 || flags > 2)
    return kErrorInvalidValue;
  auto it = procs().find(symbol);
  if (it == procs().end() || s.missing.count(it->second.first)) {
    if (symbol_status)
      *symbol_status = kProcAddressSymbolNotFound;
    return kErrorNotFound;
  }
  *pfn = it->second.second;
  if (symbol_status)
    *symbol_status = kProcAddressSuccess;
  return kSuccess;
}

// Hooks for the fake cuBLASLt (tests/fake_cublaslt), which finds this library by dlopen of
// DLRIG_CUDA_LIBRARY with RTLD_NOLOAD: its matmul advances the stream's simulated clock here, and
// it checks that the pointers it is given are device memory of the current GPU (fail closed).
extern "C" __attribute__((visibility("default"))) Result dlrig_fake_cuda_advance(Stream stream,
                                                                                 double seconds) {
  CalledAs called_as("dlrig_fake_cuda_advance");
  FAKE_CONTEXT();
  if (!(seconds >= 0))
    return kErrorInvalidValue;
  stream_of(stream, *g_current).clock += seconds;
  return kSuccess;
}

extern "C" __attribute__((visibility("default"))) int
dlrig_fake_cuda_is_device_memory(DevicePtr pointer, std::size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return g_current && impl::device_range(pointer, bytes, g_current->index) != nullptr;
}

// For the fake NCCL (tests/fake_nccl): whether [pointer, pointer + bytes) is device memory of
// GPU `device` (a communicator's rank, whichever context is current).
extern "C" __attribute__((visibility("default"))) int
dlrig_fake_cuda_is_memory_of(DevicePtr pointer, std::size_t bytes, int device) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return impl::device_range(pointer, bytes, device) != nullptr;
}

// For the fake NCCL (multi-process communicators): `on` holds the stream (its queries answer
// CUDA_ERROR_NOT_READY, its synchronisations wait) until released with on = 0; `progress` is called
// whenever a held stream is queried or waited for. A stream that is gone is ignored (0 returned).
extern "C" __attribute__((visibility("default"))) int dlrig_fake_cuda_hold(Stream stream, int on,
                                                                           void (*progress)()) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  auto *s = reinterpret_cast<FakeStream *>(stream);
  if (progress)
    g_progress = progress;
  if (!s || !state().streams.count(s))
    return 0;
  if (on && !pending(*s))
    s->held = std::make_shared<bool>(true);
  else if (!on && s->held) {
    *s->held = false;
    s->held.reset();
  }
  return 1;
}

// For the fake NCCL ("lose_gpu_at_op"): GPU `device` falls off the bus now, or with `at_query`
// at its next cuEventQuery / cuStreamQuery; every later call on it answers its "lost_error". 1 when
// it is a GPU of the scenario.
extern "C" __attribute__((visibility("default"))) int dlrig_fake_cuda_lose(int device,
                                                                           int at_query) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  FakeDevice *d = device_at(device);
  if (!d)
    return 0;
  (at_query ? d->lost_at_query : d->lost) = true;
  return 1;
}

// For the fake NCCL's ncclCommInitRank (which takes the current GPU, as NCCL does): the ordinal
// of the current context's GPU, -1 when none is current.
extern "C" __attribute__((visibility("default"))) int dlrig_fake_cuda_current_device() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return g_current ? g_current->index : -1;
}

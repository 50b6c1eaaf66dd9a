// A stand-in for libnvidia-ml.so.1, driven by the scenario file named in
// DLRIG_FAKE_NVML_SCENARIO (format: docs/testing.md, "Fake NVML"). It answers only what the
// scenario says: a value the scenario does not give is NVML_ERROR_NOT_SUPPORTED, a function listed
// in "missing_functions" is NVML_ERROR_FUNCTION_NOT_FOUND, and a scenario that cannot be read
// fails nvmlInit. It never reads the real machine.
//
// Its exports are generated from dlrig's entry-point table (platform/nvml_entry_points.hpp): every
// symbol name the table lists is exported with the table's signature, and calls the one
// implementation of that table line below (impl::FIELD), which knows the symbol it was called by.
// A function added to the table without an implementation here does not compile.
//
// Readings that change over time: a scalar given as an array is a sequence, one element per call
// (the last repeats), and a GPU with "lost_after_calls" answers GPU_IS_LOST once it has answered
// that many calls, as DCGM's NVML injection does; "raise_xid_on" {symbol: xid} raises the Xid at
// the GPU's first call of that symbol; "hang_ms" {symbol: ms} makes every call of the symbol
// sleep first, "hang_while_file" {symbol: path} while that file exists, and "abort_in": symbol
// aborts the process there. A GPU's "timeline" changes it with
// time: a list of frames, each {"ms": how long it lasts, "set": {keys of the GPU merged over what
// came before (JSON merge patch: null removes a key)}, "xid": an Xid event raised as the frame
// starts, "lost": true (the GPU falls off the bus)}, counted from nvmlInit; the last frame lasts.
// Events reach an event set the GPU was registered with (nvmlEventSetWait never blocks here). Every
// export holds one lock: the fake is as thread-safe as NVML, whose callers may share it.
#include "dlrig/platform/nvml_entry_points.hpp"

#include "fake_common/fake_library.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace dlrig::nvml;
using dlrig::fake::CalledAs;
using dlrig::fake::find;
using dlrig::fake::g_symbol;
using nlohmann::json;

namespace {

struct FakeGpu {
  int index = 0;
  json spec;                                    // what the GPU says now (base + frames so far)
  std::optional<unsigned long long> lost_after; // "lost_after_calls"
  unsigned long long calls = 0;                 // calls this GPU has answered
  json base;                                    // the scenario's GPU without its timeline
  json frames = json::array();                  // "timeline"
  std::size_t frame = 0;                        // the frame spec reflects
  bool lost = false;                            // a frame said "lost"
  std::deque<unsigned long long> xids;          // raised, not yet waited for
  bool registered = false;                      // with the event set
  std::set<std::string> raised_on;              // "raise_xid_on" symbols already called
};

// Where a sequence is: the element of the current call.
struct Cursor {
  std::size_t next = 0;
  std::size_t at = 0;
  unsigned long long call = 0; // the call that last moved it; 0 = never
};

struct State {
  bool initialised = false;
  json scenario;
  std::set<std::string> missing;
  std::vector<FakeGpu> gpus;
  unsigned long long call = 0; // counts the calls that pass enter()
  std::map<const json *, Cursor> cursors;
  std::chrono::steady_clock::time_point started; // nvmlInit: the timelines' zero
  bool event_set = false;
};

std::mutex &lock() {
  static std::mutex m;
  return m;
}

State &state() {
  static State s;
  return s;
}

// The value of a scenario leaf at the current call: the leaf itself, or for a sequence (an array
// where one value is expected) the element of this call. Each call moves a sequence on once,
// however often the call reads it; past the end the last element stays. An empty sequence is null.
// With consume false the element is only looked at (a size query that asks for a bigger buffer
// does not use one up).
const json &now(const json &v, bool consume = true) {
  static const json null_value;
  if (!v.is_array())
    return v;
  if (v.empty())
    return null_value;
  auto &s = state();
  Cursor &c = s.cursors[&v];
  if (c.call == s.call)
    return v[c.at];
  std::size_t at = std::min(c.next, v.size() - 1);
  if (consume) {
    c.at = at;
    ++c.next;
    c.call = s.call;
  }
  return v[at];
}

// A scenario number may be written as a JSON number or as a hex string ("0x233010de"); a sequence
// gives its element for this call.
unsigned long long number(const json &sequence_or_value) {
  const json &v = now(sequence_or_value);
  if (v.is_string())
    return std::stoull(v.get<std::string>(), nullptr, 0);
  if (v.is_boolean())
    return v.get<bool>() ? 1 : 0;
  return v.get<unsigned long long>();
}

FakeGpu *gpu(Device d) {
  return reinterpret_cast<FakeGpu *>(d);
}

// Moves a GPU's timeline to the frame of this moment: merges the frames passed over into its
// spec, raises their Xids and their loss.
void follow_timeline(FakeGpu &g) {
  if (g.frames.empty())
    return;
  auto &s = state();
  double elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s.started)
          .count();
  std::size_t target = 0;
  double end = 0;
  for (std::size_t i = 0; i + 1 < g.frames.size(); ++i) {
    end += g.frames[i].value("ms", 0.0);
    if (elapsed < end)
      break;
    target = i + 1;
  }
  bool changed = false;
  for (std::size_t i = g.frame + 1; i <= target; ++i) {
    const json &f = g.frames[i];
    if (const json *set = find(f, {"set"}))
      g.spec.merge_patch(*set);
    if (const json *xid = find(f, {"xid"}))
      g.xids.push_back(xid->get<unsigned long long>());
    if (f.value("lost", false))
      g.lost = true;
    changed = true;
  }
  g.frame = std::max(g.frame, target);
  // The spec was rebuilt: positions in its sequences no longer point into it.
  if (changed)
    s.cursors.clear();
}

// A call on one GPU: GPU_IS_LOST once it has answered "lost_after_calls" calls or its timeline
// lost it, then the per-GPU forced error of this symbol ("errors": {"nvmlDeviceGetPowerUsage":
// 15}).
Return enter_gpu(FakeGpu &g) {
  follow_timeline(g);
  if (g.lost || (g.lost_after && g.calls >= *g.lost_after))
    return kErrorGpuIsLost;
  ++g.calls;
  // "raise_xid_on": {symbol: xid}: the GPU's first call of that symbol raises the Xid, as a fault
  // that comes while the caller reads the GPU during its work.
  if (const json *xid = find(g.spec, {"raise_xid_on", g_symbol});
      xid && g.raised_on.insert(g_symbol).second)
    g.xids.push_back(number(*xid));
  if (const json *forced = find(g.spec, {"errors", g_symbol}))
    return static_cast<Return>(number(*forced));
  return kSuccess;
}

// "hang_ms": {symbol: ms}: every call of that symbol sleeps that long before it answers, as NVML
// does when a GPU or the driver has stopped responding (nvidia-smi hangs the same way).
// "abort_in": symbol: that call aborts the process, as a library that crashes does.
void hang_if_told() {
  if (const json *ms = find(state().scenario, {"hang_ms", g_symbol}))
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long long>(number(*ms))));
  // "hang_while_file": {symbol: path}: the call sleeps for as long as that file exists (a driver
  // that stops answering and later recovers, across processes).
  if (const json *path = find(state().scenario, {"hang_while_file", g_symbol});
      path && path->is_string())
    while (std::ifstream(path->get<std::string>()).good())
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (const json *crash = find(state().scenario, {"abort_in"});
      crash && crash->is_string() && *crash == g_symbol)
    std::abort();
}

// Common prologue: the function's availability, initialisation, the handle and the GPU's state.
Return enter(Device d = nullptr, bool needs_device = false) {
  auto &s = state();
  ++s.call;
  hang_if_told();
  if (s.missing.count(g_symbol))
    return kErrorFunctionNotFound;
  if (!s.initialised)
    return kErrorUninitialized;
  if (needs_device && !d)
    return kErrorInvalidArgument;
  return d ? enter_gpu(*gpu(d)) : kSuccess;
}

#define FAKE_ENTER(...)                                                                            \
  if (Return entered = enter(__VA_ARGS__); entered != kSuccess)                                    \
  return entered

// A scalar reading; a null (or a null element of a sequence) is NOT_SUPPORTED.
template <class T> Return answer(const json *v, T *out) {
  if (!v || now(*v).is_null())
    return kErrorNotSupported;
  if (!out)
    return kErrorInvalidArgument;
  *out = static_cast<T>(number(*v));
  return kSuccess;
}

Return copy_string(const json *v, char *out, unsigned length) {
  if (!v || now(*v).is_null())
    return kErrorNotSupported;
  auto text = now(*v).get<std::string>();
  if (!out || text.size() + 1 > length)
    return kErrorInsufficientSize;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return kSuccess;
}

// Writes "00000000:18:00.0" into an nvmlPciInfo_t: busId in full, busIdLegacy as the legacy
// 16-byte field carried it.
void fill_pci(const std::string &bus_id, PciInfo *pci) {
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->busId, sizeof pci->busId, "%s", bus_id.c_str());
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", bus_id.c_str());
  unsigned domain = 0, bus = 0, device = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x", &domain, &bus, &device) == 3) {
    pci->domain = domain;
    pci->bus = bus;
    pci->device = device;
  }
}

// The scenario entry for an unordered pair of GPUs in "topology"/"p2p": the "pairs" item whose
// "gpus" are these two, else "default".
const json *pair_entry(const json *section, int a, int b) {
  if (!section)
    return nullptr;
  if (const json *pairs = find(*section, {"pairs"}))
    for (const auto &p : *pairs) {
      auto g = p.at("gpus");
      int x = g.at(0).get<int>(), y = g.at(1).get<int>();
      if ((x == a && y == b) || (x == b && y == a))
        return &p;
    }
  return find(*section, {"default"});
}

// The "nvlinks" item covering a link: {"links": [first, last], ...}.
const json *nvlink_entry(Device d, unsigned link) {
  const json *links = find(gpu(d)->spec, {"nvlinks"});
  if (!links)
    return nullptr;
  for (const auto &l : *links) {
    auto range = l.at("links");
    if (link >= range.at(0).get<unsigned>() && link <= range.at(1).get<unsigned>())
      return &l;
  }
  return nullptr;
}

Return load_scenario() {
  auto &s = state();
  s = State{};
  const char *path = std::getenv("DLRIG_FAKE_NVML_SCENARIO");
  if (!path || !*path) {
    std::fprintf(stderr, "fake NVML: DLRIG_FAKE_NVML_SCENARIO is not set\n");
    return kErrorUnknown;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "fake NVML: cannot open scenario %s\n", path);
    return kErrorUnknown;
  }
  try {
    s.scenario = json::parse(in, nullptr, true, /*ignore_comments=*/true);
    if (const json *missing = find(s.scenario, {"missing_functions"}))
      for (const auto &name : *missing)
        s.missing.insert(name.get<std::string>());
    if (const json *gpus = find(s.scenario, {"gpus"}))
      for (const auto &g : *gpus) {
        FakeGpu fake;
        fake.index = static_cast<int>(s.gpus.size());
        fake.base = g;
        if (const json *timeline = find(g, {"timeline"})) {
          fake.frames = *timeline;
          fake.base.erase("timeline");
          if (!fake.frames.is_array())
            throw std::runtime_error("\"timeline\" is a list of frames");
        }
        fake.spec = fake.base;
        if (!fake.frames.empty()) {
          if (const json *set = find(fake.frames[0], {"set"}))
            fake.spec.merge_patch(*set);
          if (const json *xid = find(fake.frames[0], {"xid"}))
            fake.xids.push_back(xid->get<unsigned long long>());
          fake.lost = fake.frames[0].value("lost", false);
        }
        if (const json *lost = find(g, {"lost_after_calls"}))
          fake.lost_after = number(*lost);
        s.gpus.push_back(std::move(fake));
      }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fake NVML: scenario %s: %s\n", path, e.what());
    s = State{};
    return kErrorUnknown;
  }
  return kSuccess;
}

// The version suffix of the symbol called: 3 for "..._v3", 2 for "..._v2", 1 for a plain name.
int symbol_version() {
  std::string name = g_symbol;
  auto at = name.rfind("_v");
  return at == std::string::npos ? 1 : std::atoi(name.c_str() + at + 2);
}

Return processes(Device d, unsigned *count, void *infos) {
  FAKE_ENTER(d, true);
  const int version = symbol_version();
  const json *given = find(gpu(d)->spec, {"processes"});
  if (!given)
    return kErrorNotSupported;
  // A list of lists is a sequence of process lists, one per answered call.
  const bool sequence = !given->empty() && given->front().is_array();
  const json *list = sequence ? &now(*given, false) : given;
  if (!count)
    return kErrorInvalidArgument;
  unsigned n = static_cast<unsigned>(list->size());
  if (*count < n || (n > 0 && !infos)) {
    *count = n;
    return kErrorInsufficientSize;
  }
  *count = n;
  for (unsigned i = 0; i < n; ++i) {
    const auto &p = (*list)[i];
    unsigned pid = static_cast<unsigned>(number(p.at("pid")));
    unsigned long long used =
        p.contains("used_memory") ? number(p.at("used_memory")) : kValueNotAvailable;
    if (version == 1) {
      static_cast<ProcessInfoV1 *>(infos)[i] = ProcessInfoV1{pid, used};
    } else {
      static_cast<ProcessInfoV2 *>(infos)[i] = ProcessInfoV2{pid, used, 0xFFFFFFFFu, 0xFFFFFFFFu};
    }
  }
  if (sequence)
    now(*given); // answered: the next call gets the next list
  return kSuccess;
}

Return pci_info(Device d, PciInfo *pci) {
  FAKE_ENTER(d, true);
  const json *bus = find(gpu(d)->spec, {"bus_id"});
  if (!bus)
    return kErrorNotSupported;
  if (!pci)
    return kErrorInvalidArgument;
  fill_pci(bus->get<std::string>(), pci);
  if (const json *id = find(gpu(d)->spec, {"pci_device_id"}))
    pci->pciDeviceId = static_cast<unsigned>(number(*id));
  if (const json *id = find(gpu(d)->spec, {"pci_subsystem_id"}))
    pci->pciSubSystemId = static_cast<unsigned>(number(*id));
  return kSuccess;
}

// --- one implementation per table line -----------------------------------------------------------

namespace impl {

Return init() {
  if (Return r = load_scenario(); r != kSuccess)
    return r;
  auto &s = state();
  if (s.missing.count(g_symbol))
    return kErrorFunctionNotFound;
  hang_if_told();
  if (const json *err = find(s.scenario, {"init_error"}))
    return static_cast<Return>(number(*err));
  s.initialised = true;
  s.started = std::chrono::steady_clock::now();
  return kSuccess;
}

Return shutdown() {
  FAKE_ENTER();
  state().initialised = false;
  return kSuccess;
}

// The texts NVML's own nvmlErrorString gives for these codes.
const char *error_string(Return r) {
  switch (r) {
  case kSuccess:
    return "Success";
  case kErrorUninitialized:
    return "Uninitialized";
  case kErrorInvalidArgument:
    return "Invalid Argument";
  case kErrorNotSupported:
    return "Not Supported";
  case kErrorNoPermission:
    return "Insufficient Permissions";
  case kErrorNotFound:
    return "Not Found";
  case kErrorInsufficientSize:
    return "Insufficient Size";
  case kErrorDriverNotLoaded:
    return "Driver Not Loaded";
  case kErrorLibraryNotFound:
    return "NVML Shared Library Not Found";
  case kErrorFunctionNotFound:
    return "Function Not Found";
  case kErrorGpuIsLost:
    return "GPU is lost";
  case kErrorLibRmVersionMismatch:
    return "RM has detected an NVML/RM version mismatch";
  default:
    return "Unknown Error";
  }
}

Return system_get_driver_version(char *out, unsigned length) {
  FAKE_ENTER();
  return copy_string(find(state().scenario, {"driver_version"}), out, length);
}

Return system_get_nvml_version(char *out, unsigned length) {
  FAKE_ENTER();
  return copy_string(find(state().scenario, {"nvml_version"}), out, length);
}

Return system_get_cuda_driver_version(int *version) {
  FAKE_ENTER();
  return answer(find(state().scenario, {"cuda_driver_version"}), version);
}

Return device_get_count(unsigned *count) {
  FAKE_ENTER();
  if (!count)
    return kErrorInvalidArgument;
  *count = static_cast<unsigned>(state().gpus.size());
  return kSuccess;
}

Return device_get_handle_by_index(unsigned index, Device *device) {
  FAKE_ENTER();
  auto &gpus = state().gpus;
  if (index >= gpus.size() || !device)
    return kErrorInvalidArgument;
  if (Return r = enter_gpu(gpus[index]); r != kSuccess)
    return r;
  *device = reinterpret_cast<Device>(&gpus[index]);
  return kSuccess;
}

Return device_get_pci_info(Device d, PciInfo *pci) {
  return pci_info(d, pci);
}

Return device_get_name(Device d, char *out, unsigned length) {
  FAKE_ENTER(d, true);
  return copy_string(find(gpu(d)->spec, {"name"}), out, length);
}

Return device_get_uuid(Device d, char *out, unsigned length) {
  FAKE_ENTER(d, true);
  return copy_string(find(gpu(d)->spec, {"uuid"}), out, length);
}

Return device_get_memory_info_v2(Device d, MemoryV2 *m) {
  FAKE_ENTER(d, true);
  const json *mem = find(gpu(d)->spec, {"memory"});
  if (!mem)
    return kErrorNotSupported;
  if (!m)
    return kErrorInvalidArgument;
  if (m->version != kMemoryV2Version)
    return kErrorArgumentVersionMismatch;
  m->total = number(mem->at("total"));
  m->reserved = mem->contains("reserved") ? number(mem->at("reserved")) : 0;
  m->used = number(mem->at("used"));
  m->free = m->total - m->used;
  return kSuccess;
}

Return device_get_memory_info(Device d, MemoryV1 *m) {
  FAKE_ENTER(d, true);
  const json *mem = find(gpu(d)->spec, {"memory"});
  if (!mem)
    return kErrorNotSupported;
  if (!m)
    return kErrorInvalidArgument;
  // v1 leaves reserved memory out of "used" (the v2 struct counts it).
  m->total = number(mem->at("total"));
  unsigned long long reserved = mem->contains("reserved") ? number(mem->at("reserved")) : 0;
  m->used = number(mem->at("used")) - reserved;
  m->free = m->total - number(mem->at("used"));
  return kSuccess;
}

Return device_get_cuda_compute_capability(Device d, int *major, int *minor) {
  FAKE_ENTER(d, true);
  const json *cc = find(gpu(d)->spec, {"compute_capability"});
  if (!cc)
    return kErrorNotSupported;
  if (!major || !minor)
    return kErrorInvalidArgument;
  *major = cc->at(0).get<int>();
  *minor = cc->at(1).get<int>();
  return kSuccess;
}

namespace {
const char *clock_name(int type) {
  switch (type) {
  case 0:
    return "graphics";
  case kClockSm:
    return "sm";
  case kClockMem:
    return "mem";
  case 3:
    return "video";
  default:
    return "none";
  }
}
} // namespace

Return device_get_clock_info(Device d, int type, unsigned *mhz) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"clocks_mhz", clock_name(type)}), mhz);
}

Return device_get_max_clock_info(Device d, int type, unsigned *mhz) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"max_clocks_mhz", clock_name(type)}), mhz);
}

Return device_get_power_usage(Device d, unsigned *mw) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"power_usage_mw"}), mw);
}

Return device_get_enforced_power_limit(Device d, unsigned *mw) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"enforced_power_limit_mw"}), mw);
}

Return device_get_power_management_default_limit(Device d, unsigned *mw) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"power_default_limit_mw"}), mw);
}

Return device_get_temperature(Device d, int sensor, unsigned *celsius) {
  FAKE_ENTER(d, true);
  if (sensor != kTemperatureGpu)
    return kErrorInvalidArgument;
  return answer(find(gpu(d)->spec, {"temperature_c"}), celsius);
}

Return device_get_temperature_threshold(Device d, int type, unsigned *celsius) {
  FAKE_ENTER(d, true);
  const char *name = type == kTemperatureThresholdShutdown   ? "shutdown"
                     : type == kTemperatureThresholdSlowdown ? "slowdown"
                                                             : "other";
  return answer(find(gpu(d)->spec, {"temperature_thresholds_c", name}), celsius);
}

Return device_get_fan_speed(Device d, unsigned *percent) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"fan_speed_percent"}), percent);
}

Return device_get_current_clocks_event_reasons(Device d, unsigned long long *mask) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"clocks_event_reasons"}), mask);
}

Return device_get_persistence_mode(Device d, EnableState *mode) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"persistence_mode"}), mode);
}

Return device_get_compute_mode(Device d, int *mode) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"compute_mode"}), mode);
}

Return device_get_mig_mode(Device d, unsigned *current, unsigned *pending) {
  FAKE_ENTER(d, true);
  if (Return r = answer(find(gpu(d)->spec, {"mig_mode", "current"}), current); r != kSuccess)
    return r;
  return answer(find(gpu(d)->spec, {"mig_mode", "pending"}), pending);
}

Return device_get_ecc_mode(Device d, EnableState *current, EnableState *pending) {
  FAKE_ENTER(d, true);
  if (Return r = answer(find(gpu(d)->spec, {"ecc_mode", "current"}), current); r != kSuccess)
    return r;
  return answer(find(gpu(d)->spec, {"ecc_mode", "pending"}), pending);
}

Return device_get_total_ecc_errors(Device d, int type, int counter, unsigned long long *count) {
  FAKE_ENTER(d, true);
  std::string key = std::string(type == kMemoryErrorCorrected ? "corrected" : "uncorrected") +
                    (counter == kEccCounterVolatile ? "_volatile" : "_aggregate");
  return answer(find(gpu(d)->spec, {"ecc_errors", key.c_str()}), count);
}

Return device_get_retired_pages(Device d, int cause, unsigned *count,
                                unsigned long long *addresses) {
  FAKE_ENTER(d, true);
  const char *key = cause == kPageRetirementMultipleSingleBit ? "single_bit" : "double_bit";
  const json *n = find(gpu(d)->spec, {"retired_pages", key});
  if (!n)
    return kErrorNotSupported;
  if (!count)
    return kErrorInvalidArgument;
  unsigned pages = static_cast<unsigned>(number(*n));
  unsigned room = *count;
  *count = pages;
  if (room < pages)
    return kErrorInsufficientSize;
  for (unsigned i = 0; addresses && i < pages; ++i)
    addresses[i] = 0x1000ULL * (i + 1);
  return kSuccess;
}

Return device_get_retired_pages_pending_status(Device d, EnableState *pending) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"retired_pages", "pending"}), pending);
}

Return device_get_remapped_rows(Device d, unsigned *corrected, unsigned *uncorrected,
                                unsigned *pending, unsigned *failure) {
  FAKE_ENTER(d, true);
  const json &g = gpu(d)->spec;
  if (!find(g, {"remapped_rows"}))
    return kErrorNotSupported;
  for (auto [key, out] :
       {std::pair{"correctable", corrected}, std::pair{"uncorrectable", uncorrected},
        std::pair{"pending", pending}, std::pair{"failure", failure}})
    if (Return r = answer(find(g, {"remapped_rows", key}), out); r != kSuccess)
      return r;
  return kSuccess;
}

Return device_get_display_active(Device d, EnableState *active) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"display_active"}), active);
}

// "c2c_enabled": bool.
Return device_get_c2c_mode_info(Device d, C2cModeInfoV1 *info) {
  FAKE_ENTER(d, true);
  if (!info)
    return kErrorInvalidArgument;
  return answer(find(gpu(d)->spec, {"c2c_enabled"}), &info->isC2cEnabled);
}

// "fabric": {"state": 0-3 (nvmlGpuFabricState_t), "status": nvmlReturn_t, default 0}.
Return device_get_gpu_fabric_info(Device d, GpuFabricInfoV1 *info) {
  FAKE_ENTER(d, true);
  const json *state = find(gpu(d)->spec, {"fabric", "state"});
  if (!state || now(*state).is_null())
    return kErrorNotSupported;
  if (!info)
    return kErrorInvalidArgument;
  std::memset(info, 0, sizeof *info);
  info->state = static_cast<unsigned char>(number(*state));
  if (const json *status = find(gpu(d)->spec, {"fabric", "status"}))
    info->status = static_cast<Return>(number(*status));
  return kSuccess;
}

Return device_get_curr_pcie_link_generation(Device d, unsigned *gen) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"pcie", "gen_current"}), gen);
}

Return device_get_max_pcie_link_generation(Device d, unsigned *gen) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"pcie", "gen_max"}), gen);
}

Return device_get_curr_pcie_link_width(Device d, unsigned *width) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"pcie", "width_current"}), width);
}

Return device_get_max_pcie_link_width(Device d, unsigned *width) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"pcie", "width_max"}), width);
}

Return device_get_pcie_replay_counter(Device d, unsigned *value) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"pcie", "replay_counter"}), value);
}

Return device_get_nvlink_state(Device d, unsigned link, EnableState *active) {
  FAKE_ENTER(d, true);
  if (!find(gpu(d)->spec, {"nvlinks"}))
    return kErrorNotSupported;
  if (link >= kNvlinkMaxLinks)
    return kErrorInvalidArgument;
  const json *l = nvlink_entry(d, link);
  if (!l)
    return kErrorInvalidArgument; // past the GPU's last link
  return answer(find(*l, {"active"}), active);
}

Return device_get_nvlink_remote_pci_info(Device d, unsigned link, PciInfo *pci) {
  FAKE_ENTER(d, true);
  const json *l = nvlink_entry(d, link);
  const json *bus = l ? find(*l, {"remote_bus_id"}) : nullptr;
  if (!bus)
    return kErrorNotSupported;
  if (!pci)
    return kErrorInvalidArgument;
  fill_pci(bus->get<std::string>(), pci);
  return kSuccess;
}

Return device_get_nvlink_remote_device_type(Device d, unsigned link, int *type) {
  FAKE_ENTER(d, true);
  const json *l = nvlink_entry(d, link);
  const json *kind = l ? find(*l, {"remote_type"}) : nullptr;
  if (!kind)
    return kErrorNotSupported;
  if (!type)
    return kErrorInvalidArgument;
  auto name = kind->get<std::string>();
  *type = name == "gpu"      ? kNvLinkDeviceGpu
          : name == "switch" ? kNvLinkDeviceSwitch
          : name == "ibmnpu" ? kNvLinkDeviceIbmNpu
                             : 0xFF;
  return kSuccess;
}

Return device_get_field_values(Device d, int count, FieldValue *values) {
  FAKE_ENTER(d, true);
  if (count < 0 || (count > 0 && !values))
    return kErrorInvalidArgument;
  for (int i = 0; i < count; ++i) {
    FieldValue &v = values[i];
    v.nvmlReturn = kErrorNotSupported;
    if (v.fieldId == kFieldNvlinkSpeedMbpsCommon) {
      if (const json *speed = find(gpu(d)->spec, {"nvlink_speed_mbps"})) {
        v.valueType = kValueTypeUnsignedInt;
        v.value.uiVal = static_cast<unsigned>(number(*speed));
        v.nvmlReturn = kSuccess;
      }
    } else if (v.fieldId == kFieldMemoryTemp) {
      // "memory_temperature_c"
      if (const json *t = find(gpu(d)->spec, {"memory_temperature_c"})) {
        v.valueType = kValueTypeUnsignedInt;
        v.value.uiVal = static_cast<unsigned>(number(*t));
        v.nvmlReturn = kSuccess;
      }
    } else if (v.fieldId == kFieldNvlinkThroughputDataTx ||
               v.fieldId == kFieldNvlinkThroughputDataRx) {
      // "nvlink_throughput_kib": {"tx", "rx"}: KiB since the driver loaded.
      const char *key = v.fieldId == kFieldNvlinkThroughputDataTx ? "tx" : "rx";
      if (const json *kib = find(gpu(d)->spec, {"nvlink_throughput_kib", key})) {
        v.valueType = kValueTypeUnsignedLongLong;
        v.value.ullVal = number(*kib);
        v.nvmlReturn = kSuccess;
      }
    }
  }
  return kSuccess;
}

Return device_get_topology_common_ancestor(Device a, Device b, int *level) {
  FAKE_ENTER(a, true);
  if (!b || !level)
    return kErrorInvalidArgument;
  const json *entry =
      pair_entry(find(state().scenario, {"topology"}), gpu(a)->index, gpu(b)->index);
  if (!entry)
    return kErrorNotSupported;
  *level = static_cast<int>(number(entry->is_object() ? entry->at("level") : *entry));
  return kSuccess;
}

Return device_get_p2p_status(Device a, Device b, int caps, int *status) {
  FAKE_ENTER(a, true);
  if (!b || !status)
    return kErrorInvalidArgument;
  static const char *const names[] = {"read", "write", "nvlink", "atomics", "prop"};
  if (caps < 0 || caps > 4)
    return kErrorInvalidArgument;
  const json *entry = pair_entry(find(state().scenario, {"p2p"}), gpu(a)->index, gpu(b)->index);
  return answer(entry ? find(*entry, {names[caps]}) : nullptr, status);
}

Return device_get_compute_running_processes(Device d, unsigned *count, void *infos) {
  return processes(d, count, infos);
}

Return device_get_utilization_rates(Device d, Utilization *utilization) {
  FAKE_ENTER(d, true);
  const json &g = gpu(d)->spec;
  if (!find(g, {"utilization_percent"}))
    return kErrorNotSupported;
  if (!utilization)
    return kErrorInvalidArgument;
  if (Return r = answer(find(g, {"utilization_percent", "gpu"}), &utilization->gpu); r != kSuccess)
    return r;
  return answer(find(g, {"utilization_percent", "memory"}), &utilization->memory);
}

// "energy_mj": millijoules since the driver loaded.
Return device_get_total_energy_consumption(Device d, unsigned long long *mj) {
  FAKE_ENTER(d, true);
  return answer(find(gpu(d)->spec, {"energy_mj"}), mj);
}

// "pcie": {"tx_kbps", "rx_kbps"}: KB/s.
Return device_get_pcie_throughput(Device d, int counter, unsigned *kbps) {
  FAKE_ENTER(d, true);
  if (counter != kPcieUtilTxBytes && counter != kPcieUtilRxBytes)
    return kErrorInvalidArgument;
  return answer(find(gpu(d)->spec, {"pcie", counter == kPcieUtilTxBytes ? "tx_kbps" : "rx_kbps"}),
                kbps);
}

// "process_utilization": [{"pid", "sm", "mem"}]: one sample per process, stamped now; an empty
// list answers NVML_ERROR_NOT_FOUND, as NVML does when no process used the GPU lately;
// "process_utilization_expires": true counts the samples for a call without a buffer and answers
// NOT_FOUND with one, as the samples that aged out between the two calls did on an H200.
Return device_get_process_utilization(Device d, ProcessUtilizationSample *samples, unsigned *count,
                                      unsigned long long) {
  FAKE_ENTER(d, true);
  const json *given = find(gpu(d)->spec, {"process_utilization"});
  if (!given)
    return kErrorNotSupported;
  if (!count)
    return kErrorInvalidArgument;
  unsigned n = static_cast<unsigned>(given->size());
  if (n == 0) // "no valid sample entries": what NVML answers when no process used the GPU
    return kErrorNotFound;
  if (!samples || *count < n) {
    *count = n;
    return kErrorInsufficientSize;
  }
  if (gpu(d)->spec.value("process_utilization_expires", false))
    return kErrorNotFound;
  *count = n;
  for (unsigned i = 0; i < n; ++i) {
    const json &p = (*given)[i];
    samples[i] = ProcessUtilizationSample{static_cast<unsigned>(number(p.at("pid"))),
                                          1000000ULL * (i + 1),
                                          static_cast<unsigned>(number(p.value("sm", json(0)))),
                                          static_cast<unsigned>(number(p.value("mem", json(0)))),
                                          0,
                                          0};
  }
  return kSuccess;
}

// One event set per process (what dlrig asks for); its handle is the state itself.
Return event_set_create(EventSet *set) {
  FAKE_ENTER();
  if (!set)
    return kErrorInvalidArgument;
  if (find(state().scenario, {"events_supported"}) &&
      !state().scenario.at("events_supported").get<bool>())
    return kErrorNotSupported;
  state().event_set = true;
  *set = reinterpret_cast<EventSet>(&state());
  return kSuccess;
}

Return device_register_events(Device d, unsigned long long types, EventSet set) {
  FAKE_ENTER(d, true);
  if (!set || !state().event_set)
    return kErrorInvalidArgument;
  if (!(types & kEventTypeXidCriticalError))
    return kErrorNotSupported;
  gpu(d)->registered = true;
  return kSuccess;
}

Return event_set_wait(EventSet set, EventData *data, unsigned) {
  FAKE_ENTER();
  if (!set || !data || !state().event_set)
    return kErrorInvalidArgument;
  for (auto &g : state().gpus) {
    follow_timeline(g);
    if (g.registered && !g.xids.empty()) {
      std::memset(data, 0, std::string_view(g_symbol).ends_with("_v2") ? sizeof *data : 24);
      data->device = reinterpret_cast<Device>(&g);
      data->eventType = kEventTypeXidCriticalError;
      data->eventData = g.xids.front();
      g.xids.pop_front();
      return kSuccess;
    }
  }
  return kErrorTimeout;
}

Return event_set_free(EventSet set) {
  FAKE_ENTER();
  if (!set || !state().event_set)
    return kErrorInvalidArgument;
  state().event_set = false;
  for (auto &g : state().gpus)
    g.registered = false;
  return kSuccess;
}

} // namespace impl

} // namespace

// --- the exports, generated from the table
// ---------------------------------------------------------

// What a call answers when the scenario holds a value of the wrong kind (an object where a number
// belongs): an error, never an exception across the C boundary and never a made-up value.
template <class R> R scenario_error(const char *symbol, const std::exception &e) {
  std::fprintf(stderr, "fake NVML: %s: scenario value unusable: %s\n", symbol, e.what());
  if constexpr (std::is_same_v<R, Return>)
    return kErrorUnknown;
  else
    return "Unknown Error";
}

// FAKE_EXPORT_ONE((field, ret, (params), (args)), name): `extern "C" ret name(params)` calling
// impl::field(args) as name.
#define FAKE_EXPORT_ONE(line, name) FAKE_EXPORT_ONE_(name, DLRIG_PP_UNPAREN line)
#define FAKE_EXPORT_ONE_(...) FAKE_EXPORT_ONE__(__VA_ARGS__)
#define FAKE_EXPORT_ONE__(name, field, ret, params, args)                                          \
  extern "C" __attribute__((visibility("default"))) ret name params {                              \
    CalledAs called_as(#name);                                                                     \
    std::lock_guard<std::mutex> locked(lock());                                                    \
    try {                                                                                          \
      return impl::field args;                                                                     \
    } catch (const std::exception &e) {                                                            \
      return scenario_error<ret>(#name, e);                                                        \
    }                                                                                              \
  }
#define FAKE_EXPORT(field, ret, params, args, ...)                                                 \
  DLRIG_PP_FOR_EACH(FAKE_EXPORT_ONE, (field, ret, params, args), __VA_ARGS__)

DLRIG_NVML_ENTRY_POINTS(FAKE_EXPORT)

// A stand-in for libnvidia-ml.so.1, driven by the scenario file named in
// DLRIG_FAKE_NVML_SCENARIO (format: docs/testing.md, "Fake NVML"). It exports the NVML functions
// dlrig calls and answers only what the scenario says: a value the scenario does not give is
// NVML_ERROR_NOT_SUPPORTED, a function listed in "missing_functions" is
// NVML_ERROR_FUNCTION_NOT_FOUND, and a scenario that cannot be read fails nvmlInit. It never
// reads the real machine. The C types are dlrig's own declarations (probe/nvml_api.hpp).
#include "dlrig/probe/nvml_api.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace dlrig::nvml;
using nlohmann::json;

namespace {

struct FakeGpu {
  int index = 0;
  json spec;
};

struct State {
  bool initialised = false;
  json scenario;
  std::set<std::string> missing;
  std::vector<FakeGpu> gpus;
};

State &state() {
  static State s;
  return s;
}

// A scenario number may be written as a JSON number or as a hex string ("0x233010de").
unsigned long long number(const json &v) {
  if (v.is_string())
    return std::stoull(v.get<std::string>(), nullptr, 0);
  if (v.is_boolean())
    return v.get<bool>() ? 1 : 0;
  return v.get<unsigned long long>();
}

// The value at a path of keys, or nullptr when any key is absent.
const json *find(const json &root, std::initializer_list<const char *> path) {
  const json *at = &root;
  for (const char *key : path) {
    if (!at->is_object() || !at->contains(key))
      return nullptr;
    at = &(*at)[key];
  }
  return at->is_null() ? nullptr : at;
}

FakeGpu *gpu(Device d) {
  return reinterpret_cast<FakeGpu *>(d);
}

// Common prologue: the function's availability, initialisation, the handle, and a per-GPU forced
// error ("errors": {"nvmlDeviceGetPowerUsage": 15}).
Return enter(const char *fn, Device d = nullptr, bool needs_device = false) {
  auto &s = state();
  if (s.missing.count(fn))
    return kErrorFunctionNotFound;
  if (!s.initialised)
    return kErrorUninitialized;
  if (needs_device && !d)
    return kErrorInvalidArgument;
  if (d) {
    if (const json *forced = find(gpu(d)->spec, {"errors", fn}))
      return static_cast<Return>(number(*forced));
  }
  return kSuccess;
}

#define FAKE_ENTER(...)                                                                            \
  if (Return entered = enter(__VA_ARGS__); entered != kSuccess)                                    \
  return entered

template <class T> Return answer(const json *v, T *out) {
  if (!v)
    return kErrorNotSupported;
  if (!out)
    return kErrorInvalidArgument;
  *out = static_cast<T>(number(*v));
  return kSuccess;
}

Return copy_string(const json *v, char *out, unsigned length) {
  if (!v)
    return kErrorNotSupported;
  auto text = v->get<std::string>();
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
      for (const auto &g : *gpus)
        s.gpus.push_back(FakeGpu{static_cast<int>(s.gpus.size()), g});
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fake NVML: scenario %s: %s\n", path, e.what());
    s = State{};
    return kErrorUnknown;
  }
  return kSuccess;
}

Return processes(const char *fn, Device d, unsigned *count, void *infos, int version) {
  FAKE_ENTER(fn, d, true);
  const json *list = find(gpu(d)->spec, {"processes"});
  if (!list)
    return kErrorNotSupported;
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
  return kSuccess;
}

Return pci_info(const char *fn, Device d, PciInfo *pci) {
  FAKE_ENTER(fn, d, true);
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

} // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT Return nvmlInit_v2() {
  if (Return r = load_scenario(); r != kSuccess)
    return r;
  auto &s = state();
  if (s.missing.count("nvmlInit_v2"))
    return kErrorFunctionNotFound;
  if (const json *err = find(s.scenario, {"init_error"}))
    return static_cast<Return>(number(*err));
  s.initialised = true;
  return kSuccess;
}

FAKE_EXPORT Return nvmlInit() {
  return nvmlInit_v2();
}

FAKE_EXPORT Return nvmlShutdown() {
  FAKE_ENTER("nvmlShutdown");
  state().initialised = false;
  return kSuccess;
}

// The texts NVML's own nvmlErrorString gives for these codes.
FAKE_EXPORT const char *nvmlErrorString(Return r) {
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

FAKE_EXPORT Return nvmlSystemGetDriverVersion(char *out, unsigned length) {
  FAKE_ENTER("nvmlSystemGetDriverVersion");
  return copy_string(find(state().scenario, {"driver_version"}), out, length);
}

FAKE_EXPORT Return nvmlSystemGetNVMLVersion(char *out, unsigned length) {
  FAKE_ENTER("nvmlSystemGetNVMLVersion");
  return copy_string(find(state().scenario, {"nvml_version"}), out, length);
}

FAKE_EXPORT Return nvmlSystemGetCudaDriverVersion_v2(int *version) {
  FAKE_ENTER("nvmlSystemGetCudaDriverVersion_v2");
  return answer(find(state().scenario, {"cuda_driver_version"}), version);
}

FAKE_EXPORT Return nvmlSystemGetCudaDriverVersion(int *version) {
  FAKE_ENTER("nvmlSystemGetCudaDriverVersion");
  return answer(find(state().scenario, {"cuda_driver_version"}), version);
}

FAKE_EXPORT Return nvmlDeviceGetCount_v2(unsigned *count) {
  FAKE_ENTER("nvmlDeviceGetCount_v2");
  if (!count)
    return kErrorInvalidArgument;
  *count = static_cast<unsigned>(state().gpus.size());
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetCount(unsigned *count) {
  return nvmlDeviceGetCount_v2(count);
}

FAKE_EXPORT Return nvmlDeviceGetHandleByIndex_v2(unsigned index, Device *device) {
  FAKE_ENTER("nvmlDeviceGetHandleByIndex_v2");
  auto &gpus = state().gpus;
  if (index >= gpus.size() || !device)
    return kErrorInvalidArgument;
  if (const json *forced = find(gpus[index].spec, {"errors", "nvmlDeviceGetHandleByIndex_v2"}))
    return static_cast<Return>(number(*forced));
  *device = reinterpret_cast<Device>(&gpus[index]);
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetHandleByIndex(unsigned index, Device *device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

FAKE_EXPORT Return nvmlDeviceGetPciInfo_v3(Device d, PciInfo *pci) {
  return pci_info("nvmlDeviceGetPciInfo_v3", d, pci);
}

FAKE_EXPORT Return nvmlDeviceGetPciInfo_v2(Device d, PciInfo *pci) {
  return pci_info("nvmlDeviceGetPciInfo_v2", d, pci);
}

FAKE_EXPORT Return nvmlDeviceGetName(Device d, char *out, unsigned length) {
  FAKE_ENTER("nvmlDeviceGetName", d, true);
  return copy_string(find(gpu(d)->spec, {"name"}), out, length);
}

FAKE_EXPORT Return nvmlDeviceGetUUID(Device d, char *out, unsigned length) {
  FAKE_ENTER("nvmlDeviceGetUUID", d, true);
  return copy_string(find(gpu(d)->spec, {"uuid"}), out, length);
}

FAKE_EXPORT Return nvmlDeviceGetMemoryInfo_v2(Device d, MemoryV2 *m) {
  FAKE_ENTER("nvmlDeviceGetMemoryInfo_v2", d, true);
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

FAKE_EXPORT Return nvmlDeviceGetMemoryInfo(Device d, MemoryV1 *m) {
  FAKE_ENTER("nvmlDeviceGetMemoryInfo", d, true);
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

FAKE_EXPORT Return nvmlDeviceGetCudaComputeCapability(Device d, int *major, int *minor) {
  FAKE_ENTER("nvmlDeviceGetCudaComputeCapability", d, true);
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

FAKE_EXPORT Return nvmlDeviceGetClockInfo(Device d, int type, unsigned *mhz) {
  FAKE_ENTER("nvmlDeviceGetClockInfo", d, true);
  return answer(find(gpu(d)->spec, {"clocks_mhz", clock_name(type)}), mhz);
}

FAKE_EXPORT Return nvmlDeviceGetMaxClockInfo(Device d, int type, unsigned *mhz) {
  FAKE_ENTER("nvmlDeviceGetMaxClockInfo", d, true);
  return answer(find(gpu(d)->spec, {"max_clocks_mhz", clock_name(type)}), mhz);
}

FAKE_EXPORT Return nvmlDeviceGetPowerUsage(Device d, unsigned *mw) {
  FAKE_ENTER("nvmlDeviceGetPowerUsage", d, true);
  return answer(find(gpu(d)->spec, {"power_usage_mw"}), mw);
}

FAKE_EXPORT Return nvmlDeviceGetEnforcedPowerLimit(Device d, unsigned *mw) {
  FAKE_ENTER("nvmlDeviceGetEnforcedPowerLimit", d, true);
  return answer(find(gpu(d)->spec, {"enforced_power_limit_mw"}), mw);
}

FAKE_EXPORT Return nvmlDeviceGetPowerManagementDefaultLimit(Device d, unsigned *mw) {
  FAKE_ENTER("nvmlDeviceGetPowerManagementDefaultLimit", d, true);
  return answer(find(gpu(d)->spec, {"power_default_limit_mw"}), mw);
}

FAKE_EXPORT Return nvmlDeviceGetTemperature(Device d, int sensor, unsigned *celsius) {
  FAKE_ENTER("nvmlDeviceGetTemperature", d, true);
  if (sensor != kTemperatureGpu)
    return kErrorInvalidArgument;
  return answer(find(gpu(d)->spec, {"temperature_c"}), celsius);
}

FAKE_EXPORT Return nvmlDeviceGetTemperatureThreshold(Device d, int type, unsigned *celsius) {
  FAKE_ENTER("nvmlDeviceGetTemperatureThreshold", d, true);
  const char *name = type == kTemperatureThresholdShutdown   ? "shutdown"
                     : type == kTemperatureThresholdSlowdown ? "slowdown"
                                                             : "other";
  return answer(find(gpu(d)->spec, {"temperature_thresholds_c", name}), celsius);
}

FAKE_EXPORT Return nvmlDeviceGetFanSpeed(Device d, unsigned *percent) {
  FAKE_ENTER("nvmlDeviceGetFanSpeed", d, true);
  return answer(find(gpu(d)->spec, {"fan_speed_percent"}), percent);
}

FAKE_EXPORT Return nvmlDeviceGetCurrentClocksEventReasons(Device d, unsigned long long *mask) {
  FAKE_ENTER("nvmlDeviceGetCurrentClocksEventReasons", d, true);
  return answer(find(gpu(d)->spec, {"clocks_event_reasons"}), mask);
}

FAKE_EXPORT Return nvmlDeviceGetCurrentClocksThrottleReasons(Device d, unsigned long long *mask) {
  FAKE_ENTER("nvmlDeviceGetCurrentClocksThrottleReasons", d, true);
  return answer(find(gpu(d)->spec, {"clocks_event_reasons"}), mask);
}

FAKE_EXPORT Return nvmlDeviceGetPersistenceMode(Device d, EnableState *mode) {
  FAKE_ENTER("nvmlDeviceGetPersistenceMode", d, true);
  return answer(find(gpu(d)->spec, {"persistence_mode"}), mode);
}

FAKE_EXPORT Return nvmlDeviceGetComputeMode(Device d, int *mode) {
  FAKE_ENTER("nvmlDeviceGetComputeMode", d, true);
  return answer(find(gpu(d)->spec, {"compute_mode"}), mode);
}

FAKE_EXPORT Return nvmlDeviceGetMigMode(Device d, unsigned *current, unsigned *pending) {
  FAKE_ENTER("nvmlDeviceGetMigMode", d, true);
  if (Return r = answer(find(gpu(d)->spec, {"mig_mode", "current"}), current); r != kSuccess)
    return r;
  return answer(find(gpu(d)->spec, {"mig_mode", "pending"}), pending);
}

FAKE_EXPORT Return nvmlDeviceGetEccMode(Device d, EnableState *current, EnableState *pending) {
  FAKE_ENTER("nvmlDeviceGetEccMode", d, true);
  if (Return r = answer(find(gpu(d)->spec, {"ecc_mode", "current"}), current); r != kSuccess)
    return r;
  return answer(find(gpu(d)->spec, {"ecc_mode", "pending"}), pending);
}

FAKE_EXPORT Return nvmlDeviceGetTotalEccErrors(Device d, int type, int counter,
                                               unsigned long long *count) {
  FAKE_ENTER("nvmlDeviceGetTotalEccErrors", d, true);
  std::string key = std::string(type == kMemoryErrorCorrected ? "corrected" : "uncorrected") +
                    (counter == kEccCounterVolatile ? "_volatile" : "_aggregate");
  return answer(find(gpu(d)->spec, {"ecc_errors", key.c_str()}), count);
}

FAKE_EXPORT Return nvmlDeviceGetRetiredPages(Device d, int cause, unsigned *count,
                                             unsigned long long *addresses) {
  FAKE_ENTER("nvmlDeviceGetRetiredPages", d, true);
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

FAKE_EXPORT Return nvmlDeviceGetRetiredPagesPendingStatus(Device d, EnableState *pending) {
  FAKE_ENTER("nvmlDeviceGetRetiredPagesPendingStatus", d, true);
  return answer(find(gpu(d)->spec, {"retired_pages", "pending"}), pending);
}

FAKE_EXPORT Return nvmlDeviceGetRemappedRows(Device d, unsigned *corrected, unsigned *uncorrected,
                                             unsigned *pending, unsigned *failure) {
  FAKE_ENTER("nvmlDeviceGetRemappedRows", d, true);
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

FAKE_EXPORT Return nvmlDeviceGetDisplayActive(Device d, EnableState *active) {
  FAKE_ENTER("nvmlDeviceGetDisplayActive", d, true);
  return answer(find(gpu(d)->spec, {"display_active"}), active);
}

FAKE_EXPORT Return nvmlDeviceGetCurrPcieLinkGeneration(Device d, unsigned *gen) {
  FAKE_ENTER("nvmlDeviceGetCurrPcieLinkGeneration", d, true);
  return answer(find(gpu(d)->spec, {"pcie", "gen_current"}), gen);
}

FAKE_EXPORT Return nvmlDeviceGetMaxPcieLinkGeneration(Device d, unsigned *gen) {
  FAKE_ENTER("nvmlDeviceGetMaxPcieLinkGeneration", d, true);
  return answer(find(gpu(d)->spec, {"pcie", "gen_max"}), gen);
}

FAKE_EXPORT Return nvmlDeviceGetCurrPcieLinkWidth(Device d, unsigned *width) {
  FAKE_ENTER("nvmlDeviceGetCurrPcieLinkWidth", d, true);
  return answer(find(gpu(d)->spec, {"pcie", "width_current"}), width);
}

FAKE_EXPORT Return nvmlDeviceGetMaxPcieLinkWidth(Device d, unsigned *width) {
  FAKE_ENTER("nvmlDeviceGetMaxPcieLinkWidth", d, true);
  return answer(find(gpu(d)->spec, {"pcie", "width_max"}), width);
}

FAKE_EXPORT Return nvmlDeviceGetPcieReplayCounter(Device d, unsigned *value) {
  FAKE_ENTER("nvmlDeviceGetPcieReplayCounter", d, true);
  return answer(find(gpu(d)->spec, {"pcie", "replay_counter"}), value);
}

FAKE_EXPORT Return nvmlDeviceGetNvLinkState(Device d, unsigned link, EnableState *active) {
  FAKE_ENTER("nvmlDeviceGetNvLinkState", d, true);
  if (!find(gpu(d)->spec, {"nvlinks"}))
    return kErrorNotSupported;
  if (link >= kNvlinkMaxLinks)
    return kErrorInvalidArgument;
  const json *l = nvlink_entry(d, link);
  if (!l)
    return kErrorInvalidArgument; // past the GPU's last link
  return answer(find(*l, {"active"}), active);
}

FAKE_EXPORT Return nvmlDeviceGetNvLinkRemotePciInfo_v2(Device d, unsigned link, PciInfo *pci) {
  FAKE_ENTER("nvmlDeviceGetNvLinkRemotePciInfo_v2", d, true);
  const json *l = nvlink_entry(d, link);
  const json *bus = l ? find(*l, {"remote_bus_id"}) : nullptr;
  if (!bus)
    return kErrorNotSupported;
  if (!pci)
    return kErrorInvalidArgument;
  fill_pci(bus->get<std::string>(), pci);
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetNvLinkRemoteDeviceType(Device d, unsigned link, int *type) {
  FAKE_ENTER("nvmlDeviceGetNvLinkRemoteDeviceType", d, true);
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

FAKE_EXPORT Return nvmlDeviceGetFieldValues(Device d, int count, FieldValue *values) {
  FAKE_ENTER("nvmlDeviceGetFieldValues", d, true);
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
    }
  }
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetTopologyCommonAncestor(Device a, Device b, int *level) {
  FAKE_ENTER("nvmlDeviceGetTopologyCommonAncestor", a, true);
  if (!b || !level)
    return kErrorInvalidArgument;
  const json *entry =
      pair_entry(find(state().scenario, {"topology"}), gpu(a)->index, gpu(b)->index);
  if (!entry)
    return kErrorNotSupported;
  *level = static_cast<int>(number(entry->is_object() ? entry->at("level") : *entry));
  return kSuccess;
}

FAKE_EXPORT Return nvmlDeviceGetP2PStatus(Device a, Device b, int caps, int *status) {
  FAKE_ENTER("nvmlDeviceGetP2PStatus", a, true);
  if (!b || !status)
    return kErrorInvalidArgument;
  static const char *const names[] = {"read", "write", "nvlink", "atomics", "prop"};
  if (caps < 0 || caps > 4)
    return kErrorInvalidArgument;
  const json *entry = pair_entry(find(state().scenario, {"p2p"}), gpu(a)->index, gpu(b)->index);
  return answer(entry ? find(*entry, {names[caps]}) : nullptr, status);
}

FAKE_EXPORT Return nvmlDeviceGetComputeRunningProcesses_v3(Device d, unsigned *count, void *infos) {
  return processes("nvmlDeviceGetComputeRunningProcesses_v3", d, count, infos, 3);
}

FAKE_EXPORT Return nvmlDeviceGetComputeRunningProcesses_v2(Device d, unsigned *count, void *infos) {
  return processes("nvmlDeviceGetComputeRunningProcesses_v2", d, count, infos, 2);
}

FAKE_EXPORT Return nvmlDeviceGetComputeRunningProcesses(Device d, unsigned *count, void *infos) {
  return processes("nvmlDeviceGetComputeRunningProcesses", d, count, infos, 1);
}

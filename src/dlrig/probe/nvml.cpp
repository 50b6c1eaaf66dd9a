// NVIDIA GPUs through NVML loaded at run time. Every reading is one NVML call; a call the library
// does not export, or that answers NOT_SUPPORTED, leaves its field null. Nothing NVML says stops
// the probe: a library that does not load or does not initialise is recorded in
// snapshot.nvidia and the GPUs keep what the PCI probe found.
#include "dlrig/probe/nvml.hpp"

#include "dlrig/kb/kb.hpp"
#include "dlrig/platform/dynlib.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

namespace dlrig {

// --- pure translations -----------------------------------------------------------------------

std::string normalize_bus_id(std::string_view nvml_bus_id) {
  std::string id(nvml_bus_id);
  for (char &c : id)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // domain:bus:device.function; NVML pads the domain to 8 hex digits, sysfs to 4.
  auto colon = id.find(':');
  if (colon == std::string::npos || id.find(':', colon + 1) == std::string::npos)
    return id;
  std::string domain = id.substr(0, colon);
  if (domain.empty() || domain.size() > 8 ||
      domain.find_first_not_of("0123456789abcdef") != std::string::npos)
    return id;
  // sysfs prints the domain as %04x: at least four digits, more for domains above 0xffff.
  domain = fmt::format("{:04x}", std::stoul(domain, nullptr, 16));
  return domain + id.substr(colon);
}

OptStr cuda_version_text(int version) {
  if (version <= 0)
    return std::nullopt;
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

OptStr topology_level_name(int level) {
  switch (level) {
  case 0:  // INTERNAL: two GPUs on one board, joined by its on-board bridge
  case 10: // SINGLE
    return "PIX";
  case 20:
    return "PXB";
  case 30:
    return "PHB";
  case 40:
    return "NODE";
  case 50:
    return "SYS";
  default:
    return std::nullopt;
  }
}

OptStr p2p_status_name(int status) {
  static constexpr std::array<const char *, 7> names{"ok",
                                                     "chipset-not-supported",
                                                     "gpu-not-supported",
                                                     "topology-not-supported",
                                                     "disabled-by-regkey",
                                                     "not-supported",
                                                     "unknown"};
  if (status < 0 || status >= static_cast<int>(names.size()))
    return std::nullopt;
  return names[static_cast<std::size_t>(status)];
}

OptStr compute_mode_name(int mode) {
  static constexpr std::array<const char *, 4> names{"default", "exclusive-thread", "prohibited",
                                                     "exclusive-process"};
  if (mode < 0 || mode >= static_cast<int>(names.size()))
    return std::nullopt;
  return names[static_cast<std::size_t>(mode)];
}

std::vector<std::string> clocks_event_reason_names(std::uint64_t mask) {
  // Bit values from the NVML reference, group nvmlClocksEventReasons.
  static constexpr std::array<const char *, 9> names{"gpu-idle",
                                                     "applications-clocks-setting",
                                                     "sw-power-cap",
                                                     "hw-slowdown",
                                                     "sync-boost",
                                                     "sw-thermal-slowdown",
                                                     "hw-thermal-slowdown",
                                                     "hw-power-brake-slowdown",
                                                     "display-clock-setting"};
  std::vector<std::string> out;
  for (unsigned bit = 0; bit < 64; ++bit) {
    std::uint64_t value = std::uint64_t{1} << bit;
    if (!(mask & value))
      continue;
    out.push_back(bit < names.size() ? names[bit] : fmt::format("{:#x}", value));
  }
  return out;
}

OptStr parse_nvidia_module_version(std::string_view text) {
  auto at = text.find("Kernel Module");
  if (at == std::string_view::npos)
    return std::nullopt;
  text.remove_prefix(at + 13);
  // The first token made of digits and dots, with at least one dot, is the version; the open
  // module's "for x86_64" comes before it.
  while (!text.empty()) {
    auto start = text.find_first_not_of(" \t");
    if (start == std::string_view::npos)
      break;
    text.remove_prefix(start);
    auto end = text.find_first_of(" \t\n");
    std::string_view token = text.substr(0, end);
    bool versionish = !token.empty() && std::isdigit(static_cast<unsigned char>(token[0])) &&
                      token.find('.') != std::string_view::npos &&
                      std::all_of(token.begin(), token.end(), [](char c) {
                        return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                      });
    if (versionish)
      return std::string(token);
    if (end == std::string_view::npos || text[end] == '\n')
      break;
    text.remove_prefix(end);
  }
  return std::nullopt;
}

OptStr gpu_pair_topology(const Gpu &a, const Gpu &b, std::optional<int> pcie_level) {
  if (a.nvml && b.nvml) {
    int direct = 0;
    int a_switch = 0;
    int b_switch = 0;
    for (const auto &l : a.nvml->nvlinks) {
      if (l.active != true)
        continue;
      if (l.remote_bdf && *l.remote_bdf == b.bdf)
        ++direct;
      if (l.remote_kind == "switch")
        ++a_switch;
    }
    for (const auto &l : b.nvml->nvlinks)
      if (l.active == true && l.remote_kind == "switch")
        ++b_switch;
    if (direct > 0)
      return fmt::format("NV{}", direct);
    if (a_switch > 0 && b_switch > 0)
      return fmt::format("NV{}", std::min(a_switch, b_switch));
  }
  return pcie_level ? topology_level_name(*pcie_level) : std::nullopt;
}

// --- entry points ------------------------------------------------------------------------------

namespace nvml {

namespace {
template <class Fn>
void bind_symbol(Fn &slot, const SymbolLookup &lookup, std::initializer_list<const char *> names) {
  slot = reinterpret_cast<Fn>(lookup(names));
}
} // namespace

Api resolve(const SymbolLookup &lookup) {
  Api a;
  bind_symbol(a.init, lookup, {"nvmlInit_v2", "nvmlInit"});
  bind_symbol(a.shutdown, lookup, {"nvmlShutdown"});
  bind_symbol(a.error_string, lookup, {"nvmlErrorString"});
  bind_symbol(a.system_get_driver_version, lookup, {"nvmlSystemGetDriverVersion"});
  bind_symbol(a.system_get_nvml_version, lookup, {"nvmlSystemGetNVMLVersion"});
  bind_symbol(a.system_get_cuda_driver_version, lookup,
              {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  bind_symbol(a.device_get_count, lookup, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  bind_symbol(a.device_get_handle_by_index, lookup,
              {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  bind_symbol(a.device_get_pci_info, lookup,
              {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"});
  bind_symbol(a.device_get_name, lookup, {"nvmlDeviceGetName"});
  bind_symbol(a.device_get_uuid, lookup, {"nvmlDeviceGetUUID"});
  bind_symbol(a.device_get_memory_info_v2, lookup, {"nvmlDeviceGetMemoryInfo_v2"});
  bind_symbol(a.device_get_memory_info, lookup, {"nvmlDeviceGetMemoryInfo"});
  bind_symbol(a.device_get_cuda_compute_capability, lookup, {"nvmlDeviceGetCudaComputeCapability"});
  bind_symbol(a.device_get_clock_info, lookup, {"nvmlDeviceGetClockInfo"});
  bind_symbol(a.device_get_max_clock_info, lookup, {"nvmlDeviceGetMaxClockInfo"});
  bind_symbol(a.device_get_power_usage, lookup, {"nvmlDeviceGetPowerUsage"});
  bind_symbol(a.device_get_enforced_power_limit, lookup, {"nvmlDeviceGetEnforcedPowerLimit"});
  bind_symbol(a.device_get_power_management_default_limit, lookup,
              {"nvmlDeviceGetPowerManagementDefaultLimit"});
  bind_symbol(a.device_get_temperature, lookup, {"nvmlDeviceGetTemperature"});
  bind_symbol(a.device_get_temperature_threshold, lookup, {"nvmlDeviceGetTemperatureThreshold"});
  bind_symbol(a.device_get_fan_speed, lookup, {"nvmlDeviceGetFanSpeed"});
  // Renamed in R535; the throttle name is deprecated but older drivers export only it.
  bind_symbol(
      a.device_get_current_clocks_event_reasons, lookup,
      {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  bind_symbol(a.device_get_persistence_mode, lookup, {"nvmlDeviceGetPersistenceMode"});
  bind_symbol(a.device_get_compute_mode, lookup, {"nvmlDeviceGetComputeMode"});
  bind_symbol(a.device_get_mig_mode, lookup, {"nvmlDeviceGetMigMode"});
  bind_symbol(a.device_get_ecc_mode, lookup, {"nvmlDeviceGetEccMode"});
  bind_symbol(a.device_get_total_ecc_errors, lookup, {"nvmlDeviceGetTotalEccErrors"});
  bind_symbol(a.device_get_retired_pages, lookup, {"nvmlDeviceGetRetiredPages"});
  bind_symbol(a.device_get_retired_pages_pending_status, lookup,
              {"nvmlDeviceGetRetiredPagesPendingStatus"});
  bind_symbol(a.device_get_remapped_rows, lookup, {"nvmlDeviceGetRemappedRows"});
  bind_symbol(a.device_get_display_active, lookup, {"nvmlDeviceGetDisplayActive"});
  bind_symbol(a.device_get_curr_pcie_link_generation, lookup,
              {"nvmlDeviceGetCurrPcieLinkGeneration"});
  bind_symbol(a.device_get_max_pcie_link_generation, lookup,
              {"nvmlDeviceGetMaxPcieLinkGeneration"});
  bind_symbol(a.device_get_curr_pcie_link_width, lookup, {"nvmlDeviceGetCurrPcieLinkWidth"});
  bind_symbol(a.device_get_max_pcie_link_width, lookup, {"nvmlDeviceGetMaxPcieLinkWidth"});
  bind_symbol(a.device_get_pcie_replay_counter, lookup, {"nvmlDeviceGetPcieReplayCounter"});
  bind_symbol(a.device_get_nvlink_state, lookup, {"nvmlDeviceGetNvLinkState"});
  bind_symbol(a.device_get_nvlink_remote_pci_info, lookup,
              {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"});
  bind_symbol(a.device_get_nvlink_remote_device_type, lookup,
              {"nvmlDeviceGetNvLinkRemoteDeviceType"});
  bind_symbol(a.device_get_field_values, lookup, {"nvmlDeviceGetFieldValues"});
  bind_symbol(a.device_get_topology_common_ancestor, lookup,
              {"nvmlDeviceGetTopologyCommonAncestor"});
  bind_symbol(a.device_get_p2p_status, lookup, {"nvmlDeviceGetP2PStatus"});
  const std::array<const char *, 3> processes{"nvmlDeviceGetComputeRunningProcesses_v3",
                                              "nvmlDeviceGetComputeRunningProcesses_v2",
                                              "nvmlDeviceGetComputeRunningProcesses"};
  for (std::size_t i = 0; i < processes.size() && !a.device_get_compute_running_processes; ++i) {
    bind_symbol(a.device_get_compute_running_processes, lookup, {processes[i]});
    if (a.device_get_compute_running_processes)
      a.processes_version = 3 - static_cast<int>(i);
  }
  return a;
}

} // namespace nvml

// --- the probe ---------------------------------------------------------------------------------

namespace {

using namespace nvml;

// Bounds on what a misbehaving library can make the probe allocate or loop over: more than any
// machine has.
constexpr unsigned kMaxGpus = 1024;
constexpr unsigned kMaxProcesses = 1 << 16;

// Makes NVML calls for one probe: decides what an NVML answer means for the field and keeps
// the notes (a function the library lacks is noted once, not once per GPU).
class Caller {
public:
  Caller(const ProbeContext &ctx, const Api &api, std::string library)
      : ctx_(ctx), api_(api), library_(std::move(library)) {}

  std::string error_text(Return r) const {
    const char *text = api_.error_string ? api_.error_string(r) : nullptr;
    return text && *text ? std::string(text) : fmt::format("NVML error {}", r);
  }

  // True when fn exists and answered success. NOT_SUPPORTED means "this GPU has no such
  // reading" and is silent; other failures become a note on field.
  template <class Fn, class... Args>
  bool call(Fn fn, const char *symbol, const std::string &field, Args... args) {
    Return r = fn ? fn(args...) : kErrorFunctionNotFound;
    return accept(r, symbol, field);
  }

  bool accept(Return r, const char *symbol, const std::string &field) {
    if (r == kSuccess)
      return true;
    if (r == kErrorNotSupported)
      return false;
    if (r == kErrorFunctionNotFound) {
      if (missing_.insert(symbol).second)
        ctx_.note("nvidia", symbol,
                  fmt::format("{} does not provide {} (an older driver?): what it reports stays "
                              "unknown",
                              library_, symbol));
      return false;
    }
    ctx_.note(field, symbol, error_text(r));
    return false;
  }

private:
  const ProbeContext &ctx_;
  const Api &api_;
  std::string library_;
  std::set<std::string> missing_;
};

std::string c_string(const char *buf, std::size_t size) {
  return std::string(buf, strnlen(buf, size));
}

OptStr read_string(Caller &c, Return (*fn)(char *, unsigned), const char *symbol,
                   const std::string &field, unsigned size) {
  std::string buf(size, '\0');
  if (!c.call(fn, symbol, field, buf.data(), size))
    return std::nullopt;
  auto text = c_string(buf.data(), size);
  return text.empty() ? OptStr{} : OptStr{text};
}

OptStr read_device_string(Caller &c, Return (*fn)(Device, char *, unsigned), const char *symbol,
                          const std::string &field, Device d, unsigned size) {
  std::string buf(size, '\0');
  if (!c.call(fn, symbol, field, d, buf.data(), size))
    return std::nullopt;
  auto text = c_string(buf.data(), size);
  return text.empty() ? OptStr{} : OptStr{text};
}

std::optional<unsigned> read_uint(Caller &c, Return (*fn)(Device, unsigned *), const char *symbol,
                                  const std::string &field, Device d) {
  unsigned v = 0;
  if (!c.call(fn, symbol, field, d, &v))
    return std::nullopt;
  return v;
}

OptBool read_enabled(Caller &c, Return (*fn)(Device, EnableState *), const char *symbol,
                     const std::string &field, Device d) {
  EnableState v = 0;
  if (!c.call(fn, symbol, field, d, &v))
    return std::nullopt;
  return v != 0;
}

OptF64 mw_to_w(std::optional<unsigned> mw) {
  return mw ? OptF64{*mw / 1000.0} : std::nullopt;
}
std::optional<int> to_int(std::optional<unsigned> v) {
  return v ? std::optional<int>{static_cast<int>(*v)} : std::nullopt;
}

std::string pci_bus_id(const PciInfo &pci) {
  std::string id = c_string(pci.busId, sizeof pci.busId);
  if (id.empty())
    id = c_string(pci.busIdLegacy, sizeof pci.busIdLegacy);
  return normalize_bus_id(id);
}

void read_memory(Caller &c, const Api &api, Device d, const std::string &f, NvmlGpu &g) {
  const std::string field = f + ".memory_total_bytes";
  if (api.device_get_memory_info_v2) {
    MemoryV2 m{};
    m.version = kMemoryV2Version;
    Return r = api.device_get_memory_info_v2(d, &m);
    if (r == kSuccess) {
      g.memory_total_bytes = m.total;
      g.memory_used_bytes = m.used;
      return;
    }
    // Drivers older than 515 export the symbol but reject the struct version: ask v1 instead.
    bool older = r == kErrorNotSupported || r == kErrorFunctionNotFound ||
                 r == kErrorArgumentVersionMismatch;
    if (!older || !api.device_get_memory_info) {
      c.accept(r, "nvmlDeviceGetMemoryInfo_v2", field);
      return;
    }
  }
  MemoryV1 m{};
  if (c.call(api.device_get_memory_info, "nvmlDeviceGetMemoryInfo", field, d, &m)) {
    g.memory_total_bytes = m.total;
    g.memory_used_bytes = m.used;
  }
}

void read_health(Caller &c, const Api &api, Device d, const std::string &f, NvmlGpu &g) {
  EnableState ecc = 0, ecc_pending = 0;
  if (c.call(api.device_get_ecc_mode, "nvmlDeviceGetEccMode", f + ".ecc_enabled", d, &ecc,
             &ecc_pending))
    g.ecc_enabled = ecc != 0;
  auto ecc_count = [&](int type, int counter, OptU64 &out, const char *name) {
    unsigned long long v = 0;
    if (c.call(api.device_get_total_ecc_errors, "nvmlDeviceGetTotalEccErrors", f + "." + name, d,
               type, counter, &v))
      out = v;
  };
  ecc_count(kMemoryErrorUncorrected, kEccCounterVolatile, g.ecc_uncorrected_volatile,
            "ecc_uncorrected_volatile");
  ecc_count(kMemoryErrorCorrected, kEccCounterVolatile, g.ecc_corrected_volatile,
            "ecc_corrected_volatile");
  ecc_count(kMemoryErrorUncorrected, kEccCounterAggregate, g.ecc_uncorrected_aggregate,
            "ecc_uncorrected_aggregate");

  // Retired pages (before Ampere): asking with no buffer gives the count.
  std::optional<std::uint64_t> retired;
  for (int cause : {kPageRetirementMultipleSingleBit, kPageRetirementDoubleBit}) {
    unsigned count = 0;
    Return r = api.device_get_retired_pages
                   ? api.device_get_retired_pages(d, cause, &count, nullptr)
                   : kErrorFunctionNotFound;
    if (r == kErrorInsufficientSize)
      r = kSuccess;
    if (!c.accept(r, "nvmlDeviceGetRetiredPages", f + ".retired_pages")) {
      retired.reset();
      break;
    }
    retired = retired.value_or(0) + count;
  }
  g.retired_pages = retired;
  g.retired_pages_pending =
      read_enabled(c, api.device_get_retired_pages_pending_status,
                   "nvmlDeviceGetRetiredPagesPendingStatus", f + ".retired_pages_pending", d);

  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  if (c.call(api.device_get_remapped_rows, "nvmlDeviceGetRemappedRows", f + ".remapped_rows", d,
             &corr, &unc, &pending, &failure)) {
    g.remapped_rows.correctable = corr;
    g.remapped_rows.uncorrectable = unc;
    g.remapped_rows.pending = pending != 0;
    g.remapped_rows.failure = failure != 0;
  }
}

void read_nvlinks(Caller &c, const Api &api, Device d, const std::string &f, NvmlGpu &g) {
  if (!api.device_get_nvlink_state) {
    c.accept(kErrorFunctionNotFound, "nvmlDeviceGetNvLinkState", f + ".nvlinks");
    return;
  }
  OptU64 speed_bps;
  FieldValue fv{};
  fv.fieldId = kFieldNvlinkSpeedMbpsCommon;
  if (api.device_get_field_values && api.device_get_field_values(d, 1, &fv) == kSuccess &&
      fv.nvmlReturn == kSuccess) {
    std::uint64_t mbps = fv.valueType == kValueTypeUnsignedInt        ? fv.value.uiVal
                         : fv.valueType == kValueTypeUnsignedLong     ? fv.value.ulVal
                         : fv.valueType == kValueTypeUnsignedLongLong ? fv.value.ullVal
                                                                      : 0;
    // NVML gives megabytes per second per direction.
    if (mbps > 0)
      speed_bps = mbps * 8'000'000ULL;
  }
  for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
    EnableState state = 0;
    Return r = api.device_get_nvlink_state(d, link, &state);
    // A GPU without NVLink answers NOT_SUPPORTED; links past the last one INVALID_ARGUMENT.
    if (r == kErrorNotSupported || r == kErrorInvalidArgument)
      break;
    if (!c.accept(r, "nvmlDeviceGetNvLinkState", f + fmt::format(".nvlinks[{}]", link)))
      continue;
    NvLink l;
    l.link = static_cast<int>(link);
    l.active = state != 0;
    if (state != 0) {
      PciInfo pci{};
      if (c.call(api.device_get_nvlink_remote_pci_info, "nvmlDeviceGetNvLinkRemotePciInfo_v2",
                 f + ".nvlinks.remote_bdf", d, link, &pci))
        l.remote_bdf = pci_bus_id(pci);
      int type = -1;
      if (c.call(api.device_get_nvlink_remote_device_type, "nvmlDeviceGetNvLinkRemoteDeviceType",
                 f + ".nvlinks.remote_kind", d, link, &type))
        l.remote_kind = type == kNvLinkDeviceGpu      ? OptStr{"gpu"}
                        : type == kNvLinkDeviceSwitch ? OptStr{"switch"}
                        : type == kNvLinkDeviceIbmNpu ? OptStr{"cpu"}
                                                      : OptStr{};
      l.speed_bps = speed_bps;
    }
    g.nvlinks.push_back(std::move(l));
  }
}

void read_processes(Caller &c, const ProbeContext &ctx, const Api &api, Device d,
                    const std::string &f, NvmlGpu &g) {
  const char *symbol = api.processes_version == 3   ? "nvmlDeviceGetComputeRunningProcesses_v3"
                       : api.processes_version == 2 ? "nvmlDeviceGetComputeRunningProcesses_v2"
                                                    : "nvmlDeviceGetComputeRunningProcesses";
  if (!api.device_get_compute_running_processes) {
    c.accept(kErrorFunctionNotFound, symbol, f + ".processes");
    return;
  }
  bool v1 = api.processes_version == 1;
  std::size_t item = v1 ? sizeof(ProcessInfoV1) : sizeof(ProcessInfoV2);
  unsigned count = 0;
  std::vector<unsigned char> buf;
  Return r = api.device_get_compute_running_processes(d, &count, nullptr);
  // Processes can start between the two calls: grow and ask again a few times.
  for (int attempt = 0; attempt < 4 && r == kErrorInsufficientSize; ++attempt) {
    if (count > kMaxProcesses) {
      c.accept(kErrorUnknown, symbol, f + ".processes");
      return;
    }
    count += 4;
    buf.assign(count * item, 0);
    r = api.device_get_compute_running_processes(d, &count, buf.data());
  }
  if (!c.accept(r, symbol, f + ".processes"))
    return;
  for (unsigned i = 0; i < count && (i + 1) * item <= buf.size(); ++i) {
    GpuProcess p;
    unsigned long long used = 0;
    if (v1) {
      const auto *info = reinterpret_cast<const ProcessInfoV1 *>(buf.data()) + i;
      p.pid = info->pid;
      used = info->usedGpuMemory;
    } else {
      const auto *info = reinterpret_cast<const ProcessInfoV2 *>(buf.data()) + i;
      p.pid = info->pid;
      used = info->usedGpuMemory;
    }
    if (used != kValueNotAvailable)
      p.used_memory_bytes = used;
    p.name = read_trimmed(ctx.fs, fmt::format("/proc/{}/comm", p.pid));
    g.processes.push_back(std::move(p));
  }
}

NvmlGpu read_gpu(Caller &c, const ProbeContext &ctx, const Api &api, Device d, int index,
                 const std::string &f) {
  NvmlGpu g;
  g.index = index;
  g.name = read_device_string(c, api.device_get_name, "nvmlDeviceGetName", f + ".name", d,
                              kDeviceNameV2BufferSize);
  g.uuid = read_device_string(c, api.device_get_uuid, "nvmlDeviceGetUUID", f + ".uuid", d,
                              kDeviceUuidV2BufferSize);
  read_memory(c, api, d, f, g);
  int major = 0, minor = 0;
  if (c.call(api.device_get_cuda_compute_capability, "nvmlDeviceGetCudaComputeCapability",
             f + ".compute_capability", d, &major, &minor))
    g.compute_capability = fmt::format("{}.{}", major, minor);
  if (g.compute_capability)
    if (const kb::ArchSpec *arch = kb::builtin().arch(*g.compute_capability))
      g.architecture = arch->name;

  auto clock = [&](Return (*fn)(Device, int, unsigned *), const char *symbol, int type,
                   const char *name) -> OptF64 {
    unsigned mhz = 0;
    if (!c.call(fn, symbol, f + "." + name, d, type, &mhz))
      return std::nullopt;
    return mhz * 1e6;
  };
  g.sm_clock_hz =
      clock(api.device_get_clock_info, "nvmlDeviceGetClockInfo", kClockSm, "sm_clock_hz");
  g.sm_clock_max_hz = clock(api.device_get_max_clock_info, "nvmlDeviceGetMaxClockInfo", kClockSm,
                            "sm_clock_max_hz");
  g.memory_clock_hz =
      clock(api.device_get_clock_info, "nvmlDeviceGetClockInfo", kClockMem, "memory_clock_hz");
  g.memory_clock_max_hz = clock(api.device_get_max_clock_info, "nvmlDeviceGetMaxClockInfo",
                                kClockMem, "memory_clock_max_hz");

  g.power_draw_w = mw_to_w(
      read_uint(c, api.device_get_power_usage, "nvmlDeviceGetPowerUsage", f + ".power_draw_w", d));
  g.power_limit_w = mw_to_w(read_uint(c, api.device_get_enforced_power_limit,
                                      "nvmlDeviceGetEnforcedPowerLimit", f + ".power_limit_w", d));
  g.power_default_limit_w = mw_to_w(read_uint(c, api.device_get_power_management_default_limit,
                                              "nvmlDeviceGetPowerManagementDefaultLimit",
                                              f + ".power_default_limit_w", d));

  unsigned celsius = 0;
  if (c.call(api.device_get_temperature, "nvmlDeviceGetTemperature", f + ".temperature_c", d,
             kTemperatureGpu, &celsius))
    g.temperature_c = celsius;
  if (c.call(api.device_get_temperature_threshold, "nvmlDeviceGetTemperatureThreshold",
             f + ".slowdown_temperature_c", d, kTemperatureThresholdSlowdown, &celsius))
    g.slowdown_temperature_c = celsius;
  if (auto fan =
          read_uint(c, api.device_get_fan_speed, "nvmlDeviceGetFanSpeed", f + ".fan_percent", d))
    g.fan_percent = *fan;

  unsigned long long reasons = 0;
  if (c.call(api.device_get_current_clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
             f + ".throttle_reasons", d, &reasons)) {
    g.throttle_reasons_mask = reasons;
    g.throttle_reasons = clocks_event_reason_names(reasons);
  }

  g.persistence_mode = read_enabled(c, api.device_get_persistence_mode,
                                    "nvmlDeviceGetPersistenceMode", f + ".persistence_mode", d);
  int mode = 0;
  if (c.call(api.device_get_compute_mode, "nvmlDeviceGetComputeMode", f + ".compute_mode", d,
             &mode))
    g.compute_mode = compute_mode_name(mode);
  unsigned mig = 0, mig_pending = 0;
  if (c.call(api.device_get_mig_mode, "nvmlDeviceGetMigMode", f + ".mig_enabled", d, &mig,
             &mig_pending))
    g.mig_enabled = mig != 0;

  read_health(c, api, d, f, g);
  g.display_active = read_enabled(c, api.device_get_display_active, "nvmlDeviceGetDisplayActive",
                                  f + ".display_active", d);

  g.pcie_gen_current =
      to_int(read_uint(c, api.device_get_curr_pcie_link_generation,
                       "nvmlDeviceGetCurrPcieLinkGeneration", f + ".pcie_gen_current", d));
  g.pcie_gen_max = to_int(read_uint(c, api.device_get_max_pcie_link_generation,
                                    "nvmlDeviceGetMaxPcieLinkGeneration", f + ".pcie_gen_max", d));
  g.pcie_width_current =
      to_int(read_uint(c, api.device_get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth",
                       f + ".pcie_width_current", d));
  g.pcie_width_max = to_int(read_uint(c, api.device_get_max_pcie_link_width,
                                      "nvmlDeviceGetMaxPcieLinkWidth", f + ".pcie_width_max", d));
  if (auto replays = read_uint(c, api.device_get_pcie_replay_counter,
                               "nvmlDeviceGetPcieReplayCounter", f + ".pcie_replay_counter", d))
    g.pcie_replay_counter = *replays;

  read_nvlinks(c, api, d, f, g);
  read_processes(c, ctx, api, d, f, g);
  return g;
}

// The snapshot entry for bdf: the PCI probe's, or a new one for a GPU it did not see.
Gpu &gpu_entry(Snapshot &snap, const std::string &bdf, const PciInfo *pci, const NvmlGpu &g) {
  for (auto &gpu : snap.gpus)
    if (gpu.bdf == bdf)
      return gpu;
  Gpu gpu;
  gpu.bdf = bdf;
  gpu.vendor = "NVIDIA";
  gpu.vendor_id = "0x10de";
  if (pci && pci->pciDeviceId != 0)
    gpu.device_id = fmt::format("{:#06x}", pci->pciDeviceId >> 16);
  if (g.name) {
    gpu.name = g.name;
    gpu.name_source = "nvml";
  }
  auto at = std::lower_bound(snap.gpus.begin(), snap.gpus.end(), bdf,
                             [](const Gpu &a, const std::string &b) { return a.bdf < b; });
  return *snap.gpus.insert(at, std::move(gpu));
}

} // namespace

void probe_nvml_with(const ProbeContext &ctx, const Api &api, const std::string &library_path) {
  auto &nv = ctx.snapshot.nvidia;
  nv.nvml_library = library_path;
  Caller c(ctx, api, library_path);
  if (!api.init) {
    nv.nvml_status = "init-failed";
    nv.nvml_error = library_path + " exports neither nvmlInit_v2 nor nvmlInit: not an NVML library";
    nv.nvml_error_code = kErrorFunctionNotFound;
    return;
  }
  if (Return r = api.init(); r != kSuccess) {
    nv.nvml_status = "init-failed";
    nv.nvml_error = c.error_text(r);
    nv.nvml_error_code = r;
    return;
  }
  nv.nvml_status = "ok";
  nv.driver_version = read_string(c, api.system_get_driver_version, "nvmlSystemGetDriverVersion",
                                  "nvidia.driver_version", kSystemDriverVersionBufferSize);
  nv.nvml_version = read_string(c, api.system_get_nvml_version, "nvmlSystemGetNVMLVersion",
                                "nvidia.nvml_version", kSystemNvmlVersionBufferSize);
  int cuda = 0;
  if (c.call(api.system_get_cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2",
             "nvidia.cuda_driver_version", &cuda))
    nv.cuda_driver_version = cuda_version_text(cuda);

  unsigned count = 0;
  if (c.call(api.device_get_count, "nvmlDeviceGetCount_v2", "nvidia.gpu_count", &count))
    nv.gpu_count = static_cast<int>(std::min(count, kMaxGpus));
  if (count > kMaxGpus) {
    ctx.note("nvidia.gpu_count", "nvmlDeviceGetCount_v2",
             fmt::format("NVML reports {} GPUs; only the first {} are read", count, kMaxGpus));
    count = kMaxGpus;
  }

  // NVML index → its handle and snapshot entry (by bus id; entries may move as GPUs are added).
  std::vector<std::pair<Device, std::string>> seen;
  for (unsigned i = 0; i < count; ++i) {
    std::string f = fmt::format("nvidia.gpu[{}]", i);
    Device d = nullptr;
    if (!c.call(api.device_get_handle_by_index, "nvmlDeviceGetHandleByIndex_v2", f, i, &d))
      continue;
    PciInfo pci{};
    bool have_pci = c.call(api.device_get_pci_info, "nvmlDeviceGetPciInfo_v3", f + ".bdf", d, &pci);
    std::string bdf = have_pci ? pci_bus_id(pci) : std::string();
    if (bdf.empty()) {
      ctx.note(
          f, "nvmlDeviceGetPciInfo_v3",
          "no PCI bus id from NVML: this GPU cannot be matched to the PCI bus and is left out");
      continue;
    }
    NvmlGpu g = read_gpu(c, ctx, api, d, static_cast<int>(i), "gpus[" + bdf + "].nvml");
    Gpu &entry = gpu_entry(ctx.snapshot, bdf, have_pci ? &pci : nullptr, g);
    entry.nvml = std::move(g);
    seen.emplace_back(d, bdf);
  }

  auto find = [&](const std::string &bdf) -> const Gpu * {
    for (const auto &gpu : ctx.snapshot.gpus)
      if (gpu.bdf == bdf)
        return &gpu;
    return nullptr;
  };
  for (std::size_t a = 0; a < seen.size(); ++a) {
    for (std::size_t b = a + 1; b < seen.size(); ++b) {
      GpuPair pair;
      const Gpu *ga = find(seen[a].second);
      const Gpu *gb = find(seen[b].second);
      pair.a = ga->nvml->index;
      pair.b = gb->nvml->index;
      std::string f = fmt::format("nvidia.pairs[{},{}]", pair.a, pair.b);
      int level = -1;
      std::optional<int> pcie_level;
      if (c.call(api.device_get_topology_common_ancestor, "nvmlDeviceGetTopologyCommonAncestor",
                 f + ".topology", seen[a].first, seen[b].first, &level))
        pcie_level = level;
      pair.topology = gpu_pair_topology(*ga, *gb, pcie_level);
      auto p2p = [&](int caps, const char *name) -> OptStr {
        int status = -1;
        if (!c.call(api.device_get_p2p_status, "nvmlDeviceGetP2PStatus", f + "." + name,
                    seen[a].first, seen[b].first, caps, &status))
          return std::nullopt;
        return p2p_status_name(status);
      };
      pair.p2p_read = p2p(kP2PCapsRead, "p2p_read");
      pair.p2p_write = p2p(kP2PCapsWrite, "p2p_write");
      pair.p2p_nvlink = p2p(kP2PCapsNvlink, "p2p_nvlink");
      nv.pairs.push_back(std::move(pair));
    }
  }
  if (api.shutdown)
    api.shutdown();
}

void probe_nvml(const ProbeContext &ctx) {
  auto &nv = ctx.snapshot.nvidia;
  // The kernel module speaks even when user-space NVML does not load or does not match it.
  if (auto text = ctx.fs.read("/proc/driver/nvidia/version", 1 << 14))
    nv.kernel_module_version = parse_nvidia_module_version(*text);

  std::string name = ctx.options.nvml_library;
  if (name.empty()) {
    auto env = ctx.env.find("DLRIG_NVML_LIBRARY");
    name = env != ctx.env.end() && !env->second.empty() ? env->second : "libnvidia-ml.so.1";
  }
  auto lib = DynamicLibrary::open({name});
  if (!lib) {
    nv.nvml_status = "not-found";
    nv.nvml_library = name;
    nv.nvml_error = lib.error().message;
    nv.nvml_error_code = kErrorLibraryNotFound;
    return;
  }
  Api api = resolve([&](std::initializer_list<const char *> names) { return lib->symbol(names); });
  probe_nvml_with(ctx, api, lib->path());
}

} // namespace dlrig

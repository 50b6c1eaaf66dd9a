#include "dlrig/platform/nvml.hpp"

#include <fmt/format.h>

#include <cstring>
#include <utility>

namespace dlrig::nvml {

EntryPoints resolve(const SymbolLookup &lookup) {
  EntryPoints t;
  DLRIG_NVML_ENTRY_POINTS(DLRIG_ENTRY_POINT_BIND)
  return t;
}

// --- session -----------------------------------------------------------------------------------

Session::Session(EntryPoints table, std::string library_path)
    : table_(table), library_path_(std::move(library_path)) {
  initialise();
}

Session::Session(Session &&other) noexcept
    : library_(std::move(other.library_)), table_(other.table_),
      library_path_(std::move(other.library_path_)),
      state_(std::exchange(other.state_, State::not_loaded)), error_code_(other.error_code_),
      error_(std::move(other.error_)) {}

Session::~Session() {
  if (state_ == State::ready && table_.shutdown)
    table_.shutdown();
}

void Session::initialise() {
  if (!table_.init) {
    state_ = State::not_nvml;
    error_code_ = kErrorFunctionNotFound;
    error_ = library_path_ + " exports neither nvmlInit_v2 nor nvmlInit: not an NVML library";
    return;
  }
  if (Return r = table_.init(); r != kSuccess) {
    state_ = State::init_failed;
    error_code_ = r;
    error_ = error_text(r);
    return;
  }
  state_ = State::ready;
  error_code_ = kSuccess;
  error_.clear();
}

Session Session::open(const std::string &library) {
  return open(library, [](const char *) { return true; });
}

Session Session::open(const std::string &library,
                      const std::function<bool(const char *)> &exported) {
  Session s;
  auto lib = DynamicLibrary::open({library});
  if (!lib) {
    s.library_path_ = library;
    s.state_ = State::not_loaded;
    s.error_code_ = kErrorLibraryNotFound;
    s.error_ = lib.error().message;
    return s;
  }
  s.library_ = std::move(lib).value();
  s.library_path_ = s.library_.path();
  const SymbolLookup symbols = s.library_.lookup();
  s.table_ =
      resolve([&](const char *name) -> void * { return exported(name) ? symbols(name) : nullptr; });
  s.initialise();
  return s;
}

std::string Session::error_text(Return r) const {
  const char *text = table_.error_string ? table_.error_string(r) : nullptr;
  return text && *text ? std::string(text) : fmt::format("NVML error {}", r);
}

// --- calls -------------------------------------------------------------------------------------

namespace {

// Bounds on what a misbehaving library can make a caller allocate or loop over.
constexpr unsigned kMaxProcesses = 1 << 16;

// Calls entry with args; kErrorFunctionNotFound when the library does not export it.
template <class Fn, class... Args> Answer ask(const EntryPoint<Fn> &entry, Args... args) {
  Answer a;
  a.symbol = entry.name();
  a.status = entry ? entry(args...) : kErrorFunctionNotFound;
  return a;
}

// No call: the library does not export the function.
template <class Fn> Answer absent(const EntryPoint<Fn> &entry) {
  return Answer{kErrorFunctionNotFound, entry.name()};
}

// The answer with its value (arguments are evaluated in any order: call first, then this).
template <class T> Reading<T> reading(const Answer &a, T value) {
  Reading<T> r;
  static_cast<Answer &>(r) = a;
  if (a.ok())
    r.value = std::move(value);
  return r;
}

template <class T> Reading<T> failed(const Answer &a) {
  Reading<T> r;
  static_cast<Answer &>(r) = a;
  return r;
}

std::string c_string(const char *buf, std::size_t size) {
  return std::string(buf, strnlen(buf, size));
}

// A string getter: an empty answer is no answer.
template <class Fn, class... Args>
Reading<std::string> ask_string(const EntryPoint<Fn> &entry, unsigned size, Args... args) {
  std::string buf(size, '\0');
  Answer a = ask(entry, args..., buf.data(), size);
  Reading<std::string> r = reading(a, c_string(buf.data(), size));
  if (r.value && r.value->empty())
    r.value.reset();
  return r;
}

template <class T, class Fn, class... Args>
Reading<T> ask_value(const EntryPoint<Fn> &entry, Args... args) {
  T v{};
  Answer a = ask(entry, args..., &v);
  return reading(a, v);
}

Reading<bool> ask_enabled(const EntryPoint<Return (*)(Device, EnableState *)> &entry, Device d) {
  EnableState v = 0;
  Answer a = ask(entry, d, &v);
  return reading(a, v != 0);
}

Reading<MemoryUse> ask_memory(const EntryPoints &t, Device d) {
  if (t.device_get_memory_info_v2) {
    MemoryV2 m{};
    m.version = kMemoryV2Version;
    Answer a = ask(t.device_get_memory_info_v2, d, &m);
    if (a.ok())
      return reading(a, MemoryUse{m.total, m.used, m.free, m.reserved});
    // Drivers older than 515 export the symbol but reject the struct version: ask v1 instead.
    bool older = a.status == kErrorNotSupported || a.status == kErrorFunctionNotFound ||
                 a.status == kErrorArgumentVersionMismatch;
    if (!older || !t.device_get_memory_info)
      return failed<MemoryUse>(a);
  }
  MemoryV1 m{};
  Answer a = ask(t.device_get_memory_info, d, &m);
  return reading(a, MemoryUse{m.total, m.used, m.free, std::nullopt});
}

Reading<std::uint64_t> ask_ecc(const EntryPoints &t, Device d, int type, int counter) {
  unsigned long long v = 0;
  Answer a = ask(t.device_get_total_ecc_errors, d, type, counter, &v);
  return reading(a, std::uint64_t{v});
}

} // namespace

std::string bus_id_text(const PciInfo &pci) {
  std::string id = c_string(pci.busId, sizeof pci.busId);
  if (id.empty())
    id = c_string(pci.busIdLegacy, sizeof pci.busIdLegacy);
  return id;
}

SystemInfo read_system(const Session &session) {
  const EntryPoints &t = session.table();
  SystemInfo s;
  s.driver_version = ask_string(t.system_get_driver_version, kSystemDriverVersionBufferSize);
  s.nvml_version = ask_string(t.system_get_nvml_version, kSystemNvmlVersionBufferSize);
  s.cuda_driver_version = ask_value<int>(t.system_get_cuda_driver_version);
  s.device_count = ask_value<unsigned>(t.device_get_count);
  return s;
}

Reading<Device> device_handle(const Session &session, unsigned index) {
  return ask_value<Device>(session.table().device_get_handle_by_index, index);
}

StaticInfo read_static(const Session &session, Device d) {
  const EntryPoints &t = session.table();
  StaticInfo s;
  s.pci = ask_value<PciInfo>(t.device_get_pci_info, d);
  s.name = ask_string(t.device_get_name, kDeviceNameV2BufferSize, d);
  s.uuid = ask_string(t.device_get_uuid, kDeviceUuidV2BufferSize, d);
  int major = 0, minor = 0;
  Answer cc = ask(t.device_get_cuda_compute_capability, d, &major, &minor);
  s.compute_capability = reading(cc, std::pair{major, minor});
  s.sm_clock_max_mhz = ask_value<unsigned>(t.device_get_max_clock_info, d, kClockSm);
  s.memory_clock_max_mhz = ask_value<unsigned>(t.device_get_max_clock_info, d, kClockMem);
  s.power_limit_mw = ask_value<unsigned>(t.device_get_enforced_power_limit, d);
  s.power_default_limit_mw = ask_value<unsigned>(t.device_get_power_management_default_limit, d);
  s.slowdown_temperature_c =
      ask_value<unsigned>(t.device_get_temperature_threshold, d, kTemperatureThresholdSlowdown);
  s.persistence_mode = ask_enabled(t.device_get_persistence_mode, d);
  s.compute_mode = ask_value<int>(t.device_get_compute_mode, d);
  unsigned mig = 0, mig_pending = 0;
  Answer mig_answer = ask(t.device_get_mig_mode, d, &mig, &mig_pending);
  s.mig_enabled = reading(mig_answer, mig != 0);
  EnableState ecc = 0, ecc_pending = 0;
  Answer ecc_answer = ask(t.device_get_ecc_mode, d, &ecc, &ecc_pending);
  s.ecc_enabled = reading(ecc_answer, ecc != 0);
  s.display_active = ask_enabled(t.device_get_display_active, d);
  s.pcie_gen_max = ask_value<unsigned>(t.device_get_max_pcie_link_generation, d);
  s.pcie_width_max = ask_value<unsigned>(t.device_get_max_pcie_link_width, d);
  GpuFabricInfoV1 fabric{};
  Answer fabric_answer = ask(t.device_get_gpu_fabric_info, d, &fabric);
  s.fabric = reading(fabric_answer, StaticInfo::Fabric{fabric.state, fabric.status});
  C2cModeInfoV1 c2c{};
  Answer c2c_answer = ask(t.device_get_c2c_mode_info, d, &c2c);
  s.c2c_enabled = reading(c2c_answer, c2c.isC2cEnabled != 0);

  FieldValue fv{};
  fv.fieldId = kFieldNvlinkSpeedMbpsCommon;
  if (ask(t.device_get_field_values, d, 1, &fv).ok() && fv.nvmlReturn == kSuccess) {
    std::uint64_t mbps = fv.valueType == kValueTypeUnsignedInt        ? fv.value.uiVal
                         : fv.valueType == kValueTypeUnsignedLong     ? fv.value.ulVal
                         : fv.valueType == kValueTypeUnsignedLongLong ? fv.value.ullVal
                                                                      : 0;
    // NVML gives megabytes per second per direction.
    if (mbps > 0)
      s.nvlink_speed_bytes_per_s = mbps * 1'000'000ULL;
  }

  if (!t.device_get_nvlink_state) {
    s.nvlinks = failed<std::vector<NvLinkReading>>(absent(t.device_get_nvlink_state));
    return s;
  }
  std::vector<NvLinkReading> links;
  Answer last;
  last.status = kSuccess;
  last.symbol = t.device_get_nvlink_state.name();
  for (unsigned link = 0; link < kNvlinkMaxLinks; ++link) {
    NvLinkReading l;
    l.link = link;
    EnableState state = 0;
    Answer a = ask(t.device_get_nvlink_state, d, link, &state);
    l.active = reading(a, state != 0);
    // A GPU without NVLink answers NOT_SUPPORTED; links past the last one INVALID_ARGUMENT.
    if (l.active.status == kErrorNotSupported || l.active.status == kErrorInvalidArgument)
      break;
    if (l.active.value == true) {
      PciInfo pci{};
      Answer remote = ask(t.device_get_nvlink_remote_pci_info, d, link, &pci);
      l.remote_bus_id = reading(remote, bus_id_text(pci));
      l.remote_type = ask_value<int>(t.device_get_nvlink_remote_device_type, d, link);
    }
    links.push_back(std::move(l));
  }
  s.nvlinks = reading(last, std::move(links));
  return s;
}

Reading<int> topology_common_ancestor(const Session &session, Device a, Device b) {
  return ask_value<int>(session.table().device_get_topology_common_ancestor, a, b);
}

Reading<int> p2p_status(const Session &session, Device a, Device b, int caps) {
  return ask_value<int>(session.table().device_get_p2p_status, a, b, caps);
}

// --- live samples ------------------------------------------------------------------------------

namespace {

Reading<std::vector<ProcessReading>> ask_processes(const EntryPoints &t, Device d) {
  const auto &entry = t.device_get_compute_running_processes;
  if (!entry)
    return failed<std::vector<ProcessReading>>(absent(entry));
  const bool v1 = entry.version() == 1;
  const std::size_t item = v1 ? sizeof(ProcessInfoV1) : sizeof(ProcessInfoV2);
  unsigned count = 0;
  std::vector<unsigned char> buf;
  Answer a = ask(entry, d, &count, static_cast<void *>(nullptr));
  // Processes can start between the two calls: grow and ask again a few times.
  for (int attempt = 0; attempt < 4 && a.status == kErrorInsufficientSize; ++attempt) {
    if (count > kMaxProcesses) {
      a.status = kErrorUnknown;
      return failed<std::vector<ProcessReading>>(a);
    }
    count += 4;
    buf.assign(count * item, 0);
    a = ask(entry, d, &count, static_cast<void *>(buf.data()));
  }
  if (!a.ok())
    return failed<std::vector<ProcessReading>>(a);
  std::vector<ProcessReading> out;
  for (unsigned i = 0; i < count && (i + 1) * item <= buf.size(); ++i) {
    ProcessReading p;
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
    out.push_back(p);
  }
  return reading(a, std::move(out));
}

// The latest sample of each process in the driver's buffer (asked from its start).
Reading<std::vector<ProcessUtilization>> ask_process_utilization(const EntryPoints &t, Device d) {
  const auto &entry = t.device_get_process_utilization;
  unsigned count = 0;
  Answer a = ask(entry, d, static_cast<ProcessUtilizationSample *>(nullptr), &count, 0ULL);
  // NVML_ERROR_NOT_FOUND: "no valid sample entries" since the timestamp (NVML API reference,
  // nvmlDeviceGetProcessUtilization): no process used the GPU lately, an empty list, not a failed
  // read (seen on an idle H200, where it made every scrape's dlrig_up 0).
  if (a.status == kErrorNotFound) {
    a.status = kSuccess;
    return reading(a, std::vector<ProcessUtilization>{});
  }
  std::vector<ProcessUtilizationSample> buf;
  for (int attempt = 0; attempt < 4 && a.status == kErrorInsufficientSize; ++attempt) {
    if (count > kMaxProcesses) {
      a.status = kErrorUnknown;
      return failed<std::vector<ProcessUtilization>>(a);
    }
    count += 4;
    buf.assign(count, ProcessUtilizationSample{});
    a = ask(entry, d, buf.data(), &count, 0ULL);
  }
  // NOT_FOUND on the second call too: the samples the first call counted aged out in between
  // (seen on an H200 serving one scrape after a benchmark: dlrig_up 0 from this read alone).
  if (a.status == kErrorNotFound)
    return reading(Answer{kSuccess, a.symbol}, std::vector<ProcessUtilization>{});
  if (!a.ok())
    return failed<std::vector<ProcessUtilization>>(a);
  std::vector<ProcessUtilization> out;
  std::vector<unsigned long long> stamp;
  for (unsigned i = 0; i < count && i < buf.size(); ++i) {
    const auto &u = buf[i];
    bool seen = false;
    for (std::size_t k = 0; k < out.size(); ++k)
      if (out[k].pid == u.pid) {
        seen = true;
        if (u.timeStamp >= stamp[k]) {
          out[k] = {u.pid, u.smUtil, u.memUtil};
          stamp[k] = u.timeStamp;
        }
      }
    if (!seen) {
      out.push_back({u.pid, u.smUtil, u.memUtil});
      stamp.push_back(u.timeStamp);
    }
  }
  return reading(a, std::move(out));
}

std::optional<std::uint64_t> field_number(const FieldValue &fv) {
  if (fv.nvmlReturn != kSuccess)
    return std::nullopt;
  switch (fv.valueType) {
  case kValueTypeUnsignedInt:
    return fv.value.uiVal;
  case kValueTypeUnsignedLong:
    return fv.value.ulVal;
  case kValueTypeUnsignedLongLong:
    return fv.value.ullVal;
  default:
    return std::nullopt;
  }
}

// A field value's reading: the call's answer, then the field's own.
template <class T> Reading<T> field_reading(const Answer &call, const FieldValue &fv) {
  Answer a = call;
  if (a.ok() && fv.nvmlReturn != kSuccess)
    a.status = fv.nvmlReturn;
  auto v = field_number(fv);
  if (a.ok() && !v)
    a.status = kErrorUnknown;
  return reading(a, static_cast<T>(v.value_or(0)));
}

// Every reading of a sample, for what is done to all of them.
template <class F> void for_each_reading(LiveSample &s, F f) {
  f(s.utilization_percent);
  f(s.memory);
  f(s.sm_clock_mhz);
  f(s.memory_clock_mhz);
  f(s.power_usage_mw);
  f(s.temperature_c);
  f(s.fan_percent);
  f(s.clocks_event_reasons);
  f(s.ecc_uncorrected_volatile);
  f(s.ecc_corrected_volatile);
  f(s.ecc_uncorrected_aggregate);
  f(s.retired_pages);
  f(s.retired_pages_pending);
  f(s.remapped_rows);
  f(s.pcie_gen_current);
  f(s.pcie_width_current);
  f(s.pcie_replay_counter);
  f(s.processes);
  f(s.energy_mj);
  f(s.pcie_tx_kilobytes_per_s);
  f(s.pcie_rx_kilobytes_per_s);
  f(s.memory_temperature_c);
  f(s.nvlink_tx_kib);
  f(s.nvlink_rx_kib);
  f(s.process_utilization);
}

} // namespace

LiveSample sample(const Session &session, Device d) {
  const EntryPoints &t = session.table();
  LiveSample s;
  s.utilization_percent = ask_value<Utilization>(t.device_get_utilization_rates, d);
  s.memory = ask_memory(t, d);
  s.sm_clock_mhz = ask_value<unsigned>(t.device_get_clock_info, d, kClockSm);
  s.memory_clock_mhz = ask_value<unsigned>(t.device_get_clock_info, d, kClockMem);
  s.power_usage_mw = ask_value<unsigned>(t.device_get_power_usage, d);
  s.temperature_c = ask_value<unsigned>(t.device_get_temperature, d, kTemperatureGpu);
  s.fan_percent = ask_value<unsigned>(t.device_get_fan_speed, d);
  unsigned long long reasons = 0;
  Answer reasons_answer = ask(t.device_get_current_clocks_event_reasons, d, &reasons);
  s.clocks_event_reasons = reading(reasons_answer, std::uint64_t{reasons});
  s.ecc_uncorrected_volatile = ask_ecc(t, d, kMemoryErrorUncorrected, kEccCounterVolatile);
  s.ecc_corrected_volatile = ask_ecc(t, d, kMemoryErrorCorrected, kEccCounterVolatile);
  s.ecc_uncorrected_aggregate = ask_ecc(t, d, kMemoryErrorUncorrected, kEccCounterAggregate);

  // Retired pages (before Ampere): asking with no buffer gives the count.
  std::uint64_t retired = 0;
  Answer pages;
  for (int cause : {kPageRetirementMultipleSingleBit, kPageRetirementDoubleBit}) {
    unsigned count = 0;
    pages = ask(t.device_get_retired_pages, d, cause, &count,
                static_cast<unsigned long long *>(nullptr));
    if (pages.status == kErrorInsufficientSize)
      pages.status = kSuccess;
    if (!pages.ok())
      break;
    retired += count;
  }
  s.retired_pages = reading(pages, retired);
  s.retired_pages_pending = ask_enabled(t.device_get_retired_pages_pending_status, d);

  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  Answer rows = ask(t.device_get_remapped_rows, d, &corr, &unc, &pending, &failure);
  s.remapped_rows = reading(rows, RemappedRows{corr, unc, pending != 0, failure != 0});
  s.pcie_gen_current = ask_value<unsigned>(t.device_get_curr_pcie_link_generation, d);
  s.pcie_width_current = ask_value<unsigned>(t.device_get_curr_pcie_link_width, d);
  s.pcie_replay_counter = ask_value<unsigned>(t.device_get_pcie_replay_counter, d);
  s.processes = ask_processes(t, d);
  unsigned long long energy = 0;
  Answer energy_answer = ask(t.device_get_total_energy_consumption, d, &energy);
  s.energy_mj = reading(energy_answer, std::uint64_t{energy});
  s.pcie_tx_kilobytes_per_s =
      ask_value<unsigned>(t.device_get_pcie_throughput, d, kPcieUtilTxBytes);
  s.pcie_rx_kilobytes_per_s =
      ask_value<unsigned>(t.device_get_pcie_throughput, d, kPcieUtilRxBytes);
  FieldValue fields[3]{};
  fields[0].fieldId = kFieldMemoryTemp;
  fields[1].fieldId = kFieldNvlinkThroughputDataTx;
  fields[2].fieldId = kFieldNvlinkThroughputDataRx;
  Answer fa = ask(t.device_get_field_values, d, 3, fields);
  s.memory_temperature_c = field_reading<unsigned>(fa, fields[0]);
  s.nvlink_tx_kib = field_reading<std::uint64_t>(fa, fields[1]);
  s.nvlink_rx_kib = field_reading<std::uint64_t>(fa, fields[2]);
  s.process_utilization = ask_process_utilization(t, d);

  for_each_reading(s, [&](const Answer &a) {
    if (a.status == kErrorGpuIsLost)
      s.device_status = kErrorGpuIsLost;
  });
  return s;
}

LiveSample clock_sample(const Session &session, Device d) {
  const EntryPoints &t = session.table();
  LiveSample s;
  s.sm_clock_mhz = ask_value<unsigned>(t.device_get_clock_info, d, kClockSm);
  s.memory_clock_mhz = ask_value<unsigned>(t.device_get_clock_info, d, kClockMem);
  s.power_usage_mw = ask_value<unsigned>(t.device_get_power_usage, d);
  s.temperature_c = ask_value<unsigned>(t.device_get_temperature, d, kTemperatureGpu);
  unsigned long long reasons = 0;
  Answer reasons_answer = ask(t.device_get_current_clocks_event_reasons, d, &reasons);
  s.clocks_event_reasons = reading(reasons_answer, std::uint64_t{reasons});
  const Answer *asked[] = {&s.sm_clock_mhz, &s.memory_clock_mhz, &s.power_usage_mw,
                           &s.temperature_c, &s.clocks_event_reasons};
  for (const Answer *a : asked)
    if (a->status == kErrorGpuIsLost)
      s.device_status = kErrorGpuIsLost;
  return s;
}

LiveSample sample(const Session &session, unsigned index) {
  auto handle = device_handle(session, index);
  if (handle.value)
    return sample(session, *handle.value);
  LiveSample s;
  for_each_reading(s, [&](Answer &a) {
    a.status = handle.status;
    a.symbol = handle.symbol;
  });
  s.device_status = handle.status;
  return s;
}

// --- events ------------------------------------------------------------------------------------

XidEvents::XidEvents(const Session &session, const std::vector<Device> &devices)
    : session_(session) {
  const EntryPoints &t = session.table();
  if (!session.ready() || !t.event_set_create || !t.device_register_events || !t.event_set_wait)
    return;
  if (t.event_set_create(&set_) != kSuccess) {
    set_ = nullptr;
    return;
  }
  for (Device d : devices)
    if (t.device_register_events(d, kEventTypeXidCriticalError, set_) == kSuccess)
      ++registered_;
}

XidEvents::~XidEvents() {
  if (set_ && session_.table().event_set_free)
    session_.table().event_set_free(set_);
}

std::vector<XidEvents::Event> XidEvents::poll() {
  std::vector<Event> out;
  if (!ok())
    return out;
  for (int i = 0; i < 64; ++i) {
    EventData data{};
    if (session_.table().event_set_wait(set_, &data, 0) != kSuccess)
      break;
    if (data.eventType & kEventTypeXidCriticalError)
      out.push_back({data.device, data.eventData});
  }
  return out;
}

} // namespace dlrig::nvml

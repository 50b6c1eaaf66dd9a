#pragma once
// NVML, the seam: the library loaded at run time, its entry points resolved from the one table in
// nvml_entry_points.hpp, one Session per use (nvmlInit once, nvmlShutdown once), and readings
// split as nvtop splits them: static readings (what a GPU is: name, PCI, limits, modes, links)
// read once, and live samples (what it does now: utilization, clocks, power, temperature, memory
// used, throttle reasons, error counters, processes) taken as often as a caller wants. Each NVML
// call is made by exactly one of the two. `watch`, `serve` and `bench` sample without building a
// Snapshot; the probe builds one from one static reading and one sample per GPU.
//
// Every reading is a Reading<T>: the value, or NVML's answer and the function asked. A function
// the library does not export answers kErrorFunctionNotFound: that one reading is unknown, the
// rest are read as usual. Nothing here throws for what NVML says.
//
// Thread safety: NVML itself is thread-safe; a Session is not copied and must outlive the
// Device handles taken from it.
#include "dlrig/platform/dynlib.hpp"
#include "dlrig/platform/nvml_entry_points.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::nvml {

// One EntryPoint per table line, generated.
struct EntryPoints {
  DLRIG_NVML_ENTRY_POINTS(DLRIG_ENTRY_POINT_FIELD)
};

// Binds every entry point to the first of its names that lookup finds, newest version first.
EntryPoints resolve(const SymbolLookup &lookup);

// What one NVML call answered: kSuccess, or why there is no value. symbol is the function asked
// (the name bound, or the table's newest name when the library exports none of them), so a note
// names the symbol actually called.
struct Answer {
  Return status = kErrorFunctionNotFound;
  const char *symbol = nullptr;
  bool ok() const { return status == kSuccess; }
};

template <class T> struct Reading : Answer {
  // nullopt unless status is kSuccess (and for a string getter that answered an empty string).
  std::optional<T> value;
};

// The library, its table and the NVML initialisation, owned together. open() never fails by
// throwing: state() says how far it got.
class Session {
public:
  enum class State {
    not_loaded,  // the library did not load (dlopen's reason in error())
    not_nvml,    // it exports neither nvmlInit_v2 nor nvmlInit
    init_failed, // nvmlInit answered error_code()
    ready,
  };

  // Loads library (a name dlopen searches, or a path) and initialises NVML once.
  static Session open(const std::string &library);
  // The same with the table resolved through a lookup that may hide names (exported(name) false),
  // as a library from an older driver lacks them.
  static Session open(const std::string &library,
                      const std::function<bool(const char *)> &exported);
  // A session over a table already resolved (tests inject function pointers); initialises NVML
  // through table.init. library_path is what error texts and notes name.
  Session(EntryPoints table, std::string library_path);

  Session(Session &&other) noexcept;
  Session &operator=(Session &&) = delete;
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  ~Session(); // nvmlShutdown once, when nvmlInit succeeded

  State state() const { return state_; }
  bool ready() const { return state_ == State::ready; }
  // NVML's code for a session that is not ready (kErrorLibraryNotFound, kErrorFunctionNotFound or
  // what nvmlInit answered); kSuccess when ready.
  Return error_code() const { return error_code_; }
  // Why the session is not ready, in words; empty when ready.
  const std::string &error() const { return error_; }
  // Where the library was loaded from (or the name asked for when it did not load).
  const std::string &library_path() const { return library_path_; }
  const EntryPoints &table() const { return table_; }
  // nvmlErrorString's text for r, or "NVML error <r>" when the library gives none.
  std::string error_text(Return r) const;

private:
  Session() = default;
  void initialise();

  DynamicLibrary library_;
  EntryPoints table_{};
  std::string library_path_;
  State state_ = State::not_loaded;
  Return error_code_ = kErrorLibraryNotFound;
  std::string error_;
};

// --- system and devices ------------------------------------------------------------------------

struct SystemInfo {
  Reading<std::string> driver_version; // "550.54.15"
  Reading<std::string> nvml_version;   // "12.550.54.15"
  Reading<int> cuda_driver_version;    // 1000 * major + 10 * minor (12040 = 12.4)
  Reading<unsigned> device_count;
};
SystemInfo read_system(const Session &session);

// The handle of the GPU at NVML index (valid while the session lives).
Reading<Device> device_handle(const Session &session, unsigned index);

// A bus id as NVML spells it ("00000000:18:00.0"): busId, or the legacy field when empty.
std::string bus_id_text(const PciInfo &pci);

// --- static readings ---------------------------------------------------------------------------

struct RemappedRows {
  unsigned correctable = 0;
  unsigned uncorrectable = 0;
  bool pending = false;
  bool failure = false;
};

struct NvLinkReading {
  unsigned link = 0;
  Reading<bool> active;               // a failure here leaves the link's state unknown
  Reading<std::string> remote_bus_id; // NVML spelling; asked only for active links
  Reading<int> remote_type;           // kNvLinkDevice*; asked only for active links
};

// What a GPU is. Read once per session; none of it changes while a job runs.
struct StaticInfo {
  Reading<PciInfo> pci;
  Reading<std::string> name;
  Reading<std::string> uuid;
  Reading<std::pair<int, int>> compute_capability; // major, minor
  Reading<unsigned> sm_clock_max_mhz;
  Reading<unsigned> memory_clock_max_mhz;
  Reading<unsigned> power_limit_mw;         // enforced
  Reading<unsigned> power_default_limit_mw; // the board's default
  Reading<unsigned> slowdown_temperature_c;
  Reading<bool> persistence_mode;
  Reading<int> compute_mode; // nvmlComputeMode_t
  Reading<bool> mig_enabled; // current mode
  Reading<bool> ecc_enabled; // current mode
  Reading<bool> display_active;
  Reading<unsigned> pcie_gen_max;
  Reading<unsigned> pcie_width_max;
  // NVLinks up to the GPU's last one. Fails only when nvmlDeviceGetNvLinkState is absent; a GPU
  // without NVLink gives an empty list.
  Reading<std::vector<NvLinkReading>> nvlinks;
  // NVLink speed per link and direction, bytes per second (field value 90); unknown when the
  // field is not given.
  std::optional<std::uint64_t> nvlink_speed_bytes_per_s;
  // The GPU's NVLink-fabric registration: state (kFabricState*) and, once completed, its status.
  struct Fabric {
    unsigned char state = kFabricStateNotSupported;
    Return status = kSuccess;
  };
  Reading<Fabric> fabric;
  Reading<bool> c2c_enabled; // NVLink-C2C to the CPU (Grace)
};
StaticInfo read_static(const Session &session, Device device);

// Between two GPUs: the PCIe topology level (nvmlGpuTopologyLevel_t) and a P2P status
// (nvmlGpuP2PStatus_t) for caps kP2PCaps*.
Reading<int> topology_common_ancestor(const Session &session, Device a, Device b);
Reading<int> p2p_status(const Session &session, Device a, Device b, int caps);

// --- live samples ------------------------------------------------------------------------------

// Total and used come from one call, so the live sample carries the total too (it never changes).
struct MemoryUse {
  std::uint64_t total_bytes = 0;
  std::uint64_t used_bytes = 0; // includes reserved memory when the driver reports it (v2)
  std::uint64_t free_bytes = 0;
  std::optional<std::uint64_t> reserved_bytes; // v2 only: the driver's own reservation
};

struct ProcessReading {
  unsigned pid = 0;
  std::optional<std::uint64_t> used_memory_bytes; // unknown under some drivers and containers
};

// One process's share of the GPU in NVML's last sampling period (nvmlDeviceGetProcessUtilization).
struct ProcessUtilization {
  unsigned pid = 0;
  unsigned sm_percent = 0;
  unsigned memory_percent = 0;
};

// What a GPU does now. Each field is one call made at sample time.
struct LiveSample {
  Reading<Utilization> utilization_percent;
  Reading<MemoryUse> memory;
  Reading<unsigned> sm_clock_mhz;
  Reading<unsigned> memory_clock_mhz;
  Reading<unsigned> power_usage_mw;
  Reading<unsigned> temperature_c;
  Reading<unsigned> fan_percent;
  Reading<std::uint64_t> clocks_event_reasons; // nvmlClocksEventReasons bit mask
  Reading<std::uint64_t> ecc_uncorrected_volatile;
  Reading<std::uint64_t> ecc_corrected_volatile;
  Reading<std::uint64_t> ecc_uncorrected_aggregate;
  Reading<std::uint64_t> retired_pages; // single- and double-bit causes together
  Reading<bool> retired_pages_pending;
  Reading<RemappedRows> remapped_rows;
  Reading<unsigned> pcie_gen_current;
  Reading<unsigned> pcie_width_current;
  Reading<unsigned> pcie_replay_counter;
  Reading<std::vector<ProcessReading>> processes; // compute processes
  // Read after everything above (a GPU lost mid-sample has answered the older readings first).
  Reading<std::uint64_t> energy_mj;          // since the driver loaded (Volta and later)
  Reading<unsigned> pcie_tx_kilobytes_per_s; // over NVML's last 20 ms window
  Reading<unsigned> pcie_rx_kilobytes_per_s;
  Reading<unsigned> memory_temperature_c; // field value 82 (HBM GPUs)
  Reading<std::uint64_t> nvlink_tx_kib;   // field value 138, all links, since driver load
  Reading<std::uint64_t> nvlink_rx_kib;   // field value 139
  Reading<std::vector<ProcessUtilization>> process_utilization; // latest sample per process

  // kErrorGpuIsLost when any call of this sample answered that the GPU fell off the bus (every
  // reading it touched is then unknown, with that status), else kSuccess. A caller that watches
  // stops sampling this GPU and reports it.
  Return device_status = kSuccess;
  bool gpu_lost() const { return device_status == kErrorGpuIsLost; }
};
LiveSample sample(const Session &session, Device device);
// Only what a benchmark reads while its work runs, which costs a few quick calls: the SM and
// memory clocks, power, temperature and clock-event reasons (and device_status). The rest of the
// sample is left unasked (kErrorFunctionNotFound): sample() also asks PCIe throughput, for which
// NVML waits out its 20 ms window, and the process lists.
LiveSample clock_sample(const Session &session, Device device);
// The same by NVML index; a handle that cannot be had makes every reading carry its status.
LiveSample sample(const Session &session, unsigned index);

// --- events ------------------------------------------------------------------------------------

// Xid errors as NVML's event set reports them (nvmlEventTypeXidCriticalError). One per session
// user; not copied. poll() never blocks. A driver without events (or a GPU that refuses
// registration) leaves ok() false and poll() empty: Xids are then unknown, not absent.
class XidEvents {
public:
  struct Event {
    Device device = nullptr;
    std::uint64_t xid = 0;
  };
  XidEvents(const Session &session, const std::vector<Device> &devices);
  XidEvents(const XidEvents &) = delete;
  XidEvents &operator=(const XidEvents &) = delete;
  ~XidEvents();
  bool ok() const { return set_ != nullptr && registered_ > 0; }
  // Devices whose registration NVML accepted.
  unsigned registered() const { return registered_; }
  // Every event waiting now (at most 64 per call).
  std::vector<Event> poll();

private:
  const Session &session_;
  EventSet set_ = nullptr;
  unsigned registered_ = 0;
};

} // namespace dlrig::nvml

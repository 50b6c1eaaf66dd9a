#pragma once
// NVML as dlrig sees it when loading libnvidia-ml at run time: the few C types, constants and
// struct layouts of the public NVML API that dlrig calls (written from the NVML API reference,
// https://docs.nvidia.com/deploy/nvml-api/), and one table of entry points resolved with
// versioned-symbol fallbacks. dlrig never includes nvml.h and never links NVML, so it builds and
// runs on machines without a driver. The fake NVML under tests/ implements the same declarations.
//
// Layouts must match the driver's ABI exactly: each struct notes the NVML version that uses it.
#include <cstdint>
#include <functional>
#include <initializer_list>

namespace dlrig::nvml {

// --- C types -------------------------------------------------------------------------------

struct DeviceOpaque;
using Device = DeviceOpaque *; // nvmlDevice_t
using Return = int;            // nvmlReturn_t
using EnableState = int;       // nvmlEnableState_t: 0 disabled, 1 enabled

// nvmlReturn_t values dlrig distinguishes (nvidia-smi uses the same numbers as exit codes).
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorLibRmVersionMismatch = 18;
inline constexpr Return kErrorArgumentVersionMismatch = 25;
inline constexpr Return kErrorUnknown = 999;

// Buffer sizes the API documents for its string getters.
inline constexpr unsigned kSystemDriverVersionBufferSize = 80;
inline constexpr unsigned kSystemNvmlVersionBufferSize = 80;
inline constexpr unsigned kDeviceNameV2BufferSize = 96;
inline constexpr unsigned kDeviceUuidV2BufferSize = 96;
inline constexpr unsigned kNvlinkMaxLinks = 18;
inline constexpr unsigned long long kValueNotAvailable = ~0ULL; // NVML_VALUE_NOT_AVAILABLE

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3/_v2 and nvmlDeviceGetNvLinkRemotePciInfo_v2.
// The original nvmlDeviceGetPciInfo wrote a 16-byte busId first, which is where busIdLegacy is,
// so the same buffer serves every version.
struct PciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId; // (device id << 16) | vendor id
  unsigned int pciSubSystemId;
  char busId[32]; // "00000000:18:00.0"
};

// nvmlMemory_t (nvmlDeviceGetMemoryInfo).
struct MemoryV1 {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlMemory_v2_t (nvmlDeviceGetMemoryInfo_v2, drivers >= 515): used includes reserved memory.
struct MemoryV2 {
  unsigned int version; // kMemoryV2Version
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML_STRUCT_VERSION(Memory, 2): the struct size with the version in the top byte.
inline constexpr unsigned int kMemoryV2Version =
    static_cast<unsigned int>(sizeof(MemoryV2)) | (2U << 24U);

// nvmlProcessInfo_v1_t (nvmlDeviceGetComputeRunningProcesses, the unversioned symbol).
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory; // kValueNotAvailable when unknown
};

// nvmlProcessInfo_v2_t / nvmlProcessInfo_t (..._v2 and ..._v3).
struct ProcessInfoV2 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId; // 0xFFFFFFFF when not MIG
  unsigned int computeInstanceId;
};

// nvmlValue_t / nvmlFieldValue_t (nvmlDeviceGetFieldValues).
union Value {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};
struct FieldValue {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType; // nvmlValueType_t
  Return nvmlReturn;
  Value value;
};
inline constexpr unsigned kFieldNvlinkSpeedMbpsCommon = 90; // NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON
inline constexpr int kValueTypeDouble = 0;
inline constexpr int kValueTypeUnsignedInt = 1;
inline constexpr int kValueTypeUnsignedLong = 2;
inline constexpr int kValueTypeUnsignedLongLong = 3;

// Enum values (nvmlClockType_t, nvmlTemperatureSensors_t, ...).
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
inline constexpr int kTemperatureGpu = 0;
inline constexpr int kTemperatureThresholdShutdown = 0;
inline constexpr int kTemperatureThresholdSlowdown = 1;
inline constexpr int kMemoryErrorCorrected = 0;
inline constexpr int kMemoryErrorUncorrected = 1;
inline constexpr int kEccCounterVolatile = 0;
inline constexpr int kEccCounterAggregate = 1;
inline constexpr int kPageRetirementMultipleSingleBit = 0;
inline constexpr int kPageRetirementDoubleBit = 1;
inline constexpr int kP2PCapsRead = 0;
inline constexpr int kP2PCapsWrite = 1;
inline constexpr int kP2PCapsNvlink = 2;
// nvmlIntNvLinkDeviceType_t
inline constexpr int kNvLinkDeviceGpu = 0;
inline constexpr int kNvLinkDeviceIbmNpu = 1;
inline constexpr int kNvLinkDeviceSwitch = 2;

// --- entry points ------------------------------------------------------------------------------

// One pointer per NVML call dlrig makes, nullptr when the library exports none of the symbol's
// versions. Where versions differ in struct layout, which one was found is kept (e.g.
// processes_version) so the caller passes the right buffer.
struct Api {
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char *(*error_string)(Return) = nullptr;
  Return (*system_get_driver_version)(char *, unsigned) = nullptr;
  Return (*system_get_nvml_version)(char *, unsigned) = nullptr;
  Return (*system_get_cuda_driver_version)(int *) = nullptr;
  Return (*device_get_count)(unsigned *) = nullptr;
  Return (*device_get_handle_by_index)(unsigned, Device *) = nullptr;
  Return (*device_get_pci_info)(Device, PciInfo *) = nullptr;
  Return (*device_get_name)(Device, char *, unsigned) = nullptr;
  Return (*device_get_uuid)(Device, char *, unsigned) = nullptr;
  Return (*device_get_memory_info_v2)(Device, MemoryV2 *) = nullptr;
  Return (*device_get_memory_info)(Device, MemoryV1 *) = nullptr;
  Return (*device_get_cuda_compute_capability)(Device, int *, int *) = nullptr;
  Return (*device_get_clock_info)(Device, int, unsigned *) = nullptr;
  Return (*device_get_max_clock_info)(Device, int, unsigned *) = nullptr;
  Return (*device_get_power_usage)(Device, unsigned *) = nullptr;
  Return (*device_get_enforced_power_limit)(Device, unsigned *) = nullptr;
  Return (*device_get_power_management_default_limit)(Device, unsigned *) = nullptr;
  Return (*device_get_temperature)(Device, int, unsigned *) = nullptr;
  Return (*device_get_temperature_threshold)(Device, int, unsigned *) = nullptr;
  Return (*device_get_fan_speed)(Device, unsigned *) = nullptr;
  Return (*device_get_current_clocks_event_reasons)(Device, unsigned long long *) = nullptr;
  Return (*device_get_persistence_mode)(Device, EnableState *) = nullptr;
  Return (*device_get_compute_mode)(Device, int *) = nullptr;
  Return (*device_get_mig_mode)(Device, unsigned *, unsigned *) = nullptr;
  Return (*device_get_ecc_mode)(Device, EnableState *, EnableState *) = nullptr;
  Return (*device_get_total_ecc_errors)(Device, int, int, unsigned long long *) = nullptr;
  Return (*device_get_retired_pages)(Device, int, unsigned *, unsigned long long *) = nullptr;
  Return (*device_get_retired_pages_pending_status)(Device, EnableState *) = nullptr;
  Return (*device_get_remapped_rows)(Device, unsigned *, unsigned *, unsigned *,
                                     unsigned *) = nullptr;
  Return (*device_get_display_active)(Device, EnableState *) = nullptr;
  Return (*device_get_curr_pcie_link_generation)(Device, unsigned *) = nullptr;
  Return (*device_get_max_pcie_link_generation)(Device, unsigned *) = nullptr;
  Return (*device_get_curr_pcie_link_width)(Device, unsigned *) = nullptr;
  Return (*device_get_max_pcie_link_width)(Device, unsigned *) = nullptr;
  Return (*device_get_pcie_replay_counter)(Device, unsigned *) = nullptr;
  Return (*device_get_nvlink_state)(Device, unsigned, EnableState *) = nullptr;
  Return (*device_get_nvlink_remote_pci_info)(Device, unsigned, PciInfo *) = nullptr;
  Return (*device_get_nvlink_remote_device_type)(Device, unsigned, int *) = nullptr;
  Return (*device_get_field_values)(Device, int, FieldValue *) = nullptr;
  Return (*device_get_topology_common_ancestor)(Device, Device, int *) = nullptr;
  Return (*device_get_p2p_status)(Device, Device, int, int *) = nullptr;
  // _v3 and _v2 take ProcessInfoV2, the unversioned symbol ProcessInfoV1.
  Return (*device_get_compute_running_processes)(Device, unsigned *, void *) = nullptr;
  int processes_version = 0; // 1, 2 or 3; 0 when absent
};

// Finds the first of the given symbol names in a library (DynamicLibrary::symbol in production;
// tests wrap it to hide symbols and exercise the fallbacks).
using SymbolLookup = std::function<void *(std::initializer_list<const char *>)>;

// Resolves every entry point, newest symbol version first.
Api resolve(const SymbolLookup &lookup);

} // namespace dlrig::nvml

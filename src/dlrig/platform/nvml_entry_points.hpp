#pragma once
// NVML as dlrig sees it when loading libnvidia-ml at run time: the few C types, constants and
// struct layouts of the public NVML API that dlrig calls (written from the NVML API reference,
// https://docs.nvidia.com/deploy/nvml-api/), and the entry-point table: every NVML function dlrig
// calls, listed once with its symbol names, newest version first. dlrig never includes nvml.h and
// never links NVML, so it builds and runs on machines without a driver. The table generates the
// struct and resolver in platform/nvml.hpp and the exports of the fake NVML under tests/, so the
// three cannot disagree. Header only: the fake includes it without linking dlrig.
//
// Layouts must match the driver's ABI exactly: each struct notes the NVML version that uses it.
#include "dlrig/platform/dynlib.hpp"

#include <cstdint>

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

// nvmlGpuFabricInfo_t (nvmlDeviceGetGpuFabricInfo, drivers >= 525; Hopper and later GPUs on an
// NVLink fabric): how far the GPU's registration with the fabric (Fabric Manager on NVSwitch
// systems) has gone. status is meaningful only once state is kFabricStateCompleted.
inline constexpr unsigned kGpuFabricUuidLen = 16;
struct GpuFabricInfoV1 {
  unsigned char clusterUuid[kGpuFabricUuidLen];
  Return status;
  unsigned int cliqueId;
  unsigned char state; // nvmlGpuFabricState_t
};
inline constexpr unsigned char kFabricStateNotSupported = 0;
inline constexpr unsigned char kFabricStateNotStarted = 1;
inline constexpr unsigned char kFabricStateInProgress = 2;
inline constexpr unsigned char kFabricStateCompleted = 3;

// nvmlC2cModeInfo_v1_t (nvmlDeviceGetC2cModeInfoV, drivers >= 550): the GPU reaches a Grace
// CPU's memory coherently over NVLink-C2C (GH200, GB200, GB10).
struct C2cModeInfoV1 {
  unsigned int isC2cEnabled;
};

// nvmlUtilization_t (nvmlDeviceGetUtilizationRates): percent of the last sample period.
struct Utilization {
  unsigned int gpu;    // a kernel was running
  unsigned int memory; // device memory was read or written
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

// Field ids read at sample time (nvmlFieldValue_t.fieldId): memory temperature in degrees C
// (NVML_FI_DEV_MEMORY_TEMP, HBM GPUs), NVLink data sent and received in KiB since the driver
// loaded, over all links (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX).
inline constexpr unsigned kFieldMemoryTemp = 82;
inline constexpr unsigned kFieldNvlinkThroughputDataTx = 138;
inline constexpr unsigned kFieldNvlinkThroughputDataRx = 139;

// nvmlProcessUtilizationSample_t (nvmlDeviceGetProcessUtilization): percent of the sample period
// in which the process ran a kernel (sm) or touched memory (mem), at timeStamp (microseconds).
struct ProcessUtilizationSample {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

// nvmlPcieUtilCounter_t (nvmlDeviceGetPcieThroughput, KB/s over the last 20 ms).
inline constexpr int kPcieUtilTxBytes = 0;
inline constexpr int kPcieUtilRxBytes = 1;

// Events (nvmlEventSet_t, nvmlEventData_t as nvmlEventSetWait_v2 fills it; the plain
// nvmlEventSetWait writes only the first three members, so the same buffer serves both).
struct EventSetOpaque;
using EventSet = EventSetOpaque *;
struct EventData {
  Device device;
  unsigned long long eventType;
  unsigned long long eventData; // the Xid for kEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
inline constexpr unsigned long long kEventTypeXidCriticalError =
    0x8;                                    // nvmlEventTypeXidCriticalError
inline constexpr Return kErrorTimeout = 10; // NVML_ERROR_TIMEOUT

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

} // namespace dlrig::nvml

// --- the entry-point table ------------------------------------------------------------------

// X(field, return type, (parameters), (argument names), symbol names newest first): one line per
// function. A function whose versions take different structs by the same pointer (processes: v1
// records vs v2/v3 records) is one entry; the caller picks the layout by EntryPoint::version().
// Functions whose versions differ in a struct's version field (memory info) are two entries.
// clang-format off
#define DLRIG_NVML_ENTRY_POINTS(X) \
  X(init, Return, (), (), nvmlInit_v2, nvmlInit) \
  X(shutdown, Return, (), (), nvmlShutdown) \
  X(error_string, const char *, (Return result), (result), nvmlErrorString) \
  X(system_get_driver_version, Return, (char *version, unsigned length), (version, length), nvmlSystemGetDriverVersion) \
  X(system_get_nvml_version, Return, (char *version, unsigned length), (version, length), nvmlSystemGetNVMLVersion) \
  X(system_get_cuda_driver_version, Return, (int *version), (version), nvmlSystemGetCudaDriverVersion_v2, nvmlSystemGetCudaDriverVersion) \
  X(device_get_count, Return, (unsigned *count), (count), nvmlDeviceGetCount_v2, nvmlDeviceGetCount) \
  X(device_get_handle_by_index, Return, (unsigned index, ::dlrig::nvml::Device *device), (index, device), nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex) \
  X(device_get_pci_info, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::PciInfo *pci), (device, pci), nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_v2, nvmlDeviceGetPciInfo) \
  X(device_get_name, Return, (::dlrig::nvml::Device device, char *name, unsigned length), (device, name, length), nvmlDeviceGetName) \
  X(device_get_uuid, Return, (::dlrig::nvml::Device device, char *uuid, unsigned length), (device, uuid, length), nvmlDeviceGetUUID) \
  X(device_get_memory_info_v2, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::MemoryV2 *memory), (device, memory), nvmlDeviceGetMemoryInfo_v2) \
  X(device_get_memory_info, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::MemoryV1 *memory), (device, memory), nvmlDeviceGetMemoryInfo) \
  X(device_get_cuda_compute_capability, Return, (::dlrig::nvml::Device device, int *major, int *minor), (device, major, minor), nvmlDeviceGetCudaComputeCapability) \
  X(device_get_clock_info, Return, (::dlrig::nvml::Device device, int type, unsigned *mhz), (device, type, mhz), nvmlDeviceGetClockInfo) \
  X(device_get_max_clock_info, Return, (::dlrig::nvml::Device device, int type, unsigned *mhz), (device, type, mhz), nvmlDeviceGetMaxClockInfo) \
  X(device_get_utilization_rates, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::Utilization *utilization), (device, utilization), nvmlDeviceGetUtilizationRates) \
  X(device_get_power_usage, Return, (::dlrig::nvml::Device device, unsigned *milliwatts), (device, milliwatts), nvmlDeviceGetPowerUsage) \
  X(device_get_enforced_power_limit, Return, (::dlrig::nvml::Device device, unsigned *milliwatts), (device, milliwatts), nvmlDeviceGetEnforcedPowerLimit) \
  X(device_get_power_management_default_limit, Return, (::dlrig::nvml::Device device, unsigned *milliwatts), (device, milliwatts), nvmlDeviceGetPowerManagementDefaultLimit) \
  X(device_get_temperature, Return, (::dlrig::nvml::Device device, int sensor, unsigned *celsius), (device, sensor, celsius), nvmlDeviceGetTemperature) \
  X(device_get_temperature_threshold, Return, (::dlrig::nvml::Device device, int threshold, unsigned *celsius), (device, threshold, celsius), nvmlDeviceGetTemperatureThreshold) \
  X(device_get_fan_speed, Return, (::dlrig::nvml::Device device, unsigned *percent), (device, percent), nvmlDeviceGetFanSpeed) \
  /* Renamed in R535; the throttle name is deprecated but older drivers export only it. */ \
  X(device_get_current_clocks_event_reasons, Return, (::dlrig::nvml::Device device, unsigned long long *reasons), (device, reasons), nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetCurrentClocksThrottleReasons) \
  X(device_get_persistence_mode, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::EnableState *mode), (device, mode), nvmlDeviceGetPersistenceMode) \
  X(device_get_compute_mode, Return, (::dlrig::nvml::Device device, int *mode), (device, mode), nvmlDeviceGetComputeMode) \
  X(device_get_mig_mode, Return, (::dlrig::nvml::Device device, unsigned *current, unsigned *pending), (device, current, pending), nvmlDeviceGetMigMode) \
  X(device_get_ecc_mode, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::EnableState *current, ::dlrig::nvml::EnableState *pending), (device, current, pending), nvmlDeviceGetEccMode) \
  X(device_get_total_ecc_errors, Return, (::dlrig::nvml::Device device, int error_type, int counter_type, unsigned long long *count), (device, error_type, counter_type, count), nvmlDeviceGetTotalEccErrors) \
  X(device_get_retired_pages, Return, (::dlrig::nvml::Device device, int cause, unsigned *count, unsigned long long *addresses), (device, cause, count, addresses), nvmlDeviceGetRetiredPages) \
  X(device_get_retired_pages_pending_status, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::EnableState *pending), (device, pending), nvmlDeviceGetRetiredPagesPendingStatus) \
  X(device_get_remapped_rows, Return, (::dlrig::nvml::Device device, unsigned *corrected, unsigned *uncorrected, unsigned *pending, unsigned *failure), (device, corrected, uncorrected, pending, failure), nvmlDeviceGetRemappedRows) \
  X(device_get_display_active, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::EnableState *active), (device, active), nvmlDeviceGetDisplayActive) \
  X(device_get_curr_pcie_link_generation, Return, (::dlrig::nvml::Device device, unsigned *generation), (device, generation), nvmlDeviceGetCurrPcieLinkGeneration) \
  X(device_get_max_pcie_link_generation, Return, (::dlrig::nvml::Device device, unsigned *generation), (device, generation), nvmlDeviceGetMaxPcieLinkGeneration) \
  X(device_get_curr_pcie_link_width, Return, (::dlrig::nvml::Device device, unsigned *width), (device, width), nvmlDeviceGetCurrPcieLinkWidth) \
  X(device_get_max_pcie_link_width, Return, (::dlrig::nvml::Device device, unsigned *width), (device, width), nvmlDeviceGetMaxPcieLinkWidth) \
  X(device_get_pcie_replay_counter, Return, (::dlrig::nvml::Device device, unsigned *count), (device, count), nvmlDeviceGetPcieReplayCounter) \
  X(device_get_nvlink_state, Return, (::dlrig::nvml::Device device, unsigned link, ::dlrig::nvml::EnableState *active), (device, link, active), nvmlDeviceGetNvLinkState) \
  X(device_get_nvlink_remote_pci_info, Return, (::dlrig::nvml::Device device, unsigned link, ::dlrig::nvml::PciInfo *pci), (device, link, pci), nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlDeviceGetNvLinkRemotePciInfo) \
  X(device_get_nvlink_remote_device_type, Return, (::dlrig::nvml::Device device, unsigned link, int *type), (device, link, type), nvmlDeviceGetNvLinkRemoteDeviceType) \
  X(device_get_field_values, Return, (::dlrig::nvml::Device device, int count, ::dlrig::nvml::FieldValue *values), (device, count, values), nvmlDeviceGetFieldValues) \
  X(device_get_topology_common_ancestor, Return, (::dlrig::nvml::Device a, ::dlrig::nvml::Device b, int *level), (a, b, level), nvmlDeviceGetTopologyCommonAncestor) \
  X(device_get_c2c_mode_info, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::C2cModeInfoV1 *info), (device, info), nvmlDeviceGetC2cModeInfoV) \
  X(device_get_gpu_fabric_info, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::GpuFabricInfoV1 *info), (device, info), nvmlDeviceGetGpuFabricInfo) \
  X(device_get_p2p_status, Return, (::dlrig::nvml::Device a, ::dlrig::nvml::Device b, int caps, int *status), (a, b, caps, status), nvmlDeviceGetP2PStatus) \
  /* _v3 and _v2 fill ProcessInfoV2 records, the plain symbol ProcessInfoV1 records. */ \
  X(device_get_compute_running_processes, Return, (::dlrig::nvml::Device device, unsigned *count, void *infos), (device, count, infos), nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetComputeRunningProcesses_v2, nvmlDeviceGetComputeRunningProcesses) \
  X(device_get_total_energy_consumption, Return, (::dlrig::nvml::Device device, unsigned long long *millijoules), (device, millijoules), nvmlDeviceGetTotalEnergyConsumption) \
  X(device_get_pcie_throughput, Return, (::dlrig::nvml::Device device, int counter, unsigned *kilobytes_per_s), (device, counter, kilobytes_per_s), nvmlDeviceGetPcieThroughput) \
  X(device_get_process_utilization, Return, (::dlrig::nvml::Device device, ::dlrig::nvml::ProcessUtilizationSample *samples, unsigned *count, unsigned long long last_seen_us), (device, samples, count, last_seen_us), nvmlDeviceGetProcessUtilization) \
  X(event_set_create, Return, (::dlrig::nvml::EventSet *set), (set), nvmlEventSetCreate) \
  X(device_register_events, Return, (::dlrig::nvml::Device device, unsigned long long types, ::dlrig::nvml::EventSet set), (device, types, set), nvmlDeviceRegisterEvents) \
  X(event_set_wait, Return, (::dlrig::nvml::EventSet set, ::dlrig::nvml::EventData *data, unsigned timeout_ms), (set, data, timeout_ms), nvmlEventSetWait_v2, nvmlEventSetWait) \
  X(event_set_free, Return, (::dlrig::nvml::EventSet set), (set), nvmlEventSetFree)
// clang-format on

#pragma once
// The CUDA driver API as dlrig sees it when loading libcuda.so.1 at run time: the few C types,
// constants and the entry-point table of every driver function dlrig calls (written from the CUDA
// Driver API reference, https://docs.nvidia.com/cuda/cuda-driver-api/). dlrig never includes
// cuda.h and never links libcuda, so it builds and runs on machines without a driver. The table
// generates the struct and resolver in platform/cuda.hpp and the exports of the fake libcuda under
// tests/fake_cuda, so the three cannot disagree. Header only: the fake includes it without linking
// dlrig.
//
// ABI: every signature is the one the driver gives for CUDA 12.0 (kAbiVersion). A table line lists
// only the symbol names that share that signature, newest first ("cuMemAlloc_v2"; never the plain
// cuMemAlloc, whose size argument is 32-bit). Through cuGetProcAddress_v2 the resolver asks for the
// base name (the first name without its "_vN" suffix) at kAbiVersion with the legacy default
// stream, which is what cuda.h's macros bind to for that version.
#include "dlrig/platform/dynlib.hpp"

#include <cstddef>
#include <cstdint>

namespace dlrig::cuda {

// --- C types -------------------------------------------------------------------------------

using Result = int;              // CUresult
using Device = int;              // CUdevice
using DevicePtr = std::uint64_t; // CUdeviceptr (64-bit since CUDA 3.2)
struct ContextOpaque;
using Context = ContextOpaque *; // CUcontext
struct ModuleOpaque;
using Module = ModuleOpaque *; // CUmodule
struct FunctionOpaque;
using Function = FunctionOpaque *; // CUfunction
struct StreamOpaque;
using Stream = StreamOpaque *; // CUstream
struct EventOpaque;
using Event = EventOpaque *; // CUevent
using JitOption = int;       // CUjit_option

// The ABI version asked of cuGetProcAddress_v2 (CUDA 12.0: 1000 * major + 10 * minor).
inline constexpr int kAbiVersion = 12000;

// CUresult values dlrig distinguishes (cuda.h, enum cudaError_enum).
inline constexpr Result kSuccess = 0;
inline constexpr Result kErrorInvalidValue = 1;
inline constexpr Result kErrorOutOfMemory = 2;
inline constexpr Result kErrorNotInitialized = 3;
inline constexpr Result kErrorStubLibrary = 34;
inline constexpr Result kErrorDeviceUnavailable = 46;
inline constexpr Result kErrorNoDevice = 100;
inline constexpr Result kErrorInvalidDevice = 101;
inline constexpr Result kErrorEccUncorrectable = 214;
inline constexpr Result kErrorPeerAccessUnsupported = 217;
inline constexpr Result kErrorInvalidPtx = 218;
inline constexpr Result kErrorUnsupportedPtxVersion = 222;
inline constexpr Result kErrorInvalidHandle = 400;
inline constexpr Result kErrorNotFound = 500;
inline constexpr Result kErrorNotReady = 600; // cuStreamQuery / cuEventQuery: work still queued
inline constexpr Result kErrorIllegalAddress = 700;
inline constexpr Result kErrorLaunchTimeout = 702;
inline constexpr Result kErrorPeerAccessAlreadyEnabled = 704;
inline constexpr Result kErrorHardwareStackError = 714;
inline constexpr Result kErrorIllegalInstruction = 715;
inline constexpr Result kErrorMisalignedAddress = 716;
inline constexpr Result kErrorInvalidAddressSpace = 717;
inline constexpr Result kErrorInvalidPc = 718;
inline constexpr Result kErrorLaunchFailed = 719;
inline constexpr Result kErrorNotSupported = 801;
inline constexpr Result kErrorUnknown = 999;

// CUdevice_attribute values.
inline constexpr int kAttrMaxThreadsPerBlock = 1;
inline constexpr int kAttrMultiprocessorCount = 16;
inline constexpr int kAttrCanMapHostMemory = 19;
inline constexpr int kAttrPciBusId = 33;
inline constexpr int kAttrPciDeviceId = 34;
inline constexpr int kAttrMemoryClockRateKhz = 36;
inline constexpr int kAttrGlobalMemoryBusWidth = 37;
inline constexpr int kAttrL2CacheSize = 38;
inline constexpr int kAttrAsyncEngineCount = 40;
inline constexpr int kAttrUnifiedAddressing = 41;
inline constexpr int kAttrPciDomainId = 50;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;

// CUjit_option values (cuModuleLoadDataEx).
inline constexpr JitOption kJitInfoLogBuffer = 3;
inline constexpr JitOption kJitInfoLogBufferSizeBytes = 4;
inline constexpr JitOption kJitErrorLogBuffer = 5;
inline constexpr JitOption kJitErrorLogBufferSizeBytes = 6;

// Flags.
inline constexpr unsigned kMemHostAllocPortable = 0x01;         // CU_MEMHOSTALLOC_PORTABLE
inline constexpr unsigned kMemHostAllocDeviceMap = 0x02;        // CU_MEMHOSTALLOC_DEVICEMAP
inline constexpr unsigned kStreamNonBlocking = 0x1;             // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kEventDefault = 0x0;                  // CU_EVENT_DEFAULT
inline constexpr std::uint64_t kGetProcAddressLegacyStream = 1; // CU_GET_PROC_ADDRESS_LEGACY_STREAM
// CUdriverProcAddressQueryResult
inline constexpr int kProcAddressSuccess = 0;
inline constexpr int kProcAddressSymbolNotFound = 1;
inline constexpr int kProcAddressVersionNotSufficient = 2;

// cuGetProcAddress_v2 (CUDA 12.0+), looked up by dlsym before anything else.
using GetProcAddressFn = Result (*)(const char *symbol, void **pfn, int cuda_version,
                                    std::uint64_t flags, int *symbol_status);

} // namespace dlrig::cuda

// --- the entry-point table ------------------------------------------------------------------

// X(field, return type, (parameters), (argument names), symbol names newest first): one line per
// function, every name with the same signature.
// clang-format off
#define DLRIG_CUDA_ENTRY_POINTS(X) \
  X(init, ::dlrig::cuda::Result, (unsigned flags), (flags), cuInit) \
  X(driver_get_version, ::dlrig::cuda::Result, (int *version), (version), cuDriverGetVersion) \
  X(get_error_name, ::dlrig::cuda::Result, (::dlrig::cuda::Result error, const char **text), (error, text), cuGetErrorName) \
  X(get_error_string, ::dlrig::cuda::Result, (::dlrig::cuda::Result error, const char **text), (error, text), cuGetErrorString) \
  X(device_get_count, ::dlrig::cuda::Result, (int *count), (count), cuDeviceGetCount) \
  X(device_get, ::dlrig::cuda::Result, (::dlrig::cuda::Device *device, int ordinal), (device, ordinal), cuDeviceGet) \
  X(device_get_name, ::dlrig::cuda::Result, (char *name, int length, ::dlrig::cuda::Device device), (name, length, device), cuDeviceGetName) \
  X(device_get_attribute, ::dlrig::cuda::Result, (int *value, int attribute, ::dlrig::cuda::Device device), (value, attribute, device), cuDeviceGetAttribute) \
  X(device_total_mem, ::dlrig::cuda::Result, (std::size_t *bytes, ::dlrig::cuda::Device device), (bytes, device), cuDeviceTotalMem_v2) \
  X(device_get_pci_bus_id, ::dlrig::cuda::Result, (char *bus_id, int length, ::dlrig::cuda::Device device), (bus_id, length, device), cuDeviceGetPCIBusId) \
  X(device_primary_ctx_retain, ::dlrig::cuda::Result, (::dlrig::cuda::Context *context, ::dlrig::cuda::Device device), (context, device), cuDevicePrimaryCtxRetain) \
  X(device_primary_ctx_release, ::dlrig::cuda::Result, (::dlrig::cuda::Device device), (device), cuDevicePrimaryCtxRelease_v2) \
  X(ctx_set_current, ::dlrig::cuda::Result, (::dlrig::cuda::Context context), (context), cuCtxSetCurrent) \
  X(ctx_synchronize, ::dlrig::cuda::Result, (), (), cuCtxSynchronize) \
  X(mem_get_info, ::dlrig::cuda::Result, (std::size_t *free_bytes, std::size_t *total_bytes), (free_bytes, total_bytes), cuMemGetInfo_v2) \
  X(mem_alloc, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr *pointer, std::size_t bytes), (pointer, bytes), cuMemAlloc_v2) \
  X(mem_free, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr pointer), (pointer), cuMemFree_v2) \
  X(mem_host_alloc, ::dlrig::cuda::Result, (void **pointer, std::size_t bytes, unsigned flags), (pointer, bytes, flags), cuMemHostAlloc) \
  X(mem_free_host, ::dlrig::cuda::Result, (void *pointer), (pointer), cuMemFreeHost) \
  X(mem_host_get_device_pointer, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr *device_pointer, void *host, unsigned flags), (device_pointer, host, flags), cuMemHostGetDevicePointer_v2) \
  X(memcpy_htod, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr dst, const void *src, std::size_t bytes), (dst, src, bytes), cuMemcpyHtoD_v2) \
  X(memcpy_dtoh, ::dlrig::cuda::Result, (void *dst, ::dlrig::cuda::DevicePtr src, std::size_t bytes), (dst, src, bytes), cuMemcpyDtoH_v2) \
  X(memcpy_htod_async, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr dst, const void *src, std::size_t bytes, ::dlrig::cuda::Stream stream), (dst, src, bytes, stream), cuMemcpyHtoDAsync_v2) \
  X(memcpy_dtoh_async, ::dlrig::cuda::Result, (void *dst, ::dlrig::cuda::DevicePtr src, std::size_t bytes, ::dlrig::cuda::Stream stream), (dst, src, bytes, stream), cuMemcpyDtoHAsync_v2) \
  X(memcpy_dtod_async, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr dst, ::dlrig::cuda::DevicePtr src, std::size_t bytes, ::dlrig::cuda::Stream stream), (dst, src, bytes, stream), cuMemcpyDtoDAsync_v2) \
  X(memcpy_peer_async, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr dst, ::dlrig::cuda::Context dst_context, ::dlrig::cuda::DevicePtr src, ::dlrig::cuda::Context src_context, std::size_t bytes, ::dlrig::cuda::Stream stream), (dst, dst_context, src, src_context, bytes, stream), cuMemcpyPeerAsync) \
  X(memset_d8_async, ::dlrig::cuda::Result, (::dlrig::cuda::DevicePtr dst, unsigned char value, std::size_t count, ::dlrig::cuda::Stream stream), (dst, value, count, stream), cuMemsetD8Async) \
  X(stream_create, ::dlrig::cuda::Result, (::dlrig::cuda::Stream *stream, unsigned flags), (stream, flags), cuStreamCreate) \
  X(stream_destroy, ::dlrig::cuda::Result, (::dlrig::cuda::Stream stream), (stream), cuStreamDestroy_v2) \
  X(stream_wait_event, ::dlrig::cuda::Result, (::dlrig::cuda::Stream stream, ::dlrig::cuda::Event event, unsigned flags), (stream, event, flags), cuStreamWaitEvent) \
  X(stream_synchronize, ::dlrig::cuda::Result, (::dlrig::cuda::Stream stream), (stream), cuStreamSynchronize) \
  X(stream_query, ::dlrig::cuda::Result, (::dlrig::cuda::Stream stream), (stream), cuStreamQuery) \
  X(event_create, ::dlrig::cuda::Result, (::dlrig::cuda::Event *event, unsigned flags), (event, flags), cuEventCreate) \
  X(event_destroy, ::dlrig::cuda::Result, (::dlrig::cuda::Event event), (event), cuEventDestroy_v2) \
  X(event_record, ::dlrig::cuda::Result, (::dlrig::cuda::Event event, ::dlrig::cuda::Stream stream), (event, stream), cuEventRecord) \
  X(event_synchronize, ::dlrig::cuda::Result, (::dlrig::cuda::Event event), (event), cuEventSynchronize) \
  X(event_query, ::dlrig::cuda::Result, (::dlrig::cuda::Event event), (event), cuEventQuery) \
  X(event_elapsed_time, ::dlrig::cuda::Result, (float *milliseconds, ::dlrig::cuda::Event start, ::dlrig::cuda::Event end), (milliseconds, start, end), cuEventElapsedTime) \
  X(device_can_access_peer, ::dlrig::cuda::Result, (int *can_access, ::dlrig::cuda::Device device, ::dlrig::cuda::Device peer), (can_access, device, peer), cuDeviceCanAccessPeer) \
  X(ctx_enable_peer_access, ::dlrig::cuda::Result, (::dlrig::cuda::Context peer, unsigned flags), (peer, flags), cuCtxEnablePeerAccess) \
  X(module_load_data_ex, ::dlrig::cuda::Result, (::dlrig::cuda::Module *module, const void *image, unsigned count, ::dlrig::cuda::JitOption *options, void **values), (module, image, count, options, values), cuModuleLoadDataEx) \
  X(module_unload, ::dlrig::cuda::Result, (::dlrig::cuda::Module module), (module), cuModuleUnload) \
  X(module_get_function, ::dlrig::cuda::Result, (::dlrig::cuda::Function *function, ::dlrig::cuda::Module module, const char *name), (function, module, name), cuModuleGetFunction) \
  X(launch_kernel, ::dlrig::cuda::Result, (::dlrig::cuda::Function function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes, ::dlrig::cuda::Stream stream, void **params, void **extra), (function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream, params, extra), cuLaunchKernel)
// clang-format on

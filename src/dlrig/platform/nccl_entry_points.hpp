#pragma once
// NCCL as dlrig sees it when loading libnccl.so.2 at run time: the few C types, constants and the
// entry-point table of every function dlrig calls, written from the NCCL API documentation
// (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html) and checked against nccl.h
// of NCCL 2.28. dlrig never includes nccl.h and never links NCCL. The table generates the struct
// and resolver in platform/nccl.hpp and the exports of the fake NCCL under tests/fake_nccl.
// Header only.
//
// ABI: these signatures are those of NCCL 2.x since 2.7 (ncclSend/ncclRecv); the communicator is
// an opaque pointer, counts are size_t, streams are the driver's CUstream handles.
#include "dlrig/platform/dynlib.hpp"

#include <cstddef>

namespace dlrig::nccl {

using Result = int; // ncclResult_t
struct CommOpaque;
using Comm = CommOpaque *; // ncclComm_t
struct StreamOpaque;
using Stream = StreamOpaque *; // cudaStream_t
using DataType = int;          // ncclDataType_t
using RedOp = int;             // ncclRedOp_t

inline constexpr Result kSuccess = 0;
inline constexpr Result kUnhandledCudaError = 1;
inline constexpr Result kSystemError = 2;
inline constexpr Result kInternalError = 3;
inline constexpr Result kInvalidArgument = 4;
inline constexpr Result kInvalidUsage = 5;
inline constexpr Result kRemoteError = 6;
inline constexpr Result kInProgress = 7; // ncclInProgress (NCCL 2.14+): a non-blocking call runs on

// ncclUniqueId: 128 opaque bytes, passed by value (NCCL_UNIQUE_ID_BYTES).
struct UniqueId {
  char internal[128];
};

// ncclConfig_t's first eight fields, NCCL 2.17's layout (nccl.h's NCCL_CONFIG_INITIALIZER: size,
// magic, version, then each attribute "undefined"). NCCL copies the `size` bytes it is handed and
// gives every attribute newer than `version` its default, so a newer NCCL reads this one as well.
// dlrig sets only `blocking`.
inline constexpr int kConfigUndefInt = -2147483647 - 1; // NCCL_CONFIG_UNDEF_INT (INT_MIN)
struct Config {
  std::size_t size = sizeof(Config);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 21700; // NCCL_VERSION(2, 17, 0)
  int blocking = kConfigUndefInt;
  int cga_cluster_size = kConfigUndefInt;
  int min_ctas = kConfigUndefInt;
  int max_ctas = kConfigUndefInt;
  const char *net_name = nullptr; // NCCL_CONFIG_UNDEF_PTR
};

inline constexpr DataType kFloat32 = 7; // ncclFloat32
inline constexpr RedOp kSum = 0;        // ncclSum
inline constexpr RedOp kMax = 2;        // ncclMax

} // namespace dlrig::nccl

// X(field, return type, (parameters), (argument names), symbol name): one line per function.
// clang-format off
#define DLRIG_NCCL_ENTRY_POINTS(X) \
  X(get_version, ::dlrig::nccl::Result, (int *version), (version), ncclGetVersion) \
  X(get_error_string, const char *, (::dlrig::nccl::Result result), (result), ncclGetErrorString) \
  X(comm_init_all, ::dlrig::nccl::Result, (::dlrig::nccl::Comm *comms, int count, const int *devices), (comms, count, devices), ncclCommInitAll) \
  X(get_unique_id, ::dlrig::nccl::Result, (::dlrig::nccl::UniqueId *id), (id), ncclGetUniqueId) \
  X(comm_init_rank, ::dlrig::nccl::Result, (::dlrig::nccl::Comm *comm, int nranks, ::dlrig::nccl::UniqueId id, int rank), (comm, nranks, id, rank), ncclCommInitRank) \
  X(comm_init_rank_config, ::dlrig::nccl::Result, (::dlrig::nccl::Comm *comm, int nranks, ::dlrig::nccl::UniqueId id, int rank, ::dlrig::nccl::Config *config), (comm, nranks, id, rank, config), ncclCommInitRankConfig) \
  X(comm_destroy, ::dlrig::nccl::Result, (::dlrig::nccl::Comm comm), (comm), ncclCommDestroy) \
  X(comm_abort, ::dlrig::nccl::Result, (::dlrig::nccl::Comm comm), (comm), ncclCommAbort) \
  X(comm_get_async_error, ::dlrig::nccl::Result, (::dlrig::nccl::Comm comm, ::dlrig::nccl::Result *async_error), (comm, async_error), ncclCommGetAsyncError) \
  X(group_start, ::dlrig::nccl::Result, (), (), ncclGroupStart) \
  X(group_end, ::dlrig::nccl::Result, (), (), ncclGroupEnd) \
  X(all_reduce, ::dlrig::nccl::Result, (const void *send, void *recv, std::size_t count, ::dlrig::nccl::DataType type, ::dlrig::nccl::RedOp op, ::dlrig::nccl::Comm comm, ::dlrig::nccl::Stream stream), (send, recv, count, type, op, comm, stream), ncclAllReduce) \
  X(all_gather, ::dlrig::nccl::Result, (const void *send, void *recv, std::size_t send_count, ::dlrig::nccl::DataType type, ::dlrig::nccl::Comm comm, ::dlrig::nccl::Stream stream), (send, recv, send_count, type, comm, stream), ncclAllGather) \
  X(reduce_scatter, ::dlrig::nccl::Result, (const void *send, void *recv, std::size_t recv_count, ::dlrig::nccl::DataType type, ::dlrig::nccl::RedOp op, ::dlrig::nccl::Comm comm, ::dlrig::nccl::Stream stream), (send, recv, recv_count, type, op, comm, stream), ncclReduceScatter) \
  X(broadcast, ::dlrig::nccl::Result, (const void *send, void *recv, std::size_t count, ::dlrig::nccl::DataType type, int root, ::dlrig::nccl::Comm comm, ::dlrig::nccl::Stream stream), (send, recv, count, type, root, comm, stream), ncclBroadcast) \
  X(send, ::dlrig::nccl::Result, (const void *send, std::size_t count, ::dlrig::nccl::DataType type, int peer, ::dlrig::nccl::Comm comm, ::dlrig::nccl::Stream stream), (send, count, type, peer, comm, stream), ncclSend) \
  X(recv, ::dlrig::nccl::Result, (void *recv, std::size_t count, ::dlrig::nccl::DataType type, int peer, ::dlrig::nccl::Comm comm, ::dlrig::nccl::Stream stream), (recv, count, type, peer, comm, stream), ncclRecv)
// clang-format on

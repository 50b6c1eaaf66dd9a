#pragma once
// cuBLASLt as dlrig sees it when loading libcublasLt.so at run time: the few C types, constants
// and the entry-point table of every function dlrig calls, written from the cuBLAS documentation
// (https://docs.nvidia.com/cuda/cublas/#using-the-cublaslt-api) and checked against cublasLt.h,
// cublas_api.h and library_types.h of CUDA 13.0. dlrig never includes those headers and never
// links cuBLAS. The table generates the struct and resolver in platform/cublaslt.hpp and the
// exports of the fake cuBLASLt under tests/fake_cublaslt, so the three cannot disagree. Header
// only: the fake includes it without linking dlrig.
//
// ABI: these signatures and struct layouts are the same in cuBLASLt 11.x, 12.x and 13.x (the
// functions used here are all in 11.0; cublasLtGetStatusName/String came in 11.4 and are
// optional).
#include "dlrig/platform/dynlib.hpp"

#include <cstddef>
#include <cstdint>

namespace dlrig::cublaslt {

// --- C types -------------------------------------------------------------------------------

using Status = int; // cublasStatus_t
struct ContextOpaque;
using Handle = ContextOpaque *; // cublasLtHandle_t
struct MatmulDescOpaque;
using MatmulDesc = MatmulDescOpaque *; // cublasLtMatmulDesc_t
struct LayoutOpaque;
using Layout = LayoutOpaque *; // cublasLtMatrixLayout_t
struct PreferenceOpaque;
using Preference = PreferenceOpaque *; // cublasLtMatmulPreference_t
struct StreamOpaque;
using Stream = StreamOpaque *; // cudaStream_t: the same handle as the driver's CUstream
using DataType = int;          // cudaDataType_t
using ComputeType = int;       // cublasComputeType_t

// cublasLtMatmulAlgo_t: semi-opaque, 64 bytes.
struct MatmulAlgo {
  std::uint64_t data[8];
};
// cublasLtMatmulHeuristicResult_t.
struct HeuristicResult {
  MatmulAlgo algo;
  std::size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};

// cublasStatus_t.
inline constexpr Status kSuccess = 0;
inline constexpr Status kNotInitialized = 1;
inline constexpr Status kAllocFailed = 3;
inline constexpr Status kInvalidValue = 7;
inline constexpr Status kArchMismatch = 8;
inline constexpr Status kExecutionFailed = 13;
inline constexpr Status kInternalError = 14;
inline constexpr Status kNotSupported = 15;

// cudaDataType_t (library_types.h).
inline constexpr DataType kR32F = 0;
inline constexpr DataType kR16F = 2;
inline constexpr DataType kR8I = 3;
inline constexpr DataType kR32I = 10;
inline constexpr DataType kR16BF = 14;
inline constexpr DataType kR8FE4M3 = 28;

// cublasComputeType_t.
inline constexpr ComputeType kCompute32F = 68;
inline constexpr ComputeType kCompute32FFastTF32 = 77;
inline constexpr ComputeType kCompute32I = 72;

// cublasOperation_t.
inline constexpr int kOpN = 0;
inline constexpr int kOpT = 1;

// cublasLtMatmulDescAttributes_t (int32 cublasOperation_t values; the scale pointers: a device
// pointer to one float32, for FP8 matrices: https://docs.nvidia.com/cuda/cublas/
// #cublasltmatmuldescattributes-t).
inline constexpr int kDescTransA = 3;
inline constexpr int kDescTransB = 4;
inline constexpr int kDescAScalePointer = 17;
inline constexpr int kDescBScalePointer = 18;
inline constexpr int kDescDScalePointer = 20;
// How A's and B's scale pointers are read (int32 cublasLtMatmulMatrixScale_t; cuBLASLt 12.9+,
// an older one refuses the attribute): one float32 per tensor (0, the default), or an "outer
// vector" of float32, one per row of op(A) (m) and per column of op(B) (n), D(i, j) scaled by
// a_scale[i] * b_scale[j] (3).
inline constexpr int kDescAScaleMode = 31;
inline constexpr int kDescBScaleMode = 32;
inline constexpr std::int32_t kScaleScalar32F = 0;
inline constexpr std::int32_t kScaleOuterVec32F = 3;
// Hopper's block scales (cuBLAS 12.9+, compute capability 9.0): a float32 per 128-element block
// along k of each row of op(A) or column of op(B) (4), or per 128 x 128 block (5); A and B may
// mix them, but not both 128 x 128 (gemm_data.hpp's BlockLayout has the layouts).
inline constexpr std::int32_t kScaleVec128_32F = 4;
inline constexpr std::int32_t kScaleBlk128x128_32F = 5;
// Blackwell's MXFP8 block scales (cuBLAS 12.8+, compute capability 10.0+): one UE8M0 byte, a
// power of two, per 32 consecutive elements along k of each row of op(A) and column of op(B), in
// cuBLAS's tiled 128 x 4 layout (2; gemm_data.hpp's MxLayout has it); both A and B, never mixed.
inline constexpr std::int32_t kScaleVec32Ue8m0 = 2;
// cublasLtMatmulPreferenceAttributes_t (uint64_t bytes).
inline constexpr int kPrefMaxWorkspaceBytes = 1;

} // namespace dlrig::cublaslt

// --- the entry-point table ------------------------------------------------------------------

// X(field, return type, (parameters), (argument names), symbol names): one line per function.
// clang-format off
#define DLRIG_CUBLASLT_ENTRY_POINTS(X) \
  X(get_version, std::size_t, (), (), cublasLtGetVersion) \
  X(get_cudart_version, std::size_t, (), (), cublasLtGetCudartVersion) \
  X(get_status_name, const char *, (::dlrig::cublaslt::Status status), (status), cublasLtGetStatusName) \
  X(get_status_string, const char *, (::dlrig::cublaslt::Status status), (status), cublasLtGetStatusString) \
  X(create, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Handle *handle), (handle), cublasLtCreate) \
  X(destroy, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Handle handle), (handle), cublasLtDestroy) \
  X(matmul_desc_create, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::MatmulDesc *desc, ::dlrig::cublaslt::ComputeType compute, ::dlrig::cublaslt::DataType scale), (desc, compute, scale), cublasLtMatmulDescCreate) \
  X(matmul_desc_destroy, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::MatmulDesc desc), (desc), cublasLtMatmulDescDestroy) \
  X(matmul_desc_set_attribute, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::MatmulDesc desc, int attribute, const void *value, std::size_t bytes), (desc, attribute, value, bytes), cublasLtMatmulDescSetAttribute) \
  X(matrix_layout_create, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Layout *layout, ::dlrig::cublaslt::DataType type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld), (layout, type, rows, cols, ld), cublasLtMatrixLayoutCreate) \
  X(matrix_layout_destroy, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Layout layout), (layout), cublasLtMatrixLayoutDestroy) \
  X(preference_create, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Preference *pref), (pref), cublasLtMatmulPreferenceCreate) \
  X(preference_destroy, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Preference pref), (pref), cublasLtMatmulPreferenceDestroy) \
  X(preference_set_attribute, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Preference pref, int attribute, const void *value, std::size_t bytes), (pref, attribute, value, bytes), cublasLtMatmulPreferenceSetAttribute) \
  X(algo_get_heuristic, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Handle handle, ::dlrig::cublaslt::MatmulDesc desc, ::dlrig::cublaslt::Layout a, ::dlrig::cublaslt::Layout b, ::dlrig::cublaslt::Layout c, ::dlrig::cublaslt::Layout d, ::dlrig::cublaslt::Preference pref, int requested, ::dlrig::cublaslt::HeuristicResult *results, int *returned), (handle, desc, a, b, c, d, pref, requested, results, returned), cublasLtMatmulAlgoGetHeuristic) \
  X(matmul, ::dlrig::cublaslt::Status, (::dlrig::cublaslt::Handle handle, ::dlrig::cublaslt::MatmulDesc desc, const void *alpha, const void *a, ::dlrig::cublaslt::Layout a_layout, const void *b, ::dlrig::cublaslt::Layout b_layout, const void *beta, const void *c, ::dlrig::cublaslt::Layout c_layout, void *d, ::dlrig::cublaslt::Layout d_layout, const ::dlrig::cublaslt::MatmulAlgo *algo, void *workspace, std::size_t workspace_bytes, ::dlrig::cublaslt::Stream stream), (handle, desc, alpha, a, a_layout, b, b_layout, beta, c, c_layout, d, d_layout, algo, workspace, workspace_bytes, stream), cublasLtMatmul)
// clang-format on

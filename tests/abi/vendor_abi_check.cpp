// dlrig's own declarations of cuBLASLt and NCCL (src/dlrig/platform/*_entry_points.hpp) against
// the toolkit's headers: every constant, struct layout and function signature must agree. This
// file is only compiled by tests/abi/abi_test.sh (ctest `vendor_abi`, skipped without the
// headers); dlrig itself never includes a CUDA header.
#include "dlrig/platform/cublaslt_entry_points.hpp"
#include "dlrig/platform/nccl_entry_points.hpp"

#include <cublasLt.h>
#include <nccl.h>

#include <cstddef>
#include <type_traits>

namespace lt = dlrig::cublaslt;
namespace nc = dlrig::nccl;

// cuBLASLt constants.
static_assert(lt::kSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(lt::kNotInitialized == CUBLAS_STATUS_NOT_INITIALIZED);
static_assert(lt::kAllocFailed == CUBLAS_STATUS_ALLOC_FAILED);
static_assert(lt::kInvalidValue == CUBLAS_STATUS_INVALID_VALUE);
static_assert(lt::kArchMismatch == CUBLAS_STATUS_ARCH_MISMATCH);
static_assert(lt::kExecutionFailed == CUBLAS_STATUS_EXECUTION_FAILED);
static_assert(lt::kInternalError == CUBLAS_STATUS_INTERNAL_ERROR);
static_assert(lt::kNotSupported == CUBLAS_STATUS_NOT_SUPPORTED);
static_assert(lt::kR32F == CUDA_R_32F && lt::kR16F == CUDA_R_16F && lt::kR8I == CUDA_R_8I);
static_assert(lt::kR32I == CUDA_R_32I && lt::kR16BF == CUDA_R_16BF);
static_assert(lt::kR8FE4M3 == CUDA_R_8F_E4M3);
static_assert(lt::kCompute32F == CUBLAS_COMPUTE_32F);
static_assert(lt::kCompute32FFastTF32 == CUBLAS_COMPUTE_32F_FAST_TF32);
static_assert(lt::kCompute32I == CUBLAS_COMPUTE_32I);
static_assert(lt::kOpN == CUBLAS_OP_N && lt::kOpT == CUBLAS_OP_T);
static_assert(lt::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA);
static_assert(lt::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(lt::kDescAScalePointer == CUBLASLT_MATMUL_DESC_A_SCALE_POINTER);
static_assert(lt::kDescAScaleMode == CUBLASLT_MATMUL_DESC_A_SCALE_MODE);
static_assert(lt::kDescBScaleMode == CUBLASLT_MATMUL_DESC_B_SCALE_MODE);
static_assert(lt::kScaleScalar32F == CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F);
static_assert(lt::kScaleOuterVec32F == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
static_assert(lt::kScaleVec128_32F == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F);
static_assert(lt::kScaleBlk128x128_32F == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F);
static_assert(lt::kScaleVec32Ue8m0 == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0);
static_assert(sizeof(cublasLtMatmulMatrixScale_t) == sizeof(std::int32_t));
static_assert(lt::kDescBScalePointer == CUBLASLT_MATMUL_DESC_B_SCALE_POINTER);
static_assert(lt::kDescDScalePointer == CUBLASLT_MATMUL_DESC_D_SCALE_POINTER);
static_assert(lt::kPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(sizeof(cublasOperation_t) == sizeof(int)); // the TRANSA/B attribute's size

// cuBLASLt structs.
static_assert(sizeof(lt::MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(lt::HeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(lt::HeuristicResult, workspace_size) ==
              offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(lt::HeuristicResult, state) ==
              offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(lt::HeuristicResult, waves_count) ==
              offsetof(cublasLtMatmulHeuristicResult_t, wavesCount));
static_assert(sizeof(lt::Status) == sizeof(cublasStatus_t));
static_assert(sizeof(lt::DataType) == sizeof(cudaDataType_t));
static_assert(sizeof(lt::ComputeType) == sizeof(cublasComputeType_t));

// NCCL constants.
static_assert(nc::kSuccess == ncclSuccess && nc::kUnhandledCudaError == ncclUnhandledCudaError);
static_assert(nc::kSystemError == ncclSystemError && nc::kInternalError == ncclInternalError);
static_assert(nc::kInvalidArgument == ncclInvalidArgument);
static_assert(nc::kInvalidUsage == ncclInvalidUsage && nc::kRemoteError == ncclRemoteError);
static_assert(nc::kInProgress == ncclInProgress);
static_assert(nc::kFloat32 == ncclFloat32 && nc::kSum == ncclSum);
static_assert(sizeof(nc::Result) == sizeof(ncclResult_t));
static_assert(sizeof(nc::DataType) == sizeof(ncclDataType_t));
static_assert(sizeof(nc::RedOp) == sizeof(ncclRedOp_t));
static_assert(sizeof(nc::UniqueId) == sizeof(ncclUniqueId) && NCCL_UNIQUE_ID_BYTES == 128);
// ncclConfig_t: dlrig's Config is its first eight fields, at the same offsets.
static_assert(offsetof(nc::Config, size) == offsetof(ncclConfig_t, size));
static_assert(offsetof(nc::Config, magic) == offsetof(ncclConfig_t, magic));
static_assert(offsetof(nc::Config, version) == offsetof(ncclConfig_t, version));
static_assert(offsetof(nc::Config, blocking) == offsetof(ncclConfig_t, blocking));
static_assert(offsetof(nc::Config, cga_cluster_size) == offsetof(ncclConfig_t, cgaClusterSize));
static_assert(offsetof(nc::Config, min_ctas) == offsetof(ncclConfig_t, minCTAs));
static_assert(offsetof(nc::Config, max_ctas) == offsetof(ncclConfig_t, maxCTAs));
static_assert(offsetof(nc::Config, net_name) == offsetof(ncclConfig_t, netName));
static_assert(sizeof(nc::Config) <= sizeof(ncclConfig_t));
static_assert(nc::kConfigUndefInt == NCCL_CONFIG_UNDEF_INT);
static_assert(nc::Config{}.version == NCCL_VERSION(2, 17, 0));
constexpr ncclConfig_t kInitializer = NCCL_CONFIG_INITIALIZER;
static_assert(nc::Config{}.magic == kInitializer.magic);
static_assert(nc::Config{}.blocking == kInitializer.blocking);

// Every function: the header's declaration, with its C types replaced by dlrig's opaque
// equivalents (pointers to incomplete structs, int enums), has the same shape: same arity, and
// each parameter and the return type of the same size and pointer-ness. The call below does not
// run; it only makes the compiler compare the two signatures.
template <class T> constexpr bool integer_like = std::is_integral_v<T> || std::is_enum_v<T>;
template <class A, class B> constexpr bool same_shape() {
  return sizeof(A) == sizeof(B) && std::is_pointer_v<A> == std::is_pointer_v<B> &&
         integer_like<A> == integer_like<B> &&
         std::is_floating_point_v<A> == std::is_floating_point_v<B>;
}
template <class R1, class... P1, class R2, class... P2>
constexpr bool same_signature(R1 (*)(P1...), R2 (*)(P2...)) {
  if constexpr (sizeof...(P1) != sizeof...(P2))
    return false;
  else
    return same_shape<R1, R2>() && (same_shape<P1, P2>() && ...);
}
template <class R1, class R2> constexpr bool same_signature(R1 (*)(), R2 (*)()) {
  return same_shape<R1, R2>();
}

#define CHECK_ONE(field, ret, params, args, name)                                                  \
  static_assert(same_signature(static_cast<ret(*) params>(nullptr), &::name),                      \
                #name ": dlrig's declaration differs from the header's");
DLRIG_CUBLASLT_ENTRY_POINTS(CHECK_ONE)
DLRIG_NCCL_ENTRY_POINTS(CHECK_ONE)

int main() {
  return 0;
}

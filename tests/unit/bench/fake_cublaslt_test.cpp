// The fake cuBLASLt's MXFP8 refusals, which gpu.gemm.mxfp8 never triggers (it always asks for
// what cuBLAS documents): driven here through the raw entry points, so that the fake stays as
// strict as cuBLAS's "Block Scaling Factors Layout" rules (VEC32_UE8M0 on both A and B, FP8
// operands, k whole 32-element blocks, scales in whole 128 x 4 tiles, 16-byte aligned) and a
// dlrig change that broke one of them would fail instead of being measured. Against the fake
// libcuda's two_gpus.json, as bench/gpu_test.cpp (the driver is loaded once per process).
#include "dlrig/bench/gpu.hpp"
#include "dlrig/platform/cublaslt.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace dlrig::bench {
namespace {

namespace lt = cublaslt;

struct Descs {
  const lt::EntryPoints &api;
  lt::MatmulDesc op = nullptr;
  lt::Layout a = nullptr, b = nullptr, d = nullptr;
  lt::Preference pref = nullptr;
  ~Descs() {
    auto drop = [](const auto &destroy, auto handle) {
      if (handle)
        destroy(handle);
    };
    drop(api.matrix_layout_destroy, a);
    drop(api.matrix_layout_destroy, b);
    drop(api.matrix_layout_destroy, d);
    drop(api.matmul_desc_destroy, op);
    drop(api.preference_destroy, pref);
  }
};

class FakeCublasLtMx : public ::testing::Test {
protected:
  void SetUp() override {
    setenv("DLRIG_CUDA_LIBRARY", DLRIG_FAKE_CUDA, 1);
    setenv("DLRIG_FAKE_CUDA_SCENARIO", DLRIG_TEST_DATA "/fake_cuda/two_gpus.json", 1);
    setenv("DLRIG_FAKE_CUBLASLT_SCENARIO", DLRIG_TEST_DATA "/fake_cublaslt/b200_mxfp8.json", 1);
    gpu::Runtime::get().use(0); // the fake libcuda loaded, GPU 0's context current
    lib_ = std::make_unique<lt::Library>(lt::Library::open({{DLRIG_FAKE_CUBLASLT, "test"}}));
    ASSERT_TRUE(lib_->ready()) << lib_->error();
    ASSERT_EQ(api().create(&handle_), lt::kSuccess);
  }
  void TearDown() override {
    if (handle_)
      api().destroy(handle_);
  }
  const lt::EntryPoints &api() const { return lib_->api(); }

  // A TN matmul of m x n x k (A k x m and B k x n, column-major, D m x n BF16) with these A and B
  // scale modes and operand type.
  void describe(Descs &s, std::int32_t a_mode, std::int32_t b_mode, lt::DataType ab,
                std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    ASSERT_EQ(api().matmul_desc_create(&s.op, lt::kCompute32F, lt::kR32F), lt::kSuccess);
    const int t = lt::kOpT, nn = lt::kOpN;
    ASSERT_EQ(api().matmul_desc_set_attribute(s.op, lt::kDescTransA, &t, sizeof t), lt::kSuccess);
    ASSERT_EQ(api().matmul_desc_set_attribute(s.op, lt::kDescTransB, &nn, sizeof nn), lt::kSuccess);
    ASSERT_EQ(api().matmul_desc_set_attribute(s.op, lt::kDescAScaleMode, &a_mode, sizeof a_mode),
              lt::kSuccess);
    ASSERT_EQ(api().matmul_desc_set_attribute(s.op, lt::kDescBScaleMode, &b_mode, sizeof b_mode),
              lt::kSuccess);
    ASSERT_EQ(api().matrix_layout_create(&s.a, ab, k, m, static_cast<std::int64_t>(k)),
              lt::kSuccess);
    ASSERT_EQ(api().matrix_layout_create(&s.b, ab, k, n, static_cast<std::int64_t>(k)),
              lt::kSuccess);
    ASSERT_EQ(api().matrix_layout_create(&s.d, lt::kR16BF, m, n, static_cast<std::int64_t>(m)),
              lt::kSuccess);
    ASSERT_EQ(api().preference_create(&s.pref), lt::kSuccess);
  }

  lt::Status heuristic(std::int32_t a_mode, std::int32_t b_mode, lt::DataType ab, std::uint64_t k,
                       int *returned) {
    Descs s{api()};
    describe(s, a_mode, b_mode, ab, 128, 128, k);
    std::vector<lt::HeuristicResult> found(4);
    *returned = 0;
    return api().algo_get_heuristic(handle_, s.op, s.a, s.b, s.d, s.d, s.pref, 4, found.data(),
                                    returned);
  }

  // The matmul of 128 x 128 x 64 with MXFP8 scales of `scale_bytes` each (a whole 128 x 4 tile
  // is 512), starting `offset` bytes into their buffers.
  lt::Status mx_matmul(std::size_t scale_bytes, std::size_t offset) {
    const std::uint64_t m = 128, n = 128, k = 64;
    Descs s{api()};
    describe(s, lt::kScaleVec32Ue8m0, lt::kScaleVec32Ue8m0, lt::kR8FE4M3, m, n, k);
    gpu::DeviceBuffer a(k * m), b(k * n), d(m * n * 2);
    gpu::DeviceBuffer a_scales(offset + scale_bytes), b_scales(offset + scale_bytes);
    std::vector<unsigned char> ones(offset + scale_bytes, 127); // UE8M0 127 = 2^0
    DLRIG_CU(memcpy_htod, a_scales.ptr(), static_cast<const void *>(ones.data()), ones.size());
    DLRIG_CU(memcpy_htod, b_scales.ptr(), static_cast<const void *>(ones.data()), ones.size());
    std::vector<unsigned char> zeros(k * n, 0);
    DLRIG_CU(memcpy_htod, a.ptr(), static_cast<const void *>(zeros.data()), k * m);
    DLRIG_CU(memcpy_htod, b.ptr(), static_cast<const void *>(zeros.data()), k * n);
    const void *as = reinterpret_cast<const void *>(a_scales.ptr() + offset);
    const void *bs = reinterpret_cast<const void *>(b_scales.ptr() + offset);
    EXPECT_EQ(api().matmul_desc_set_attribute(s.op, lt::kDescAScalePointer, &as, sizeof as),
              lt::kSuccess);
    EXPECT_EQ(api().matmul_desc_set_attribute(s.op, lt::kDescBScalePointer, &bs, sizeof bs),
              lt::kSuccess);
    std::vector<lt::HeuristicResult> found(1);
    int returned = 0;
    EXPECT_EQ(api().algo_get_heuristic(handle_, s.op, s.a, s.b, s.d, s.d, s.pref, 1, found.data(),
                                       &returned),
              lt::kSuccess);
    EXPECT_EQ(returned, 1);
    gpu::Stream stream;
    const float alpha = 1, beta = 0;
    auto p = [](cuda::DevicePtr x) { return reinterpret_cast<void *>(x); };
    return api().matmul(handle_, s.op, &alpha, p(a.ptr()), s.a, p(b.ptr()), s.b, &beta, p(d.ptr()),
                        s.d, p(d.ptr()), s.d, &found[0].algo, nullptr, 0,
                        reinterpret_cast<lt::Stream>(stream.get()));
  }

  std::unique_ptr<lt::Library> lib_;
  lt::Handle handle_ = nullptr;
};

TEST_F(FakeCublasLtMx, BothOperandsInFp8WithWholeBlocksAreAccepted) {
  int returned = 0;
  EXPECT_EQ(heuristic(lt::kScaleVec32Ue8m0, lt::kScaleVec32Ue8m0, lt::kR8FE4M3, 64, &returned),
            lt::kSuccess);
  EXPECT_GT(returned, 0);
  EXPECT_EQ(mx_matmul(512, 0), lt::kSuccess);
}

// cuBLAS: VEC32_UE8M0 is the mode "for all FP8-precision tensors", so on A and B together, on FP8
// operands, over whole 32-element k-blocks.
TEST_F(FakeCublasLtMx, OneOperandOnlyAnotherTypeOrAPartBlockIsNotSupported) {
  int returned = -1;
  EXPECT_EQ(heuristic(lt::kScaleVec32Ue8m0, lt::kScaleScalar32F, lt::kR8FE4M3, 64, &returned),
            lt::kNotSupported);
  EXPECT_EQ(returned, 0);
  EXPECT_EQ(heuristic(lt::kScaleScalar32F, lt::kScaleVec32Ue8m0, lt::kR8FE4M3, 64, &returned),
            lt::kNotSupported);
  EXPECT_EQ(heuristic(lt::kScaleVec32Ue8m0, lt::kScaleVec32Ue8m0, lt::kR16BF, 64, &returned),
            lt::kNotSupported);
  EXPECT_EQ(heuristic(lt::kScaleVec32Ue8m0, lt::kScaleVec32Ue8m0, lt::kR8FE4M3, 48, &returned),
            lt::kNotSupported);
}

// Scales short of their whole 128 x 4 tiles are an invalid value; a start that is not 16-byte
// aligned is not supported ("Starting addresses of scaling factors must be 16B aligned").
TEST_F(FakeCublasLtMx, ShortOrMisalignedScalesAreRefused) {
  EXPECT_EQ(mx_matmul(511, 0), lt::kInvalidValue);
  EXPECT_EQ(mx_matmul(512, 8), lt::kNotSupported);
  EXPECT_EQ(mx_matmul(512, 16), lt::kSuccess);
}

} // namespace
} // namespace dlrig::bench

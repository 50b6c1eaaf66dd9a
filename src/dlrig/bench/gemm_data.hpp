#pragma once
// The host side of gpu.gemm (pure, no GPU): element types as cuBLASLt stores them, random-normal
// inputs rounded to the tested type, the entries of D that are checked, and the reference those
// entries are checked against. The reference is computed from the inputs exactly as rounded to
// the tested type, so the only differences left are the accumulation order and the output's
// rounding (gpu_gemm.cpp states the tolerance of each precision).
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::bench::gemm {

// f32 IEEE single; f16 IEEE half; bf16 bfloat16; e4m3 FP8 (OCP E4M3FN: bias 7, max 448, no
// infinities); i8 and i32 two's complement.
enum class Element { f32, f16, bf16, e4m3, i8, i32 };
std::size_t element_bytes(Element e);
// x rounded to the nearest value of the element (ties to even; e4m3 and i8 saturate at their
// largest finite value, 448 and 127).
double round_to(Element e, double x);
// Stores round_to(e, x) in element_bytes(e) bytes (little-endian, as the GPU reads them).
void write_element(Element e, double x, unsigned char *out);
double read_element(Element e, const unsigned char *in);

// `count` elements drawn from N(0, 1) (int8: N(0, 32^2), rounded and clamped to +-127, so an
// int32 sum of k <= 131072 products cannot overflow), deterministic for a seed.
std::vector<unsigned char> random_normal(Element e, std::uint64_t count, std::uint64_t seed);

// The same N(0, 1) draws stored as FP8 training stores a tensor with a per-tensor scale
// (Transformer Engine's recipe, docs/bench.md "gpu.gemm"): amax = max |x|, scale = 448 / amax
// (E4M3's largest finite over amax: the largest |x| lands on 448, the others spread over the range
// below it instead of E4M3's subnormals), each element stored as E4M3(x · scale). `dequant` is
// what cuBLASLt's A/B scale pointers take (Transformer Engine's scale_inv): 1 / scale as a
// float32, so x ~ dequant · stored.
// With `row` > 0 each run of `row` elements (a row of the m x k operand: A stored k x m keeps a
// row's k elements together) gets its own amax and scale, as row-wise FP8 training stores a tensor
// (torchao's float8 "rowwise" recipe); `rows_dequant` then holds one scale per row, amax and
// dequant the largest and the smallest.
struct ScaledE4m3 {
  std::vector<unsigned char> data; // E4M3 bytes
  double amax = 0;
  float dequant = 1;
  std::vector<float> rows_dequant; // per row (row > 0); empty per tensor
};
ScaledE4m3 random_normal_e4m3_scaled(std::uint64_t count, std::uint64_t seed,
                                     std::uint64_t row = 0);

// Hopper's 128-element block scales (cuBLAS 12.9+, "128-element 1D and 128x128 2D Block Scaling
// For FP8 Data Types",
// https://docs.nvidia.com/cuda/cublas/#element-1d-and-128x128-2d-block-scaling-for-fp8-data-types;
// DeepSeek-V3's recipe, https://arxiv.org/abs/2412.19437 §3.3). An operand stored k x `cols`
// column-major (A stored k x m: its columns are the rows of op(A); B stored k x n: the columns of
// op(B)) is cut along k into L = ceil(k / 128) blocks (the last one shorter when 128 does not
// divide k) and across its columns into groups of `cols_per_block`: 1 for 1 x 128 blocks
// (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, DeepSeek-V3's activations) or 128 for 128 x 128
// blocks (BLK128x128_32F, its weights; the last group narrower when 128 does not divide cols).
struct BlockLayout {
  std::uint64_t k = 0, cols = 0;
  std::uint64_t cols_per_block = 1; // 1 or 128
  std::uint64_t k_blocks() const;   // L
  std::uint64_t col_blocks() const; // ceil(cols / cols_per_block)
  // The float32 index cuBLASLt reads the scale of column `col`'s k-block `kb` at (the docs'
  // "Scaling factors layouts"): 1 x 128, "M-major ... with shape M x L", col + kb * cols (each
  // k-block's cols scales together, torch's "outer-dim-major"); 128 x 128, "K-major and the
  // stride between the consecutive columns must be a multiple of 4", kb + (col / 128) * L4 with
  // L4 = L rounded up to a multiple of 4.
  std::uint64_t index(std::uint64_t col, std::uint64_t kb) const;
  std::uint64_t size() const; // floats the scale tensor spans, the 128 x 128 padding included
};
// The same N(0, 1) draws as random_normal_e4m3_scaled(k * cols, seed), each block stored with
// its own scale by that function's rule (its largest |x| on 448). `dequant` holds size() floats
// laid out as cuBLASLt reads them (padding 0), each amax(block) / 448; `amax` is the largest.
struct BlockScaledE4m3 {
  std::vector<unsigned char> data; // E4M3 bytes, k x cols column-major
  double amax = 0;
  BlockLayout layout;
  std::vector<float> dequant;
  float at(std::uint64_t col, std::uint64_t kb) const { return dequant.at(layout.index(col, kb)); }
};
BlockScaledE4m3 random_normal_e4m3_blocks(std::uint64_t k, std::uint64_t cols,
                                          std::uint64_t cols_per_block, std::uint64_t seed);
// Why cuBLASLt's 128-element block scales cannot take an m x n x k GEMM in the TN layout, nullopt
// when they can: "M and N must be multiples of 4" (the docs' "Scaling factors layouts"), and k a
// multiple of 16, FP8's 16-byte alignment of A's and B's columns (cublasLtMatmul: "pointers and
// matrix dimension must support 16-byte alignment"). k needs no multiple of 128.
std::optional<std::string> block_scale_shape_problem(std::uint64_t m, std::uint64_t n,
                                                     std::uint64_t k);

// Blackwell's MXFP8 (OCP Microscaling Formats v1.0,
// https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf; cuBLAS
// 12.8+, CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0, "16/32-Element 1D Block Scaling for FP8 and FP4
// Data Types", https://docs.nvidia.com/cuda/cublas/#d-block-scaling-for-fp8-and-fp4-data-types):
// an operand stored k x `cols` column-major (A stored k x m, B k x n, as BlockLayout) gets one
// UE8M0 scale, a byte e meaning 2^(e - 127), per 32 consecutive elements along k of each column,
// L = k / 32 of them per column (k a multiple of 32).
struct MxLayout {
  std::uint64_t k = 0, cols = 0;
  std::uint64_t k_blocks() const;        // L
  std::uint64_t padded_cols() const;     // cols rounded up to a multiple of 128
  std::uint64_t padded_k_blocks() const; // L rounded up to a multiple of 4
  // The byte cuBLASLt reads column `col`'s k-block `kb` at ("1D Block Scaling Factors Layout",
  // https://docs.nvidia.com/cuda/cublas/#d-block-scaling-factors-layout): the scales form a
  // padded_cols() x padded_k_blocks() matrix cut into 128 x 4 tiles of 512 bytes, the tiles in
  // row-major order (tile (col / 128, kb / 4) starts at (kb / 4 * 4 + col / 128 *
  // padded_k_blocks()) * 128), and within a tile "offset = (outer % 32) * 16 + (outer / 32) * 4 +
  // inner" with outer = col % 128 and inner = kb % 4 (torchao's to_blocked,
  // torchao/prototype/mx_formats/utils.py, lays torch._scaled_mm's scales out the same way).
  std::uint64_t index(std::uint64_t col, std::uint64_t kb) const;
  std::uint64_t size() const; // bytes: padded_cols() x padded_k_blocks(), the padding 0
};
// The E8M0 scale of a block whose largest |x| is `amax`, by the MX spec's conversion: X =
// 2^(floor(log2(amax)) - emax_elem), emax_elem = 8 for E4M3 (its largest normal 448 = 1.75 x
// 2^8), the exponent clamped to UE8M0's [-127, 127]; 127 (X = 1) for a block of zeros. Elements
// are then stored as E4M3(x / X), saturating at 448 as the spec allows.
unsigned char e8m0_scale_of(double amax);
double e8m0_value(unsigned char e); // 2^(e - 127); NaN for 0xFF
// The same N(0, 1) draws as random_normal_e4m3_scaled(k * cols, seed), each 32-element block of
// a column stored as E4M3(x / X) with its own X. `scales` holds size() bytes in MxLayout's order
// (padding 0), `amax` the largest |x| of all.
struct MxScaledE4m3 {
  std::vector<unsigned char> data; // E4M3 bytes, k x cols column-major
  double amax = 0;
  MxLayout layout;
  std::vector<unsigned char> scales;
  double at(std::uint64_t col, std::uint64_t kb) const {
    return e8m0_value(scales.at(layout.index(col, kb)));
  }
};
MxScaledE4m3 random_normal_e4m3_mx(std::uint64_t k, std::uint64_t cols, std::uint64_t seed);
// Why MXFP8 cannot take an m x n x k GEMM in the TN layout, nullopt when it can: k a multiple of
// 32 (the docs define the block-scaled product for K divisible by the block size; any m and n, the
// scales being padded to whole tiles).
std::optional<std::string> mx_scale_shape_problem(std::uint64_t m, std::uint64_t n,
                                                  std::uint64_t k);

// One entry of D (m x n) and what the GPU produced there.
struct Entry {
  std::uint64_t i = 0, j = 0; // row, column
  double got = 0;
};
// `count` entries: the four corners, then pseudo-random ones (deterministic for a seed).
std::vector<Entry> sample_entries(std::uint64_t m, std::uint64_t n, int count, std::uint64_t seed);

// Checks D(i, j) = scale x sum_p A[i * k + p] * B[j * k + p] (A stored k x m and B k x n,
// column-major, so both rows are contiguous) for every entry: |got - reference| must be at most
// tolerance x scale x sum_p |A||B| (0: exact, for integers). `scale`: the product of A's and B's
// dequantisation scales (FP8), 1 otherwise; `a_rows` and `b_cols`, when not empty, multiply it by
// A's scale of row i and B's of column j (row-wise FP8). The reference is rounded to the output
// type first. nullopt when every entry agrees, else the first that does not, with both values.
std::optional<std::string> verify(const std::vector<Entry> &entries, Element ab,
                                  const unsigned char *a, const unsigned char *b, std::uint64_t k,
                                  Element cd, double tolerance, double scale = 1,
                                  const std::vector<float> &a_rows = {},
                                  const std::vector<float> &b_cols = {});
// Block-scaled FP8 (A stored k x m, B k x n): D(i, j) = sum over k-blocks kb of a.at(i, kb) x
// b.at(j, kb) x the dot product of that block's elements as stored, within tolerance x the same
// sum of |A||B|, rounded to `cd` first; a result scaled per tensor or per row is wrong.
std::optional<std::string> verify(const std::vector<Entry> &entries, const BlockScaledE4m3 &a,
                                  const BlockScaledE4m3 &b, Element cd, double tolerance);
// MXFP8 (A stored k x m, B k x n): the same with 32-element k-blocks and a.at(i, kb) x
// b.at(j, kb); a result scaled per tensor or with the scales read in another layout is wrong.
std::optional<std::string> verify(const std::vector<Entry> &entries, const MxScaledE4m3 &a,
                                  const MxScaledE4m3 &b, Element cd, double tolerance);

// How a sustained (--long) run changed: the median rate of the last tenth of the samples against
// the first tenth (at least 3 samples each), and the last SM clock reading against the first
// (`series`: objects with "sm_clock_mhz", oldest first), each as a fraction (-0.12 = 12 % lower);
// nullopt when there is too little to compare. `note` when either fell by more than 10 %
// (benchmarking.md §5 rule 9).
struct Drift {
  std::optional<double> rate_change, clock_change;
  std::optional<std::string> note;
};
Drift drift(const std::vector<double> &sample_seconds, const nlohmann::json &series);

} // namespace dlrig::bench::gemm

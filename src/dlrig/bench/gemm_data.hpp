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

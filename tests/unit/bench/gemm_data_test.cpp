// gpu.gemm's host side (bench/gemm_data.hpp): element encodings against published bit patterns
// (IEEE 754 binary16; bfloat16; OCP 8-bit floating point E4M3, "OCP 8-bit Floating Point
// Specification (OFP8)" rev. 1.0 table 1: max normal 448 = S.1111.110, min subnormal 2^-9), the
// random inputs' distribution, the sampled entries and the reference check.
#include "dlrig/bench/gemm_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dlrig::bench::gemm {
namespace {

unsigned bits(Element e, double x) {
  unsigned char b[4] = {};
  write_element(e, x, b);
  unsigned v = 0;
  std::memcpy(&v, b, element_bytes(e));
  return v;
}

TEST(GemmData, HalfEncodesAsIeee754Binary16) {
  EXPECT_EQ(bits(Element::f16, 1.0), 0x3c00u);
  EXPECT_EQ(bits(Element::f16, -2.0), 0xc000u);
  EXPECT_EQ(bits(Element::f16, 65504.0), 0x7bffu);
  EXPECT_EQ(bits(Element::f16, std::ldexp(1.0, -24)), 0x0001u);       // smallest subnormal
  EXPECT_EQ(bits(Element::f16, 1.0 + std::ldexp(1.0, -11)), 0x3c00u); // a tie rounds to even
  EXPECT_EQ(bits(Element::f16, 1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02u);
  unsigned char b[2];
  for (double x : {0.1, -3.75, 1e-6, 1234.5}) {
    write_element(Element::f16, x, b);
    EXPECT_EQ(read_element(Element::f16, b), round_to(Element::f16, x)) << x;
  }
}

TEST(GemmData, Bfloat16KeepsTheTopHalfOfAFloatRoundedToEven) {
  EXPECT_EQ(bits(Element::bf16, 1.0), 0x3f80u);
  EXPECT_EQ(bits(Element::bf16, -1.0), 0xbf80u);
  EXPECT_EQ(bits(Element::bf16, 1.0 + std::ldexp(1.0, -8)), 0x3f80u); // tie to even
  EXPECT_EQ(bits(Element::bf16, 1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82u);
  EXPECT_DOUBLE_EQ(round_to(Element::bf16, 3.14159), 3.140625);
}

TEST(GemmData, E4m3FollowsTheOcpFp8Table) {
  EXPECT_EQ(bits(Element::e4m3, 1.0), 0x38u);   // 0.0111.000
  EXPECT_EQ(bits(Element::e4m3, 448.0), 0x7eu); // 0.1111.110, the largest finite
  EXPECT_EQ(bits(Element::e4m3, 1e6), 0x7eu);   // saturates
  EXPECT_EQ(bits(Element::e4m3, -448.0), 0xfeu);
  EXPECT_EQ(bits(Element::e4m3, std::ldexp(1.0, -9)), 0x01u); // smallest subnormal
  EXPECT_EQ(bits(Element::e4m3, std::ldexp(1.0, -6)), 0x08u); // smallest normal
  EXPECT_DOUBLE_EQ(round_to(Element::e4m3, 1.0625), 1.0);     // a tie rounds to even
  EXPECT_DOUBLE_EQ(round_to(Element::e4m3, 1.1875), 1.25);
  unsigned char b = 0x7e;
  EXPECT_DOUBLE_EQ(read_element(Element::e4m3, &b), 448.0);
}

TEST(GemmData, IntegersRoundAndSaturate) {
  EXPECT_DOUBLE_EQ(round_to(Element::i8, 200), 127);
  EXPECT_DOUBLE_EQ(round_to(Element::i8, -200), -127);
  EXPECT_DOUBLE_EQ(round_to(Element::i8, 2.5), 2); // ties to even
  unsigned char b[4];
  write_element(Element::i32, -123456, b);
  EXPECT_DOUBLE_EQ(read_element(Element::i32, b), -123456);
}

TEST(GemmData, RandomInputsAreStandardNormalAndDeterministic) {
  const auto v = random_normal(Element::f32, 20000, 7);
  ASSERT_EQ(v.size(), 80000u);
  double sum = 0, sq = 0;
  int zeros = 0;
  for (std::size_t i = 0; i < 20000; ++i) {
    double x = read_element(Element::f32, v.data() + 4 * i);
    sum += x;
    sq += x * x;
    zeros += x == 0;
  }
  EXPECT_NEAR(sum / 20000, 0, 0.03);
  EXPECT_NEAR(sq / 20000, 1, 0.05);
  EXPECT_EQ(zeros, 0);
  EXPECT_EQ(v, random_normal(Element::f32, 20000, 7));
  EXPECT_NE(v, random_normal(Element::f32, 20000, 8));
  const auto i8 = random_normal(Element::i8, 5001, 1);
  EXPECT_EQ(i8.size(), 5001u);
}

TEST(GemmData, SampledEntriesStartAtTheCornersAndStayInside) {
  auto e = sample_entries(100, 30, 64, 3);
  ASSERT_EQ(e.size(), 64u);
  EXPECT_EQ(e[0].i, 0u);
  EXPECT_EQ(e[1].i, 99u);
  EXPECT_EQ(e[1].j, 29u);
  for (auto &x : e) {
    EXPECT_LT(x.i, 100u);
    EXPECT_LT(x.j, 30u);
  }
}

TEST(GemmData, VerifyAcceptsTheProductAndNamesAWrongEntry) {
  const std::uint64_t m = 3, n = 2, k = 5;
  auto a = random_normal(Element::bf16, k * m, 1);
  auto b = random_normal(Element::bf16, k * n, 2);
  auto entries = sample_entries(m, n, 6, 1);
  for (auto &e : entries) {
    double sum = 0;
    for (std::uint64_t p = 0; p < k; ++p)
      sum += read_element(Element::bf16, a.data() + 2 * (e.i * k + p)) *
             read_element(Element::bf16, b.data() + 2 * (e.j * k + p));
    e.got = round_to(Element::bf16, sum);
  }
  EXPECT_FALSE(verify(entries, Element::bf16, a.data(), b.data(), k, Element::bf16, 1e-2));
  entries[2].got += 1;
  auto why = verify(entries, Element::bf16, a.data(), b.data(), k, Element::bf16, 1e-2);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("host reference"), std::string::npos) << *why;
  entries[2].got = std::nan("");
  EXPECT_TRUE(verify(entries, Element::bf16, a.data(), b.data(), k, Element::bf16, 1e-2));
}

TEST(GemmData, IntegerProductsMustBeExact) {
  const std::uint64_t k = 64;
  auto a = random_normal(Element::i8, k, 4);
  auto b = random_normal(Element::i8, k, 5);
  double sum = 0;
  for (std::uint64_t p = 0; p < k; ++p)
    sum += read_element(Element::i8, a.data() + p) * read_element(Element::i8, b.data() + p);
  std::vector<Entry> e{{0, 0, sum}};
  EXPECT_FALSE(verify(e, Element::i8, a.data(), b.data(), k, Element::i32, 0));
  e[0].got += 1;
  EXPECT_TRUE(verify(e, Element::i8, a.data(), b.data(), k, Element::i32, 0));
}

TEST(GemmData, ScaledE4m3PutsTheLargestValueOn448AndKeepsItsDequantisationScale) {
  const auto s = random_normal_e4m3_scaled(4096, 9);
  ASSERT_EQ(s.data.size(), 4096u);
  EXPECT_GT(s.amax, 2.5); // 4096 draws of N(0, 1)
  EXPECT_LT(s.amax, 5.5);
  EXPECT_FLOAT_EQ(s.dequant, static_cast<float>(s.amax / 448));
  double largest = 0;
  int subnormal = 0;
  const auto plain = random_normal(Element::e4m3, 4096, 9);
  int plain_subnormal = 0;
  for (std::size_t i = 0; i < 4096; ++i) {
    const double q = read_element(Element::e4m3, s.data.data() + i);
    largest = std::max(largest, std::fabs(q));
    subnormal += std::fabs(q) < std::ldexp(1.0, -6);
    plain_subnormal +=
        std::fabs(read_element(Element::e4m3, plain.data() + i)) < std::ldexp(1.0, -6);
  }
  EXPECT_DOUBLE_EQ(largest, 448);
  EXPECT_LT(subnormal, plain_subnormal); // the range is used instead of the subnormals
  // The same draws as random_normal: dequant x stored is the value within E4M3's rounding.
  const auto f32 = random_normal(Element::f32, 4096, 9);
  for (std::size_t i = 0; i < 4096; i += 97) {
    const double x = read_element(Element::f32, f32.data() + 4 * i);
    const double back = s.dequant * read_element(Element::e4m3, s.data.data() + i);
    EXPECT_NEAR(back, x, std::fabs(x) / 16 + s.dequant * std::ldexp(1.0, -9)) << i;
  }
}

// Row e.i of A (stored k x m) times column e.j of B (stored k x n), as stored (no scales).
double e4m3_dot(const ScaledE4m3 &a, const ScaledE4m3 &b, const Entry &e, std::uint64_t k) {
  double sum = 0;
  for (std::uint64_t p = 0; p < k; ++p)
    sum += read_element(Element::e4m3, a.data.data() + e.i * k + p) *
           read_element(Element::e4m3, b.data.data() + e.j * k + p);
  return sum;
}

TEST(GemmData, VerifyAppliesTheScalesAndRejectsAResultThatIgnoredThem) {
  const std::uint64_t m = 4, n = 3, k = 64;
  const auto a = random_normal_e4m3_scaled(k * m, 1);
  const auto b = random_normal_e4m3_scaled(k * n, 2);
  const double scale = static_cast<double>(a.dequant) * b.dequant;
  auto scaled = sample_entries(m, n, 8, 1);
  auto ignored = scaled;
  for (std::size_t x = 0; x < scaled.size(); ++x) {
    const double sum = e4m3_dot(a, b, scaled[x], k);
    scaled[x].got = round_to(Element::bf16, scale * sum);
    ignored[x].got = round_to(Element::bf16, sum);
  }
  EXPECT_FALSE(
      verify(scaled, Element::e4m3, a.data.data(), b.data.data(), k, Element::bf16, 1e-2, scale));
  EXPECT_TRUE(
      verify(ignored, Element::e4m3, a.data.data(), b.data.data(), k, Element::bf16, 1e-2, scale));
  EXPECT_TRUE(verify(scaled, Element::e4m3, a.data.data(), b.data.data(), k, Element::bf16, 1e-2));
}

// Row-wise: each row of k elements has its own amax on 448; the reference applies A's row scale
// and B's column scale, and a result with one tensor-wide scale instead is wrong.
TEST(GemmData, RowWiseScalesPutEachRowsLargestOn448AndVerifyAppliesThem) {
  const std::uint64_t m = 6, n = 5, k = 64;
  const auto a = random_normal_e4m3_scaled(k * m, 3, k);
  const auto b = random_normal_e4m3_scaled(k * n, 4, k);
  ASSERT_EQ(a.rows_dequant.size(), m);
  ASSERT_EQ(b.rows_dequant.size(), n);
  const auto whole = random_normal_e4m3_scaled(k * m, 3);
  EXPECT_DOUBLE_EQ(a.amax, whole.amax); // the same draws
  for (std::uint64_t i = 0; i < m; ++i) {
    double largest = 0;
    for (std::uint64_t p = 0; p < k; ++p)
      largest =
          std::max(largest, std::fabs(read_element(Element::e4m3, a.data.data() + i * k + p)));
    EXPECT_DOUBLE_EQ(largest, 448) << "row " << i;
  }
  EXPECT_FLOAT_EQ(a.dequant, *std::min_element(a.rows_dequant.begin(), a.rows_dequant.end()));
  auto good = sample_entries(m, n, 12, 2);
  auto one_scale = good;
  for (std::size_t x = 0; x < good.size(); ++x) {
    const double sum = e4m3_dot(a, b, good[x], k);
    good[x].got = round_to(Element::bf16, static_cast<double>(a.rows_dequant[good[x].i]) *
                                              b.rows_dequant[good[x].j] * sum);
    one_scale[x].got = round_to(Element::bf16, static_cast<double>(a.dequant) * b.dequant * sum);
  }
  EXPECT_FALSE(verify(good, Element::e4m3, a.data.data(), b.data.data(), k, Element::bf16, 1e-2, 1,
                      a.rows_dequant, b.rows_dequant));
  EXPECT_TRUE(verify(one_scale, Element::e4m3, a.data.data(), b.data.data(), k, Element::bf16, 1e-2,
                     1, a.rows_dequant, b.rows_dequant));
}

// cuBLAS's block-scale layouts ("Scaling factors layouts", cuBLAS docs 3.1.4.5.1), worked by
// hand: k = 300 makes L = ceil(300 / 128) = 3 k-blocks, the last of 44 elements.
TEST(GemmData, BlockLayoutsAreTheOnesCublasDocuments) {
  // 1 x 128 (VEC128_32F), "M-major ... shape M x L": 8 rows x 3 k-blocks, rows contiguous.
  const BlockLayout vec{300, 8, 1};
  EXPECT_EQ(vec.k_blocks(), 3u);
  EXPECT_EQ(vec.col_blocks(), 8u);
  EXPECT_EQ(vec.index(0, 0), 0u);
  EXPECT_EQ(vec.index(5, 0), 5u);
  EXPECT_EQ(vec.index(5, 2), 21u); // 5 + 2 x 8
  EXPECT_EQ(vec.size(), 24u);
  // 128 x 128 (BLK128x128_32F), "K-major", column stride a multiple of 4: L4 = 4, and 260
  // columns make 3 column blocks (the last of 4 columns).
  const BlockLayout blk{300, 260, 128};
  EXPECT_EQ(blk.col_blocks(), 3u);
  EXPECT_EQ(blk.index(0, 0), 0u);
  EXPECT_EQ(blk.index(127, 1), 1u);  // the same block column as column 0
  EXPECT_EQ(blk.index(128, 0), 4u);  // the next one starts after L4 = 4 floats
  EXPECT_EQ(blk.index(259, 2), 10u); // 2 + 2 x 4
  EXPECT_EQ(blk.size(), 12u);        // 3 x 4, one float of padding per block column
  EXPECT_EQ((BlockLayout{512, 128, 128}.size()), 4u); // L = 4 needs no padding
  EXPECT_EQ((BlockLayout{640, 128, 128}.size()), 8u); // L = 5 pads to 8
}

// Two k-blocks (k = 256), every stored element 1: D(i, 0) = 128 x sum over kb of a_scale[i, kb] x
// b_scale[kb, 0]. A's scales in the 1 x 128 layout are {1, 2, 3, 4} for the first k-block and
// {10, 20, 30, 40} for the second, B's 128 x 128 scales 1 and 1 (two floats of padding), so
// D(i, 0) = 128 x 11 x (i + 1): 1408, 2816, 4224, 5632, each exact in BF16.
TEST(GemmData, BlockVerifyAppliesEachKBlocksScalesWorkedByHand) {
  const std::uint64_t m = 4, n = 1, k = 256;
  BlockScaledE4m3 a, b;
  a.layout = {k, m, 1};
  b.layout = {k, n, 128};
  a.data.assign(k * m, 0);
  b.data.assign(k * n, 0);
  for (auto &x : a.data)
    write_element(Element::e4m3, 1.0, &x);
  b.data = std::vector<unsigned char>(k * n, a.data[0]);
  a.dequant = {1, 2, 3, 4, 10, 20, 30, 40};
  b.dequant = {1, 1, 0, 0};
  std::vector<Entry> good, per_tensor, k_major;
  for (std::uint64_t i = 0; i < m; ++i) {
    good.push_back({i, 0, 128.0 * 11 * static_cast<double>(i + 1)});
    per_tensor.push_back({i, 0, 256.0}); // a_scale[0, 0] x b_scale[0, 0] x 256 products of 1
    // A's scales read k-major (index kb + i x L), a layout mistake: dequant[2i] and [2i + 1].
    k_major.push_back({i, 0, 128.0 * (a.dequant[2 * i] + a.dequant[2 * i + 1])});
  }
  EXPECT_FALSE(verify(good, a, b, Element::bf16, 1e-2));
  EXPECT_EQ(verify({{3, 0, 5000}}, a, b, Element::bf16, 1e-2),
            "D[3, 0] is 5000 but the host reference is 5632 (allowed difference 56.3)");
  EXPECT_TRUE(verify(per_tensor, a, b, Element::bf16, 1e-2));
  EXPECT_TRUE(verify(k_major, a, b, Element::bf16, 1e-2));
}

// The block quantiser on the generator's draws: every block's largest |value| lands on 448, its
// scale is amax(block) / 448 of the same draws as the other FP8 inputs, the last short k-block
// (300 = 2 x 128 + 44) and the last narrow column block (136 = 128 + 8) get their own, and the
// 128 x 128 layout's padding stays 0.
TEST(GemmData, BlockScalesPutEachBlocksLargestOn448) {
  const std::uint64_t k = 300;
  for (std::uint64_t cols_per_block : {1u, 128u}) {
    const std::uint64_t cols = cols_per_block == 1 ? 6 : 136;
    const auto q = random_normal_e4m3_blocks(k, cols, cols_per_block, 5);
    const auto draws = random_normal(Element::f32, k * cols, 5);
    EXPECT_DOUBLE_EQ(q.amax, random_normal_e4m3_scaled(k * cols, 5).amax); // the same draws
    ASSERT_EQ(q.dequant.size(), q.layout.size());
    ASSERT_EQ(q.data.size(), k * cols);
    std::vector<bool> used(q.dequant.size(), false);
    for (std::uint64_t c0 = 0; c0 < cols; c0 += cols_per_block)
      for (std::uint64_t kb = 0; kb < 3; ++kb) {
        double largest = 0, amax = 0;
        for (std::uint64_t c = c0; c < std::min(cols, c0 + cols_per_block); ++c)
          for (std::uint64_t p = kb * 128; p < std::min(k, kb * 128 + 128); ++p) {
            largest = std::max(largest,
                               std::fabs(read_element(Element::e4m3, q.data.data() + c * k + p)));
            amax = std::max(amax,
                            std::fabs(read_element(Element::f32, draws.data() + 4 * (c * k + p))));
          }
        EXPECT_DOUBLE_EQ(largest, 448) << cols_per_block << " " << c0 << " " << kb;
        EXPECT_NEAR(q.at(c0, kb), amax / 448, amax / 448 * 1e-6) << c0 << " " << kb;
        used[q.layout.index(c0, kb)] = true;
      }
    for (std::size_t x = 0; x < used.size(); ++x) {
      if (!used[x]) {
        EXPECT_EQ(q.dequant[x], 0.0f) << "padding at " << x;
      }
    }
    EXPECT_EQ(std::count(used.begin(), used.end(), false), cols_per_block == 1 ? 0 : 2);
  }
}

// On random blocks the reference takes each block's scales; the same product with one scale for
// the tensor (A's and B's first block's) or one per row of A and column of B is wrong.
TEST(GemmData, BlockVerifyRejectsAResultScaledPerTensorOrPerRow) {
  const std::uint64_t m = 8, n = 136, k = 384;
  const auto a = random_normal_e4m3_blocks(k, m, 1, 7);
  const auto b = random_normal_e4m3_blocks(k, n, 128, 8);
  auto good = sample_entries(m, n, 32, 3);
  auto per_tensor = good, per_row = good;
  for (std::size_t x = 0; x < good.size(); ++x) {
    const Entry &e = good[x];
    double blocks = 0, plain = 0;
    for (std::uint64_t kb = 0; kb < 3; ++kb) {
      double sum = 0;
      for (std::uint64_t p = kb * 128; p < kb * 128 + 128; ++p)
        sum += read_element(Element::e4m3, a.data.data() + e.i * k + p) *
               read_element(Element::e4m3, b.data.data() + e.j * k + p);
      blocks += static_cast<double>(a.at(e.i, kb)) * b.at(e.j, kb) * sum;
      plain += sum;
    }
    good[x].got = round_to(Element::bf16, blocks);
    per_tensor[x].got =
        round_to(Element::bf16, static_cast<double>(a.at(0, 0)) * b.at(0, 0) * plain);
    per_row[x].got =
        round_to(Element::bf16, static_cast<double>(a.at(e.i, 0)) * b.at(e.j, 0) * plain);
  }
  EXPECT_FALSE(verify(good, a, b, Element::bf16, 1e-2));
  EXPECT_TRUE(verify(per_tensor, a, b, Element::bf16, 1e-2));
  EXPECT_TRUE(verify(per_row, a, b, Element::bf16, 1e-2));
}

TEST(GemmData, BlockScaleShapesNeedMAndNMultiplesOf4AndFp8AlignedK) {
  EXPECT_FALSE(block_scale_shape_problem(256, 384, 256));
  EXPECT_FALSE(block_scale_shape_problem(4096, 11008, 4096));
  EXPECT_FALSE(block_scale_shape_problem(4, 4, 272)); // k need not be a multiple of 128
  EXPECT_EQ(block_scale_shape_problem(130, 384, 264),
            "130x384x264: m = 130 is not a multiple of 4, k = 264 is not a multiple of 16 "
            "(cuBLASLt's 128-element block scales need m and n multiples of 4, and FP8 16-byte "
            "aligned columns: k a multiple of 16)");
  EXPECT_NE(block_scale_shape_problem(256, 6, 256)->find("n = 6 is not a multiple of 4"),
            std::string::npos);
}

// cuBLAS's "1D Block Scaling Factors Layout" for MXFP8 (VEC32_UE8M0), worked by hand from its
// formulas: within a 128 x 4 tile, offset = (outer % 32) * 16 + (outer / 32) * 4 + inner; tiles
// of 512 bytes in row-major order, tile (sf_outer, sf_inner) at (sf_inner + sf_outer *
// sf_inner_dim) * 128. k = 256 makes L = 8 k-blocks (two tiles across), 200 columns pad to 256
// (two tiles down).
TEST(GemmData, MxLayoutIsCublasTiled128x4Layout) {
  const MxLayout l{256, 200};
  EXPECT_EQ(l.k_blocks(), 8u);
  EXPECT_EQ(l.padded_k_blocks(), 8u);
  EXPECT_EQ(l.padded_cols(), 256u);
  EXPECT_EQ(l.size(), 2048u); // 4 tiles of 512
  EXPECT_EQ(l.index(0, 0), 0u);
  EXPECT_EQ(l.index(0, 1), 1u);      // inner: the next byte
  EXPECT_EQ(l.index(1, 0), 16u);     // outer 1: the next 16-byte row of the tile
  EXPECT_EQ(l.index(32, 0), 4u);     // outer 32: beside outer 0, 4 bytes on
  EXPECT_EQ(l.index(33, 3), 23u);    // 1 x 16 + 1 x 4 + 3
  EXPECT_EQ(l.index(127, 3), 511u);  // 31 x 16 + 3 x 4 + 3: the tile's last byte
  EXPECT_EQ(l.index(0, 4), 512u);    // tile (0, 1): (4 + 0 x 8) x 128
  EXPECT_EQ(l.index(128, 0), 1024u); // tile (1, 0): (0 + 1 x 8) x 128
  EXPECT_EQ(l.index(199, 7), 1659u); // tile (1, 1) at 1536; outer 71: 7 x 16 + 2 x 4 + 3
  // k = 96: L = 3 pads to 4, 4 columns to 128: one tile, the fourth k-block's bytes padding.
  const MxLayout small{96, 4};
  EXPECT_EQ(small.size(), 512u);
  EXPECT_EQ(small.index(3, 2), 50u);
  // Every column and k-block gets its own byte.
  std::vector<bool> seen(l.size(), false);
  for (std::uint64_t c = 0; c < l.padded_cols(); ++c)
    for (std::uint64_t kb = 0; kb < l.padded_k_blocks(); ++kb) {
      ASSERT_LT(l.index(c, kb), l.size());
      EXPECT_FALSE(seen[l.index(c, kb)]) << c << " " << kb;
      seen[l.index(c, kb)] = true;
    }
}

// OCP MX v1.0's scale: X = 2^(floor(log2(amax)) - 8) for E4M3 (emax_elem 8), stored as UE8M0
// (bias 127); 0xFF is NaN.
TEST(GemmData, E8m0ScaleIsTheMxSpecsPowerOfTwo) {
  EXPECT_EQ(e8m0_scale_of(1.0), 119);   // 2^(0 - 8)
  EXPECT_EQ(e8m0_scale_of(1.99), 119);  // floor(log2 1.99) = 0
  EXPECT_EQ(e8m0_scale_of(2.0), 120);   // 2^(1 - 8)
  EXPECT_EQ(e8m0_scale_of(448.0), 127); // 2^(8 - 8) = 1
  EXPECT_EQ(e8m0_scale_of(0.75), 118);  // 2^(-1 - 8)
  EXPECT_EQ(e8m0_scale_of(0.0), 127);   // a block of zeros: X = 1
  EXPECT_EQ(e8m0_scale_of(1e300), 254); // clamped to 2^127
  EXPECT_EQ(e8m0_value(127), 1.0);
  EXPECT_EQ(e8m0_value(119), std::ldexp(1.0, -8));
  EXPECT_EQ(e8m0_value(0), std::ldexp(1.0, -127));
  EXPECT_TRUE(std::isnan(e8m0_value(0xFF)));
}

// The MX quantiser on the generator's draws: each 32-element block's scale is 2^(floor(log2
// amax) - 8) of the same draws as the other FP8 inputs, its largest stored value lies in
// [256, 448] (amax / X in [256, 512), saturating at 448), and the tiles' padding stays 0.
TEST(GemmData, MxScalesAreEachBlocksPowerOfTwo) {
  const std::uint64_t k = 96, cols = 130;
  const auto q = random_normal_e4m3_mx(k, cols, 5);
  const auto draws = random_normal(Element::f32, k * cols, 5);
  EXPECT_DOUBLE_EQ(q.amax, random_normal_e4m3_scaled(k * cols, 5).amax); // the same draws
  ASSERT_EQ(q.scales.size(), q.layout.size());
  ASSERT_EQ(q.scales.size(), 256u * 4u);
  std::vector<bool> used(q.scales.size(), false);
  for (std::uint64_t c = 0; c < cols; ++c)
    for (std::uint64_t kb = 0; kb < 3; ++kb) {
      double largest = 0, amax = 0;
      for (std::uint64_t p = kb * 32; p < kb * 32 + 32; ++p) {
        largest =
            std::max(largest, std::fabs(read_element(Element::e4m3, q.data.data() + c * k + p)));
        amax =
            std::max(amax, std::fabs(read_element(Element::f32, draws.data() + 4 * (c * k + p))));
      }
      EXPECT_EQ(q.at(c, kb), std::ldexp(1.0, std::ilogb(amax) - 8)) << c << " " << kb;
      EXPECT_GE(largest, 256) << c << " " << kb;
      EXPECT_LE(largest, 448) << c << " " << kb;
      used[q.layout.index(c, kb)] = true;
    }
  for (std::size_t x = 0; x < used.size(); ++x) {
    if (!used[x]) {
      EXPECT_EQ(q.scales[x], 0) << "padding at " << x;
    }
  }
  EXPECT_EQ(std::count(used.begin(), used.end(), true), 130 * 3);
}

// Two k-blocks (k = 64), every stored element 1: D(i, 0) = 32 x sum over kb of a_scale[i, kb] x
// b_scale[0, kb]. A's scales 2, 4 (row 0) and 1/2, 8 (row 1), B's 1 and 1/4, in the tiled layout:
// D(0, 0) = 32 x (2 + 1) = 96, D(1, 0) = 32 x (0.5 + 2) = 80. Read as a plain row-major m x L
// matrix (byte i x L + kb), row 1's scales are the tile's padding (2^-127): D(1, 0) ~ 0.
TEST(GemmData, MxVerifyAppliesEachBlocksScalesWorkedByHand) {
  const std::uint64_t m = 2, n = 1, k = 64;
  MxScaledE4m3 a, b;
  a.layout = {k, m};
  b.layout = {k, n};
  a.data.assign(k * m, 0);
  write_element(Element::e4m3, 1.0, &a.data[0]);
  a.data.assign(k * m, a.data[0]);
  b.data.assign(k * n, a.data[0]);
  a.scales.assign(a.layout.size(), 0);
  b.scales.assign(b.layout.size(), 0);
  a.scales[a.layout.index(0, 0)] = 128; // 2
  a.scales[a.layout.index(0, 1)] = 129; // 4
  a.scales[a.layout.index(1, 0)] = 126; // 1/2
  a.scales[a.layout.index(1, 1)] = 130; // 8
  b.scales[b.layout.index(0, 0)] = 127; // 1
  b.scales[b.layout.index(0, 1)] = 125; // 1/4
  EXPECT_EQ(a.layout.index(1, 0), 16u);
  EXPECT_FALSE(verify({{0, 0, 96}, {1, 0, 80}}, a, b, Element::bf16, 1e-2));
  EXPECT_EQ(verify({{1, 0, 81}}, a, b, Element::bf16, 1e-2),
            "D[1, 0] is 81 but the host reference is 80 (allowed difference 0.8)");
  const double row_major_1 = 32 * (e8m0_value(a.scales[2]) * 1 + e8m0_value(a.scales[3]) * 0.25);
  EXPECT_LT(row_major_1, 1e-30);
  EXPECT_TRUE(verify({{0, 0, 96}, {1, 0, row_major_1}}, a, b, Element::bf16, 1e-2));
  EXPECT_TRUE(verify({{0, 0, 64 * 2}, {1, 0, 64 * 2}}, a, b, Element::bf16, 1e-2)); // per tensor
}

// On random blocks the reference takes each block's two scales; the same product with one scale
// for the tensor (the first block's), or with the scales read as a plain row-major m x L matrix,
// is wrong.
TEST(GemmData, MxVerifyRejectsAResultScaledPerTensorOrReadRowMajor) {
  const std::uint64_t m = 8, n = 136, k = 128;
  const auto a = random_normal_e4m3_mx(k, m, 7);
  const auto b = random_normal_e4m3_mx(k, n, 8);
  const std::uint64_t blocks = k / 32;
  auto good = sample_entries(m, n, 32, 3);
  auto per_tensor = good, row_major = good;
  auto plain = [&](const MxScaledE4m3 &x, std::uint64_t col, std::uint64_t kb) {
    return e8m0_value(x.scales.at(col * blocks + kb));
  };
  for (std::size_t e = 0; e < good.size(); ++e) {
    const std::uint64_t i = good[e].i, j = good[e].j;
    double want = 0, tensor = 0, misread = 0;
    for (std::uint64_t kb = 0; kb < blocks; ++kb) {
      double sum = 0;
      for (std::uint64_t p = kb * 32; p < kb * 32 + 32; ++p)
        sum += read_element(Element::e4m3, a.data.data() + i * k + p) *
               read_element(Element::e4m3, b.data.data() + j * k + p);
      want += a.at(i, kb) * b.at(j, kb) * sum;
      tensor += a.at(0, 0) * b.at(0, 0) * sum;
      misread += plain(a, i, kb) * plain(b, j, kb) * sum;
    }
    good[e].got = round_to(Element::bf16, want);
    per_tensor[e].got = round_to(Element::bf16, tensor);
    row_major[e].got = round_to(Element::bf16, misread);
  }
  EXPECT_FALSE(verify(good, a, b, Element::bf16, 1e-2));
  EXPECT_TRUE(verify(per_tensor, a, b, Element::bf16, 1e-2));
  EXPECT_TRUE(verify(row_major, a, b, Element::bf16, 1e-2));
}

TEST(GemmData, MxShapesNeedKAMultipleOf32) {
  EXPECT_FALSE(mx_scale_shape_problem(256, 384, 256));
  EXPECT_FALSE(mx_scale_shape_problem(130, 6, 4096)); // m and n need no multiple: tiles are padded
  EXPECT_FALSE(mx_scale_shape_problem(4096, 4096, 11008));
  EXPECT_EQ(mx_scale_shape_problem(256, 256, 272),
            "256x256x272: k = 272 is not a multiple of 32 (MXFP8 scales each 32 consecutive "
            "elements along k, and cuBLAS defines the product for k divisible by the block)");
}

TEST(GemmData, DriftComparesTheFirstAndLastTenthAndTheClock) {
  std::vector<double> steady(40, 1e-3);
  EXPECT_NEAR(*drift(steady, nlohmann::json::array()).rate_change, 0, 1e-12);
  EXPECT_FALSE(drift(steady, nlohmann::json::array()).clock_change);
  EXPECT_FALSE(drift(steady, nlohmann::json::array()).note);
  std::vector<double> slower(40, 1e-3);
  for (std::size_t i = 30; i < 40; ++i)
    slower[i] = 1.25e-3; // the last quarter 25 % slower: the rate fell 20 %
  nlohmann::json clocks = nlohmann::json::array(
      {{{"sm_clock_mhz", 1980}}, {{"sm_clock_mhz", nullptr}}, {{"sm_clock_mhz", 1584}}});
  auto d = drift(slower, clocks);
  EXPECT_NEAR(*d.rate_change, -0.2, 1e-9);
  EXPECT_NEAR(*d.clock_change, -0.2, 1e-9);
  ASSERT_TRUE(d.note);
  EXPECT_EQ(*d.note, "the rate fell 20 % and the SM clock fell 20 % over the run: the GPU slows "
                     "as it heats (cooling, power limit)");
  EXPECT_FALSE(drift(std::vector<double>(20, 1e-3), clocks).rate_change); // under 3 per tenth
}

} // namespace
} // namespace dlrig::bench::gemm

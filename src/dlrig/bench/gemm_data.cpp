// The host side of gpu.gemm (gemm_data.hpp).
#include "dlrig/bench/gemm_data.hpp"
#include "dlrig/bench/gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <tuple>

namespace dlrig::bench::gemm {
namespace {
// Box-Muller: two uniforms in (0, 1] from one 64-bit word, two normals of N(0, scale^2).
template <class F> void each_normal(std::uint64_t count, std::uint64_t seed, double scale, F put) {
  for (std::uint64_t i = 0; i < count; i += 2) {
    const std::uint64_t w = gpu::pattern_word(seed, i / 2);
    const double u1 = (static_cast<double>(w >> 32) + 1) * 0x1.0p-32;
    const double u2 = static_cast<double>(w & 0xffffffffu) * 0x1.0p-32;
    const double r = std::sqrt(-2 * std::log(u1)) * scale;
    put(i, r * std::cos(2 * std::numbers::pi * u2));
    if (i + 1 < count)
      put(i + 1, r * std::sin(2 * std::numbers::pi * u2));
  }
}
} // namespace

std::vector<unsigned char> random_normal(Element e, std::uint64_t count, std::uint64_t seed) {
  const std::size_t size = element_bytes(e);
  std::vector<unsigned char> out(count * size);
  each_normal(count, seed, e == Element::i8 ? 32 : 1,
              [&](std::uint64_t i, double x) { write_element(e, x, out.data() + i * size); });
  return out;
}

namespace {
constexpr std::uint64_t kBlock = 128; // elements along k per block scale (Hopper's block modes)

constexpr std::uint64_t kMxBlock = 32; // elements along k per MX scale (OCP MX v1.0)

// What a block whose largest |x| is `amax` is multiplied by before rounding to E4M3: 448 / amax
// (448: E4M3's largest finite value, so the largest lands on it; 1 for a block of zeros), the
// rule of the per-tensor, row and 128-element block scales.
double onto_448(double amax) {
  constexpr double kE4m3Max = 448;
  return amax > 0 ? kE4m3Max / amax : 1;
}

// MXFP8's: 1 / X with X the block's E8M0 scale (e8m0_scale_of), a power of two.
double onto_mx(double amax) {
  return 1 / e8m0_value(e8m0_scale_of(amax));
}

// `count` N(0, 1) draws as E4M3 with a scale per block: the operand is `cols` runs of `k`
// elements, cut into blocks of `k_block` elements of `cols_per_block` runs each. Each block is
// stored as E4M3(x * scale_of(amax(block))), and put(col_block, kb, dequant) gets its
// dequantisation 1 / scale as a float32.
template <class Put>
std::vector<unsigned char> quantise_blocks(std::uint64_t k, std::uint64_t cols,
                                           std::uint64_t k_block, std::uint64_t cols_per_block,
                                           std::uint64_t seed, double &amax_all,
                                           double (*scale_of)(double), Put put) {
  std::vector<double> x(k * cols);
  each_normal(x.size(), seed, 1, [&](std::uint64_t i, double v) { x[i] = v; });
  std::vector<unsigned char> out(x.size());
  for (std::uint64_t c0 = 0; c0 < cols; c0 += cols_per_block)
    for (std::uint64_t p0 = 0; p0 < k; p0 += k_block) {
      const std::uint64_t c1 = std::min(cols, c0 + cols_per_block), p1 = std::min(k, p0 + k_block);
      double amax = 0;
      for (std::uint64_t c = c0; c < c1; ++c)
        for (std::uint64_t p = p0; p < p1; ++p)
          amax = std::max(amax, std::fabs(x[c * k + p]));
      const double scale = scale_of(amax);
      for (std::uint64_t c = c0; c < c1; ++c)
        for (std::uint64_t p = p0; p < p1; ++p)
          write_element(Element::e4m3, x[c * k + p] * scale, out.data() + c * k + p);
      amax_all = std::max(amax_all, amax);
      put(c0 / cols_per_block, p0 / k_block, static_cast<float>(1 / scale));
    }
  return out;
}
} // namespace

ScaledE4m3 random_normal_e4m3_scaled(std::uint64_t count, std::uint64_t seed, std::uint64_t row) {
  ScaledE4m3 out;
  if (row == 0 || count % row != 0) {
    out.data =
        quantise_blocks(count, 1, std::max<std::uint64_t>(count, 1), 1, seed, out.amax, onto_448,
                        [&](std::uint64_t, std::uint64_t, float d) { out.dequant = d; });
    return out;
  }
  out.data = quantise_blocks(
      row, count / row, row, 1, seed, out.amax, onto_448,
      [&](std::uint64_t, std::uint64_t, float d) { out.rows_dequant.push_back(d); });
  out.dequant = *std::min_element(out.rows_dequant.begin(), out.rows_dequant.end());
  return out;
}

std::uint64_t BlockLayout::k_blocks() const {
  return (k + kBlock - 1) / kBlock;
}

std::uint64_t BlockLayout::col_blocks() const {
  return (cols + cols_per_block - 1) / cols_per_block;
}

std::uint64_t BlockLayout::index(std::uint64_t col, std::uint64_t kb) const {
  if (cols_per_block == 1)
    return col + kb * cols;
  return kb + col / cols_per_block * ((k_blocks() + 3) / 4 * 4);
}

std::uint64_t BlockLayout::size() const {
  return cols_per_block == 1 ? cols * k_blocks() : col_blocks() * ((k_blocks() + 3) / 4 * 4);
}

BlockScaledE4m3 random_normal_e4m3_blocks(std::uint64_t k, std::uint64_t cols,
                                          std::uint64_t cols_per_block, std::uint64_t seed) {
  BlockScaledE4m3 out;
  out.layout = {k, cols, cols_per_block};
  out.dequant.assign(out.layout.size(), 0.0f);
  out.data = quantise_blocks(k, cols, kBlock, cols_per_block, seed, out.amax, onto_448,
                             [&](std::uint64_t col_block, std::uint64_t kb, float d) {
                               out.dequant.at(out.layout.index(col_block * cols_per_block, kb)) = d;
                             });
  return out;
}

std::optional<std::string> block_scale_shape_problem(std::uint64_t m, std::uint64_t n,
                                                     std::uint64_t k) {
  std::string off;
  for (const auto &[name, value, multiple] :
       {std::tuple{"m", m, 4}, std::tuple{"n", n, 4}, std::tuple{"k", k, 16}})
    if (value % multiple != 0)
      off += fmt::format("{}{} = {} is not a multiple of {}", off.empty() ? "" : ", ", name, value,
                         multiple);
  if (off.empty())
    return std::nullopt;
  return fmt::format("{}x{}x{}: {} (cuBLASLt's 128-element block scales need m and n multiples "
                     "of 4, and FP8 16-byte aligned columns: k a multiple of 16)",
                     m, n, k, off);
}

std::uint64_t MxLayout::k_blocks() const {
  return (k + kMxBlock - 1) / kMxBlock;
}

std::uint64_t MxLayout::padded_cols() const {
  return (cols + 127) / 128 * 128;
}

std::uint64_t MxLayout::padded_k_blocks() const {
  return (k_blocks() + 3) / 4 * 4;
}

std::uint64_t MxLayout::index(std::uint64_t col, std::uint64_t kb) const {
  const std::uint64_t tile = (kb / 4 * 4 + col / 128 * padded_k_blocks()) * 128;
  const std::uint64_t outer = col % 128, inner = kb % 4;
  return tile + (outer % 32) * 16 + (outer / 32) * 4 + inner;
}

std::uint64_t MxLayout::size() const {
  return padded_cols() * padded_k_blocks();
}

unsigned char e8m0_scale_of(double amax) {
  constexpr int kE4m3Emax = 8; // 448 = 1.75 x 2^8
  if (!(amax > 0) || !std::isfinite(amax))
    return 127;
  const int e = std::clamp(std::ilogb(amax) - kE4m3Emax, -127, 127);
  return static_cast<unsigned char>(e + 127);
}

double e8m0_value(unsigned char e) {
  return e == 0xFF ? std::nan("") : std::ldexp(1.0, int(e) - 127);
}

MxScaledE4m3 random_normal_e4m3_mx(std::uint64_t k, std::uint64_t cols, std::uint64_t seed) {
  MxScaledE4m3 out;
  out.layout = {k, cols};
  out.scales.assign(out.layout.size(), 0);
  out.data = quantise_blocks(k, cols, kMxBlock, 1, seed, out.amax, onto_mx,
                             [&](std::uint64_t col, std::uint64_t kb, float x) {
                               out.scales.at(out.layout.index(col, kb)) =
                                   static_cast<unsigned char>(std::ilogb(x) + 127);
                             });
  return out;
}

std::optional<std::string> mx_scale_shape_problem(std::uint64_t m, std::uint64_t n,
                                                  std::uint64_t k) {
  if (k % kMxBlock == 0)
    return std::nullopt;
  return fmt::format("{}x{}x{}: k = {} is not a multiple of 32 (MXFP8 scales each 32 consecutive "
                     "elements along k, and cuBLAS defines the product for k divisible by the "
                     "block)",
                     m, n, k, k);
}

std::vector<Entry> sample_entries(std::uint64_t m, std::uint64_t n, int count, std::uint64_t seed) {
  std::vector<Entry> out;
  if (m == 0 || n == 0)
    return out;
  using P = std::pair<std::uint64_t, std::uint64_t>;
  for (const P &c : {P{0, 0}, P{m - 1, n - 1}, P{m - 1, 0}, P{0, n - 1}})
    if (static_cast<int>(out.size()) < count)
      out.push_back({c.first, c.second});
  for (int s = static_cast<int>(out.size()); s < count; ++s) {
    const std::uint64_t w = gpu::pattern_word(seed ^ 0x5eed, static_cast<std::uint64_t>(s));
    out.push_back({(w >> 32) % m, (w & 0xffffffffu) % n});
  }
  return out;
}

namespace {
// D(i, j) against sum over k-blocks of scale(i, j, kb) x the block's dot product of A's row i and
// B's column j (A stored k x m, B k x n): |got - want| <= tolerance x sum of scale x |A||B|.
template <class Scale>
std::optional<std::string> check(const std::vector<Entry> &entries, Element ab,
                                 const unsigned char *a, const unsigned char *b, std::uint64_t k,
                                 std::uint64_t k_block, Element cd, double tolerance, Scale scale) {
  const std::size_t size = element_bytes(ab);
  for (const Entry &e : entries) {
    double reference = 0, bound = 0;
    const unsigned char *row_a = a + e.i * k * size;
    const unsigned char *row_b = b + e.j * k * size;
    for (std::uint64_t p0 = 0; p0 < k; p0 += k_block) {
      double sum = 0, magnitude = 0;
      for (std::uint64_t p = p0; p < std::min(k, p0 + k_block); ++p) {
        const double x = read_element(ab, row_a + p * size) * read_element(ab, row_b + p * size);
        sum += x;
        magnitude += std::fabs(x);
      }
      const double s = scale(e.i, e.j, p0 / k_block);
      reference += s * sum;
      bound += tolerance * std::fabs(s) * magnitude;
    }
    const double want = round_to(cd, reference);
    if (!(std::fabs(e.got - want) <= bound))
      return fmt::format("D[{}, {}] is {} but the host reference is {} (allowed difference {:.3g})",
                         e.i, e.j, e.got, want, bound);
  }
  return std::nullopt;
}
} // namespace

std::optional<std::string> verify(const std::vector<Entry> &entries, Element ab,
                                  const unsigned char *a, const unsigned char *b, std::uint64_t k,
                                  Element cd, double tolerance, double scale_all,
                                  const std::vector<float> &a_rows,
                                  const std::vector<float> &b_cols) {
  return check(entries, ab, a, b, k, std::max<std::uint64_t>(k, 1), cd, tolerance,
               [&](std::uint64_t i, std::uint64_t j, std::uint64_t) {
                 double scale = scale_all;
                 if (!a_rows.empty())
                   scale *= a_rows.at(i);
                 if (!b_cols.empty())
                   scale *= b_cols.at(j);
                 return scale;
               });
}

namespace {
// Block-scaled E4M3 (BlockScaledE4m3 or MxScaledE4m3): each k-block of `k_block` elements with
// A's and B's scales of that block.
template <class Scaled>
std::optional<std::string> verify_blocks(const std::vector<Entry> &entries, const Scaled &a,
                                         const Scaled &b, std::uint64_t k_block, Element cd,
                                         double tolerance) {
  if (a.layout.k != b.layout.k)
    return fmt::format("A's k ({}) is not B's ({})", a.layout.k, b.layout.k);
  return check(entries, Element::e4m3, a.data.data(), b.data.data(), a.layout.k, k_block, cd,
               tolerance, [&](std::uint64_t i, std::uint64_t j, std::uint64_t kb) {
                 return static_cast<double>(a.at(i, kb)) * b.at(j, kb);
               });
}
} // namespace

std::optional<std::string> verify(const std::vector<Entry> &entries, const BlockScaledE4m3 &a,
                                  const BlockScaledE4m3 &b, Element cd, double tolerance) {
  return verify_blocks(entries, a, b, kBlock, cd, tolerance);
}

std::optional<std::string> verify(const std::vector<Entry> &entries, const MxScaledE4m3 &a,
                                  const MxScaledE4m3 &b, Element cd, double tolerance) {
  return verify_blocks(entries, a, b, kMxBlock, cd, tolerance);
}

Drift drift(const std::vector<double> &sample_seconds, const nlohmann::json &series) {
  Drift d;
  const std::size_t tenth = sample_seconds.size() / 10;
  if (tenth >= 3) {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double first = median({sample_seconds.begin(), sample_seconds.begin() + tenth});
    const double last = median({sample_seconds.end() - tenth, sample_seconds.end()});
    if (first > 0 && last > 0)
      d.rate_change = first / last - 1; // rate is 1 / seconds
  }
  std::optional<double> first_clock, last_clock;
  if (series.is_array())
    for (const auto &r : series)
      if (r.contains("sm_clock_mhz") && r["sm_clock_mhz"].is_number()) {
        if (!first_clock)
          first_clock = r["sm_clock_mhz"].get<double>();
        last_clock = r["sm_clock_mhz"].get<double>();
      }
  if (first_clock && last_clock && *first_clock > 0 && series.size() >= 2)
    d.clock_change = *last_clock / *first_clock - 1;
  std::vector<std::string> fell;
  if (d.rate_change && *d.rate_change < -0.10)
    fell.push_back(fmt::format("the rate fell {:.0f} %", -100 * *d.rate_change));
  if (d.clock_change && *d.clock_change < -0.10)
    fell.push_back(fmt::format("the SM clock fell {:.0f} %", -100 * *d.clock_change));
  if (!fell.empty())
    d.note = fmt::format("{} over the run: the GPU slows as it heats (cooling, power limit)",
                         fell.size() == 2 ? fell[0] + " and " + fell[1] : fell[0]);
  return d;
}

} // namespace dlrig::bench::gemm

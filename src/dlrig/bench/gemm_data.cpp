// The host side of gpu.gemm (gemm_data.hpp).
#include "dlrig/bench/gemm_data.hpp"
#include "dlrig/bench/gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

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

ScaledE4m3 random_normal_e4m3_scaled(std::uint64_t count, std::uint64_t seed, std::uint64_t row) {
  constexpr double kE4m3Max = 448;
  std::vector<double> x(count);
  each_normal(count, seed, 1, [&](std::uint64_t i, double v) { x[i] = v; });
  ScaledE4m3 out;
  out.data.resize(count);
  // One scale over [begin, end): E4M3(x * 448 / amax), and its dequantisation 1 / scale.
  auto scale_run = [&](std::uint64_t begin, std::uint64_t end) {
    double amax = 0;
    for (std::uint64_t i = begin; i < end; ++i)
      amax = std::max(amax, std::fabs(x[i]));
    const double scale = amax > 0 ? kE4m3Max / amax : 1;
    for (std::uint64_t i = begin; i < end; ++i)
      write_element(Element::e4m3, x[i] * scale, out.data.data() + i);
    out.amax = std::max(out.amax, amax);
    return static_cast<float>(1 / scale);
  };
  if (row == 0 || count % row != 0) {
    out.dequant = scale_run(0, count);
    return out;
  }
  for (std::uint64_t begin = 0; begin < count; begin += row)
    out.rows_dequant.push_back(scale_run(begin, begin + row));
  out.dequant = *std::min_element(out.rows_dequant.begin(), out.rows_dequant.end());
  return out;
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

std::optional<std::string> verify(const std::vector<Entry> &entries, Element ab,
                                  const unsigned char *a, const unsigned char *b, std::uint64_t k,
                                  Element cd, double tolerance, double scale_all,
                                  const std::vector<float> &a_rows,
                                  const std::vector<float> &b_cols) {
  const std::size_t size = element_bytes(ab);
  for (const Entry &e : entries) {
    double scale = scale_all;
    if (!a_rows.empty())
      scale *= a_rows.at(e.i);
    if (!b_cols.empty())
      scale *= b_cols.at(e.j);
    double sum = 0, magnitude = 0;
    const unsigned char *row_a = a + e.i * k * size;
    const unsigned char *row_b = b + e.j * k * size;
    for (std::uint64_t p = 0; p < k; ++p) {
      const double x = read_element(ab, row_a + p * size) * read_element(ab, row_b + p * size);
      sum += x;
      magnitude += std::fabs(x);
    }
    const double want = round_to(cd, scale * sum);
    const double bound = tolerance * scale * magnitude;
    if (!(std::fabs(e.got - want) <= bound))
      return fmt::format("D[{}, {}] is {} but the host reference is {} (allowed difference {:.3g})",
                         e.i, e.j, e.got, want, bound);
  }
  return std::nullopt;
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

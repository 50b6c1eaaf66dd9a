// Statistics, the stopping rule and the work formulas of the harness (bench.hpp): pure functions.
#include "dlrig/bench/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dlrig::bench {

const char *tier_name(Tier t) {
  switch (t) {
  case Tier::quick:
    return "quick";
  case Tier::standard:
    return "standard";
  case Tier::sustained:
    return "long";
  }
  return "standard";
}

namespace {
// R type 7: h = (n-1)·p, interpolate between the order statistics around h.
double quantile(const std::vector<double> &sorted, double p) {
  double h = (static_cast<double>(sorted.size()) - 1) * p;
  auto lo = static_cast<std::size_t>(std::floor(h));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}
} // namespace

Summary summarize(std::vector<double> samples) {
  Summary s;
  s.n = samples.size();
  if (samples.empty())
    return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile(samples, 0.5);
  s.q1 = quantile(samples, 0.25);
  s.q3 = quantile(samples, 0.75);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double ss = 0;
    for (double v : samples)
      ss += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  return s;
}

StopRule stop_rule(Tier t) {
  StopRule r;
  switch (t) {
  case Tier::quick:
    r.max_seconds = 0.5;
    r.max_samples = 200;
    break;
  case Tier::standard:
    r.max_seconds = 3;
    break;
  case Tier::sustained:
    r.max_seconds = 60; // sustained: long enough for clocks and temperatures to settle
    r.max_wall_seconds = 60;
    r.min_samples = 20;
    r.target_rsd = 0; // run for the whole cap
    r.max_samples = 100000;
    break;
  }
  return r;
}

bool enough(const std::vector<double> &samples, const StopRule &rule) {
  if (samples.size() >= rule.max_samples)
    return true;
  double total = std::accumulate(samples.begin(), samples.end(), 0.0);
  if (total >= rule.max_seconds && !samples.empty())
    return true;
  if (samples.size() < rule.min_samples)
    return false;
  return summarize(samples).rsd() < rule.target_rsd;
}

double gemm_flop(double m, double n, double k) {
  return 2 * m * n * k;
}

std::optional<double> cpu_peak_gflops(std::optional<int> cores, std::optional<double> hz,
                                      std::optional<double> flop_per_cycle) {
  if (!cores || *cores <= 0 || !hz || !(*hz > 0) || !flop_per_cycle)
    return std::nullopt;
  return *cores * *hz * *flop_per_cycle / 1e9;
}

FlopPerCycle cpu_flop_per_cycle(const std::vector<std::string> &isa, bool dp) {
  auto has = [&](const char *f) { return std::find(isa.begin(), isa.end(), f) != isa.end(); };
  if (has("avx512f"))
    return {dp ? 32.0 : 64.0, "AVX-512: 2 FMA units x 512-bit x 2 FLOP per FMA (one-unit parts "
                              "reach half)"};
  if (has("avx2") && has("fma"))
    return {dp ? 16.0 : 32.0, "AVX2 + FMA: 2 FMA units x 256-bit x 2 FLOP per FMA"};
  return {std::nullopt, "no AVX2+FMA or AVX-512 flag seen: FLOP per cycle unknown"};
}

const char *status_name(Status s) {
  switch (s) {
  case Status::measured:
    return "measured";
  case Status::skipped:
    return "skipped";
  case Status::failed:
    return "failed";
  case Status::wrong:
    return "wrong";
  }
  return "failed";
}

} // namespace dlrig::bench

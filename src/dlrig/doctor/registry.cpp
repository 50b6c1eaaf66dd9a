#include "dlrig/doctor/check.hpp"

#include <algorithm>
#include <numeric>

namespace dlrig::doctor {

std::string_view to_string(Severity s) {
  switch (s) {
  case Severity::ok:
    return "ok";
  case Severity::info:
    return "info";
  case Severity::warn:
    return "warn";
  case Severity::fail:
    return "fail";
  }
  return "ok";
}

const std::vector<Check> &all_checks() {
  static const std::vector<Check> checks = [] {
    std::vector<Check> all;
    for (auto group : {gpu_checks, driver_checks, torch_checks, cuda_checks, kernel_checks,
                       link_checks, host_checks, dist_checks, env_checks, container_checks}) {
      auto part = group();
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return checks;
}

const Check *find_check(std::string_view id) {
  for (const auto &c : all_checks())
    if (c.id == id)
      return &c;
  return nullptr;
}

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
} // namespace

std::vector<std::string> nearest_ids(std::string_view id, std::size_t count) {
  std::vector<std::pair<std::size_t, std::string_view>> scored;
  for (const auto &c : all_checks()) {
    // A query that is part of an id ("nouveau") is as near as it gets.
    std::size_t d = c.id.find(id) != std::string_view::npos ? 0 : edit_distance(id, c.id);
    scored.emplace_back(d, c.id);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto &x, const auto &y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && i < count; ++i)
    out.emplace_back(scored[i].second);
  return out;
}

std::vector<std::string> all_areas() {
  std::vector<std::string> out;
  for (const auto &c : all_checks())
    if (std::find(out.begin(), out.end(), c.area) == out.end())
      out.emplace_back(c.area);
  return out;
}

} // namespace dlrig::doctor

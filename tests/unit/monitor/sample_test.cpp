#include "dlrig/monitor/sample.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

namespace dlrig::monitor {
namespace {

Sample example() {
  Sample s;
  s.time = 1764100000.25;
  GpuSample g;
  g.index = 0;
  g.uuid = "GPU-1";
  g.name = "NVIDIA H100 80GB HBM3, \"SXM\"";
  g.bus_id = "00000000:18:00.0";
  g.utilization_ratio = 0.97;
  g.memory_used_bytes = 71234567890;
  g.power_watts = 612.5;
  g.xids = {79};
  g.processes = std::vector<ProcessSample>{
      ProcessSample{48211, 1e9, 0.5, "alice", "python train.py", true},
      ProcessSample{51234, std::nullopt, std::nullopt, std::nullopt, std::nullopt, false}};
  s.gpus.push_back(g);
  s.host.cpu_utilization_ratio = 0.5;
  s.host.data_path = "/data";
  return s;
}

TEST(MonitorSample, FieldsAreUniqueAndNamedInBaseUnits) {
  std::set<std::string> keys, metrics;
  for (const auto &f : gpu_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_TRUE(metrics.insert(f.metric).second) << f.metric;
    std::string m = f.metric;
    EXPECT_EQ(m.rfind("dlrig_gpu_", 0), 0u) << m;
    // Counters end in _total, gauges never do (Prometheus naming).
    EXPECT_EQ(f.counter, m.size() > 6 && m.substr(m.size() - 6) == "_total") << m;
    EXPECT_EQ(m.find("percent"), std::string::npos);
    EXPECT_EQ(m.find("mega"), std::string::npos);
    EXPECT_TRUE(*f.source) << m;
  }
}

TEST(MonitorSample, JsonRoundTripKeepsUnknownAsNull) {
  Sample s = example();
  Json j = to_json(s);
  EXPECT_TRUE(j["gpus"][0]["temperature_celsius"].is_null()); // unknown, not 0
  EXPECT_EQ(j["gpus"][0]["memory_used_bytes"], 71234567890);
  Sample back = sample_from_json(Json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  ASSERT_TRUE(back.gpus[0].processes);
  EXPECT_FALSE((*back.gpus[0].processes)[1].visible);
  EXPECT_FALSE(back.gpus[0].temperature_celsius);
}

TEST(MonitorSample, CsvRoundTripOfTheGpuFields) {
  Sample s = example();
  EXPECT_TRUE(is_csv_header(csv_header() + "\r"));
  EXPECT_FALSE(is_csv_header("time,gpu"));
  std::string row = csv_rows(s);
  const CsvRow back = csv_row(row.substr(0, row.find('\n')), 2);
  ASSERT_TRUE(back.gpu);
  const auto &g = *back.gpu;
  EXPECT_EQ(g.name, s.gpus[0].name); // quoted cell with a comma and quotes
  EXPECT_EQ(g.memory_used_bytes, 71234567890.0);
  EXPECT_EQ(g.power_watts, 612.5);
  EXPECT_FALSE(g.temperature_celsius);
  EXPECT_EQ(back.host.cpu_utilization_ratio, 0.5);
  EXPECT_THROW(csv_row("1,0,u,n", 2), std::runtime_error);
  // A sample without a GPU is one row of host readings, its GPU cells empty.
  Sample host_only = s;
  host_only.gpus.clear();
  row = csv_rows(host_only);
  ASSERT_EQ(std::count(row.begin(), row.end(), '\n'), 1);
  const CsvRow h = csv_row(row.substr(0, row.size() - 1), 2);
  EXPECT_FALSE(h.gpu);
  EXPECT_EQ(h.host.cpu_utilization_ratio, 0.5);
  // GPU readings without a GPU index are no row dlrig writes.
  std::string odd = row;
  odd.replace(odd.find(",,,,"), 4, ",,,,0.5");
  EXPECT_THROW(csv_row(odd.substr(0, odd.size() - 1), 2), std::runtime_error);
}

// docs/monitoring.md says how a JSON key and CSV column is named after its metric; the keys that
// do not follow the rule (recordings carry them, replay reads them) are listed there, each with
// its metric, so the rule as written holds for every field.
TEST(MonitorSample, KeysFollowTheDocumentedRuleOrAreListedAsExceptions) {
  std::ifstream in(std::string(DLRIG_TEST_DATA) + "/../../docs/monitoring.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty());
  EXPECT_NE(doc.find("minus `dlrig_gpu_` and `_total`"), std::string::npos);
  std::size_t exceptions = 0;
  for (const auto &f : gpu_fields()) {
    std::string rule = std::string(f.metric).substr(std::strlen("dlrig_gpu_"));
    if (rule.size() > 6 && rule.compare(rule.size() - 6, 6, "_total") == 0)
      rule.resize(rule.size() - 6);
    if (rule == f.key)
      continue;
    ++exceptions;
    const std::string row = fmt::format("| `{}` | `{}` |", f.key, f.metric);
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/monitoring.md lacks the row " << row;
  }
  EXPECT_GT(exceptions, 0u);
}

} // namespace
} // namespace dlrig::monitor

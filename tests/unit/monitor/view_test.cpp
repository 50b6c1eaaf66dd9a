#include "dlrig/monitor/tui.hpp"
#include "dlrig/monitor/view.hpp"

#include <gtest/gtest.h>

namespace dlrig::monitor {
namespace {

Sample at(double t, double util, double used, double energy, std::uint64_t reasons) {
  Sample s;
  s.time = t;
  GpuSample g;
  g.index = 0;
  g.name = "NVIDIA GeForce RTX 4090";
  g.utilization_ratio = util;
  g.memory_used_bytes = used;
  g.memory_total_bytes = 24e9;
  g.energy_joules = energy;
  g.power_watts = 400;
  g.clocks_event_reasons = static_cast<double>(reasons);
  s.gpus.push_back(g);
  return s;
}

TEST(MonitorView, SummaryOfARecording) {
  std::vector<Sample> rec = {at(0, 1.0, 10e9, 1000, 0), at(1, 0.5, 20e9, 1400, 0x20),
                             at(2, 0.0, 15e9, 1800, 0x20), at(3, 0.5, 12e9, 2200, 0)};
  Summary s = summarize(rec);
  EXPECT_EQ(s.samples, 4u);
  EXPECT_DOUBLE_EQ(s.duration_seconds, 3);
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].peak_memory_bytes, 20e9);
  EXPECT_EQ(s.gpus[0].throttled_seconds, 2.0);
  EXPECT_DOUBLE_EQ(*s.gpus[0].mean_utilization_ratio, 0.5);
  EXPECT_EQ(s.gpus[0].energy_joules, 1200.0);                   // the counter's rise
  EXPECT_NE(render_summary(s).find("83 %"), std::string::npos); // peak of 24 GB

  // Without the energy counter, power is integrated over the intervals: 400 W x 3 s.
  for (auto &x : rec)
    x.gpus[0].energy_joules.reset();
  EXPECT_EQ(summarize(rec).gpus[0].energy_joules, 1200.0);
  // The throttling diagnosis held during the recording.
  ASSERT_FALSE(s.findings.empty());
  EXPECT_EQ(s.findings[0].id, "throttling");
}

TEST(MonitorView, RecordingsAreReadAsJsonLinesOrCsv) {
  auto a = at(0, 1.0, 10e9, 1000, 0), b = at(1, 0.5, 20e9, 1400, 0x20);
  std::string jsonl = json_line(a, {}) + "\n" + json_line(b, {});
  EXPECT_EQ(read_recording(jsonl).size(), 2u);
  std::string csv = csv_header() + "\n" + csv_rows(a) + csv_rows(b);
  auto back = read_recording(csv);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].gpus[0].memory_used_bytes, 20e9);
  try {
    read_recording(json_line(a, {}) + "{not json\n");
    FAIL();
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos);
  }
  EXPECT_THROW(read_recording(""), std::runtime_error);
  EXPECT_TRUE(read_recording(csv_header() + "\n").empty()); // stopped before its first sample
  // Samples without a GPU (--no-nvml) keep their host readings, as in JSON lines.
  Sample c = a, d = b;
  c.gpus.clear();
  d.gpus.clear();
  c.host.cpu_utilization_ratio = 0.25;
  back = read_recording(csv_header() + "\n" + csv_rows(c) + csv_rows(d));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[0].gpus.empty());
  EXPECT_EQ(back[0].host.cpu_utilization_ratio, 0.25);
  EXPECT_EQ(back[1].time, d.time);
}

// Rows of one time make one sample, read line by line; a row earlier than the one before, or a
// GPU index that is no index, is an error naming its line.
TEST(MonitorView, ReaderHandsOverEachSampleOnceWholeAndInOrder) {
  Sample a = at(0, 1.0, 10e9, 1000, 0), b = at(1, 0.5, 20e9, 1400, 0x20);
  b.gpus.push_back(b.gpus[0]);
  b.gpus[1].index = 1;
  std::vector<Sample> got;
  RecordingReader reader([&](Sample s) { got.push_back(std::move(s)); });
  reader.line(csv_header());
  std::string rows = csv_rows(a) + csv_rows(b);
  for (std::size_t at_nl; (at_nl = rows.find('\n')) != std::string::npos;
       rows.erase(0, at_nl + 1)) {
    reader.line(rows.substr(0, at_nl));
    EXPECT_LE(got.size(), 1u); // b is whole only at the end
  }
  reader.finish();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].gpus.size(), 2u);
  auto message = [](const std::string &text) {
    try {
      read_recording(text);
    } catch (const std::runtime_error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(csv_header() + "\n" + csv_rows(b) + csv_rows(a))
                .rfind("line 4: this sample is "
                       "1.000 s earlier",
                       0),
            0u);
  std::string row = csv_rows(a);
  row.replace(row.find(",0,"), 3, ",-1,");
  EXPECT_EQ(message(csv_header() + "\n" + row), "line 2: \"-1\" is not a GPU index");
  EXPECT_EQ(message(json_line(b, {}) + json_line(a, {})).rfind("line 2: this sample is", 0), 0u);
}

// The summary built one sample at a time holds the last minute, not the recording.
TEST(MonitorView, SummaryBuilderKeepsOnlyTheLastMinute) {
  SummaryBuilder b;
  for (int i = 0; i < 10000; ++i)
    b.add(at(i, 0.5, 10e9, 1000 + i, 0));
  Summary s = b.finish();
  EXPECT_EQ(s.samples, 10000u);
  EXPECT_DOUBLE_EQ(s.duration_seconds, 9999);
  EXPECT_EQ(s.gpus[0].energy_joules, 9999.0);
  EXPECT_DOUBLE_EQ(*s.gpus[0].mean_utilization_ratio, 0.5);
}

TEST(MonitorView, TableHasNoEscapeCodesWithoutColour) {
  Sample s = at(0, 0.97, 10e9, 1000, 0x20);
  Finding f{"throttling", "warning", 0u, "GPU 0 is throttling (thermal)"};
  std::string plain = render_sample(s, {f}, false);
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  EXPECT_NE(plain.find("warning: GPU 0 is throttling"), std::string::npos);
  EXPECT_NE(plain.find("97 %"), std::string::npos);
  EXPECT_NE(plain.find("n/a"), std::string::npos); // temperature unknown
  EXPECT_NE(render_sample(s, {f}, true).find('\x1b'), std::string::npos);
}

TEST(MonitorTui, BarsAndHistory) {
  EXPECT_EQ(bar(0.5, 12), "[|||||     ]");
  EXPECT_EQ(bar(std::nullopt, 9), "[  n/a  ]");
  EXPECT_EQ(bar(2.0, 5), "[|||]");
  EXPECT_EQ(history_line({0.0, 0.5, 1.0, std::nullopt}, 6), "   +@ ");
}

} // namespace
} // namespace dlrig::monitor

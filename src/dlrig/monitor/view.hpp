#pragma once
// The printers of `dlrig watch`: one sample as tables (--once, and each refresh when stdout is
// not a terminal), one sample as a JSON line (--json, --record FILE.jsonl), and the summary of a
// recording (--replay). Pure: text in, text out; colour only when the caller says so.
#include "dlrig/monitor/diagnose.hpp"
#include "dlrig/monitor/sample.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::monitor {

// One sample and its diagnoses as text tables (GPUs, processes, host, diagnoses). `width` > 0
// (a terminal's): the tables and the diagnoses are wrapped to it (output/table.hpp).
std::string render_sample(const Sample &s, const std::vector<Finding> &findings, bool colour,
                          std::size_t width = 0);

// The host's line of both views: "Host: CPU 12%, RAM 50.1 GB available of 67.4 GB" (and the
// data's disk with --data).
std::string host_line(const HostSample &h);

// One JSON line: {"schema_version": 1, "sample": {...}, "findings": [...]} and a newline. The
// command adds the run's context (output/print.hpp document()) with json_body().
std::string json_line(const Sample &s, const std::vector<Finding> &findings);
Json json_body(const Sample &s, const std::vector<Finding> &findings); // {"sample", "findings"}

// What a recording says per GPU.
struct GpuSummary {
  unsigned index = 0;
  std::string name;
  std::size_t samples = 0;
  std::optional<double> peak_memory_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> throttled_seconds; // nullopt when no sample gave the reasons
  std::optional<double> mean_utilization_ratio;
  std::optional<double> energy_joules; // the counter's rise, else power integrated over time
  bool lost = false;
};
struct Summary {
  double duration_seconds = 0;
  std::size_t samples = 0;
  std::vector<GpuSummary> gpus;
  std::vector<Finding> findings; // every diagnosis that held at some point, once each
};
// Builds a recording's Summary one sample at a time, in time order: each sample weighs the time
// to the next one (the last one the median interval), the diagnoses run over a sliding minute.
// It holds that minute and one number per sample, so a recording of days is summarised in little
// memory. A sample earlier than the one before counts no time.
class SummaryBuilder {
public:
  void add(Sample s);
  Summary finish();

private:
  struct Gpu {
    GpuSummary out;
    double util = 0, util_weight = 0, power_joules = 0;
    bool power_known = false;
    std::optional<double> energy_first, energy_last;
  };
  Gpu &gpu(const GpuSample &g);
  void weigh(const Sample &s, double seconds, bool last); // what depends on the time to the next
  Summary sum_;
  std::vector<Gpu> gpus_;
  std::vector<double> gaps_;
  std::optional<Sample> previous_;
  std::vector<Sample> window_;
  double first_time_ = 0;
};
Summary summarize(const std::vector<Sample> &samples);               // the samples in time order
std::string render_summary(const Summary &s, std::size_t width = 0); // width: as render_sample's
Json to_json(const Summary &s);

// Reads a recording line by line: JSON lines (each a sample or a json_line) or the CSV --record
// writes (rows of one time make one sample). Each sample goes to `each` in the file's order once
// it is whole. Throws std::runtime_error naming the line when a line is neither, or when a sample
// is earlier than the one before it (--record writes in time order: recordings joined together
// are replayed one by one), and from finish() when the recording is empty (a CSV header alone is
// a recording of no sample).
class RecordingReader {
public:
  explicit RecordingReader(std::function<void(Sample)> each) : each_(std::move(each)) {}
  void line(std::string_view line); // one line, without its newline
  void finish();                    // the end of the recording

private:
  void in_order(double time); // throws when `time` is before the last sample's
  std::function<void(Sample)> each_;
  std::size_t line_no_ = 0;
  enum class Format { unknown, json_lines, csv } format_ = Format::unknown;
  std::optional<Sample> csv_sample_; // the rows of the current time so far
  std::optional<double> last_time_;
};
// The samples of a whole recording in memory (RecordingReader over `text`).
std::vector<Sample> read_recording(std::string_view text);

} // namespace dlrig::monitor

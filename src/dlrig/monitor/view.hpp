#pragma once
// The printers of `dlrig watch`: one sample as tables (--once, and each refresh when stdout is
// not a terminal), one sample as a JSON line (--json, --record FILE.jsonl), and the summary of a
// recording (--replay). Pure: text in, text out; colour only when the caller says so.
#include "dlrig/monitor/diagnose.hpp"
#include "dlrig/monitor/sample.hpp"

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
// The samples in time order; each sample's weight is the time to the next one (the last one
// has the median interval).
Summary summarize(const std::vector<Sample> &samples);
std::string render_summary(const Summary &s, std::size_t width = 0); // width: as render_sample's
Json to_json(const Summary &s);

// Reads a recording: JSON lines (each line a sample or a json_line) or the CSV --record writes.
// Throws std::runtime_error naming the line when it is neither.
std::vector<Sample> read_recording(std::string_view text);

} // namespace dlrig::monitor

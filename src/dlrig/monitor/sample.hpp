#pragma once
// What `dlrig watch` and `dlrig serve` show: one Sample per interval, every GPU's readings in base
// units (bytes, hertz, watts, joules, degrees Celsius, ratios 0-1) and the host's. Each reading is
// optional: nullopt means the GPU or the driver did not give it (JSON null, table "n/a"), never 0.
//
// The GPU readings are listed once, in gpu_fields(): JSON keys, CSV columns, Prometheus names,
// units and NVML sources all come from that table, so the recorder, the replayer, the exporter
// and docs/monitoring.md cannot disagree.
#include "dlrig/core/json.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::monitor {

struct ProcessSample {
  unsigned pid = 0;
  std::optional<double> gpu_memory_bytes;
  std::optional<double> sm_ratio; // share of the period its kernels ran (process utilization)
  std::optional<std::string> user;
  std::optional<std::string> command;
  // false when NVML names a PID this process cannot see in /proc (another PID namespace: a
  // container without --pid=host); user and command are then unknown.
  bool visible = true;
};

struct GpuSample {
  unsigned index = 0; // NVML index
  std::string uuid;
  std::string name;
  std::string bus_id;
  bool lost = false; // fell off the bus (NVML_ERROR_GPU_IS_LOST): nothing below was read
  // NVML calls that failed this sample (an error other than "not supported" or "not exported"):
  // their readings are unknown, and the exporter says dlrig_up 0.
  unsigned failed_reads = 0;
  // Which, "nvlink_tx (nvmlDeviceGetFieldValues): Unknown Error", one per failed read.
  std::vector<std::string> read_errors;

  std::optional<double> utilization_ratio;
  std::optional<double> memory_utilization_ratio;
  std::optional<double> memory_total_bytes;
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_free_bytes;
  std::optional<double> memory_reserved_bytes;
  std::optional<double> sm_clock_hertz;
  std::optional<double> sm_clock_max_hertz;
  std::optional<double> memory_clock_hertz;
  std::optional<double> power_watts;
  std::optional<double> power_limit_watts;
  std::optional<double> energy_joules; // counter since the driver loaded
  std::optional<double> temperature_celsius;
  std::optional<double> memory_temperature_celsius;
  std::optional<double> slowdown_temperature_celsius;
  std::optional<double> fan_ratio;
  std::optional<double> clocks_event_reasons; // nvmlClocksEventReasons bit mask
  std::optional<double> pcie_link_generation;
  std::optional<double> pcie_link_generation_max;
  std::optional<double> pcie_link_width;
  std::optional<double> pcie_link_width_max;
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
  std::optional<double> pcie_replays;    // counter
  std::optional<double> nvlink_tx_bytes; // counter
  std::optional<double> nvlink_rx_bytes; // counter
  std::optional<double> ecc_corrected_volatile;
  std::optional<double> ecc_uncorrected_volatile;
  std::optional<double> ecc_uncorrected_aggregate;
  std::optional<double> remapped_rows_correctable;
  std::optional<double> remapped_rows_uncorrectable;
  std::optional<double> remapped_rows_pending; // 0/1
  std::optional<double> remapped_rows_failure; // 0/1
  std::optional<double> xid_events;            // counter: Xids seen since the sampler started
  std::optional<double> last_xid;              // the latest Xid seen

  std::vector<std::uint64_t> xids; // Xid events raised since the previous sample
  std::optional<std::vector<ProcessSample>> processes;
};

struct HostSample {
  std::optional<double> cpu_utilization_ratio; // all CPUs, over the last interval
  std::optional<double> memory_total_bytes;
  std::optional<double> memory_available_bytes;
  std::optional<std::string> data_path;   // --data
  std::optional<std::string> data_device; // the block device holding it ("nvme0n1")
  std::optional<double> data_read_bytes_per_second;
  std::optional<double> data_write_bytes_per_second;
};

struct Sample {
  double time = 0;     // seconds since the Unix epoch
  bool nvml_ok = true; // false: NVML did not load or initialise (why in nvml_error)
  std::string nvml_error;
  std::vector<GpuSample> gpus;
  HostSample host;
};

// One GPU reading: its key in JSON and CSV, its unit, the Prometheus metric it becomes (empty:
// not exported), whether that metric is a counter, its help text and where NVML gives it.
struct GpuField {
  const char *key;
  const char *unit;
  const char *metric;
  bool counter;
  const char *help;
  const char *source;
  std::optional<double> GpuSample::*member;
};
const std::vector<GpuField> &gpu_fields();

// The JSON form of a sample (one line of `watch --json` and of a JSON-lines recording) and back.
// sample_from_json throws nlohmann's exceptions on a document that is not a sample.
Json to_json(const Sample &s);
Sample sample_from_json(const Json &j);

// CSV: one row per GPU per sample, columns "time", "gpu", "uuid", "name" then gpu_fields()'s keys
// then the host's; unknown is an empty cell. A sample with no GPU (--no-nvml, a machine without
// one) is one row whose GPU cells are empty, so its host readings are kept. csv_header() ends
// without a newline.
std::string csv_header();
std::string csv_rows(const Sample &s);
// Whether `line` is csv_header() (compared cell by cell: quoting and a CR do not matter).
bool is_csv_header(std::string_view line);
// One row of that CSV after its header: one GPU's readings (none in the row of a sample without
// a GPU) and the host's at the row's time (rows of one time make one sample); throws
// std::runtime_error naming line_no when the row is not what csv_header() describes.
struct CsvRow {
  double time = 0;
  std::optional<GpuSample> gpu;
  HostSample host;
};
CsvRow csv_row(std::string_view line, std::size_t line_no);

} // namespace dlrig::monitor

#include "dlrig/monitor/sample.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>

namespace dlrig::monitor {

const std::vector<GpuField> &gpu_fields() {
  using G = GpuSample;
  static const std::vector<GpuField> fields = {
      {"utilization_ratio", "ratio", "dlrig_gpu_utilization_ratio", false,
       "Share of the last sample period in which a kernel ran on the GPU (0-1).",
       "nvmlDeviceGetUtilizationRates .gpu / 100", &G::utilization_ratio},
      {"memory_utilization_ratio", "ratio", "dlrig_gpu_memory_utilization_ratio", false,
       "Share of the last sample period in which device memory was read or written (0-1).",
       "nvmlDeviceGetUtilizationRates .memory / 100", &G::memory_utilization_ratio},
      {"memory_total_bytes", "bytes", "dlrig_gpu_memory_total_bytes", false,
       "Device memory in total.", "nvmlDeviceGetMemoryInfo_v2 (or v1) .total",
       &G::memory_total_bytes},
      {"memory_used_bytes", "bytes", "dlrig_gpu_memory_used_bytes", false,
       "Device memory in use (with the driver's reservation when NVML v2 reports it).",
       "nvmlDeviceGetMemoryInfo_v2 (or v1) .used", &G::memory_used_bytes},
      {"memory_free_bytes", "bytes", "dlrig_gpu_memory_free_bytes", false, "Device memory free.",
       "nvmlDeviceGetMemoryInfo_v2 (or v1) .free", &G::memory_free_bytes},
      {"memory_reserved_bytes", "bytes", "dlrig_gpu_memory_reserved_bytes", false,
       "Device memory the driver reserves for itself.", "nvmlDeviceGetMemoryInfo_v2 .reserved",
       &G::memory_reserved_bytes},
      {"sm_clock_hertz", "hertz", "dlrig_gpu_sm_clock_hertz", false, "SM clock now.",
       "nvmlDeviceGetClockInfo(NVML_CLOCK_SM) x 1e6", &G::sm_clock_hertz},
      {"sm_clock_max_hertz", "hertz", "dlrig_gpu_sm_clock_max_hertz", false,
       "Highest SM clock the GPU can run at.", "nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM) x 1e6",
       &G::sm_clock_max_hertz},
      {"memory_clock_hertz", "hertz", "dlrig_gpu_memory_clock_hertz", false, "Memory clock now.",
       "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM) x 1e6", &G::memory_clock_hertz},
      {"power_watts", "watts", "dlrig_gpu_power_watts", false, "Power draw now.",
       "nvmlDeviceGetPowerUsage / 1000", &G::power_watts},
      {"power_limit_watts", "watts", "dlrig_gpu_power_limit_watts", false,
       "Power limit the driver enforces.", "nvmlDeviceGetEnforcedPowerLimit / 1000",
       &G::power_limit_watts},
      {"energy_joules", "joules", "dlrig_gpu_energy_joules_total", true,
       "Energy used since the driver loaded.", "nvmlDeviceGetTotalEnergyConsumption / 1000",
       &G::energy_joules},
      {"temperature_celsius", "celsius", "dlrig_gpu_temperature_celsius", false,
       "GPU core temperature.", "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)",
       &G::temperature_celsius},
      {"memory_temperature_celsius", "celsius", "dlrig_gpu_memory_temperature_celsius", false,
       "Memory (HBM) temperature.", "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP = 82)",
       &G::memory_temperature_celsius},
      {"slowdown_temperature_celsius", "celsius", "dlrig_gpu_slowdown_temperature_celsius", false,
       "Temperature at which the GPU slows its clocks.",
       "nvmlDeviceGetTemperatureThreshold(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)",
       &G::slowdown_temperature_celsius},
      {"fan_ratio", "ratio", "dlrig_gpu_fan_speed_ratio", false,
       "Fan speed as a share of its maximum (0-1).", "nvmlDeviceGetFanSpeed / 100", &G::fan_ratio},
      {"clocks_event_reasons", "bitmask", "dlrig_gpu_clocks_event_reasons", false,
       "Why the clocks are below their maximum: nvmlClocksEventReasons bit mask.",
       "nvmlDeviceGetCurrentClocksEventReasons (or ...ThrottleReasons)", &G::clocks_event_reasons},
      {"pcie_link_generation", "generation", "dlrig_gpu_pcie_link_generation", false,
       "PCIe generation the link runs at now.", "nvmlDeviceGetCurrPcieLinkGeneration",
       &G::pcie_link_generation},
      {"pcie_link_generation_max", "generation", "dlrig_gpu_pcie_link_generation_max", false,
       "Highest PCIe generation of the link.", "nvmlDeviceGetMaxPcieLinkGeneration",
       &G::pcie_link_generation_max},
      {"pcie_link_width", "lanes", "dlrig_gpu_pcie_link_width", false,
       "PCIe lanes the link runs with now.", "nvmlDeviceGetCurrPcieLinkWidth", &G::pcie_link_width},
      {"pcie_link_width_max", "lanes", "dlrig_gpu_pcie_link_width_max", false,
       "Widest the PCIe link can be.", "nvmlDeviceGetMaxPcieLinkWidth", &G::pcie_link_width_max},
      {"pcie_tx_bytes_per_second", "bytes/s", "dlrig_gpu_pcie_transmit_bytes_per_second", false,
       "PCIe data sent by the GPU (NVML's last 20 ms).",
       "nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_TX_BYTES) x 1000", &G::pcie_tx_bytes_per_second},
      {"pcie_rx_bytes_per_second", "bytes/s", "dlrig_gpu_pcie_receive_bytes_per_second", false,
       "PCIe data received by the GPU (NVML's last 20 ms).",
       "nvmlDeviceGetPcieThroughput(NVML_PCIE_UTIL_RX_BYTES) x 1000", &G::pcie_rx_bytes_per_second},
      {"pcie_replays", "count", "dlrig_gpu_pcie_replays_total", true,
       "PCIe replays (retransmissions) since the driver loaded.", "nvmlDeviceGetPcieReplayCounter",
       &G::pcie_replays},
      {"nvlink_tx_bytes", "bytes", "dlrig_gpu_nvlink_transmit_bytes_total", true,
       "NVLink data sent over all links since the driver loaded.",
       "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138) x 1024",
       &G::nvlink_tx_bytes},
      {"nvlink_rx_bytes", "bytes", "dlrig_gpu_nvlink_receive_bytes_total", true,
       "NVLink data received over all links since the driver loaded.",
       "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139) x 1024",
       &G::nvlink_rx_bytes},
      {"ecc_corrected_volatile", "count", "dlrig_gpu_ecc_corrected_errors", false,
       "Corrected ECC errors since the driver loaded.",
       "nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE)", &G::ecc_corrected_volatile},
      {"ecc_uncorrected_volatile", "count", "dlrig_gpu_ecc_uncorrected_errors", false,
       "Uncorrected ECC errors since the driver loaded.",
       "nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE)", &G::ecc_uncorrected_volatile},
      {"ecc_uncorrected_aggregate", "count", "dlrig_gpu_ecc_uncorrected_errors_lifetime", false,
       "Uncorrected ECC errors over the GPU's life.",
       "nvmlDeviceGetTotalEccErrors(UNCORRECTED, AGGREGATE)", &G::ecc_uncorrected_aggregate},
      {"remapped_rows_correctable", "count", "dlrig_gpu_remapped_rows_correctable", false,
       "Memory rows remapped after correctable errors.", "nvmlDeviceGetRemappedRows .corrRows",
       &G::remapped_rows_correctable},
      {"remapped_rows_uncorrectable", "count", "dlrig_gpu_remapped_rows_uncorrectable", false,
       "Memory rows remapped after uncorrectable errors.", "nvmlDeviceGetRemappedRows .uncRows",
       &G::remapped_rows_uncorrectable},
      {"remapped_rows_pending", "0/1", "dlrig_gpu_remapped_rows_pending", false,
       "1 when a row remapping waits for a GPU reset.", "nvmlDeviceGetRemappedRows .isPending",
       &G::remapped_rows_pending},
      {"remapped_rows_failure", "0/1", "dlrig_gpu_remapped_rows_failure", false,
       "1 when a row remapping failed.", "nvmlDeviceGetRemappedRows .failureOccurred",
       &G::remapped_rows_failure},
      {"xid_events", "count", "dlrig_gpu_xid_events_total", true,
       "Xid errors seen since dlrig started.",
       "nvmlEventSetWait_v2 (nvmlEventTypeXidCriticalError)", &G::xid_events},
      {"last_xid", "Xid", "dlrig_gpu_last_xid", false, "The latest Xid error seen.",
       "nvmlEventSetWait_v2 .eventData", &G::last_xid},
  };
  return fields;
}

namespace {

Json opt(const std::optional<double> &v) {
  if (!v || !std::isfinite(*v))
    return nullptr;
  // Whole numbers print as integers (byte counts, clocks).
  if (std::fabs(*v) < 9.0e15 && *v == std::floor(*v))
    return static_cast<std::int64_t>(*v);
  return *v;
}

Json opt(const std::optional<std::string> &v) {
  return v ? Json(*v) : Json(nullptr);
}

std::optional<double> get_num(const Json &j, const char *key) {
  if (!j.contains(key) || j.at(key).is_null())
    return std::nullopt;
  return j.at(key).get<double>();
}

std::optional<std::string> get_str(const Json &j, const char *key) {
  if (!j.contains(key) || j.at(key).is_null())
    return std::nullopt;
  return j.at(key).get<std::string>();
}

struct HostField {
  const char *key;
  std::optional<double> HostSample::*member;
};
const HostField kHostFields[] = {
    {"cpu_utilization_ratio", &HostSample::cpu_utilization_ratio},
    {"memory_total_bytes", &HostSample::memory_total_bytes},
    {"memory_available_bytes", &HostSample::memory_available_bytes},
    {"data_read_bytes_per_second", &HostSample::data_read_bytes_per_second},
    {"data_write_bytes_per_second", &HostSample::data_write_bytes_per_second},
};

} // namespace

Json to_json(const Sample &s) {
  Json j;
  j["time"] = s.time;
  j["nvml_ok"] = s.nvml_ok;
  if (!s.nvml_ok)
    j["nvml_error"] = s.nvml_error;
  Json gpus = Json::array();
  for (const auto &g : s.gpus) {
    Json o;
    o["index"] = g.index;
    o["uuid"] = g.uuid;
    o["name"] = g.name;
    o["bus_id"] = g.bus_id;
    o["lost"] = g.lost;
    o["failed_reads"] = g.failed_reads;
    o["read_errors"] = g.read_errors;
    for (const auto &f : gpu_fields())
      o[f.key] = opt(g.*f.member);
    o["xids"] = g.xids;
    if (g.processes) {
      Json ps = Json::array();
      for (const auto &p : *g.processes)
        ps.push_back({{"pid", p.pid},
                      {"gpu_memory_bytes", opt(p.gpu_memory_bytes)},
                      {"sm_ratio", opt(p.sm_ratio)},
                      {"user", opt(p.user)},
                      {"command", opt(p.command)},
                      {"visible", p.visible}});
      o["processes"] = ps;
    } else {
      o["processes"] = nullptr;
    }
    gpus.push_back(std::move(o));
  }
  j["gpus"] = std::move(gpus);
  Json h;
  for (const auto &f : kHostFields)
    h[f.key] = opt(s.host.*f.member);
  h["data_path"] = opt(s.host.data_path);
  h["data_device"] = opt(s.host.data_device);
  j["host"] = std::move(h);
  return j;
}

Sample sample_from_json(const Json &j) {
  Sample s;
  s.time = j.at("time").get<double>();
  s.nvml_ok = j.value("nvml_ok", true);
  s.nvml_error = j.value("nvml_error", std::string());
  for (const auto &o : j.at("gpus")) {
    GpuSample g;
    g.index = o.at("index").get<unsigned>();
    g.uuid = o.value("uuid", std::string());
    g.name = o.value("name", std::string());
    g.bus_id = o.value("bus_id", std::string());
    g.lost = o.value("lost", false);
    g.failed_reads = o.value("failed_reads", 0u);
    if (o.contains("read_errors") && o.at("read_errors").is_array())
      for (const auto &e : o.at("read_errors"))
        if (e.is_string())
          g.read_errors.push_back(e.get<std::string>());
    for (const auto &f : gpu_fields())
      g.*f.member = get_num(o, f.key);
    if (o.contains("xids") && o.at("xids").is_array())
      g.xids = o.at("xids").get<std::vector<std::uint64_t>>();
    if (o.contains("processes") && o.at("processes").is_array()) {
      g.processes.emplace();
      for (const auto &p : o.at("processes")) {
        ProcessSample ps;
        ps.pid = p.at("pid").get<unsigned>();
        ps.gpu_memory_bytes = get_num(p, "gpu_memory_bytes");
        ps.sm_ratio = get_num(p, "sm_ratio");
        ps.user = get_str(p, "user");
        ps.command = get_str(p, "command");
        ps.visible = p.value("visible", true);
        g.processes->push_back(std::move(ps));
      }
    }
    s.gpus.push_back(std::move(g));
  }
  if (j.contains("host") && j.at("host").is_object()) {
    const Json &h = j.at("host");
    for (const auto &f : kHostFields)
      s.host.*f.member = get_num(h, f.key);
    s.host.data_path = get_str(h, "data_path");
    s.host.data_device = get_str(h, "data_device");
  }
  return s;
}

// --- CSV -----------------------------------------------------------------------------------------

namespace {

std::string csv_cell(const std::string &text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos)
    return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_num(const std::optional<double> &v) {
  if (!v || !std::isfinite(*v))
    return "";
  if (std::fabs(*v) < 9.0e15 && *v == std::floor(*v))
    return fmt::format("{}", static_cast<std::int64_t>(*v));
  return fmt::format("{}", *v);
}

// Splits one CSV record (RFC 4180 quoting, no newline inside a cell).
std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

} // namespace

std::string csv_header() {
  std::string h = "time,gpu,uuid,name,lost";
  for (const auto &f : gpu_fields())
    h += std::string(",") + f.key;
  for (const auto &f : kHostFields)
    h += std::string(",host_") + f.key;
  return h;
}

std::string csv_rows(const Sample &s) {
  std::string out;
  auto host = [&] {
    for (const auto &f : kHostFields)
      out += "," + csv_num(s.host.*f.member);
    out += "\n";
  };
  for (const auto &g : s.gpus) {
    out += fmt::format("{:.3f},{},{},{},{}", s.time, g.index, csv_cell(g.uuid), csv_cell(g.name),
                       g.lost ? 1 : 0);
    for (const auto &f : gpu_fields())
      out += "," + csv_num(g.*f.member);
    host();
  }
  if (s.gpus.empty()) {
    out += fmt::format("{:.3f},,,,", s.time);
    out += std::string(gpu_fields().size(), ',');
    host();
  }
  return out;
}

bool is_csv_header(std::string_view line) {
  static const auto header = split_csv(csv_header());
  return split_csv(line) == header;
}

CsvRow csv_row(std::string_view line, std::size_t line_no) {
  static const std::size_t columns = split_csv(csv_header()).size();
  auto cells = split_csv(line);
  if (cells.size() != columns)
    throw std::runtime_error(
        fmt::format("line {}: {} cells, the header has {}", line_no, cells.size(), columns));
  auto num = [&](const std::string &cell) -> std::optional<double> {
    if (cell.empty())
      return std::nullopt;
    double v = 0;
    auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (ec != std::errc() || end != cell.data() + cell.size())
      throw std::runtime_error(fmt::format("line {}: \"{}\" is not a number", line_no, cell));
    return v;
  };
  CsvRow row;
  row.time = num(cells[0]).value_or(0);
  std::size_t c = 5;
  if (cells[1].empty()) {
    // A sample without a GPU: every GPU cell is empty.
    for (std::size_t i = 2; i < c + gpu_fields().size(); ++i)
      if (!cells[i].empty())
        throw std::runtime_error(
            fmt::format("line {}: a row without a GPU index has GPU readings", line_no));
    c += gpu_fields().size();
  } else {
    const double index = *num(cells[1]);
    if (!(index >= 0 && index < 65536) || index != std::floor(index))
      throw std::runtime_error(
          fmt::format("line {}: \"{}\" is not a GPU index", line_no, cells[1]));
    auto &g = row.gpu.emplace();
    g.index = static_cast<unsigned>(index);
    g.uuid = cells[2];
    g.name = cells[3];
    g.lost = cells[4] == "1";
    for (const auto &f : gpu_fields())
      g.*f.member = num(cells[c++]);
  }
  for (const auto &f : kHostFields)
    row.host.*f.member = num(cells[c++]);
  return row;
}

} // namespace dlrig::monitor

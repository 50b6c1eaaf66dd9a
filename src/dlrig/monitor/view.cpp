#include "dlrig/monitor/view.hpp"

#include "dlrig/output/table.hpp"
#include "dlrig/output/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dlrig::monitor {

namespace {

std::string bytes(const std::optional<double> &v) {
  if (!v)
    return kUnknown;
  return show_bytes(static_cast<std::uint64_t>(std::max(0.0, *v)));
}

std::string pct(const std::optional<double> &r) {
  return r ? fmt::format("{:.0f} %", *r * 100) : kUnknown;
}

std::string of(const std::optional<double> &a, const std::optional<double> &b, double scale,
               const char *unit) {
  if (!a)
    return kUnknown;
  if (!b)
    return fmt::format("{:.0f} {}", *a / scale, unit);
  return fmt::format("{:.0f} / {:.0f} {}", *a / scale, *b / scale, unit);
}

const char *colour_of(const std::string &severity) {
  if (severity == "critical")
    return "\x1b[31m";
  if (severity == "warning")
    return "\x1b[33m";
  return "\x1b[36m";
}

} // namespace

std::string host_line(const HostSample &h) {
  std::string host = "Host: CPU " + pct(h.cpu_utilization_ratio);
  if (h.memory_total_bytes)
    host +=
        ", RAM " + bytes(h.memory_available_bytes) + " available of " + bytes(h.memory_total_bytes);
  if (h.data_path) {
    host += ", data " + printable(*h.data_path);
    if (h.data_device)
      host += " (" + printable(*h.data_device) + ")";
    host += h.data_read_bytes_per_second
                ? fmt::format(" read {:.0f} MB/s", *h.data_read_bytes_per_second / 1e6)
                : std::string(" read n/a");
  }
  return host;
}

std::string render_sample(const Sample &s, const std::vector<Finding> &findings, bool colour,
                          std::size_t width) {
  std::string out;
  if (!s.nvml_ok)
    out += "NVML: " + wrap_after(printable(s.nvml_error), width, 6, 2) + "\n\n";
  Table gpus{
      "", {"GPU", "NAME", "UTIL", "MEMORY", "TEMP", "POWER", "SM CLOCK", "PCIE", "THROTTLE"}, {}};
  for (const auto &g : s.gpus) {
    if (g.lost) {
      gpus.add({std::to_string(g.index), g.name, "lost", "", "", "", "", "", ""});
      continue;
    }
    std::string mem = g.memory_used_bytes && g.memory_total_bytes
                          ? bytes(g.memory_used_bytes) + " / " + bytes(g.memory_total_bytes)
                          : bytes(g.memory_used_bytes);
    std::string temp = g.temperature_celsius ? fmt::format("{:.0f} °C", *g.temperature_celsius)
                                             : std::string(kUnknown);
    std::string pcie =
        g.pcie_link_generation && g.pcie_link_width
            ? fmt::format("Gen{:.0f} x{:.0f}", *g.pcie_link_generation, *g.pcie_link_width)
            : std::string(kUnknown);
    std::string throttle = kUnknown;
    if (g.clocks_event_reasons) {
      auto r = throttle_reasons(static_cast<std::uint64_t>(*g.clocks_event_reasons));
      throttle = r.empty() ? "none" : "";
      for (const auto &x : r)
        throttle += (throttle.empty() ? "" : ", ") + x;
    }
    gpus.add({std::to_string(g.index), g.name, pct(g.utilization_ratio), mem, temp,
              of(g.power_watts, g.power_limit_watts, 1, "W"),
              of(g.sm_clock_hertz, g.sm_clock_max_hertz, 1e6, "MHz"), pcie, throttle});
  }
  if (!s.gpus.empty())
    out += render_text(gpus, width);
  else if (s.nvml_ok)
    out += "No NVIDIA GPU.\n";

  Table procs{"", {"GPU", "PID", "USER", "GPU MEMORY", "SM", "COMMAND"}, {}};
  for (const auto &g : s.gpus)
    if (g.processes)
      for (const auto &p : *g.processes) {
        std::string cmd = p.visible ? p.command.value_or(kUnknown) : "(not in this PID namespace)";
        procs.add({std::to_string(g.index), std::to_string(p.pid), p.user.value_or(kUnknown),
                   bytes(p.gpu_memory_bytes), pct(p.sm_ratio), cmd});
      }
  if (!procs.rows.empty())
    out += "\n" + render_text(procs, width);

  out += "\n" + wrap_after(host_line(s.host), width, 0, 2) + "\n";

  if (!findings.empty()) {
    out += "\n";
    for (const auto &f : findings) {
      std::string tag = f.severity;
      if (colour)
        tag = std::string(colour_of(f.severity)) + tag + "\x1b[0m";
      out += tag + ": " + wrap_after(printable(f.message), width, f.severity.size() + 2, 2) + "\n";
    }
  }
  return out;
}

std::string json_line(const Sample &s, const std::vector<Finding> &findings) {
  Json j = json_body(s, findings);
  j["schema_version"] = 1;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Json json_body(const Sample &s, const std::vector<Finding> &findings) {
  Json j;
  j["sample"] = to_json(s);
  Json fs = Json::array();
  for (const auto &f : findings)
    fs.push_back({{"id", f.id},
                  {"severity", f.severity},
                  {"gpu", f.gpu ? Json(*f.gpu) : Json(nullptr)},
                  {"message", f.message}});
  j["findings"] = fs;
  return j;
}

SummaryBuilder::Gpu &SummaryBuilder::gpu(const GpuSample &g) {
  auto it = std::find_if(gpus_.begin(), gpus_.end(),
                         [&](const Gpu &x) { return x.out.index == g.index; });
  if (it != gpus_.end())
    return *it;
  gpus_.push_back(Gpu{});
  gpus_.back().out.index = g.index;
  gpus_.back().out.name = g.name;
  return gpus_.back();
}

void SummaryBuilder::weigh(const Sample &s, double seconds, bool last) {
  for (const auto &g : s.gpus) {
    Gpu &acc = gpu(g);
    if (g.clocks_event_reasons) {
      bool throttled =
          !throttle_reasons(static_cast<std::uint64_t>(*g.clocks_event_reasons)).empty();
      acc.out.throttled_seconds = acc.out.throttled_seconds.value_or(0) + (throttled ? seconds : 0);
    }
    if (g.utilization_ratio) {
      acc.util += *g.utilization_ratio * seconds;
      acc.util_weight += seconds;
    }
    if (g.power_watts && !last) {
      acc.power_joules += *g.power_watts * seconds;
      acc.power_known = true;
    }
  }
}

void SummaryBuilder::add(Sample s) {
  if (previous_) {
    const double gap = std::max(0.0, s.time - previous_->time);
    gaps_.push_back(gap);
    weigh(*previous_, gap, false);
  } else {
    first_time_ = s.time;
  }
  ++sum_.samples;
  sum_.duration_seconds = std::max(sum_.duration_seconds, s.time - first_time_);
  for (const auto &g : s.gpus) {
    Gpu &acc = gpu(g);
    ++acc.out.samples;
    acc.out.lost = acc.out.lost || g.lost;
    if (g.memory_used_bytes)
      acc.out.peak_memory_bytes =
          std::max(acc.out.peak_memory_bytes.value_or(0), *g.memory_used_bytes);
    if (g.memory_total_bytes)
      acc.out.memory_total_bytes = g.memory_total_bytes;
    if (g.energy_joules) {
      if (!acc.energy_first)
        acc.energy_first = g.energy_joules;
      acc.energy_last = g.energy_joules;
    }
  }
  // The diagnoses over a sliding minute.
  add_to_window(window_, s, 60);
  for (auto &f : diagnose(window_))
    if (std::none_of(sum_.findings.begin(), sum_.findings.end(),
                     [&](const Finding &x) { return x.id == f.id && x.gpu == f.gpu; }))
      sum_.findings.push_back(std::move(f));
  previous_ = std::move(s);
}

Summary SummaryBuilder::finish() {
  if (previous_) {
    double typical = 0; // the median interval
    if (!gaps_.empty()) {
      auto mid = gaps_.begin() + static_cast<long>(gaps_.size() / 2);
      std::nth_element(gaps_.begin(), mid, gaps_.end());
      typical = *mid;
    }
    weigh(*previous_, typical, true);
  }
  for (auto &acc : gpus_) {
    if (acc.util_weight > 0)
      acc.out.mean_utilization_ratio = acc.util / acc.util_weight;
    if (acc.energy_first && acc.energy_last && *acc.energy_last >= *acc.energy_first &&
        sum_.samples > 1)
      acc.out.energy_joules = *acc.energy_last - *acc.energy_first;
    else if (acc.power_known)
      acc.out.energy_joules = acc.power_joules;
    sum_.gpus.push_back(std::move(acc.out));
  }
  return std::move(sum_);
}

Summary summarize(const std::vector<Sample> &samples) {
  SummaryBuilder b;
  for (const auto &s : samples)
    b.add(s);
  return b.finish();
}

std::string render_summary(const Summary &s, std::size_t width) {
  std::string out =
      fmt::format("Recording: {} samples over {:.0f} s\n\n", s.samples, s.duration_seconds);
  Table t{"", {"GPU", "NAME", "PEAK MEMORY", "TIME THROTTLED", "MEAN UTIL", "ENERGY"}, {}};
  for (const auto &g : s.gpus) {
    std::string peak = bytes(g.peak_memory_bytes);
    if (g.peak_memory_bytes && g.memory_total_bytes && *g.memory_total_bytes > 0)
      peak += fmt::format(" ({:.0f} %)", *g.peak_memory_bytes / *g.memory_total_bytes * 100);
    std::string throttled = kUnknown;
    if (g.throttled_seconds)
      throttled = fmt::format("{:.0f} s", *g.throttled_seconds);
    std::string energy = kUnknown;
    if (g.energy_joules)
      energy = fmt::format("{:.0f} J ({:.3f} kWh)", *g.energy_joules, *g.energy_joules / 3.6e6);
    t.add({std::to_string(g.index) + (g.lost ? " (lost)" : ""), g.name, peak, throttled,
           pct(g.mean_utilization_ratio), energy});
  }
  out += render_text(t, width);
  if (!s.findings.empty()) {
    out += "\nDiagnoses during the recording:\n";
    for (const auto &f : s.findings)
      out += f.severity + ": " + wrap_after(printable(f.message), width, f.severity.size() + 2, 2) +
             "\n";
  }
  return out;
}

Json to_json(const Summary &s) {
  auto opt = [](const std::optional<double> &v) { return v ? Json(*v) : Json(nullptr); };
  Json j;
  j["duration_seconds"] = s.duration_seconds;
  j["samples"] = s.samples;
  Json gpus = Json::array();
  for (const auto &g : s.gpus)
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"samples", g.samples},
                    {"lost", g.lost},
                    {"peak_memory_bytes", opt(g.peak_memory_bytes)},
                    {"memory_total_bytes", opt(g.memory_total_bytes)},
                    {"throttled_seconds", opt(g.throttled_seconds)},
                    {"mean_utilization_ratio", opt(g.mean_utilization_ratio)},
                    {"energy_joules", opt(g.energy_joules)}});
  j["gpus"] = gpus;
  Json fs = Json::array();
  for (const auto &f : s.findings)
    fs.push_back({{"id", f.id},
                  {"severity", f.severity},
                  {"gpu", f.gpu ? Json(*f.gpu) : Json(nullptr)},
                  {"message", f.message}});
  j["findings"] = fs;
  return j;
}

void RecordingReader::in_order(double time) {
  if (last_time_ && time < *last_time_)
    throw std::runtime_error(fmt::format(
        "line {}: this sample is {:.3f} s earlier than the one before; --record writes in time "
        "order, so this looks like recordings joined together: replay each on its own",
        line_no_, *last_time_ - time));
  last_time_ = time;
}

void RecordingReader::line(std::string_view line) {
  ++line_no_;
  if (line.find_first_not_of(" \t\r") == std::string_view::npos)
    return;
  if (format_ == Format::unknown) {
    const char first = line[line.find_first_not_of(" \t\r")];
    if (first != '{') {
      if (!is_csv_header(line))
        throw std::runtime_error(fmt::format(
            "line {}: not the header `dlrig watch --record FILE.csv` writes", line_no_));
      format_ = Format::csv;
      return;
    }
    format_ = Format::json_lines;
  }
  if (format_ == Format::csv) {
    CsvRow row = csv_row(line, line_no_);
    in_order(row.time);
    if (csv_sample_ && csv_sample_->time != row.time) {
      each_(std::move(*csv_sample_));
      csv_sample_.reset();
    }
    if (!csv_sample_) {
      csv_sample_.emplace();
      csv_sample_->time = row.time;
    }
    csv_sample_->host = row.host;
    if (row.gpu)
      csv_sample_->gpus.push_back(std::move(*row.gpu));
    return;
  }
  Sample s;
  try {
    Json j = Json::parse(line);
    s = sample_from_json(j.contains("sample") ? j.at("sample") : j);
  } catch (const std::exception &e) {
    throw std::runtime_error(
        fmt::format("line {}: not a sample of `dlrig watch --json` ({})", line_no_, e.what()));
  }
  in_order(s.time);
  each_(std::move(s));
}

void RecordingReader::finish() {
  if (csv_sample_) {
    each_(std::move(*csv_sample_));
    csv_sample_.reset();
  }
  if (format_ == Format::unknown)
    throw std::runtime_error("the recording is empty");
}

std::vector<Sample> read_recording(std::string_view text) {
  std::vector<Sample> out;
  RecordingReader reader([&](Sample s) { out.push_back(std::move(s)); });
  while (!text.empty()) {
    auto nl = text.find('\n');
    reader.line(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  reader.finish();
  return out;
}

} // namespace dlrig::monitor

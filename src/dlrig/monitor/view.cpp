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

Summary summarize(const std::vector<Sample> &samples) {
  Summary sum;
  sum.samples = samples.size();
  if (samples.empty())
    return sum;
  sum.duration_seconds = samples.back().time - samples.front().time;
  std::vector<double> gaps;
  for (std::size_t i = 1; i < samples.size(); ++i)
    gaps.push_back(samples[i].time - samples[i - 1].time);
  double typical = 0;
  if (!gaps.empty()) {
    auto g = gaps;
    std::nth_element(g.begin(), g.begin() + static_cast<long>(g.size() / 2), g.end());
    typical = g[g.size() / 2];
  }
  auto weight = [&](std::size_t i) { return i + 1 < samples.size() ? gaps[i] : typical; };

  for (std::size_t i = 0; i < samples.size(); ++i) {
    for (const auto &g : samples[i].gpus) {
      auto it = std::find_if(sum.gpus.begin(), sum.gpus.end(),
                             [&](const GpuSummary &x) { return x.index == g.index; });
      if (it == sum.gpus.end()) {
        sum.gpus.push_back(GpuSummary{});
        it = sum.gpus.end() - 1;
        it->index = g.index;
        it->name = g.name;
      }
      ++it->samples;
      it->lost = it->lost || g.lost;
      if (g.memory_used_bytes)
        it->peak_memory_bytes = std::max(it->peak_memory_bytes.value_or(0), *g.memory_used_bytes);
      if (g.memory_total_bytes)
        it->memory_total_bytes = g.memory_total_bytes;
      if (g.clocks_event_reasons) {
        bool throttled =
            !throttle_reasons(static_cast<std::uint64_t>(*g.clocks_event_reasons)).empty();
        it->throttled_seconds = it->throttled_seconds.value_or(0) + (throttled ? weight(i) : 0);
      }
    }
  }
  for (auto &gs : sum.gpus) {
    double util = 0, util_w = 0, power_j = 0;
    bool power_known = false;
    std::optional<double> e_first, e_last;
    for (std::size_t i = 0; i < samples.size(); ++i)
      for (const auto &g : samples[i].gpus) {
        if (g.index != gs.index)
          continue;
        if (g.utilization_ratio) {
          util += *g.utilization_ratio * weight(i);
          util_w += weight(i);
        }
        if (g.energy_joules) {
          if (!e_first)
            e_first = g.energy_joules;
          e_last = g.energy_joules;
        }
        if (g.power_watts && i + 1 < samples.size()) {
          power_j += *g.power_watts * gaps[i];
          power_known = true;
        }
      }
    if (util_w > 0)
      gs.mean_utilization_ratio = util / util_w;
    if (e_first && e_last && *e_last >= *e_first && samples.size() > 1)
      gs.energy_joules = *e_last - *e_first;
    else if (power_known)
      gs.energy_joules = power_j;
  }
  // The diagnoses over a sliding minute.
  std::vector<Sample> window;
  for (const auto &s : samples) {
    window.push_back(s);
    while (!window.empty() && s.time - window.front().time > 60)
      window.erase(window.begin());
    for (auto &f : diagnose(window))
      if (std::none_of(sum.findings.begin(), sum.findings.end(),
                       [&](const Finding &x) { return x.id == f.id && x.gpu == f.gpu; }))
        sum.findings.push_back(std::move(f));
  }
  return sum;
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

std::vector<Sample> read_recording(std::string_view text) {
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    throw std::runtime_error("the recording is empty");
  if (text[first] != '{')
    return samples_from_csv(text);
  std::vector<Sample> out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    try {
      Json j = Json::parse(line);
      out.push_back(sample_from_json(j.contains("sample") ? j.at("sample") : j));
    } catch (const std::exception &e) {
      throw std::runtime_error(
          fmt::format("line {}: not a sample of `dlrig watch --json` ({})", line_no, e.what()));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Sample &a, const Sample &b) { return a.time < b.time; });
  return out;
}

} // namespace dlrig::monitor

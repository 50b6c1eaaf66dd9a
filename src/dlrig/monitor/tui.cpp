#include "dlrig/monitor/tui.hpp"

#include "dlrig/monitor/diagnose.hpp"
#include "dlrig/monitor/view.hpp"
#include "dlrig/output/text.hpp"

#include <curses.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>

namespace dlrig::monitor {

std::string history_line(const std::vector<std::optional<double>> &values, std::size_t width) {
  static const char levels[] = " .:-=+*#%@";
  std::string out(width, ' ');
  std::size_t n = std::min(values.size(), width);
  for (std::size_t i = 0; i < n; ++i) {
    const auto &v = values[values.size() - n + i];
    if (!v)
      continue;
    double r = std::clamp(*v, 0.0, 1.0);
    out[width - n + i] = levels[static_cast<std::size_t>(std::lround(r * 9))];
  }
  return out;
}

std::string bar(const std::optional<double> &ratio, std::size_t width) {
  if (width < 3)
    width = 3;
  std::size_t inner = width - 2;
  if (!ratio) {
    std::string na = "n/a";
    std::string s(inner, ' ');
    if (inner >= na.size())
      s.replace((inner - na.size()) / 2, na.size(), na);
    return "[" + s + "]";
  }
  std::size_t fill = static_cast<std::size_t>(
      std::lround(std::clamp(*ratio, 0.0, 1.0) * static_cast<double>(inner)));
  return "[" + std::string(fill, '|') + std::string(inner - fill, ' ') + "]";
}

namespace {

enum Pair : short { kNormal = 1, kGood, kWarn, kBad, kHead };

void put(int y, int x, const std::string &text, int attr = 0) {
  int h = 0, w = 0;
  getmaxyx(stdscr, h, w);
  if (y < 0 || y >= h || x >= w)
    return;
  std::string clean = printable(text);
  attron(attr);
  mvaddnstr(y, x, clean.c_str(), w - x);
  attroff(attr);
}

std::optional<double> ratio(const std::optional<double> &a, const std::optional<double> &b) {
  if (!a || !b || *b <= 0)
    return std::nullopt;
  return *a / *b;
}

std::string fmt_gib(const std::optional<double> &v) {
  return v ? fmt::format("{:.1f}", *v / (1024.0 * 1024 * 1024)) : "n/a";
}

} // namespace

std::size_t run_tui(const std::function<Sample()> &take, const TuiOptions &o) {
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  timeout(100);
  bool colour = o.colour && has_colors();
  if (colour) {
    start_color();
    use_default_colors();
    init_pair(kNormal, -1, -1);
    init_pair(kGood, COLOR_GREEN, -1);
    init_pair(kWarn, COLOR_YELLOW, -1);
    init_pair(kBad, COLOR_RED, -1);
    init_pair(kHead, COLOR_CYAN, -1);
  }
  auto pair = [&](Pair p) { return colour ? COLOR_PAIR(p) : 0; };

  std::vector<Sample> window;
  // Per GPU, per graph (utilisation, memory, power, temperature, SM clock): ratios 0-1.
  const char *graph_names[] = {"util", "mem ", "pow ", "temp", "clk "};
  std::map<unsigned, std::array<std::deque<std::optional<double>>, 5>> history;
  std::size_t shown = 0, selected = 0;
  int sort = 0; // 0 memory, 1 SM share, 2 PID
  const char *sort_names[] = {"GPU memory", "SM share", "PID"};
  auto next = std::chrono::steady_clock::now();
  std::vector<Finding> findings;
  bool quit = false;
  bool dirty = true;

  while (!quit && !(o.stop && o.stop->load())) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next) {
      Sample s = take();
      if (o.on_sample)
        o.on_sample(s);
      add_to_window(window, s, 60);
      for (const auto &g : s.gpus) {
        auto &h = history[g.index];
        h[0].push_back(g.utilization_ratio);
        h[1].push_back(ratio(g.memory_used_bytes, g.memory_total_bytes));
        h[2].push_back(ratio(g.power_watts, g.power_limit_watts));
        h[3].push_back(ratio(g.temperature_celsius, g.slowdown_temperature_celsius));
        h[4].push_back(ratio(g.sm_clock_hertz, g.sm_clock_max_hertz));
        for (auto &d : h)
          while (d.size() > 512)
            d.pop_front();
      }
      findings = diagnose(window);
      ++shown;
      next = now + std::chrono::microseconds(
                       static_cast<long long>(std::max(0.05, o.interval_seconds) * 1e6));
      dirty = true;
    }
    int key = getch();
    switch (key) {
    case 'q':
    case 'Q':
      quit = true;
      break;
    case KEY_UP:
    case 'k':
      if (selected > 0)
        --selected;
      dirty = true;
      break;
    case KEY_DOWN:
    case 'j':
      if (!window.empty() && selected + 1 < window.back().gpus.size())
        ++selected;
      dirty = true;
      break;
    case 's':
      sort = (sort + 1) % 3;
      dirty = true;
      break;
    case KEY_RESIZE:
      dirty = true;
      break;
    default:
      break;
    }
    if (!dirty || window.empty())
      continue;
    dirty = false;

    const Sample &s = window.back();
    int h = 0, w = 0;
    getmaxyx(stdscr, h, w);
    erase();
    put(0, 0,
        fmt::format("dlrig watch  {} GPU(s)  every {:.1f} s  q quit  up/down select  s sort ({})",
                    s.gpus.size(), o.interval_seconds, sort_names[sort]),
        pair(kHead) | A_BOLD);
    int y = 2;
    if (!s.nvml_ok)
      put(y++, 0, "NVML: " + s.nvml_error, pair(kWarn));
    if (s.gpus.empty())
      put(y++, 0, "No NVIDIA GPU to watch.");
    const std::size_t bw = static_cast<std::size_t>(std::clamp(w / 8, 8, 22));
    for (std::size_t i = 0; i < s.gpus.size() && y < h - 4; ++i) {
      const auto &g = s.gpus[i];
      int attr = i == selected ? A_REVERSE : 0;
      put(y, 0, fmt::format("{} {:<2} {}", i == selected ? ">" : " ", g.index, g.name),
          attr | A_BOLD);
      ++y;
      if (g.lost) {
        put(y++, 4, "lost: fell off the bus", pair(kBad) | A_BOLD);
        continue;
      }
      auto mem = ratio(g.memory_used_bytes, g.memory_total_bytes);
      auto pow = ratio(g.power_watts, g.power_limit_watts);
      auto temp = ratio(g.temperature_celsius, g.slowdown_temperature_celsius);
      auto clk = ratio(g.sm_clock_hertz, g.sm_clock_max_hertz);
      put(y, 4,
          fmt::format("UTIL {} {:>4}   MEM {} {}/{} GiB", bar(g.utilization_ratio, bw),
                      g.utilization_ratio ? fmt::format("{:.0f}%", *g.utilization_ratio * 100)
                                          : "n/a",
                      bar(mem, bw), fmt_gib(g.memory_used_bytes), fmt_gib(g.memory_total_bytes)),
          pair(kGood));
      ++y;
      put(y, 4,
          fmt::format(
              "POW  {} {:>4}   TEMP {} {}   SM {} {}", bar(pow, bw),
              g.power_watts ? fmt::format("{:.0f}W", *g.power_watts) : "n/a", bar(temp, bw),
              g.temperature_celsius ? fmt::format("{:.0f}C", *g.temperature_celsius) : "n/a",
              bar(clk, bw),
              g.sm_clock_hertz ? fmt::format("{:.0f} MHz", *g.sm_clock_hertz / 1e6) : "n/a"),
          pair(kNormal));
      ++y;
      std::string link =
          g.pcie_link_generation && g.pcie_link_width
              ? fmt::format("PCIe Gen{:.0f} x{:.0f}", *g.pcie_link_generation, *g.pcie_link_width)
              : "PCIe n/a";
      if (g.clocks_event_reasons) {
        auto r = throttle_reasons(static_cast<std::uint64_t>(*g.clocks_event_reasons));
        std::string t;
        for (const auto &x : r)
          t += (t.empty() ? "" : ", ") + x;
        link += "   throttle: " + (t.empty() ? std::string("none") : t);
      }
      put(y++, 4, link, pair(kNormal));
    }

    // History of the selected GPU.
    if (!s.gpus.empty() && y < h - 9) {
      const auto &g = s.gpus[std::min(selected, s.gpus.size() - 1)];
      std::size_t gw = static_cast<std::size_t>(std::max(10, w - 16));
      ++y;
      put(y++, 0,
          fmt::format("History of GPU {} (newest right; power of its limit, temperature of its "
                      "slowdown point, clock of its maximum)",
                      g.index),
          pair(kHead));
      const auto &hist = history[g.index];
      for (std::size_t k = 0; k < hist.size(); ++k)
        put(y++, 2,
            std::string(graph_names[k]) + " |" +
                history_line({hist[k].begin(), hist[k].end()}, gw) + "|");
    }

    // Processes.
    struct Row {
      unsigned gpu;
      const ProcessSample *p;
    };
    std::vector<Row> rows;
    for (const auto &g : s.gpus)
      if (g.processes)
        for (const auto &p : *g.processes)
          rows.push_back({g.index, &p});
    std::stable_sort(rows.begin(), rows.end(), [&](const Row &a, const Row &b) {
      if (sort == 0)
        return a.p->gpu_memory_bytes.value_or(-1) > b.p->gpu_memory_bytes.value_or(-1);
      if (sort == 1)
        return a.p->sm_ratio.value_or(-1) > b.p->sm_ratio.value_or(-1);
      return a.p->pid < b.p->pid;
    });
    ++y;
    put(y++, 0,
        fmt::format("{:<4} {:>8} {:<12} {:>10} {:>5}  {}", "GPU", "PID", "USER", "GPU MEM", "SM",
                    "COMMAND"),
        pair(kHead) | A_BOLD);
    for (const auto &r : rows) {
      if (y >= h - 1 - static_cast<int>(findings.size()))
        break;
      const auto &p = *r.p;
      put(y++, 0,
          fmt::format("{:<4} {:>8} {:<12} {:>10} {:>5}  {}", r.gpu, p.pid, p.user.value_or("n/a"),
                      p.gpu_memory_bytes
                          ? fmt::format("{:.0f} MiB", *p.gpu_memory_bytes / (1024.0 * 1024))
                          : "n/a",
                      p.sm_ratio ? fmt::format("{:.0f}%", *p.sm_ratio * 100) : "n/a",
                      p.visible ? p.command.value_or("n/a")
                                : "(not in this PID namespace: run with --pid=host)"));
    }
    if (rows.empty())
      put(y++, 0, "(no GPU process)");
    if (y < h - 1 - static_cast<int>(findings.size()))
      put(++y, 0, host_line(s.host));

    // Diagnoses at the bottom.
    int fy = std::max(y + 1, h - static_cast<int>(findings.size()));
    for (const auto &f : findings) {
      int attr = f.severity == "critical"  ? pair(kBad) | A_BOLD
                 : f.severity == "warning" ? pair(kWarn) | A_BOLD
                                           : pair(kHead);
      put(fy++, 0, f.severity + ": " + f.message, attr);
    }
    refresh();
  }
  endwin();
  return shown;
}

} // namespace dlrig::monitor

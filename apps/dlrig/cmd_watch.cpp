// `dlrig watch`: live GPU monitoring with diagnoses. Full screen on a terminal; one table per
// sample otherwise (no escape codes); --once, --json, --record FILE, --replay FILE. Ctrl-C ends a
// watch normally (exit 0). Exit codes: 0 ok, 64 usage (also --record onto an existing file without
// --overwrite, --data naming nothing), 65 a recording that cannot be read, 74 a recording or
// standard output that cannot be written.
#include "commands.hpp"
#include "dlrig/monitor/record.hpp"
#include "dlrig/monitor/sampler.hpp"
#include "dlrig/monitor/tui.hpp"
#include "dlrig/monitor/view.hpp"
#include "dlrig/platform/fs.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

namespace dlrig::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) {
  g_stop.store(true);
}

struct WatchOptions {
  std::string sysroot = "/";
  bool no_nvml = false;
  monitor::SamplerOptions sampler; // --nvml-timeout's limits
  std::string data;
  double interval = 1.0;
  unsigned count = 0;
  bool once = false;
  bool json = false;
  std::string record;
  bool overwrite = false;
  std::string replay;
  std::string color = "auto";
};

// Sleeps up to seconds, waking early on a stop signal.
void pause_for(double seconds) {
  auto until = std::chrono::steady_clock::now() +
               std::chrono::microseconds(static_cast<long long>(seconds * 1e6));
  while (!g_stop.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

ExitCode replay(const WatchOptions &o, const Envelope &run, bool colour) {
  (void)colour;
  // Read line by line into the summary: a recording of any length in little memory (a line of
  // --record's is a few KiB per GPU; 64 MiB is no line of a recording).
  monitor::SummaryBuilder builder;
  monitor::RecordingReader reader([&](monitor::Sample s) { builder.add(std::move(s)); });
  try {
    auto failed = read_lines(
        o.replay, std::size_t{64} << 20, [&](std::string_view line) { reader.line(line); },
        "recording");
    // A read that failed part-way is 74; a file that cannot be read at all, 65.
    if (failed)
      throw Failure(failed->message.find(": read failed: ") != std::string::npos
                        ? ExitCode::io
                        : ExitCode::bad_input,
                    failed->message);
    reader.finish();
  } catch (const Failure &) {
    throw;
  } catch (const std::runtime_error &e) {
    throw Failure(ExitCode::bad_input,
                  o.replay + ": " + e.what() +
                      "; give a file written by `dlrig watch --record FILE` (.csv or .jsonl)");
  }
  auto summary = builder.finish();
  Report r;
  r.json = [summary] { return monitor::to_json(summary); };
  r.table = [summary](const TextStyle &s) { return monitor::render_summary(summary, s.width); };
  OutputOptions out;
  out.json = o.json;
  out.color = o.color;
  print(r, run, out);
  return ExitCode::ok;
}

} // namespace

Runner setup_watch(CLI::App &sub) {
  auto o = std::make_shared<WatchOptions>();
  sub.add_option("--sysroot", o->sysroot, "Read /proc and /etc under DIR instead of /")
      ->type_name("DIR")
      ->check(non_empty());
  sub.add_flag("--no-nvml", o->no_nvml, "Do not load NVML (host readings only)");
  add_sampler_nvml_options(sub, o->sampler);
  sub.add_option("--data", o->data, "Where the training data lives: show its disk's throughput")
      ->type_name("PATH")
      ->check(non_empty());
  add_ranged_option<double>(sub, "--interval", o->interval, "Seconds between samples (default 1)",
                            "SECONDS", 0.05, 3600.0);
  add_ranged_option<unsigned>(sub, "--count", o->count,
                              "Stop after N samples (default: until q or Ctrl-C)", "N", 1u,
                              100000000u);
  auto *once = sub.add_flag("--once", o->once, "Print one sample as a table and exit");
  sub.add_flag("--json", o->json,
               "One JSON object per sample (JSON lines); with --replay, the summary as JSON");
  auto *record = sub.add_option("--record", o->record,
                                "Write every sample to FILE: CSV when it ends in .csv, else JSON "
                                "lines")
                     ->type_name("FILE")
                     ->check(non_empty());
  auto *replay_opt = sub.add_option("--replay", o->replay,
                                    "Summarise a recording: peak memory, time throttled, mean "
                                    "utilisation, energy, diagnoses")
                         ->type_name("FILE")
                         ->check(non_empty());
  replay_opt->excludes(once)->excludes(record);
  sub.add_flag("--overwrite", o->overwrite, "--record: replace FILE when it exists")->needs(record);
  sub.add_option("--color", o->color,
                 "auto (colour on a terminal unless NO_COLOR is set), always or never")
      ->check(CLI::IsMember(color_mode_names()))
      ->type_name("WHEN");

  return [o](const Envelope &run) {
    const bool colour = stdout_colour(parse_color_mode(o->color));
    if (!o->replay.empty())
      return replay(*o, run, colour);

    Sysroot fs(o->sysroot);
    if (!fs.is_directory("/"))
      throw Failure(ExitCode::usage, "--sysroot " + o->sysroot + ": not a directory");
    if (!o->data.empty())
      if (auto why = monitor::data_path_problem(fs, o->data))
        throw Failure(ExitCode::usage, "--data " + o->data + ": " + *why);
    // Before the sampler: an existing recording is refused before NVML is even loaded.
    std::optional<monitor::Recording> rec;
    bool csv = false;
    if (!o->record.empty()) {
      rec.emplace(value_or_throw(monitor::Recording::open(o->record, o->overwrite)));
      csv = o->record.size() >= 4 && o->record.compare(o->record.size() - 4, 4, ".csv") == 0;
      if (csv)
        if (auto e = rec->write(monitor::csv_header() + "\n"))
          throw Failure(*e);
    }
    monitor::SamplerOptions so = o->sampler;
    so.nvml_library = monitor::default_nvml_library();
    so.skip_nvml = o->no_nvml;
    so.data_path = o->data;
    monitor::Sampler sampler(fs, so);
    // One JSON line with the run's context, as every dlrig JSON document has.
    auto json_line = [&run](const monitor::Sample &s, const std::vector<monitor::Finding> &f) {
      Report r;
      r.json = [&] { return monitor::json_body(s, f); };
      return document(r, run).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    };
    auto write_record = [&](const monitor::Sample &s, const std::vector<monitor::Finding> &f) {
      if (!rec)
        return;
      if (auto e = rec->write(csv ? monitor::csv_rows(s) : json_line(s, f)))
        throw Failure(*e);
    };

    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);

    if (o->once) {
      auto s = sampler.take();
      auto findings = monitor::diagnose({s});
      write_record(s, findings);
      std::cout << (o->json ? json_line(s, findings)
                            : monitor::render_sample(s, findings, colour, stdout_width()));
      if (rec)
        if (auto e = rec->close())
          throw Failure(*e);
      return ExitCode::ok;
    }

    bool tty = ::isatty(STDOUT_FILENO) && ::isatty(STDIN_FILENO);
    if (tty && !o->json)
      if (auto why = monitor::full_screen_unavailable()) {
        to_stderr("dlrig watch: " + *why + ": one table per sample instead of the full screen");
        tty = false;
      }
    if (tty && !o->json) {
      monitor::TuiOptions t;
      t.interval_seconds = o->interval;
      t.colour = colour;
      t.stop = &g_stop;
      std::size_t n = 0;
      std::optional<Failure> failed; // thrown once the screen is restored
      t.on_sample = [&](const monitor::Sample &s) {
        try {
          write_record(s, {});
        } catch (const Failure &f) {
          failed = f;
          g_stop.store(true);
        }
        if (o->count && ++n >= o->count)
          g_stop.store(true);
      };
      monitor::run_tui([&] { return sampler.take(); }, t);
      if (failed)
        throw *failed;
      if (rec)
        if (auto e = rec->close())
          throw Failure(*e);
      return ExitCode::ok;
    }

    std::vector<monitor::Sample> window;
    for (unsigned n = 0; !g_stop.load() && (o->count == 0 || n < o->count); ++n) {
      if (n > 0)
        pause_for(o->interval);
      if (g_stop.load())
        break;
      auto s = sampler.take();
      monitor::add_to_window(window, s, 60);
      auto findings = monitor::diagnose(window);
      write_record(s, findings);
      if (o->json)
        std::cout << json_line(s, findings);
      else if (o->record.empty())
        std::cout << (n ? "\n" : "") << monitor::render_sample(s, findings, colour, stdout_width());
      flush_stdout(); // a watch whose standard output is gone stops and says so
    }
    if (rec) {
      if (auto e = rec->close())
        throw Failure(*e);
      to_stderr("dlrig watch: recorded to " + o->record);
    }
    return ExitCode::ok;
  };
}

} // namespace dlrig::cli

#pragma once
// The front door's command table: each command adds its options to its CLI11 subcommand and
// returns what to run once the command line is parsed. Behaviour lives in the dlrig library.
#include "dlrig/core/exit_code.hpp"
#include "dlrig/core/snapshot.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/output/envelope.hpp"
#include "dlrig/output/print.hpp"
#include "dlrig/probe/probe.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace dlrig::monitor {
struct SamplerOptions;
}

namespace dlrig::cli {

// A command's run: `run` is the envelope main() built once for this run (tool, version, host,
// time, command line); commands that read a snapshot add its source (with_source).
using Runner = std::function<ExitCode(const Envelope &run)>;

struct Command {
  const char *name;
  const char *summary;
  Runner (*setup)(CLI::App &sub);
};

// Where the snapshot comes from: a saved file (--from) or the live machine (seen through
// --sysroot and, for NVML, DLRIG_NVML_LIBRARY).
struct SnapshotSource {
  std::string from;
  ProbeOptions probe;
  bool redact = false;
};
void add_snapshot_options(CLI::App &sub, SnapshotSource &src, bool analysis = true);

// Refuses an empty value ("--from ''"): an empty path names nothing, it does not mean "not given".
CLI::Validator non_empty();

// One line (a newline is added) to standard error, made printable: paths, file names and the
// driver's words reach the terminal with their control characters escaped, as on stdout (a
// dataset file named with an escape sequence must not retitle or clear the terminal).
void to_stderr(const std::string &line);

// Flushes standard output; data that never got there (a full disk behind `> file`) throws
// Failure(io) "cannot write to standard output: REASON": stdio reports a failed write only when
// flushed.
void flush_stdout();

// A numeric flag with a documented range [lo, hi], shown in --help. Not a number, NaN,
// infinity, a fraction for a whole-number flag or a value out of range is a usage error (64)
// naming the flag, the value and the range. `set` receives the checked value.
template <class T>
CLI::Option *add_ranged_option(CLI::App &sub, const std::string &name, std::function<void(T)> set,
                               const std::string &help, const std::string &type_name, T lo, T hi) {
  std::string range = fmt::format("{} to {}", lo, hi);
  return sub
      .add_option_function<std::string>(
          name,
          [name, set, lo, hi, range](const std::string &text) {
            auto v = parse_ranged<T>(text, lo, hi);
            if (!v)
              throw CLI::ValidationError(
                  name, fmt::format("\"{}\" is not {} from {}", text,
                                    std::is_integral_v<T> ? "a whole number" : "a number", range));
            set(*v);
          },
          help + " [" + range + "]")
      ->type_name(type_name);
}
template <class T>
CLI::Option *add_ranged_option(CLI::App &sub, const std::string &name, T &target,
                               const std::string &help, const std::string &type_name, T lo, T hi) {
  return add_ranged_option<T>(sub, name, std::function<void(T)>([&target](T v) { target = v; }),
                              help, type_name, lo, hi);
}
// --nvml-timeout SECONDS (0.1 to 600): how long NVML may take to answer (the probe's, watch's and
// serve's), given to `set` in milliseconds.
CLI::Option *add_nvml_timeout(CLI::App &sub, std::function<void(std::chrono::milliseconds)> set,
                              const std::string &help);
// watch's and serve's --nvml-timeout (both of the sampler's limits: opening, each sample) and
// --nvml-retry, and NVML asked again through dlrig's own binary; the options must outlive the
// parse.
void add_sampler_nvml_options(CLI::App &sub, monitor::SamplerOptions &sampler);
// Loads or probes; a bad --from file throws Failure(bad_input).
Snapshot obtain_snapshot(const SnapshotSource &src);
// The run's envelope with this snapshot source (live, sysroot or file), redacted with --redact.
Envelope with_source(const Envelope &run, const SnapshotSource &src);

// --json, --markdown, --csv (only where the result is tabular) and --color.
struct OutputOptions {
  bool json = false;
  bool markdown = false;
  bool csv = false;
  std::string color = "auto";
  Format format() const {
    return json ? Format::json : markdown ? Format::markdown : csv ? Format::csv : Format::table;
  }
  PrintOptions print() const {
    return {format(), stdout_colour(parse_color_mode(color)), stdout_width()};
  }
};
void add_output_options(CLI::App &sub, OutputOptions &out, bool with_csv = true);
// Prints the report to stdout in the chosen format: the one way every command prints.
void print(const Report &report, const Envelope &run, const OutputOptions &out);

Runner setup_info(CLI::App &sub);     // cmd_info.cpp
Runner setup_snapshot(CLI::App &sub); // cmd_info.cpp
Runner setup_doctor(CLI::App &sub);   // cmd_doctor.cpp
Runner setup_fit(CLI::App &sub);      // cmd_fit.cpp
Runner setup_pick(CLI::App &sub);     // cmd_pick.cpp
Runner setup_kb(CLI::App &sub);       // cmd_kb.cpp
Runner setup_bench(CLI::App &sub);    // cmd_bench.cpp
Runner setup_watch(CLI::App &sub);    // cmd_watch.cpp
Runner setup_serve(CLI::App &sub);    // cmd_serve.cpp

} // namespace dlrig::cli

#pragma once
// The front door's command table: each command adds its options to its CLI11 subcommand and
// returns what to run once the command line is parsed. Behaviour lives in the dlrig library.
#include "dlrig/core/exit_code.hpp"
#include "dlrig/core/snapshot.hpp"
#include "dlrig/output/envelope.hpp"
#include "dlrig/output/print.hpp"
#include "dlrig/probe/probe.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

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
  PrintOptions print() const { return {format(), stdout_colour(parse_color_mode(color))}; }
};
void add_output_options(CLI::App &sub, OutputOptions &out, bool with_csv = true);
// Prints the report to stdout in the chosen format: the one way every command prints.
void print(const Report &report, const Envelope &run, const OutputOptions &out);

Runner setup_info(CLI::App &sub);     // cmd_info.cpp
Runner setup_snapshot(CLI::App &sub); // cmd_info.cpp
Runner setup_doctor(CLI::App &sub);   // cmd_doctor.cpp
Runner setup_fit(CLI::App &sub);      // cmd_fit.cpp
Runner setup_kb(CLI::App &sub);       // cmd_kb.cpp

} // namespace dlrig::cli

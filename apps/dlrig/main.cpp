// The dlrig command: parses the command line, dispatches to the library, maps outcomes to exit
// codes (documented in the README).
#include "commands.hpp"

#include "dlrig/monitor/sampler.hpp"
#include "dlrig/output/text.hpp"
#include "dlrig/platform/process.hpp"

#include "dlrig/probe/collect_env.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

namespace dlrig::cli {
namespace {

const Command kCommands[] = {
    {"info", "Everything about this machine and its software (table, --json, --markdown)",
     setup_info},
    {"snapshot", "Print the machine snapshot as JSON (save it, then use --from FILE)",
     setup_snapshot},
    {"doctor", "Every known reason PyTorch fails or runs slow here, with the fix", setup_doctor},
    {"fit", "Will a model train or serve on these GPUs: memory, batch, time", setup_fit},
    {"pick", "Which GPUs, machine or cloud instance to get for a workload, a goal and a budget",
     setup_pick},
    {"kb", "Search the knowledge base: gpus, archs, cuda, torch, links, models, cloud", setup_kb},
    {"bench", "Measure what this machine delivers: CPU GEMM, memory bandwidth (STREAM)",
     setup_bench},
    {"watch", "Live GPU monitor that says what is wrong: throttling, starving, links, memory",
     setup_watch},
    {"serve", "Prometheus exporter of the same readings and diagnoses (/metrics)", setup_serve},
};

} // namespace

CLI::Validator non_empty() {
  // CLI11 prefixes the flag: "--from: an empty value names nothing".
  return CLI::Validator(
      [](std::string &v) -> std::string {
        return v.empty() ? "an empty value names nothing; give a path" : std::string();
      },
      "", "non-empty");
}

void to_stderr(const std::string &line) {
  std::cerr << printable(line) << "\n";
}

void flush_stdout() {
  errno = 0;
  if (!std::cout.flush() || std::fflush(stdout) != 0 || std::ferror(stdout))
    throw Failure(ExitCode::io, std::string("cannot write to standard output: ") +
                                    std::strerror(errno ? errno : EIO));
}

CLI::Option *add_nvml_timeout(CLI::App &sub, std::function<void(std::chrono::milliseconds)> set,
                              const std::string &help) {
  return add_ranged_option<double>(sub, "--nvml-timeout",
                                   std::function<void(double)>([set](double seconds) {
                                     set(std::chrono::milliseconds(std::llround(seconds * 1000)));
                                   }),
                                   help, "SECONDS", 0.1, 600.0);
}

void add_sampler_nvml_options(CLI::App &sub, monitor::SamplerOptions &sampler) {
  sampler.nvml_helper = "/proc/self/exe"; // NVML asked again in `dlrig __nvml-helper`
  add_nvml_timeout(
      sub,
      [&sampler](std::chrono::milliseconds t) {
        sampler.nvml_open_timeout = sampler.nvml_sample_timeout = t;
      },
      "How long NVML may take to answer, in seconds (default 30 to open it, 10 for each "
      "sample); past it NVIDIA GPUs are not read until it answers again (--nvml-retry)");
  add_ranged_option<double>(
      sub, "--nvml-retry", std::function<void(double)>([&sampler](double seconds) {
        sampler.nvml_retry = std::chrono::milliseconds(std::llround(seconds * 1000));
      }),
      "After NVML stopped answering or crashed, ask it again in a new process after SECONDS "
      "(default 60), then twice as long each time it fails, at most 15 minutes; 0: never",
      "SECONDS", 0.0, 3600.0);
}

void add_snapshot_options(CLI::App &sub, SnapshotSource &src, bool analysis) {
  CLI::Option *from = nullptr;
  if (analysis)
    from = sub.add_option("--from", src.from,
                          "Work on a saved snapshot (from `dlrig snapshot`) or on the text of "
                          "`python -m torch.utils.collect_env` (not with the probe's options "
                          "below)")
               ->type_name("FILE")
               ->check(non_empty());
  // The probe's options: a saved snapshot was probed already, so they cannot apply to it and
  // are refused next to --from rather than silently ignored.
  std::vector<CLI::Option *> probing;
  probing.push_back(sub.add_option("--sysroot", src.probe.sysroot,
                                   "Read /sys, /proc, /dev, /etc, /usr... under DIR instead of /")
                        ->type_name("DIR")
                        ->check(non_empty()));
  probing.push_back(sub.add_flag("--no-nvml", src.probe.skip_nvml, "Do not load NVML"));
  probing.push_back(sub.add_flag("--deep", src.probe.deep,
                                 "Also run each Python interpreter once to ask torch itself"));
  probing.push_back(add_ranged_option<double>(
      sub, "--deep-timeout", std::function<void(double)>([&src](double s) {
        src.probe.deep_timeout = std::chrono::milliseconds(std::llround(s * 1000));
      }),
      "Time limit of --deep, in seconds (default 10)", "SECONDS", 0.1, 600.0));
  probing.push_back(add_nvml_timeout(
      sub, [&src](std::chrono::milliseconds t) { src.probe.nvml_timeout = t; },
      "How long to wait for NVML, in seconds (default 30); past it NVML's readings are unknown"));
  probing.push_back(sub.add_option("--python", src.probe.pythons,
                                   "Also inspect this Python interpreter (repeatable)")
                        ->type_name("PATH")
                        ->check(non_empty()));
  if (from)
    for (auto *o : probing)
      from->excludes(o);
  sub.add_flag("--redact", src.redact,
               "Remove hostname, GPU UUIDs, user names and home paths (for pasting in public)");
}

Snapshot obtain_snapshot(const SnapshotSource &src) {
  Snapshot snap;
  if (!src.from.empty()) {
    snap = value_or_throw(probe::load_snapshot_or_report(src.from, kb::builtin()));
  } else {
    Sysroot fs(src.probe.sysroot);
    if (!fs.is_directory("/"))
      throw Failure(ExitCode::usage, "--sysroot " + src.probe.sysroot + ": not a directory");
    snap = probe_machine(fs, current_environment(), src.probe);
  }
  if (src.redact)
    redact(snap, this_identity());
  return snap;
}

Envelope with_source(const Envelope &run, const SnapshotSource &src) {
  Envelope e = run;
  if (!src.from.empty())
    e.source = SnapshotOrigin{"file", src.from};
  else if (src.probe.sysroot != "/")
    e.source = SnapshotOrigin{"sysroot", src.probe.sysroot};
  else
    e.source = SnapshotOrigin{"live", std::nullopt};
  return src.redact ? redacted(std::move(e)) : e;
}

void add_output_options(CLI::App &sub, OutputOptions &out, bool with_csv) {
  auto *json = sub.add_flag("--json", out.json, "Print JSON");
  auto *md = sub.add_flag("--markdown", out.markdown, "Print markdown, ready to paste in an issue");
  json->excludes(md);
  if (with_csv)
    sub.add_flag("--csv", out.csv, "Print CSV")->excludes(json)->excludes(md);
  sub.add_option("--color", out.color,
                 "auto (colour on a terminal unless NO_COLOR is set), always or never")
      ->check(CLI::IsMember(color_mode_names()))
      ->type_name("WHEN");
}

void print(const Report &report, const Envelope &run, const OutputOptions &out) {
  std::cout << render_report(report, run, out.print());
}

} // namespace dlrig::cli

int main(int argc, char **argv) {
  using namespace dlrig;
  using namespace dlrig::cli;
  // watch's and serve's NVML process after NVML stopped answering (monitor/sampler.hpp): not a
  // command for people, so not in --help.
  if (argc == 4 && std::string_view(argv[1]) == "__nvml-helper")
    monitor::run_nvml_helper(argv[2], std::string_view(argv[3]) == "1");
  CLI::App app{"dlrig: know, check, measure and size a GPU machine for PyTorch"};
  app.set_version_flag("--version", std::string("dlrig ") + DLRIG_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App *, Runner>> runners;
  for (const auto &cmd : kCommands) {
    auto *sub = app.add_subcommand(cmd.name, cmd.summary);
    runners.emplace_back(sub, cmd.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // CLI11's messages quote the user's words (and --help the program's path): escaped as
    // everything else dlrig writes, so a value holding a terminal escape cannot reach the terminal.
    std::ostringstream out, err;
    int rc = app.exit(e, out, err);
    std::cout << printable(out.str()) << std::flush;
    std::cerr << printable(err.str());
    return rc == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }
  // The one envelope of this run: every JSON document carries its context.
  Envelope envelope;
  envelope.tool_version = DLRIG_VERSION;
  envelope.host = this_host();
  envelope.time = utc_now();
  envelope.command_line.assign(argv, argv + argc);
  // A thread left inside a library (platform/process.hpp) ends the process here, with _exit.
  return end_process([&] {
    try {
      for (auto &[sub, run] : runners)
        if (sub->parsed()) {
          int rc = static_cast<int>(run(envelope));
          flush_stdout(); // results that never reached stdout are a failed command, not exit 0
          return rc;
        }
    } catch (const Failure &f) {
      std::fflush(stdout);
      std::cerr << "dlrig: " << printable(f.what()) << "\n";
      return static_cast<int>(f.code());
    } catch (const std::exception &e) {
      std::fflush(stdout);
      std::cerr << "dlrig: internal error: " << printable(e.what())
                << "\n(please report it with the command line that caused it)\n";
      return static_cast<int>(ExitCode::internal);
    }
    return static_cast<int>(ExitCode::usage);
  }());
}

// `dlrig doctor`: parses the options, obtains the snapshot, runs the checks and prints.
#include "commands.hpp"
#include "dlrig/core/clock.hpp"
#include "dlrig/doctor/report.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

namespace dlrig::cli {
namespace {

struct DoctorArgs {
  SnapshotSource src;
  OutputOptions out;
  bool list = false;
  std::string explain;
  std::vector<std::string> only;
};

} // namespace

Runner setup_doctor(CLI::App &sub) {
  auto a = std::make_shared<DoctorArgs>();
  add_snapshot_options(sub, a->src);
  add_output_options(sub, a->out);
  sub.add_flag("--list-checks", a->list, "List every check with its id and area");
  sub.add_option("--explain", a->explain,
                 "Explain one check: what it reads, when it fires, the fix")
      ->type_name("ID");
  sub.add_option("--only", a->only, "Run only the checks of this area (repeatable)")
      ->type_name("AREA");
  return [a]() -> ExitCode {
    using namespace dlrig::doctor;
    if (a->list) {
      std::cout << render_check_list(a->out.format());
      return ExitCode::ok;
    }
    if (!a->explain.empty()) {
      const Check *c = find_check(a->explain);
      if (!c) {
        std::string near;
        for (const auto &id : nearest_ids(a->explain))
          near += (near.empty() ? "" : ", ") + id;
        throw Failure(ExitCode::usage, "--explain " + a->explain + ": no such check; nearest: " +
                                           near + " (dlrig doctor --list-checks lists them all)");
      }
      std::cout << render_explain(*c);
      return ExitCode::ok;
    }
    auto areas = all_areas();
    for (const auto &area : a->only)
      if (std::find(areas.begin(), areas.end(), area) == areas.end()) {
        std::string known;
        for (const auto &k : areas)
          known += (known.empty() ? "" : ", ") + k;
        throw Failure(ExitCode::usage, "--only " + area + ": no such area; areas: " + known);
      }
    DoctorOptions opts;
    opts.only = a->only;
    opts.data_path = a->src.probe.data_path;
    if (opts.data_path.empty() && a->src.from.empty() && a->src.probe.sysroot == "/") {
      // Probing this machine: the data is usually where training starts. (A fixture tree or a
      // saved snapshot is another machine: its working directory is unknown.)
      std::error_code ec;
      auto cwd = std::filesystem::current_path(ec);
      if (!ec)
        opts.data_path = cwd.string();
    } else if (!opts.data_path.empty() && opts.data_path.front() != '/') {
      std::error_code ec;
      auto abs = std::filesystem::absolute(opts.data_path, ec);
      if (!ec)
        opts.data_path = abs.lexically_normal().string();
    }
    Snapshot snap = obtain_snapshot(a->src);
    DoctorReport report = run_doctor(snap, kb::builtin(), opts);
    report.context.tool_version = DLRIG_VERSION;
    report.context.time = utc_now();
    report.context.source = a->src.from.empty() ? std::string("live") : a->src.from;
    switch (a->out.format()) {
    case Format::json:
      std::cout << to_json(report).dump(2) << "\n";
      break;
    case Format::markdown:
      std::cout << render_markdown(report);
      break;
    default: {
      bool colour = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
      std::cout << render_text(report, colour);
    }
    }
    return report.exit_code();
  };
}

} // namespace dlrig::cli

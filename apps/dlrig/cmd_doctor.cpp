// `dlrig doctor`: parses the options, obtains the snapshot, runs the checks and prints.
#include "commands.hpp"
#include "dlrig/bench/measured.hpp"
#include "dlrig/core/clock.hpp"
#include "dlrig/doctor/report.hpp"
#include "dlrig/monitor/host.hpp"
#include "dlrig/platform/fs.hpp"

#include <algorithm>
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
  // Only doctor reads it (host.dataset-on-slow-disk); it also applies to a saved snapshot.
  sub.add_option("--data", a->src.probe.data_path, "Where the training data lives (storage checks)")
      ->type_name("PATH")
      ->check(non_empty());
  add_output_options(sub, a->out);
  sub.add_flag("--list-checks", a->list, "List every check with its id and area");
  sub.add_option("--explain", a->explain,
                 "Explain one check: what it reads, when it fires, the fix")
      ->type_name("ID");
  sub.add_option("--only", a->only, "Run only the checks of this area (repeatable)")
      ->type_name("AREA");
  return [a](const Envelope &run) -> ExitCode {
    using namespace dlrig::doctor;
    if (a->list) {
      print(check_list_report(), run, a->out);
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
    // On this machine the path must be there: one that is not would be judged by the disk of the
    // longest mount point above it, the root's, and pass or warn for another disk than the data's
    // (as watch and serve refuse it). A saved snapshot or a fixture tree is another machine.
    if (!a->src.probe.data_path.empty() && a->src.from.empty() && a->src.probe.sysroot == "/")
      if (auto why = monitor::data_path_problem(Sysroot("/"), opts.data_path))
        throw Failure(ExitCode::usage, "--data " + a->src.probe.data_path + ": " + *why);
    Snapshot snap = obtain_snapshot(a->src);
    DoctorReport report = run_doctor(snap, kb::builtin(), opts);
    // This machine: what `dlrig bench` measured on it (the disk against the JPEG decoders).
    if (a->src.from.empty() && a->src.probe.sysroot == "/" && a->only.empty())
      if (auto feed = bench::storage_feed_check(bench::load_stored()))
        report.results.push_back(*feed);
    print(doctor_report(report), with_source(run, a->src), a->out);
    return report.exit_code();
  };
}

} // namespace dlrig::cli

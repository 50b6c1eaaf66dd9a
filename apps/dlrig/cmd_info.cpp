// `dlrig info` and `dlrig snapshot`: obtain the snapshot and print it.
#include "commands.hpp"
#include "dlrig/info/report.hpp"

namespace dlrig::cli {

Runner setup_info(CLI::App &sub) {
  auto src = std::make_shared<SnapshotSource>();
  auto out = std::make_shared<OutputOptions>();
  add_snapshot_options(sub, *src);
  add_output_options(sub, *out);
  return [src, out](const Envelope &run) {
    auto snap = obtain_snapshot(*src);
    print(info_report(snap), with_source(run, *src), *out);
    return ExitCode::ok;
  };
}

Runner setup_snapshot(CLI::App &sub) {
  auto src = std::make_shared<SnapshotSource>();
  add_snapshot_options(sub, *src, false);
  return [src](const Envelope &run) {
    auto snap = obtain_snapshot(*src);
    OutputOptions json;
    json.json = true;
    print(snapshot_report(snap), with_source(run, *src), json);
    return ExitCode::ok;
  };
}

} // namespace dlrig::cli

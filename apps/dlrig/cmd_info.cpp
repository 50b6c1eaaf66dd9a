#include "commands.hpp"
#include "dlrig/output/info.hpp"

#include <iostream>

namespace dlrig::cli {

Runner setup_info(CLI::App& sub) {
  auto src = std::make_shared<SnapshotSource>();
  auto out = std::make_shared<OutputOptions>();
  add_snapshot_options(sub, *src);
  add_output_options(sub, *out);
  return [src, out] {
    auto snap = obtain_snapshot(*src);
    if (out->format() == Format::json)
      std::cout << to_json(snap).dump(2) << "\n";
    else
      std::cout << render_info(snap, out->format());
    return ExitCode::ok;
  };
}

Runner setup_snapshot(CLI::App& sub) {
  auto src = std::make_shared<SnapshotSource>();
  add_snapshot_options(sub, *src, false);
  return [src] {
    std::cout << to_json(obtain_snapshot(*src)).dump(2) << "\n";
    return ExitCode::ok;
  };
}

} // namespace dlrig::cli

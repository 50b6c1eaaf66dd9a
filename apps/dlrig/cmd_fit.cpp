#include "commands.hpp"

namespace dlrig::cli {

Runner setup_fit(CLI::App&) {
  return [] () -> ExitCode {
    throw Failure(ExitCode::internal, "`dlrig fit` is not built yet in this version");
  };
}

} // namespace dlrig::cli

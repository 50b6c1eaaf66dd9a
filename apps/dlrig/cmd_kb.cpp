#include "commands.hpp"

namespace dlrig::cli {

Runner setup_kb(CLI::App&) {
  return [] () -> ExitCode {
    throw Failure(ExitCode::internal, "`dlrig kb` is not built yet in this version");
  };
}

} // namespace dlrig::cli

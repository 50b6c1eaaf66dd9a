#include "commands.hpp"

namespace dlrig::cli {

Runner setup_doctor(CLI::App&) {
  return [] () -> ExitCode {
    throw Failure(ExitCode::internal, "`dlrig doctor` is not built yet in this version");
  };
}

} // namespace dlrig::cli

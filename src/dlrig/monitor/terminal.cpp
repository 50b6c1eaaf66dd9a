// full_screen_unavailable() (tui.hpp) on its own: terminfo's <term.h> defines macros named as
// its capabilities (lines, columns ...) that the full-screen view's code must not see.
#include "dlrig/monitor/tui.hpp"

#include <curses.h>
#include <fmt/format.h>
#include <term.h>
#include <unistd.h>

#include <cstdlib>

namespace dlrig::monitor {

std::optional<std::string> full_screen_unavailable() {
  const char *term = std::getenv("TERM");
  const std::string name = term && *term ? term : "";
  if (name.empty())
    return std::string("TERM is not set");
  int err = 0;
  if (setupterm(nullptr, STDOUT_FILENO, &err) != OK)
    return err == 0 ? fmt::format("TERM={} is not a terminal terminfo knows", name)
                    : std::string("no terminfo database");
  const char *cup = tigetstr(const_cast<char *>("cup"));
  const bool addressable = cup != nullptr && cup != reinterpret_cast<char *>(-1);
  del_curterm(cur_term);
  if (!addressable)
    return fmt::format("TERM={} cannot move the cursor", name);
  return std::nullopt;
}

} // namespace dlrig::monitor

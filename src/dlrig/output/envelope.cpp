#include "dlrig/output/envelope.hpp"

#include "dlrig/core/clock.hpp"
#include "dlrig/core/snapshot.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace dlrig {

Json context_json(const Envelope &e) {
  Json source = nullptr;
  if (e.source)
    source = Json{{"kind", e.source->kind}, {"path", e.source->path}};
  return Json{{"tool", e.tool}, {"tool_version", e.tool_version}, {"host", e.host},
              {"time", e.time}, {"command_line", e.command_line}, {"source", source}};
}

OptStr this_host() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0')
    return std::nullopt;
  return std::string(buf);
}

Identity this_identity() {
  Identity who;
  for (const char *var : {"HOME", "USER", "LOGNAME"})
    if (const char *v = std::getenv(var); v && *v)
      (var[0] == 'H' ? who.homes : who.users).emplace_back(v);
  return who;
}

Envelope redacted(Envelope e) {
  e.redacted = true;
  e.host.reset();
  const Identity who = this_identity();
  for (auto &arg : e.command_line)
    arg = redact_home_paths(arg, who);
  if (e.source && e.source->path)
    e.source->path = redact_home_paths(*e.source->path, who);
  return e;
}

} // namespace dlrig

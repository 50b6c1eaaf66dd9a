#pragma once
// The envelope of every JSON document dlrig prints: `{"schema_version": N, "context": {...}}`
// followed by the document's own members. The front door builds one Envelope per run (tool,
// version, host, time, command line) and adds where the snapshot came from; every command's
// document carries the same context block (google/benchmark's context, one per run).
#include "dlrig/core/clock.hpp"
#include "dlrig/core/json.hpp"
#include "dlrig/core/snapshot.hpp"
#include "dlrig/core/snapshot_host.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlrig {

// Where the snapshot a document is about came from.
struct SnapshotOrigin {
  std::string
      kind;    // "live" (this machine), "sysroot" (a tree read with --sysroot), "file" (--from)
  OptStr path; // the sysroot or the file; null for "live"
};

struct Envelope {
  std::string tool = "dlrig";
  std::string tool_version;              // DLRIG_VERSION of the binary that printed
  OptStr host;                           // the machine dlrig ran on; null with --redact or unknown
  std::string time;                      // when dlrig ran, UTC ISO 8601 ("2026-11-21T14:10:00Z")
  std::vector<std::string> command_line; // argv, home paths shortened to ~ with --redact
  std::optional<SnapshotOrigin> source;  // null when the command read no snapshot (kb)
  bool redacted = false;
};

// The context block: {tool, tool_version, host, time, command_line, source}; source is
// {kind, path} or null.
Json context_json(const Envelope &e);

// This machine's host name (gethostname), null when it has none.
OptStr this_host();

// This process's HOME, USER and LOGNAME (those set): the home folder --redact writes as ~ and the
// user name it writes as $USER, wherever they lie.
Identity this_identity();

// What --redact does to the envelope: no host, home paths in the command line and the source's
// path written as ~ (the snapshot's own redaction rule, core/snapshot.hpp, with this_identity()).
// render_report applies the same rule to the whole output of a redacted run.
Envelope redacted(Envelope e);

} // namespace dlrig

#pragma once
// The machine snapshot: everything probed, one versioned model with a lossless JSON round trip.
// Analysis (doctor, fit, pick) reads only this, so every analysis works on a saved snapshot.
#include "dlrig/core/result.hpp"
#include "dlrig/core/snapshot_gpu.hpp"
#include "dlrig/core/snapshot_host.hpp"
#include "dlrig/core/snapshot_software.hpp"

#include <string_view>
#include <vector>

namespace dlrig {

inline constexpr int kSnapshotSchemaVersion = 1;

// A reading that could not be taken, and why: the field stays null and this says the reason.
struct ProbeNote {
  std::string field; // dotted path in the snapshot, e.g. "host.memory.total_bytes"
  OptStr source;     // file or call that was read, e.g. "/proc/meminfo"
  std::string reason;
};
DLRIG_JSON(ProbeNote, field, source, reason)

struct SnapshotContext {
  std::string tool_version;
  OptStr captured_at; // UTC, ISO 8601
  OptStr sysroot;     // root the files were read from when not "/"
  bool redacted = false;
};
DLRIG_JSON(SnapshotContext, tool_version, captured_at, sysroot, redacted)

struct Snapshot {
  int schema_version = kSnapshotSchemaVersion;
  SnapshotContext context;
  HostInfo host;
  std::vector<Gpu> gpus; // every display/3D controller on the PCI bus, in bus order
  NvidiaDriver nvidia;
  SoftwareInfo software;
  std::vector<ProbeNote> notes;
};
DLRIG_JSON(Snapshot, schema_version, context, host, gpus, nvidia, software, notes)

Json to_json(const Snapshot &s);

// The GPUs NVML reported (gpu.nvml set), in NVML index order; pointers into s.gpus.
std::vector<const Gpu *> nvml_gpus(const Snapshot &s);
// A snapshot read from a `python -m torch.utils.collect_env` report carries the note
// {field "*", source "collect_env ..."} (probe/collect_env.hpp): it holds only what the report
// prints. The note survives saving the snapshot and reading it back.
bool from_collect_env(const Snapshot &s);
// The GPUs of the snapshot are known: gpus[] lists some, or the PCI bus was read and held none
// (a probe that could not list it notes the field "gpus"; a collect_env report never says none;
// a snapshot with no host readings at all, such as {"schema_version":1}, was never probed).
bool gpus_known(const Snapshot &s);
// Reads a snapshot document; errors name the position or the field (JSON pointer) and the version.
// Every number is checked against its field's type and range (-1 for a count, 1e26 for an int,
// 2^63 bytes or more are errors naming the field); errors are ErrorKind::bad_input.
Result<Snapshot> snapshot_from_json(std::string_view text);
// Reading a snapshot file (size cap, regular files only) is platform/snapshot_file.hpp.

// Who a redacted output must not name: home folders (HOME's value) and user names (USER,
// LOGNAME).
struct Identity {
  std::vector<std::string> homes;
  std::vector<std::string> users;
};

// Removes what identifies a person or a machine: hostname, GPU UUIDs, user names, and paths under
// home directories (replaced by "~"): `who` (this process's HOME and USER, for a snapshot it
// probed) and the snapshot's own HOME, USER and LOGNAME among them, wherever they lie. Serial
// numbers are never probed at all.
void redact(Snapshot &s, const Identity &who = {});
// The path rule of redact(): /home/alice/x, /root/x, /Users/alice/x and, for each of who.homes
// that is an absolute folder other than / (a cluster's /scratch/alice), home/x become ~/x; then a
// path part that is one of who.users (2 characters or more, not the name of a system folder such
// as root, usr or local) becomes $USER
// (/scratch/alice/data -> /scratch/$USER/data). A home path or a part ends at a slash, colon,
// quote, bracket, comma, semicolon, whitespace, terminal escape or the end of the text.
std::string redact_home_paths(const std::string &text, const Identity &who = {});
// redact_home_paths applied to every string of a JSON document.
void redact_json_strings(Json &doc, const Identity &who = {});

} // namespace dlrig

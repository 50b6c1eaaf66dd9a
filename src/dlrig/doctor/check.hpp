#pragma once
// `dlrig doctor`: checks are pure functions of a snapshot and the knowledge base, listed in one
// registry with stable ids (a contract for scripts and tests: never rename an id). Each rule
// group lives in its own file (gpu.cpp, driver.cpp, ...) and returns its table of checks.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/kb/kb.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::doctor {

// Ordered from harmless to blocking; the worst finding decides the exit code.
enum class Severity { ok, info, warn, fail };
std::string_view to_string(Severity s);

// A number a check read, in base units (bytes, bytes per second, degrees Celsius, watts; a
// percentage as 0-100; a count). It stays a number until a printer formats it: JSON carries the
// value and its unit, the table shows "63.9 GiB" (doctor/report.hpp, format_quantity).
enum class Unit { count, bytes, bytes_per_s, percent, celsius, watts };
std::string_view to_string(Unit u);
struct Quantity {
  double value = 0;
  Unit unit = Unit::count;
};
inline Quantity count_of(double v) {
  return {v, Unit::count};
}
inline Quantity bytes_of(double v) {
  return {v, Unit::bytes};
}
inline Quantity bytes_per_s_of(double v) {
  return {v, Unit::bytes_per_s};
}
inline Quantity percent_of(double v) {
  return {v, Unit::percent};
}
inline Quantity celsius_of(double v) {
  return {v, Unit::celsius};
}
inline Quantity watts_of(double v) {
  return {v, Unit::watts};
}

// One value a check read: text as the machine said it ("driver_version" = "550.54.15"), or a
// quantity (then `value` is empty).
struct Evidence {
  std::string key;
  std::string value;
  std::optional<Quantity> quantity;
};

struct Finding {
  std::string id; // the check's id
  Severity severity = Severity::ok;
  std::string title;              // one line, specific to what was found
  std::vector<Evidence> evidence; // the values the check read
  std::string why;                // why it matters
  std::vector<std::string> fix;   // commands or steps to copy, in order

  Finding &with(std::string key, std::string value) {
    evidence.push_back({std::move(key), std::move(value), std::nullopt});
    return *this;
  }
  Finding &with(std::string key, Quantity q) {
    evidence.push_back({std::move(key), {}, q});
    return *this;
  }
};

// What the user told doctor beyond the snapshot.
struct DoctorOptions {
  std::string data_path;         // --data PATH: where the training data lives
  std::vector<std::string> only; // --only AREA (repeatable); empty = every area
};

using CheckFn = std::vector<Finding> (*)(const Snapshot &, const kb::KnowledgeBase &,
                                         const DoctorOptions &);

// A registry entry. Texts are for --list-checks, --explain and docs/doctor.md; the findings a
// check returns carry the specific title, evidence and fix. An empty result means "passed".
struct Check {
  std::string_view id; // area.name, stable
  std::string_view
      area; // gpu | driver | torch | cuda | kernel | link | host | dist | env | container | wsl
  Severity severity;       // the worst severity this check can report
  std::string_view title;  // what it looks for
  std::string_view reads;  // the snapshot fields (and kb tables) it reads
  std::string_view fires;  // when it fires
  std::string_view fix;    // the fix, in general terms
  std::string_view source; // where the fact comes from
  CheckFn run;
};

// Runs one check in isolation: a check that throws (a bug, or a snapshot value it did not expect)
// becomes one info finding "could not check" with the reason, never the end of the report. The
// findings carry the check's id. The benchmark runner reuses the same isolation.
std::vector<Finding> run_isolated(const Check &c, const Snapshot &s, const kb::KnowledgeBase &kb,
                                  const DoctorOptions &options);

// Why the checks of an area cannot decide on this snapshot: the readings that area reads are all
// unknown (a snapshot of `{"schema_version":1}`, an unreadable or garbage sysroot). nullopt when
// the area has something to read. A check that returns no finding on such a snapshot did not
// pass: the report counts it as "not run" with this reason.
std::optional<std::string> unknown_inputs(std::string_view area, const Snapshot &s);
// The same for one check: its area's readings, and the GPUs for the checks outside the gpu and
// link areas that decide on them (compute capability, vendor, count).
std::optional<std::string> unknown_inputs(const Check &c, const Snapshot &s);

// Why the check does not apply to this machine: what it looks at is known to be absent (no
// NVIDIA GPU on the PCI bus for a GPU check, no PyTorch for a torch check, not a container for a
// container check). nullopt when it applies, or when that is not known (then unknown_inputs
// decides). A check that does not apply and finds nothing is counted "not applicable", never
// "passed"; one that finds something reports it whatever this says. The rules per area and the
// few checks that need more than their area are in applicability.cpp.
std::optional<std::string> not_applicable(const Check &c, const Snapshot &s);
// The GPUs of the snapshot are known (core/snapshot.hpp).
using dlrig::gpus_known;

// A snapshot read from a `python -m torch.utils.collect_env` report (core/snapshot.hpp).
using dlrig::from_collect_env;
// On such a snapshot: nullopt when the check can run on it (every reading it decides on is one
// the report gives), else what the report lacks;
// such a check is not run at all (a missing reading must not look like a healthy one). Any other
// snapshot: nullopt.
std::optional<std::string> not_in_report(const Check &c, const Snapshot &s);
// The ids of the checks that can run on a collect_env report (for docs and tests).
const std::vector<std::string_view> &collect_env_checks();

// Every check, in area order; built once (thread-safe).
const std::vector<Check> &all_checks();
// nullptr when no check has this id.
const Check *find_check(std::string_view id);
// Up to `count` ids closest to `id` (edit distance), for "did you mean".
std::vector<std::string> nearest_ids(std::string_view id, std::size_t count = 3);
// The areas in registry order, without repeats.
std::vector<std::string> all_areas();

// Rule groups, one per file.
std::vector<Check> gpu_checks();       // gpu.cpp
std::vector<Check> driver_checks();    // driver.cpp
std::vector<Check> torch_checks();     // torch.cpp
std::vector<Check> cuda_checks();      // cuda.cpp
std::vector<Check> kernel_checks();    // kernel.cpp
std::vector<Check> link_checks();      // link.cpp
std::vector<Check> host_checks();      // host.cpp
std::vector<Check> dist_checks();      // dist.cpp
std::vector<Check> env_checks();       // env.cpp
std::vector<Check> container_checks(); // container.cpp (containers and WSL2)

} // namespace dlrig::doctor

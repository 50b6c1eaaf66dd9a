#pragma once
// The doctor's result model and its printers: human text (grouped by area, worst first, one
// summary line), JSON (schema_version, context, findings) and markdown.
#include "dlrig/core/exit_code.hpp"
#include "dlrig/doctor/check.hpp"
#include "dlrig/output/table.hpp"

namespace dlrig::doctor {

inline constexpr int kDoctorSchemaVersion = 1;

struct CheckResult {
  const Check *check = nullptr;
  std::vector<Finding> findings; // empty = passed, unless not_run
  // Set when the check found nothing because the readings it needs are unknown: it did not pass.
  std::optional<std::string> not_run;
  Severity worst() const;
};

struct ReportContext {
  std::string tool_version;
  OptStr host; // hostname from the snapshot (null when redacted)
  OptStr driver_version;
  OptStr time;          // when doctor ran, UTC ISO 8601 (the front door supplies it)
  OptStr snapshot_time; // when the snapshot was captured
  OptStr source;        // "live" or the --from file
};

struct DoctorReport {
  ReportContext context;
  std::vector<CheckResult> results;    // in registry order, only the areas that ran
  std::size_t count(Severity s) const; // findings of that severity (ok: checks that passed)
  std::size_t not_run() const;         // checks whose inputs were unknown
  // More checks could not run than ran: the snapshot holds too little to call the machine healthy.
  bool mostly_unknown() const;
  Severity worst() const;
  // 0 nothing to fix, 1 warnings only (or most checks not run), 2 failures
  ExitCode exit_code() const;
};

// Runs every check (of the areas in options.only, when given). Pure: no I/O.
DoctorReport run_doctor(const Snapshot &s, const kb::KnowledgeBase &kb,
                        const DoctorOptions &options);

std::string summary_line(const DoctorReport &r); // "2 failures, 3 warnings, 41 checks passed"
std::string render_text(const DoctorReport &r, bool colour);
std::string render_markdown(const DoctorReport &r);
Json to_json(const DoctorReport &r);

// --list-checks and --explain.
std::string render_check_list(Format f);
std::string render_explain(const Check &c);

} // namespace dlrig::doctor

#pragma once
// The doctor's result model and its printers: human text (grouped by area, worst first, one
// summary line), JSON (the envelope, then summary, findings, passed), markdown and CSV (one row
// per finding).
#include "dlrig/core/exit_code.hpp"
#include "dlrig/doctor/check.hpp"
#include "dlrig/doctor/verdict.hpp"
#include "dlrig/output/print.hpp"
#include "dlrig/output/table.hpp"

namespace dlrig::doctor {

inline constexpr int kDoctorSchemaVersion = 1;

struct CheckResult {
  const Check *check = nullptr;
  std::vector<Finding> findings; // empty = passed, unless not_run or not_applicable
  // Set when the check found nothing because the readings it needs are unknown: it did not pass.
  std::optional<std::string> not_run;
  // Set when the check found nothing because it does not apply here (no NVIDIA GPU for a GPU
  // check, no PyTorch for a torch check): the reason. Neither passed nor failed.
  std::optional<std::string> not_applicable = std::nullopt;
  // With not_run: the snapshot is a collect_env report, which never includes what this check
  // reads (by design, not for want of readings).
  bool not_in_report = false;
  bool passed() const { return findings.empty() && !not_run && !not_applicable; }
  Severity worst() const;
};

// What the report is about, from the snapshot (the run's own context is the envelope's).
struct ReportSubject {
  OptStr host;           // hostname in the snapshot (null when redacted)
  OptStr driver_version; // NVIDIA driver
  OptStr captured_at;    // when the snapshot was captured
};

struct DoctorReport {
  ReportSubject subject;
  // Can PyTorch use a GPU here: decided on every check, whatever --only shows.
  Verdict verdict;
  std::vector<CheckResult> results;    // in registry order, only the areas that ran
  std::size_t count(Severity s) const; // findings of that severity (ok: checks that passed)
  std::size_t not_run() const;         // checks whose inputs were unknown (or not in the report)
  std::size_t not_in_report() const;   // of those, the ones a collect_env report never includes
  std::size_t not_applicable() const;  // checks that do not apply to this machine
  // More of the checks that apply could not run than ran: the snapshot holds too little to call
  // the machine healthy. The checks a collect_env report never includes are left out of both
  // sides: the report says what it says, and the output names what it cannot.
  bool mostly_unknown() const;
  Severity worst() const;
  // 0 nothing to fix, 1 warnings only (or most checks not run), 2 failures
  ExitCode exit_code() const;
};

// Runs every check (of the areas in options.only, when given). Pure: no I/O.
DoctorReport run_doctor(const Snapshot &s, const kb::KnowledgeBase &kb,
                        const DoctorOptions &options);

// Evidence as the table shows it: a quantity formatted by its unit (bytes as GiB, or MiB below
// 1 GiB; bytes per second as GB/s; percent; counts, degrees and watts whole), text as read.
std::string format_quantity(const Quantity &q);
std::string evidence_text(const Evidence &e);
std::string evidence_line(const Finding &f); // "key=value, key=value"

// "Can PyTorch use a GPU here? Yes: torch 2.5.1+cu124 (CUDA 12.4) in ... will use GPU 0 (...)"
std::string verdict_line(const Verdict &v);
// "2 failures, 3 warnings, 41 checks passed, 9 not applicable, 3 not run (inputs unknown)"
std::string summary_line(const DoctorReport &r);
// With colour, the severities and area names are coloured; every text from the snapshot goes
// through printable() either way. `width` > 0 (a terminal's): the prose is wrapped to it, the fix
// steps (commands to copy) never are.
std::string render_text(const DoctorReport &r, bool colour, std::size_t width = 0);
std::string render_markdown(const DoctorReport &r);
Table findings_table(const DoctorReport &r); // CSV: severity, id, area, title, evidence, why, fix
Json to_json(const DoctorReport &r);         // the members besides schema_version and context
// The report for the printer layer; `r` must outlive it.
Report doctor_report(const DoctorReport &r);

// --list-checks (every format; JSON {checks: [...]}) and --explain.
Report check_list_report();
std::string render_explain(const Check &c);

} // namespace dlrig::doctor

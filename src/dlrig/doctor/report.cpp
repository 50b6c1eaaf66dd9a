#include "dlrig/doctor/report.hpp"
#include "dlrig/doctor/facts.hpp"
#include "dlrig/output/text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig::doctor {

Severity CheckResult::worst() const {
  Severity w = Severity::ok;
  for (const auto &f : findings)
    w = std::max(w, f.severity);
  return w;
}

std::size_t DoctorReport::count(Severity s) const {
  std::size_t n = 0;
  for (const auto &r : results) {
    if (s == Severity::ok) {
      n += r.passed() ? 1 : 0;
      continue;
    }
    for (const auto &f : r.findings)
      n += f.severity == s ? 1 : 0;
  }
  return n;
}

std::size_t DoctorReport::not_run() const {
  return static_cast<std::size_t>(std::count_if(
      results.begin(), results.end(), [](const CheckResult &r) { return r.not_run.has_value(); }));
}

std::size_t DoctorReport::not_applicable() const {
  return static_cast<std::size_t>(
      std::count_if(results.begin(), results.end(),
                    [](const CheckResult &r) { return r.not_applicable.has_value(); }));
}

std::size_t DoctorReport::not_in_report() const {
  return static_cast<std::size_t>(std::count_if(
      results.begin(), results.end(), [](const CheckResult &r) { return r.not_in_report; }));
}

bool DoctorReport::mostly_unknown() const {
  return (not_run() - not_in_report()) * 2 > results.size() - not_applicable() - not_in_report();
}

Severity DoctorReport::worst() const {
  Severity w = Severity::ok;
  for (const auto &r : results)
    w = std::max(w, r.worst());
  return w;
}

ExitCode DoctorReport::exit_code() const {
  switch (worst()) {
  case Severity::fail:
    return ExitCode::failures;
  case Severity::warn:
    return ExitCode::warnings;
  default:
    return mostly_unknown() ? ExitCode::warnings : ExitCode::ok;
  }
}

DoctorReport run_doctor(const Snapshot &s, const kb::KnowledgeBase &kb,
                        const DoctorOptions &options) {
  DoctorReport r;
  r.subject.host = s.host.hostname;
  r.subject.driver_version = s.nvidia.driver_version;
  r.subject.captured_at = s.context.captured_at;
  std::vector<CheckResult> all;
  for (const auto &c : all_checks()) {
    CheckResult cr{&c, {}, std::nullopt};
    // A check a collect_env report cannot decide is not run at all: on the readings the report
    // lacks it would pass (or fire) on nothing.
    auto lacking = not_in_report(c, s);
    if (!lacking)
      cr.findings = run_isolated(c, s, kb, options);
    if (cr.findings.empty()) {
      cr.not_applicable = not_applicable(c, s);
      if (!cr.not_applicable) {
        cr.not_run = lacking ? lacking : unknown_inputs(c, s);
        cr.not_in_report = lacking.has_value();
      }
    }
    all.push_back(std::move(cr));
  }
  r.verdict = readiness(s, all, kb);
  for (auto &cr : all)
    if (options.only.empty() ||
        std::find(options.only.begin(), options.only.end(), cr.check->area) != options.only.end())
      r.results.push_back(std::move(cr));
  return r;
}

namespace {

std::string plural(std::size_t n, const char *one, const char *many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

struct Flat {
  const Check *check;
  const Finding *finding;
};

// Findings grouped by area, areas ordered by their worst finding, findings worst first.
std::vector<std::pair<std::string, std::vector<Flat>>> grouped(const DoctorReport &r) {
  std::vector<std::pair<std::string, std::vector<Flat>>> groups;
  for (const auto &cr : r.results)
    for (const auto &f : cr.findings) {
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto &g) { return g.first == cr.check->area; });
      if (it == groups.end()) {
        groups.emplace_back(std::string(cr.check->area), std::vector<Flat>{});
        it = groups.end() - 1;
      }
      it->second.push_back({cr.check, &f});
    }
  for (auto &g : groups)
    std::stable_sort(g.second.begin(), g.second.end(), [](const Flat &a, const Flat &b) {
      return a.finding->severity > b.finding->severity;
    });
  std::stable_sort(groups.begin(), groups.end(), [](const auto &a, const auto &b) {
    return a.second.front().finding->severity > b.second.front().finding->severity;
  });
  return groups;
}

std::string label(Severity s) {
  switch (s) {
  case Severity::fail:
    return "FAIL";
  case Severity::warn:
    return "WARN";
  case Severity::info:
    return "INFO";
  case Severity::ok:
    return "OK";
  }
  return "OK";
}

std::string colourise(const std::string &text, Severity s, bool colour) {
  if (!colour)
    return text;
  const char *code = s == Severity::fail   ? "\033[1;31m"
                     : s == Severity::warn ? "\033[1;33m"
                     : s == Severity::info ? "\033[36m"
                                           : "\033[32m";
  return code + text + "\033[0m";
}

} // namespace

std::string format_quantity(const Quantity &q) {
  switch (q.unit) {
  case Unit::bytes:
    return q.value >= 1024.0 * 1024 * 1024
               ? fmt::format("{:.1f} GiB", q.value / (1024.0 * 1024 * 1024))
               : fmt::format("{:.0f} MiB", q.value / (1024.0 * 1024));
  case Unit::bytes_per_s:
    return fmt::format("{:.1f} GB/s", q.value / 1e9);
  case Unit::percent:
    return fmt::format("{:.0f}%", q.value);
  case Unit::count:
  case Unit::celsius:
  case Unit::watts:
    return fmt::format("{:.0f}", q.value);
  }
  return fmt::format("{}", q.value);
}

std::string evidence_text(const Evidence &e) {
  return e.quantity ? format_quantity(*e.quantity) : e.value;
}

std::string evidence_line(const Finding &f) {
  std::vector<std::string> parts;
  for (const auto &e : f.evidence)
    parts.push_back(e.key + "=" + evidence_text(e));
  return join(parts, ", ");
}

std::string summary_line(const DoctorReport &r) {
  std::vector<std::string> parts;
  if (auto n = r.count(Severity::fail))
    parts.push_back(plural(n, "failure", "failures"));
  if (auto n = r.count(Severity::warn))
    parts.push_back(plural(n, "warning", "warnings"));
  if (auto n = r.count(Severity::info))
    parts.push_back(plural(n, "note", "notes"));
  parts.push_back(plural(r.count(Severity::ok), "check passed", "checks passed"));
  if (auto n = r.not_applicable())
    parts.push_back(fmt::format("{} not applicable", n));
  if (auto n = r.not_run() - r.not_in_report())
    parts.push_back(fmt::format("{} not run (inputs unknown)", n));
  if (auto n = r.not_in_report())
    parts.push_back(fmt::format("{} not run (not in a collect_env report)", n));
  return join(parts, ", ");
}

std::string verdict_line(const Verdict &v) {
  const char *head = v.ready == Readiness::yes  ? "Yes"
                     : v.ready == Readiness::no ? "No"
                                                : "Unknown";
  return fmt::format("Can PyTorch use a GPU here? {}: {}", head, v.answer);
}

std::string render_text(const DoctorReport &r, bool colour, std::size_t width) {
  const Verdict &v = r.verdict;
  Severity tone = v.ready == Readiness::yes  ? Severity::ok
                  : v.ready == Readiness::no ? Severity::fail
                                             : Severity::warn;
  // Prose is wrapped to the terminal (width 0: not at all); fix steps are commands to copy and
  // stay whole.
  auto wrap = [width](const std::string &text, std::size_t lead, std::size_t hang) {
    return wrap_after(text, width, lead, hang);
  };
  std::string out = colourise(wrap(printable(verdict_line(v)), 0, 2), tone, colour) + "\n";
  if (!v.fix.empty()) {
    out += "  fix:\n";
    for (const auto &step : v.fix)
      out += "    " + printable(step) + "\n";
  }
  out += "\n";
  for (const auto &[area, items] : grouped(r)) {
    out += colour ? "\033[1m" + printable(area) + "\033[0m\n" : area + "\n";
    for (const auto &it : items) {
      const Finding &f = *it.finding;
      const std::string id = printable(f.id);
      out += "  " + colourise(fmt::format("{:<4}", label(f.severity)), f.severity, colour) + "  " +
             id + "  " + wrap(printable(f.title), 10 + display_width(id), 8) + "\n";
      if (!f.evidence.empty())
        out += "        evidence: " + wrap(printable(evidence_line(f)), 18, 10) + "\n";
      if (!f.why.empty())
        out += "        why: " + wrap(printable(f.why), 13, 10) + "\n";
      if (!f.fix.empty()) {
        out += "        fix:\n";
        for (const auto &step : f.fix)
          out += "          " + printable(step) + "\n";
      }
    }
    out += "\n";
  }
  // The checks that did not run, one line per reason with the areas it covers.
  std::vector<std::pair<std::string, std::vector<std::string>>> why_not;
  for (const auto &cr : r.results) {
    if (!cr.not_run)
      continue;
    auto it = std::find_if(why_not.begin(), why_not.end(),
                           [&](const auto &w) { return w.first == *cr.not_run; });
    if (it == why_not.end()) {
      why_not.emplace_back(*cr.not_run, std::vector<std::string>{});
      it = why_not.end() - 1;
    }
    it->second.emplace_back(cr.check->id);
  }
  if (!why_not.empty()) {
    out += "Not run:\n";
    for (const auto &[reason, ids] : why_not) {
      std::vector<std::string> areas;
      for (const auto &id : ids)
        if (auto area = id.substr(0, id.find('.'));
            std::find(areas.begin(), areas.end(), area) == areas.end())
          areas.push_back(area);
      const auto lead =
          fmt::format("  {} ({}): ", join(areas, ", "), plural(ids.size(), "check", "checks"));
      out += lead + wrap(printable(reason), display_width(lead), 4) + "\n";
    }
    out += "\n";
  }
  std::string last;
  if (r.mostly_unknown())
    last = fmt::format("Most of the snapshot is unknown: {} of {} checks that apply could not "
                       "run, so this is no evidence of a healthy machine. ",
                       r.not_run() - r.not_in_report(),
                       r.results.size() - r.not_applicable() - r.not_in_report());
  else if ((r.worst() == Severity::ok || r.worst() == Severity::info) && v.ready != Readiness::no)
    last = "Nothing to fix. "; // not under a "No": the verdict says what to do
  out += wrap(last + summary_line(r), 0, 0) + "\n";
  return out;
}

std::string render_markdown(const DoctorReport &r) {
  std::string out = "## dlrig doctor\n\n";
  out += "**" + verdict_line(r.verdict) + "**\n\n";
  if (!r.verdict.fix.empty()) {
    out += "```sh\n";
    for (const auto &step : r.verdict.fix)
      out += step + "\n";
    out += "```\n\n";
  }
  out += "**" + summary_line(r) + "**";
  if (r.subject.driver_version)
    out += " · driver " + *r.subject.driver_version;
  out += "\n\n";
  Table t;
  t.header = {"severity", "check", "finding"};
  for (const auto &[area, items] : grouped(r))
    for (const auto &it : items)
      t.add({label(it.finding->severity), "`" + it.finding->id + "`", it.finding->title});
  if (!t.rows.empty())
    out += dlrig::render_markdown(t) + "\n";
  for (const auto &[area, items] : grouped(r))
    for (const auto &it : items) {
      const Finding &f = *it.finding;
      out += "### " + label(f.severity) + " `" + f.id + "`: " + f.title + "\n\n";
      if (!f.evidence.empty()) {
        for (const auto &e : f.evidence)
          out += "- " + e.key + ": `" + evidence_text(e) + "`\n";
        out += "\n";
      }
      if (!f.why.empty())
        out += f.why + "\n\n";
      if (!f.fix.empty()) {
        out += "```sh\n";
        for (const auto &step : f.fix)
          out += step + "\n";
        out += "```\n\n";
      }
    }
  return out;
}

Table findings_table(const DoctorReport &r) {
  Table t;
  t.header = {"severity", "id", "area", "title", "evidence", "why", "fix"};
  for (const auto &[area, items] : grouped(r))
    for (const auto &it : items) {
      const Finding &f = *it.finding;
      t.add({std::string(to_string(f.severity)), f.id, area, f.title, evidence_line(f), f.why,
             join(f.fix, "\n")});
    }
  return t;
}

Json to_json(const DoctorReport &r) {
  Json j;
  j["snapshot"] = {{"host", r.subject.host},
                   {"driver_version", r.subject.driver_version},
                   {"captured_at", r.subject.captured_at}};
  const Verdict &v = r.verdict;
  j["verdict"] = {{"gpu_ready",
                   v.ready == Readiness::unknown ? Json(nullptr) : Json(v.ready == Readiness::yes)},
                  {"ready", std::string(to_string(v.ready))},
                  {"answer", v.answer},
                  {"python", v.python},
                  {"torch", v.torch},
                  {"build", v.build},
                  {"gpus", v.gpus},
                  {"decided_by", v.decided_by},
                  {"fix", v.fix}};
  j["summary"] = {{"fail", r.count(Severity::fail)},
                  {"warn", r.count(Severity::warn)},
                  {"info", r.count(Severity::info)},
                  {"passed", r.count(Severity::ok)},
                  {"not_run", r.not_run()},
                  {"not_applicable", r.not_applicable()},
                  {"not_in_report", r.not_in_report()},
                  {"mostly_unknown", r.mostly_unknown()},
                  {"checks", r.results.size()},
                  {"worst", std::string(to_string(r.worst()))},
                  {"exit_code", static_cast<int>(r.exit_code())}};
  Json findings = Json::array();
  for (const auto &[area, items] : grouped(r))
    for (const auto &it : items) {
      const Finding &f = *it.finding;
      Json ev = Json::object(), units = Json::object();
      for (const auto &e : f.evidence) {
        ev[e.key] = e.quantity ? Json(e.quantity->value) : Json(e.value);
        if (e.quantity)
          units[e.key] = std::string(to_string(e.quantity->unit));
      }
      findings.push_back({{"id", f.id},
                          {"area", std::string(it.check->area)},
                          {"severity", std::string(to_string(f.severity))},
                          {"title", f.title},
                          {"evidence", ev},
                          {"evidence_units", units},
                          {"why", f.why},
                          {"fix", f.fix}});
    }
  j["findings"] = findings;
  Json passed = Json::array();
  for (const auto &cr : r.results)
    if (cr.passed())
      passed.push_back(std::string(cr.check->id));
  j["passed"] = passed;
  Json not_applicable = Json::array();
  for (const auto &cr : r.results)
    if (cr.not_applicable)
      not_applicable.push_back({{"id", std::string(cr.check->id)}, {"reason", *cr.not_applicable}});
  j["not_applicable"] = not_applicable;
  Json not_run = Json::array();
  for (const auto &cr : r.results)
    if (cr.not_run)
      not_run.push_back({{"id", std::string(cr.check->id)}, {"reason", *cr.not_run}});
  j["not_run"] = not_run;
  return j;
}

Report doctor_report(const DoctorReport &r) {
  Report rep;
  rep.schema_version = kDoctorSchemaVersion;
  rep.json = [&r] { return to_json(r); };
  rep.table = [&r](const TextStyle &s) { return render_text(r, s.colour, s.width); };
  rep.markdown = [&r] { return render_markdown(r); };
  rep.csv = [&r] { return std::vector<Table>{findings_table(r)}; };
  return rep;
}

Report check_list_report() {
  auto table = [] {
    Table t;
    t.header = {"id", "area", "worst", "looks for"};
    for (const auto &c : all_checks())
      t.add({std::string(c.id), std::string(c.area), std::string(to_string(c.severity)),
             std::string(c.title)});
    return t;
  };
  auto count = fmt::format("{} checks\n", all_checks().size());
  Report rep;
  rep.schema_version = kDoctorSchemaVersion;
  rep.json = [] {
    Json checks = Json::array();
    for (const auto &c : all_checks())
      checks.push_back({{"id", c.id},
                        {"area", c.area},
                        {"severity", to_string(c.severity)},
                        {"title", c.title},
                        {"reads", c.reads},
                        {"fires", c.fires},
                        {"fix", c.fix},
                        {"source", c.source}});
    return Json{{"checks", checks}};
  };
  rep.table = [table, count](const TextStyle &s) {
    return dlrig::render_text(table(), s.width) + count;
  };
  rep.markdown = [table, count] { return dlrig::render_markdown(table()) + count; };
  rep.csv = [table] { return std::vector<Table>{table()}; };
  return rep;
}

std::string render_explain(const Check &c) {
  std::string out;
  out += std::string(c.id) + " (" + std::string(c.area) + ", up to " +
         std::string(to_string(c.severity)) + ")\n";
  out += "  " + std::string(c.title) + "\n\n";
  out += "  reads:  " + std::string(c.reads) + "\n";
  out += "  fires:  " + std::string(c.fires) + "\n";
  out += "  fix:    " + std::string(c.fix) + "\n";
  out += "  source: " + std::string(c.source) + "\n";
  return out;
}

} // namespace dlrig::doctor

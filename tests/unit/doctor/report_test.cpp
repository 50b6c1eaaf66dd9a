#include "dlrig/doctor/report.hpp"
#include "unit/doctor/machines.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace dlrig::doctor::test {
namespace {

Snapshot broken_desktop() {
  Snapshot s = healthy_desktop();
  s.software.env["CUDA_LAUNCH_BLOCKING"] = "1"; // warn
  s.software.master_port_in_use = true;         // fail
  s.gpus[0].nvml->power_limit_w = 300;          // warn
  return s;
}

TEST(DoctorReport, ExitCodesFollowTheWorstFinding) {
  auto kb = test_kb();
  EXPECT_EQ(run_doctor(healthy_desktop(), kb, {}).exit_code(), ExitCode::ok);
  Snapshot warn = healthy_desktop();
  warn.software.env["CUDA_LAUNCH_BLOCKING"] = "1";
  EXPECT_EQ(run_doctor(warn, kb, {}).exit_code(), ExitCode::warnings);
  EXPECT_EQ(run_doctor(broken_desktop(), kb, {}).exit_code(), ExitCode::failures);
}

TEST(DoctorReport, TextIsGroupedWorstFirstWithASummary) {
  auto kb = test_kb();
  auto r = run_doctor(broken_desktop(), kb, {});
  std::string text = render_text(r, false);
  auto dist = text.find("dist\n"), gpu = text.find("gpu\n"), env = text.find("env\n");
  ASSERT_NE(dist, std::string::npos) << text;
  EXPECT_LT(dist, gpu);
  EXPECT_LT(dist, env);
  EXPECT_EQ(text.find("\033["), std::string::npos); // no colour when asked for none
  std::size_t passed = r.count(Severity::ok);
  EXPECT_NE(text.find(fmt::format("1 failure, 2 warnings, {} notes, {} checks passed",
                                  r.count(Severity::info), passed)),
            std::string::npos)
      << text;
  EXPECT_NE(render_text(r, true).find("\033[1;31m"), std::string::npos);
}

TEST(DoctorReport, JsonCarriesSchemaContextAndFindings) {
  auto kb = test_kb();
  auto r = run_doctor(broken_desktop(), kb, {});
  Envelope e;
  e.tool_version = "0.1.0";
  e.time = "2026-11-21T14:10:00Z";
  Json j = document(doctor_report(r), e);
  EXPECT_EQ(j["schema_version"], kDoctorSchemaVersion);
  EXPECT_EQ(j["context"]["tool_version"], "0.1.0");
  EXPECT_EQ(j["snapshot"]["host"], "tower");
  EXPECT_EQ(j["snapshot"]["driver_version"], "550.54.15");
  ASSERT_GE(j["findings"].size(), 3u);
  const auto &first = j["findings"][0];
  EXPECT_EQ(first["id"], "dist.master-port-in-use");
  EXPECT_EQ(first["severity"], "fail");
  for (const char *key : {"title", "evidence", "why", "fix"})
    EXPECT_TRUE(first.contains(key)) << key;
  EXPECT_EQ(j["summary"]["exit_code"], 2);
}

// Evidence that is a quantity stays a number in base units with its unit until a printer formats
// it: JSON has 300 and "watts", the table "power_limit_w=300", and bytes show as GiB.
TEST(DoctorReport, NumbersStayNumbersUntilAPrinter) {
  auto kb = test_kb();
  auto r = run_doctor(broken_desktop(), kb, {});
  Json j = document(doctor_report(r), Envelope{});
  const Json *power = nullptr;
  for (const auto &f : j["findings"])
    if (f["evidence"].contains("power_limit_w"))
      power = &f;
  ASSERT_NE(power, nullptr) << j.dump(2);
  EXPECT_TRUE((*power)["evidence"]["power_limit_w"].is_number());
  EXPECT_EQ((*power)["evidence"]["power_limit_w"], 300);
  EXPECT_EQ((*power)["evidence_units"]["power_limit_w"], "watts");
  EXPECT_NE(render_text(r, false).find("power_limit_w=300"), std::string::npos);

  Finding f;
  f.with("memory_used", bytes_of(68.6e9)).with("small", bytes_of(64.0 * 1024 * 1024));
  f.with("share", percent_of(12.6)).with("link", bytes_per_s_of(3.94e9)).with("name", "x");
  EXPECT_EQ(evidence_line(f),
            "memory_used=63.9 GiB, small=64 MiB, share=13%, link=3.9 GB/s, name=x");
}

TEST(DoctorReport, MarkdownHasATableAndFixBlocks) {
  auto kb = test_kb();
  std::string md = render_markdown(run_doctor(broken_desktop(), kb, {}));
  EXPECT_NE(md.find("| FAIL | `dist.master-port-in-use` |"), std::string::npos) << md;
  EXPECT_NE(md.find("```sh\n"), std::string::npos);
}

TEST(DoctorReport, OnlyRunsTheAreasAsked) {
  auto kb = test_kb();
  DoctorOptions o;
  o.only = {"env"};
  auto r = run_doctor(broken_desktop(), kb, o);
  for (const auto &cr : r.results)
    EXPECT_EQ(cr.check->area, "env");
  EXPECT_EQ(r.exit_code(), ExitCode::warnings);
}

TEST(DoctorReport, ListAndExplain) {
  std::string list = check_list_report().table(TextStyle{});
  EXPECT_NE(list.find("link.egpu-bandwidth"), std::string::npos);
  std::string ex = render_explain(*find_check("host.shm-small"));
  EXPECT_NE(ex.find("source: https://github.com/NVIDIA/nccl/issues/342"), std::string::npos) << ex;
}

} // namespace
} // namespace dlrig::doctor::test

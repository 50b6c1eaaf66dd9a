#include "dlrig/output/print.hpp"
#include "dlrig/output/text.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

Envelope envelope() {
  Envelope e;
  e.tool_version = "0.1.0";
  e.host = "tower";
  e.time = "2026-11-21T14:10:00Z";
  e.command_line = {"dlrig", "info", "--json"};
  e.source = SnapshotOrigin{"file", std::string("snap.json")};
  return e;
}

TEST(ColourPolicy, TerminalNoColorAndTheFlag) {
  EXPECT_TRUE(colour_enabled(ColorMode::auto_detect, true, nullptr));
  EXPECT_FALSE(colour_enabled(ColorMode::auto_detect, false, nullptr)); // a pipe or a file
  EXPECT_FALSE(colour_enabled(ColorMode::auto_detect, true, "1"));
  EXPECT_TRUE(colour_enabled(ColorMode::auto_detect, true, "")); // set but empty: no-color.org
  EXPECT_TRUE(colour_enabled(ColorMode::always, false, "1"));    // the flag wins
  EXPECT_FALSE(colour_enabled(ColorMode::never, true, nullptr));
  EXPECT_EQ(parse_color_mode("always"), ColorMode::always);
  EXPECT_EQ(parse_color_mode("never"), ColorMode::never);
  EXPECT_EQ(parse_color_mode("auto"), ColorMode::auto_detect);
}

// Human text is wrapped only on a terminal: a file or a pipe keeps every row on one line
// whatever COLUMNS says; on a terminal COLUMNS (a number from 20 to 1000) wins over its size.
TEST(TextWidth, OnlyATerminalIsWrappedAndColumnsWins) {
  EXPECT_EQ(text_width(false, "100", 120), 0u);
  EXPECT_EQ(text_width(false, nullptr, 0), 0u);
  EXPECT_EQ(text_width(true, nullptr, 120), 120u);
  EXPECT_EQ(text_width(true, "100", 120), 100u);
  EXPECT_EQ(text_width(true, "", 120), 120u);
  EXPECT_EQ(text_width(true, "abc", 120), 120u);
  EXPECT_EQ(text_width(true, "5", 120), 120u); // too narrow to be meant
  EXPECT_EQ(text_width(true, "100x", 120), 120u);
  EXPECT_EQ(text_width(true, nullptr, 0), 0u); // a terminal that does not say
}

TEST(Document, EnvelopeThenBody) {
  Report r;
  r.schema_version = 3;
  r.json = [] { return Json{{"items", Json::array({1, 2})}, {"schema_version", 99}}; };
  Json j = document(r, envelope());
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["context"]["tool"], "dlrig");
  EXPECT_EQ(j["context"]["tool_version"], "0.1.0");
  EXPECT_EQ(j["context"]["host"], "tower");
  EXPECT_EQ(j["context"]["time"], "2026-11-21T14:10:00Z");
  EXPECT_EQ(j["context"]["command_line"][1], "info");
  EXPECT_EQ(j["context"]["source"]["kind"], "file");
  EXPECT_EQ(j["context"]["source"]["path"], "snap.json");
  EXPECT_EQ(j["items"].size(), 2u);
  EXPECT_FALSE(j["context"].contains("invalid_utf8"));
}

TEST(Envelope, RedactedDropsTheHostAndHomePaths) {
  Envelope e = envelope();
  e.command_line = {"dlrig", "doctor", "--data", "/home/alice/data", "--from", "/root/s.json"};
  e.source = SnapshotOrigin{"file", std::string("/home/alice/s.json")};
  Envelope r = redacted(e);
  EXPECT_TRUE(r.redacted);
  EXPECT_FALSE(r.host);
  EXPECT_EQ(r.command_line[3], "~/data");
  EXPECT_EQ(r.command_line[5], "~/s.json");
  EXPECT_EQ(r.source->path, "~/s.json");
  EXPECT_EQ(context_json(r).dump().find("alice"), std::string::npos);
}

TEST(Document, ABodyContextKeepsItsOwnMembers) {
  Report r;
  r.json = [] { return Json{{"context", {{"captured_at", "then"}, {"tool_version", "0.0.1"}}}}; };
  Json j = document(r, envelope());
  EXPECT_EQ(j["context"]["captured_at"], "then");
  EXPECT_EQ(j["context"]["tool_version"], "0.1.0"); // the envelope's word is the last
}

TEST(Document, InvalidUtf8IsReplacedAndSaidSo) {
  Report r;
  r.json = [] {
    return Json{{"software", {{"env", {{"PATH", "/tmp/\xe9:/bin"}, {"K\xff", "v"}}}}},
                {"notes", Json::array()}};
  };
  Json j = document(r, envelope());
  EXPECT_EQ(j["software"]["env"]["PATH"], "/tmp/\xEF\xBF\xBD:/bin");
  EXPECT_TRUE(j["software"]["env"].contains("K\xEF\xBF\xBD"));
  ASSERT_EQ(j["context"]["invalid_utf8"].size(), 2u);
  EXPECT_EQ(j["notes"].size(), 2u);
  bool path_note = false;
  for (const auto &n : j["notes"])
    path_note = path_note || n["field"] == "software.env.PATH";
  EXPECT_TRUE(path_note) << j["notes"].dump();
  // And the whole document dumps (nlohmann throws type_error 316 on invalid UTF-8).
  EXPECT_NO_THROW(j.dump());
  EXPECT_NO_THROW(render_report(r, envelope(), {Format::json, false}));
}

TEST(Document, PointersNameArrayElements) {
  Json j = {{"gpus", Json::array({{{"name", "ok"}}, {{"name", "bad\xe9"}}})}};
  auto replaced = make_valid_utf8(j);
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0].pointer, "/gpus/1/name");
  EXPECT_EQ(replaced[0].field, "gpus[1].name");
}

TEST(RenderReport, ColourlessOutputIsMadePrintableWhole) {
  Report r;
  r.table = [](const TextStyle &) { return std::string("host \x1b]0;pwned\x07\n"); };
  r.markdown = [] { return std::string("## \x1b[2J\n"); };
  EXPECT_EQ(render_report(r, envelope(), {Format::table, false}), "host \\x1b]0;pwned\\x07\n");
  EXPECT_EQ(render_report(r, envelope(), {Format::markdown, false}), "## \\x1b[2J\n");
}

TEST(RenderReport, CsvOnlyWhereOffered) {
  Report r;
  r.table = [](const TextStyle &) { return std::string("t\n"); };
  EXPECT_THROW(render_report(r, envelope(), {Format::csv, false}), std::logic_error);
  r.csv = [] { return std::vector<Table>{Table{"", {"a"}, {{"1"}}}}; };
  EXPECT_EQ(render_report(r, envelope(), {Format::csv, false}), "a\n1\n");
}

} // namespace
} // namespace dlrig

// The printer layer through the real binary: one envelope in every JSON document, valid UTF-8
// whatever the machine says, no control character from a snapshot on the terminal, CSV and
// --color on every command, and `info` on 5,000 GPUs.
#include "support/cli.hpp"

#include "dlrig/core/json.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlrig::test {
namespace {

namespace fs = std::filesystem;

std::string snapshot_fixture(const std::string &name) {
  return fixture("snapshots/" + name);
}

Json read_json(const std::string &path) {
  std::ifstream in(path);
  return Json::parse(in);
}

std::string write_json(const std::string &name, const Json &j) {
  auto p = scratch(name);
  std::ofstream(p) << j.dump(1);
  return p.string();
}

std::vector<std::string> fake_nvml(const std::string &scenario) {
  return {std::string("DLRIG_NVML_LIBRARY=") + DLRIG_FAKE_NVML,
          "DLRIG_FAKE_NVML_SCENARIO=" + fixture(scenario)};
}

// ---- one envelope ------------------------------------------------------------------------------

void expect_envelope(const CliRun &r, const std::string &what, const Json &source) {
  ASSERT_FALSE(r.out.empty()) << what << ": " << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1) << what;
  const Json &c = j["context"];
  EXPECT_EQ(c["tool"], "dlrig") << what;
  EXPECT_EQ(c["tool_version"], DLRIG_VERSION) << what;
  EXPECT_TRUE(c.contains("host")) << what;
  EXPECT_EQ(c["time"].get<std::string>().size(), 20u) << what; // 2026-11-21T14:10:00Z
  ASSERT_TRUE(c["command_line"].is_array()) << what;
  EXPECT_NE(c["command_line"][0].get<std::string>().find("dlrig"), std::string::npos) << what;
  EXPECT_EQ(c["source"], source) << what;
}

TEST(OutputCli, EveryJsonDocumentCarriesTheSameEnvelope) {
  auto from = snapshot_fixture("desktop-cpu-torch.json");
  Json file = {{"kind", "file"}, {"path", from}};
  Json sysroot = {{"kind", "sysroot"}, {"path", fixture("laptop-no-gpu")}};
  expect_envelope(run_dlrig({"info", "--json", "--from", from}), "info --json", file);
  expect_envelope(run_dlrig({"snapshot", "--sysroot", fixture("laptop-no-gpu")}), "snapshot",
                  sysroot);
  expect_envelope(run_dlrig({"doctor", "--json", "--from", from}), "doctor --json", file);
  expect_envelope(run_dlrig({"doctor", "--list-checks", "--json"}), "doctor --list-checks",
                  nullptr);
  expect_envelope(run_dlrig({"fit", "llama-3.1-8b", "--gpu", "H100 SXM", "--json", "--from", from}),
                  "fit --json", file);
  expect_envelope(run_dlrig({"fit", "llama-3.1-8b", "--all-gpus", "--json"}), "fit --all-gpus",
                  nullptr);
  expect_envelope(run_dlrig({"kb", "gpus", "4090", "--json"}), "kb --json", nullptr);
  expect_envelope(run_dlrig({"pick", "llama-3.2-1b", "--lora", "16", "--json"}), "pick --json",
                  nullptr);
  expect_envelope(run_dlrig({"pick", "llama-3.2-1b", "--lora", "16", "--json", "--from", from}),
                  "pick --from --json", file);
  Json live = {{"kind", "live"}, {"path", nullptr}};
  expect_envelope(run_dlrig({"snapshot", "--no-nvml"}), "snapshot (live)", live);
}

TEST(OutputCli, RedactHidesTheHostAndHomePathsOfTheEnvelope) {
  auto r = run_dlrig({"info", "--json", "--redact", "--python", "/home/alice/venv/bin/python3",
                      "--sysroot", fixture("laptop-no-gpu")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json c = Json::parse(r.out)["context"];
  EXPECT_TRUE(c["host"].is_null());
  EXPECT_EQ(r.out.find("alice"), std::string::npos) << c.dump();
  EXPECT_EQ(c["redacted"], true);
}

// --redact took home paths out of the snapshot and the envelope only: `fit ~/model --redact`
// printed the model's config path whole, and a HOME outside /home (a cluster's /scratch/alice)
// stayed everywhere. The whole output of a redacted run now has no home path, in every format.
TEST(OutputCli, RedactTakesTheHomeOutOfTheWholeReportWhereverItLies) {
  const auto home = scratch("redact_scratch_alice");
  std::filesystem::create_directories(home / "model");
  std::filesystem::copy_file(fixture("models/bert-base-uncased.json"),
                             home / "model" / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string model = (home / "model").string();
  for (std::vector<std::string> format : {std::vector<std::string>{}, {"--json"}, {"--markdown"}}) {
    std::vector<std::string> args{"fit", model, "--gpu", "H100", "--redact"};
    args.insert(args.end(), format.begin(), format.end());
    auto r = run_dlrig(args, {"HOME=" + home.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find(home.string()), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("~/model/config.json"), std::string::npos) << r.out;
    // Without --redact the path is printed whole.
    auto plain_args = format;
    plain_args.insert(plain_args.begin(), {"fit", model, "--gpu", "H100"});
    auto plain = run_dlrig(plain_args, {"HOME=" + home.string()});
    EXPECT_NE(plain.out.find(home.string() + "/model/config.json"), std::string::npos) << plain.out;
    // Outside HOME, a folder named as the user (/scratch/$USER) is written $USER.
    args[1] = (home / "zoe_redact" / "model").string();
    std::filesystem::create_directories(args[1]);
    std::filesystem::copy_file(home / "model" / "config.json", args[1] + "/config.json",
                               std::filesystem::copy_options::overwrite_existing);
    auto user = run_dlrig(args, {"HOME=/nonexistent-home", "USER=zoe_redact"});
    ASSERT_EQ(user.exit_code, 0) << user.err;
    EXPECT_EQ(user.out.find("zoe_redact"), std::string::npos) << user.out;
    EXPECT_NE(user.out.find("/$USER/model/config.json"), std::string::npos) << user.out;
  }
}

TEST(OutputCli, SnapshotContextStillLoadsAndKeepsItsCapture) {
  auto snap = run_dlrig({"snapshot", "--sysroot", fixture("laptop-no-gpu")});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  auto path = scratch("roundtrip.json");
  std::ofstream(path) << snap.out;
  auto again = run_dlrig({"info", "--json", "--from", path.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  Json a = Json::parse(snap.out), b = Json::parse(again.out);
  EXPECT_EQ(b["context"]["captured_at"], a["context"]["captured_at"]);
  EXPECT_EQ(b["context"]["sysroot"], a["context"]["sysroot"]);
  EXPECT_EQ(b["context"]["source"]["kind"], "file");
}

// ---- issue 11.1: bytes that are not UTF-8 ------------------------------------------------------

TEST(OutputCli, Latin1ByteInPathKeepsSnapshotJsonValid) {
  // PATH=$'/tmp/\xe9:'"$PATH" dlrig snapshot: json type_error 316 and exit 70 before.
  std::vector<std::string> env{"PATH=/tmp/\xe9:/usr/bin:/bin"};
  for (std::vector<std::string> args :
       {std::vector<std::string>{"snapshot", "--no-nvml"},
        {"info", "--json", "--sysroot", fixture("desktop-rtx4090")},
        {"doctor", "--json", "--sysroot", fixture("desktop-rtx4090")}}) {
    auto r = run_dlrig(args, env);
    EXPECT_NE(r.exit_code, 70) << args[0] << ": " << r.err;
    EXPECT_TRUE(Json::accept(r.out)) << args[0] << ": " << r.err;
  }
  auto r = run_dlrig({"snapshot", "--no-nvml"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["software"]["env"]["PATH"], "/tmp/\xEF\xBF\xBD:/usr/bin:/bin");
  auto replaced = j["context"]["invalid_utf8"];
  EXPECT_NE(std::find(replaced.begin(), replaced.end(), "/software/env/PATH"), replaced.end())
      << replaced.dump();
  bool noted = false;
  for (const auto &n : j["notes"])
    noted = noted || n["field"] == "software.env.PATH";
  EXPECT_TRUE(noted);
  // The table says it escaped, not raw.
  auto table = run_dlrig({"info", "--sysroot", fixture("desktop-rtx4090")}, env);
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.find('\xe9'), std::string::npos);
}

TEST(OutputCli, HostileHostnameInASysrootIsEscapedAndReplaced) {
  auto root = scratch("hostile-root");
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "proc/sys/kernel/hostname") << "evil\xe9\x1b]0;pwned\x07\n";
  auto table = run_dlrig({"info", "--sysroot", root.string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos);
  EXPECT_NE(table.out.find("evil\\xe9\\x1b]0;pwned\\x07"), std::string::npos) << table.out;
  auto json = run_dlrig({"info", "--json", "--sysroot", root.string()});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(Json::parse(json.out)["host"]["hostname"], "evil\xEF\xBF\xBD\x1b]0;pwned\x07");
}

// ---- issue 11.2: terminal escape injection ------------------------------------------------------

std::string hostile_snapshot() {
  const std::string osc = "\x1b]0;pwned\x07";
  Json j = read_json(snapshot_fixture("desktop-cpu-torch.json"));
  j["host"]["hostname"] = "tower" + osc;
  j["gpus"][0]["name"] = "GeForce" + osc;
  j["gpus"][0]["nvml"]["name"] = "NVIDIA" + osc;
  j["software"]["python_envs"][0]["interpreter"] = "/home/ana/venv" + osc + "\r/bin/python";
  return write_json("hostile.json", j);
}

TEST(OutputCli, ControlCharactersFromASnapshotNeverReachTheTerminal) {
  auto path = hostile_snapshot();
  for (std::vector<std::string> args : {std::vector<std::string>{"info"},
                                        {"info", "--markdown"},
                                        {"info", "--csv"},
                                        {"doctor"},
                                        {"doctor", "--markdown"},
                                        {"doctor", "--csv"},
                                        {"fit", "llama-3.1-8b"}}) {
    std::string what = args[0] + (args.size() > 1 ? " " + args[1] : "");
    args.insert(args.end(), {"--from", path});
    auto r = run_dlrig(args);
    EXPECT_LE(r.exit_code, 2) << what << ": " << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << what;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << what;
    EXPECT_EQ(r.out.find('\r'), std::string::npos) << what;
  }
  auto info = run_dlrig({"info", "--from", path});
  EXPECT_NE(info.out.find("tower\\x1b]0;pwned\\x07"), std::string::npos) << info.out;
  // Colour forced on: dlrig's own colour codes, but the snapshot's escape stays escaped.
  auto doctor = run_dlrig({"doctor", "--color", "always", "--from", path});
  EXPECT_NE(doctor.out.find("\x1b[1;31m"), std::string::npos) << doctor.out;
  EXPECT_EQ(doctor.out.find("\x1b]"), std::string::npos) << doctor.out;
  EXPECT_NE(doctor.out.find("venv\\x1b]0;pwned\\x07\\x0d/bin"), std::string::npos) << doctor.out;
}

TEST(OutputCli, ErrorMessagesEscapeControlCharactersToo) {
  auto r = run_dlrig({"info", "--from", "/nonexistent/\x1b]0;pwned\x07.json"});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/\\x1b]0;pwned\\x07.json"), std::string::npos) << r.err;
}

// The command-line parser's own messages quote what was typed: escaped too (found by
// fuzz/cli_args.py: a bad number, an unknown topic, a stray argument).
TEST(OutputCli, CommandLineErrorsEscapeWhatWasTyped) {
  for (const auto &args :
       std::vector<std::vector<std::string>>{{"fit", "--batch", "\x1b]0;pwned\x07"},
                                             {"kb", "\x1b[2J"},
                                             {"doctor", "--explain", "x", "\x1b[31mred"}}) {
    auto r = run_dlrig(args);
    EXPECT_EQ(r.exit_code, 64) << args[0];
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("\\x1b"), std::string::npos) << r.err;
  }
}

// ---- one printer layer: --csv and --color everywhere
// ---------------------------------------------

TEST(OutputCli, EveryCommandOffersCsvWhereTabular) {
  auto from = snapshot_fixture("desktop-cpu-torch.json");
  auto info = run_dlrig({"info", "--csv", "--from", from});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.out.rfind("bus id,name,vendor,id,driver,NUMA,link,max link,", 0), 0u) << info.out;
  EXPECT_NE(info.out.find("0000:01:00.0,GeForce RTX 4090,NVIDIA,10de:2684,nvidia"),
            std::string::npos)
      << info.out;
  auto doctor = run_dlrig({"doctor", "--csv", "--from", from});
  EXPECT_EQ(doctor.exit_code, 2) << doctor.err;
  EXPECT_EQ(
      doctor.out.rfind("severity,id,area,title,evidence,why,fix\nfail,torch.cpu-only-build,", 0),
      0u)
      << doctor.out;
  auto fit = run_dlrig({"fit", "llama-3.1-8b", "--gpu", "H100 SXM", "--csv"});
  EXPECT_EQ(fit.out.rfind("gpu,component,bytes,level\n", 0), 0u) << fit.out << fit.err;
  EXPECT_NE(fit.out.find("NVIDIA H100 SXM5,weights,32121044992,allocated"), std::string::npos)
      << fit.out; // bytes, not "32.1 GB"
  auto all = run_dlrig({"fit", "llama-3.1-8b", "--all-gpus", "--csv"});
  EXPECT_EQ(all.out.rfind("gpu,memory_bytes,device_bytes,verdict,", 0), 0u) << all.out;
  auto kb = run_dlrig({"kb", "gpus", "h100", "--csv"});
  EXPECT_EQ(kb.exit_code, 0) << kb.err;
  EXPECT_EQ(kb.out.rfind("GPU,CC,Mem GB,", 0), 0u) << kb.out;
  auto checks = run_dlrig({"doctor", "--list-checks", "--csv"});
  EXPECT_EQ(checks.out.rfind("id,area,worst,looks for\n", 0), 0u) << checks.out;
  // --csv with --json is a usage error.
  EXPECT_EQ(run_dlrig({"kb", "gpus", "--csv", "--json"}).exit_code, 64);
}

TEST(OutputCli, ColorFlagAndNoColor) {
  auto from = snapshot_fixture("desktop-cpu-torch.json");
  auto forced = run_dlrig({"doctor", "--color", "always", "--from", from}, {"NO_COLOR=1"});
  EXPECT_NE(forced.out.find("\x1b[1;31m"), std::string::npos); // the flag wins over NO_COLOR
  auto never = run_dlrig({"doctor", "--color", "never", "--from", from});
  EXPECT_EQ(never.out.find('\x1b'), std::string::npos);
  auto piped = run_dlrig({"doctor", "--from", from}); // auto, and stdout is a file
  EXPECT_EQ(piped.out.find('\x1b'), std::string::npos);
  for (const char *cmd : {"info", "fit", "kb"}) {
    std::vector<std::string> args{cmd};
    if (std::string(cmd) == "fit")
      args.insert(args.end(), {"llama-3.1-8b", "--all-gpus"});
    if (std::string(cmd) == "kb")
      args.emplace_back("gpus");
    args.insert(args.end(), {"--color", "never"});
    EXPECT_EQ(run_dlrig(args).exit_code, 0) << cmd;
  }
  EXPECT_EQ(run_dlrig({"doctor", "--color", "sometimes", "--from", from}).exit_code, 64);
}

// ---- wrapping to the terminal ------------------------------------------------------------------

std::size_t columns_of(const std::string &line) { // code points; the output is UTF-8
  return static_cast<std::size_t>(std::count_if(line.begin(), line.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// In a terminal, doctor's prose is wrapped to its width with hanging indents and every word kept
// in order; the fix steps (commands to copy) are left whole. Piped, nothing is wrapped.
TEST(OutputCli, DoctorWrapsItsProseToTheTerminalButNotItsFixSteps) {
  const std::vector<std::string> args{"doctor", "--sysroot", fixture("laptop-egpu-3080"), "--color",
                                      "never"};
  const auto piped = run_dlrig(args, {"COLUMNS=80"});
  const auto tty = run_dlrig_in_terminal(args, 80);
  EXPECT_EQ(tty.exit_code, piped.exit_code) << tty.err;
  EXPECT_EQ(words_of(tty.out), words_of(piped.out)); // the same text, other line breaks
  bool in_fix = false;
  std::size_t wrapped = 0;
  for (const auto &l : lines_of(tty.out)) {
    if (l.find("fix:") != std::string::npos) {
      in_fix = true;
      continue;
    }
    if (in_fix && l.starts_with("          "))
      continue; // a fix step
    in_fix = false;
    EXPECT_LE(columns_of(l), 80u) << l;
    wrapped += l.starts_with("          ") ? 1 : 0; // a continuation under "evidence:"/"why:"
  }
  EXPECT_GT(wrapped, 0u) << tty.out;
  std::size_t longest = 0;
  for (const auto &l : lines_of(piped.out))
    longest = std::max(longest, columns_of(l));
  EXPECT_GT(longest, 80u) << "the piped output is not wrapped whatever COLUMNS says";
}

// Tables: the columns narrow and the cells wrap to the terminal; COLUMNS wins over the
// terminal's size; a pipe gets every row on one line.
TEST(OutputCli, TablesFitTheTerminalAndColumnsOverridesItsSize) {
  const std::vector<std::string> args{"fit", "llama-3.1-8b", "--gpu", "H100", "--color", "never"};
  const auto piped = run_dlrig(args);
  ASSERT_EQ(piped.exit_code, 1) << piped.err; // does not fit on one H100
  const auto at100 = run_dlrig_in_terminal(args, 100);
  const auto at90 = run_dlrig_in_terminal(args, 200, {"COLUMNS=90"});
  for (const auto *run : {&at100, &at90}) {
    EXPECT_EQ(run->exit_code, 1) << run->err;
    const std::size_t width = run == &at100 ? 100 : 90;
    for (const auto &l : lines_of(run->out))
      EXPECT_LE(columns_of(l), width) << l;
    EXPECT_GT(lines_of(run->out).size(), lines_of(piped.out).size());
  }
  // No word lost: every word but the rules and those longer than a column's floor (30, cut).
  auto sorted_words = [](const std::string &text) {
    std::vector<std::string> kept;
    for (auto &w : words_of(text))
      if (w.size() <= 30 && w.find_first_not_of('-') != std::string::npos)
        kept.push_back(w);
    std::sort(kept.begin(), kept.end());
    return kept;
  };
  const auto kept = sorted_words(at90.out), all = sorted_words(piped.out);
  EXPECT_TRUE(std::includes(kept.begin(), kept.end(), all.begin(), all.end()));
  std::size_t longest = 0;
  for (const auto &l : lines_of(piped.out))
    longest = std::max(longest, columns_of(l));
  EXPECT_GT(longest, 200u);
}

// ---- issue 11.8: 5,000 GPUs --------------------------------------------------------------------

TEST(OutputCli, FiveThousandGpusPrintASummaryNotAMatrix) {
  // The 8 x H100 fixture machine, its snapshot copied 625 times over: 5,000 NVML GPUs, each
  // group of eight with its 28 NVLink pairs.
  auto snap = run_dlrig({"snapshot", "--sysroot", fixture("server-8xh100")},
                        fake_nvml("server-8xh100/nvml.json"));
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  Json j = Json::parse(snap.out);
  Json gpus = Json::array(), pairs = Json::array();
  Json base_gpus = Json::array();
  for (const auto &g : j["gpus"])
    if (!g["nvml"].is_null())
      base_gpus.push_back(g);
  ASSERT_EQ(base_gpus.size(), 8u);
  ASSERT_EQ(j["nvidia"]["pairs"].size(), 28u);
  constexpr int kGroups = 625;
  for (int k = 0; k < kGroups; ++k) {
    for (std::size_t i = 0; i < base_gpus.size(); ++i) {
      Json g = base_gpus[i];
      int index = k * 8 + static_cast<int>(i);
      char bdf[32];
      std::snprintf(bdf, sizeof bdf, "%04x:%02x:00.0", index / 256, index % 256);
      g["bdf"] = bdf;
      g["nvml"]["index"] = index;
      gpus.push_back(g);
    }
    for (Json p : j["nvidia"]["pairs"]) {
      p["a"] = p["a"].get<int>() + k * 8;
      p["b"] = p["b"].get<int>() + k * 8;
      pairs.push_back(p);
    }
  }
  j["gpus"] = gpus;
  j["nvidia"]["pairs"] = pairs;
  j["nvidia"]["gpu_count"] = 5000;
  auto path = write_json("5000-gpus.json", j);

  auto r = run_dlrig({"info", "--from", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU topology for 5000 GPUs, summarised"), std::string::npos);
  EXPECT_NE(r.out.find("GPU4999  NV18: 7, n/a: 4992"), std::string::npos);
  EXPECT_EQ(r.out.find("GPU0  GPU1  GPU2"), std::string::npos); // no matrix header
  // Bounded: a handful of rows per GPU, and no line as wide as a 5,000-column matrix.
  std::size_t lines = 0, widest = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line); ++lines)
    widest = std::max(widest, line.size());
  EXPECT_LT(lines, 6u * 5000u + 500u);
  EXPECT_LT(widest, 2000u);
  // JSON keeps every pair.
  auto json = run_dlrig({"info", "--json", "--from", path});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(Json::parse(json.out)["nvidia"]["pairs"].size(), 625u * 28u);
}

TEST(OutputCli, EightGpusStillPrintTheMatrix) {
  auto r = run_dlrig({"info", "--sysroot", fixture("server-8xh100")},
                     fake_nvml("server-8xh100/nvml.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU0  GPU1  GPU2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("summarised"), std::string::npos);
}

} // namespace
} // namespace dlrig::test

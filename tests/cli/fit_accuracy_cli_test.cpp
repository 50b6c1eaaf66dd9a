// `dlrig fit` against training steps measured on one NVIDIA H200 (tests/data/measured/h200/
// README.md), each case's estimate from the saved snapshot and config:
//  - step time within the issue's ±40 % band, or, for the rows docs/fit-accuracy.md lists as open
//    misses, within ±70 % so that they cannot get worse unnoticed;
//  - memory: PyTorch's MemTracker total at the peak of the step (memtracker.jsonl) and the
//    allocated peak of the structures measured in the second run (fit-new.jsonl) within ±10 %.
#include "dlrig/core/json.hpp"
#include "support/cli.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace dlrig::test {
namespace {

// The measured runs' transformers (tests/data/measured/h200/README.md): their snapshot.json was
// taken before the probe recorded it, so each case passes it as the measurement had it.
const std::vector<std::string> kMeasuredStack = {"--transformers", "5.17.0"};

// The cases still outside ±40 % (docs/fit-accuracy.md says what is left out for each).
bool known_miss(const std::string &c) {
  return c.rfind("bert", 0) == 0;
}

TEST(FitAccuracyH200, StepTimesWithinTheBand) {
  const std::string dir = fixture("measured/h200");
  std::ifstream in(dir + "/steps.jsonl");
  ASSERT_TRUE(in) << dir;
  std::string line, table;
  std::vector<double> errors;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    const Json c = Json::parse(line);
    const auto name = c["case"].get<std::string>();
    std::vector<std::string> args = {"fit", dir + "/" + c["config"].get<std::string>(), "--from",
                                     dir + "/snapshot.json", "--json"};
    args.insert(args.end(), kMeasuredStack.begin(), kMeasuredStack.end());
    for (const auto &a : c["dlrig_args"])
      args.push_back(a.get<std::string>());
    auto r = run_dlrig(args);
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.err;
    const Json j = Json::parse(r.out);
    const auto &t = j["gpus"][0]["time"];
    ASSERT_TRUE(t["seconds_per_step"].is_number()) << name << "\n" << r.out;
    const double got = t["seconds_per_step"].get<double>();
    const double measured = c["measured_step_s"].get<double>();
    const double err = got / measured - 1;
    errors.push_back(std::abs(err));
    table += fmt::format("| {} | {:.1f} | {:.1f} | {:+.1f} % |\n", name, measured * 1e3, got * 1e3,
                         err * 100);
    EXPECT_LE(std::abs(err), known_miss(name) ? 0.70 : 0.40)
        << name << ": estimated " << got << " s, measured " << measured << " s";
  }
  EXPECT_EQ(errors.size(), 9U);
  std::cout << table;
}

// One line of a measurement file, run through `dlrig fit` with its recorded arguments: the first
// GPU's JSON object.
Json estimate_of(const std::string &dir, const std::string &folder, const Json &c) {
  std::vector<std::string> args = {"fit", folder, "--from", dir + "/snapshot.json", "--json"};
  args.insert(args.end(), kMeasuredStack.begin(), kMeasuredStack.end());
  for (const auto &a : c["dlrig_args"])
    args.push_back(a.get<std::string>());
  auto r = run_dlrig(args);
  EXPECT_EQ(r.exit_code, 0) << folder << "\n" << r.err;
  if (r.exit_code != 0)
    return Json::object();
  return Json::parse(r.out)["gpus"][0];
}

// The measured cases of a jsonl file (lines without "measured" record a case that did not build)
// with the folder of their config.json: configs-<kind>/<case, spaces as underscores>.
std::vector<std::pair<Json, std::string>>
measured_cases(const std::string &dir, const std::string &file, const std::string &kind) {
  std::ifstream in(dir + "/" + file);
  EXPECT_TRUE(in) << dir << "/" << file;
  std::vector<std::pair<Json, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    Json c = Json::parse(line);
    if (!c.contains("measured"))
      continue;
    std::string name = c["case"].get<std::string>();
    std::replace(name.begin(), name.end(), ' ', '_');
    out.emplace_back(std::move(c), dir + "/configs-" + kind + "/" + name);
  }
  return out;
}

// MemTracker's total at the step's peak (parameters, gradients, optimizer states, activations and
// temporaries; autocast's weight copies among the activations) against dlrig's weights +
// gradients + optimizer + activations at its peak phase. GPT-2 small (gelu_new's fp32 tensors
// under autocast) was 14.9 % low before they were counted.
TEST(FitAccuracyH200, MemTrackerTotalsWithinTenPercent) {
  const std::string dir = fixture("measured/h200");
  std::string table;
  int n = 0;
  for (const auto &[c, folder] : measured_cases(dir, "memtracker.jsonl", "memtracker")) {
    const auto name = c["case"].get<std::string>();
    const Json g = estimate_of(dir, folder, c);
    ASSERT_TRUE(g.contains("breakdown")) << name << "\n" << g.dump();
    const auto &b = g["breakdown"];
    const double got = b["weights"].get<double>() + b["gradients"].get<double>() +
                       b["optimizer"].get<double>() + b["activations"].get<double>();
    const double measured = c["measured"]["total"].get<double>();
    const double err = got / measured - 1;
    table += fmt::format("| {} | {:.0f} | {:.0f} | {:+.1f} % |\n", name, measured / (1 << 20),
                         got / (1 << 20), err * 100);
    EXPECT_LE(std::abs(err), 0.10) << name << ": dlrig " << got << " B, MemTracker " << measured;
    ++n;
  }
  EXPECT_EQ(n, 4);
  std::cout << table;
}

// The allocated peak (torch.cuda.max_memory_allocated) of Falcon's new decoder architecture,
// BART-large with a question-answering head (refused before dlrig knew the head) and CLIP's text
// tower (21.7 % low before quick_gelu's saved sigmoid and the per-linear casts were counted).
TEST(FitAccuracyH200, NewStructuresAllocatedWithinTenPercent) {
  const std::string dir = fixture("measured/h200");
  std::string table;
  int n = 0;
  for (const auto &[c, folder] : measured_cases(dir, "fit-new.jsonl", "new")) {
    const auto name = c["case"].get<std::string>();
    const Json g = estimate_of(dir, folder, c);
    ASSERT_TRUE(g.contains("allocated_bytes")) << name << "\n" << g.dump();
    const double got = g["allocated_bytes"].get<double>();
    const double measured = c["measured"]["allocated"].get<double>();
    const double err = got / measured - 1;
    table += fmt::format("| {} | {:.2f} | {:.2f} | {:+.1f} % |\n", name, measured / 1e9, got / 1e9,
                         err * 100);
    EXPECT_LE(std::abs(err), 0.10) << name << ": dlrig " << got << " B, measured " << measured;
    ++n;
  }
  EXPECT_EQ(n, 3);
  std::cout << table;
}

} // namespace
} // namespace dlrig::test

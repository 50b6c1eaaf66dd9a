// `dlrig fit` against training steps measured on real GPUs (tests/data/measured/<gpu>/README.md:
// one NVIDIA H200 and one NVIDIA H100, 2026-11-26), each case's estimate from that machine's saved
// snapshot and config:
//  - step time within the issue's ±40 % band, or, for the rows docs/fit-accuracy.md lists as open
//    misses on that GPU, within ±70 % so that they cannot get worse unnoticed;
//  - memory: PyTorch's MemTracker total at the peak of the step (memtracker.jsonl) and the
//    allocated peak of the structures measured in the second run (fit-new.jsonl) within ±10 %.
#include "dlrig/core/json.hpp"
#include "support/cli.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace dlrig::test {
namespace {

// The measured runs' transformers (tests/data/measured/<gpu>/README.md): the H200's snapshot.json
// was taken before the probe recorded it, so each case passes it as the measurement had it.
const std::vector<std::string> kMeasuredStack = {"--transformers", "5.17.0"};

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

// Whether a case is one of the open misses given by their names' beginnings.
bool known_miss(const std::string &name, const std::vector<std::string> &open_misses) {
  return std::any_of(open_misses.begin(), open_misses.end(),
                     [&](const std::string &m) { return name.rfind(m, 0) == 0; });
}

// Every case of <gpu>/steps.jsonl within ±40 % of its measured step, or within ±70 % for the open
// misses (docs/fit-accuracy.md says what is left out for each); `n` cases in all.
void check_step_times(const std::string &gpu, const std::vector<std::string> &open_misses,
                      std::size_t n) {
  const std::string dir = fixture("measured/" + gpu);
  std::ifstream in(dir + "/steps.jsonl");
  ASSERT_TRUE(in) << dir;
  std::string line, table;
  std::vector<double> errors;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    const Json c = Json::parse(line);
    const auto name = c["case"].get<std::string>();
    const Json g = estimate_of(dir, dir + "/" + c["config"].get<std::string>(), c);
    ASSERT_TRUE(g.contains("time") && g["time"]["seconds_per_step"].is_number()) << name << "\n"
                                                                                 << g.dump();
    const double got = g["time"]["seconds_per_step"].get<double>();
    const double measured = c["measured_step_s"].get<double>();
    const double err = got / measured - 1;
    errors.push_back(std::abs(err));
    table += fmt::format("| {} | {:.1f} | {:.1f} | {:+.1f} % |\n", name, measured * 1e3, got * 1e3,
                         err * 100);
    EXPECT_LE(std::abs(err), known_miss(name, open_misses) ? 0.70 : 0.40)
        << name << ": estimated " << got << " s, measured " << measured << " s";
  }
  EXPECT_EQ(errors.size(), n);
  std::cout << table;
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
// gradients + optimizer + activations at its peak phase, within ±10 %; `n` cases in all.
void check_memtracker_totals(const std::string &gpu, int n) {
  const std::string dir = fixture("measured/" + gpu);
  std::string table;
  int seen = 0;
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
    ++seen;
  }
  EXPECT_EQ(seen, n);
  std::cout << table;
}

// The allocated peak (torch.cuda.max_memory_allocated) of the second run's new structures within
// ±10 %; `n` cases in all.
void check_new_structures(const std::string &gpu, int n) {
  const std::string dir = fixture("measured/" + gpu);
  std::string table;
  int seen = 0;
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
    ++seen;
  }
  EXPECT_EQ(seen, n);
  std::cout << table;
}

// H200: nine training cases, every one within ±40 % (BERT, the nearest the edge, −38 %).
TEST(FitAccuracyH200, StepTimesWithinTheBand) {
  check_step_times("h200", {}, 9);
}

// GPT-2 small (gelu_new's fp32 tensors under autocast) was 14.9 % low before they were counted.
TEST(FitAccuracyH200, MemTrackerTotalsWithinTenPercent) {
  check_memtracker_totals("h200", 4);
}

// Falcon's new decoder architecture, BART-large with a question-answering head (refused before
// dlrig knew the head) and CLIP's text tower (21.7 % low before quick_gelu's saved sigmoid and
// the per-linear casts were counted).
TEST(FitAccuracyH200, NewStructuresAllocatedWithinTenPercent) {
  check_new_structures("h200", 3);
}

// H100: the H200's nine training cases and the three new structures, timed in the first run; the
// open misses are two host-bound rows (docs/fit-accuracy.md "Step time on a real GPU: NVIDIA
// H100"): Falcon's new decoder (−54 %) and BART-large QA (−58 %). BERT (−31 %) and CLIP's text
// tower (−25 %), host-bound too, are within ±40 %.
TEST(FitAccuracyH100, StepTimesWithinTheBand) {
  check_step_times("h100", {"falcon", "bart"}, 12);
}

TEST(FitAccuracyH100, MemTrackerTotalsWithinTenPercent) {
  check_memtracker_totals("h100", 4);
}

TEST(FitAccuracyH100, NewStructuresAllocatedWithinTenPercent) {
  check_new_structures("h100", 3);
}

} // namespace
} // namespace dlrig::test

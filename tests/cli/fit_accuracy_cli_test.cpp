// `dlrig fit`'s step time against training steps timed on one NVIDIA H200 (tests/data/measured/
// h200/README.md): each case's estimate from the saved snapshot and config, within the issue's
// ±40 % band, or, for the rows docs/fit-accuracy.md lists as open misses, within ±70 % so that
// they cannot get worse unnoticed.
#include "dlrig/core/json.hpp"
#include "support/cli.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace dlrig::test {
namespace {

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

} // namespace
} // namespace dlrig::test

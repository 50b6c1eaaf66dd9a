// `dlrig bench` through the real binary, with DLRIG_BENCH_SMALL=1 (smallest sizes).
#include "support/cli.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace dlrig::test {
namespace {

TEST(BenchCli, QuickGemmMeasuresVerifiedResultsWithEnvironment) {
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm", "--json"}, {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_TRUE(j["environment"].contains("cpu_model"));
  EXPECT_TRUE(j["environment"].contains("governor"));
  EXPECT_NE(j["environment"]["blas"]["config"].get<std::string>().find("OpenBLAS"),
            std::string::npos);
  int measured = 0;
  for (auto &res : j["results"]) {
    if (res["status"] == "measured") {
      ++measured;
      EXPECT_GT(res["rate"]["median"].get<double>(), 0);
      EXPECT_GE(res["seconds"]["samples"].get<int>(), 1);
    } else {
      EXPECT_EQ(res["status"], "skipped") << res.dump();
      EXPECT_FALSE(res["reason"].is_null());
    }
  }
  EXPECT_GE(measured, 2);
  EXPECT_NE(r.err.find("bench: cpu.gemm.sgemm"), std::string::npos) << r.err; // progress
}

TEST(BenchCli, WrongResultExitsTwo) {
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.dgemm"},
                     {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_CORRUPT=1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verification failed"), std::string::npos) << r.out;
}

TEST(BenchCli, UnknownIdIsUsageWithNearestNames) {
  auto r = run_dlrig({"bench", "cpu.gem"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("cpu.gemm"), std::string::npos) << r.err;
}

TEST(BenchCli, ListSaysWhatRunsHere) {
  auto r = run_dlrig({"bench", "--list", "--csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cpu.gemm.sgemm"), std::string::npos);
  EXPECT_NE(r.out.find("cpu.gemm.bf16"), std::string::npos);
}

} // namespace
} // namespace dlrig::test

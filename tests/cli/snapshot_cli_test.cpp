#include "support/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace dlrig::test {
namespace {

TEST(SnapshotCli, FromMissingFileIsBadInput) {
  auto r = run_dlrig({"info", "--from", "/nonexistent/x.json"});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("/nonexistent/x.json"), std::string::npos) << r.err;
}

TEST(SnapshotCli, FromMalformedFileNamesThePlace) {
  std::string path = "/tmp/dlrig-malformed-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << "{\"schema_version\": 1,\n \"host\": [}";
  auto r = run_dlrig({"info", "--from", path});
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
}

TEST(SnapshotCli, UnknownFlagIsUsageError) {
  EXPECT_EQ(run_dlrig({"info", "--no-such-flag"}).exit_code, 64);
  EXPECT_EQ(run_dlrig({}).exit_code, 64);
}

TEST(SnapshotCli, SnapshotRoundTripsThroughFrom) {
  auto snap = run_dlrig({"snapshot", "--sysroot", fixture("laptop-no-gpu")});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  std::string path = "/tmp/dlrig-roundtrip-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << snap.out;
  auto again = run_dlrig({"info", "--json", "--from", path});
  std::remove(path.c_str());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  // Everything but the envelope's context (this run's time, command line and source).
  auto a = nlohmann::json::parse(snap.out), b = nlohmann::json::parse(again.out);
  a.erase("context");
  b.erase("context");
  EXPECT_EQ(a, b);
}

} // namespace
} // namespace dlrig::test

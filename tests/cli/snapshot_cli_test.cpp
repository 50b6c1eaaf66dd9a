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

// The probe's options cannot apply to a saved snapshot: next to --from they are a usage error,
// never silently ignored. An empty --python names nothing. --data is doctor's alone.
TEST(SnapshotCli, ProbeOptionsWithFromAndEmptyPythonAreUsageErrors) {
  auto snap = run_dlrig({"snapshot", "--sysroot", fixture("laptop-no-gpu")});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  auto path = scratch("probe-options.json");
  std::ofstream(path) << snap.out;
  const std::vector<std::vector<std::string>> probing = {{"--sysroot", fixture("laptop-no-gpu")},
                                                         {"--deep"},
                                                         {"--deep-timeout", "5"},
                                                         {"--no-nvml"},
                                                         {"--python", "/usr/bin/python3"}};
  for (const char *cmd : {"info", "doctor"})
    for (const auto &extra : probing) {
      std::vector<std::string> args{cmd, "--from", path.string()};
      args.insert(args.end(), extra.begin(), extra.end());
      auto r = run_dlrig(args);
      EXPECT_EQ(r.exit_code, 64) << cmd << " " << extra[0] << ": " << r.err;
      EXPECT_NE(r.err.find("excludes"), std::string::npos) << r.err;
    }
  for (const char *cmd : {"info", "snapshot", "doctor"}) {
    auto r = run_dlrig({cmd, "--python", "", "--sysroot", fixture("laptop-no-gpu")});
    EXPECT_EQ(r.exit_code, 64) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("--python"), std::string::npos) << r.err;
  }
  for (const char *cmd : {"info", "snapshot"})
    EXPECT_EQ(
        run_dlrig({cmd, "--data", "/mnt/data", "--sysroot", fixture("laptop-no-gpu")}).exit_code,
        64)
        << cmd;
  auto doctor = run_dlrig({"doctor", "--data", "/mnt/data", "--from", path.string()});
  EXPECT_NE(doctor.exit_code, 64) << doctor.err;
  EXPECT_EQ(run_dlrig({"doctor", "--data", "", "--from", path.string()}).exit_code, 64);
  // --redact still goes with --from.
  EXPECT_EQ(run_dlrig({"info", "--redact", "--from", path.string()}).exit_code, 0);
}

} // namespace
} // namespace dlrig::test

#include "dlrig/core/exit_code.hpp"
#include "dlrig/core/snapshot.hpp"
#include "dlrig/platform/snapshot_file.hpp"

#include <gtest/gtest.h>

namespace dlrig {
namespace {

Snapshot sample() {
  Snapshot s;
  s.context.tool_version = "0.1.0";
  s.host.hostname = "node-7";
  s.host.memory.total_bytes = 540'000'000'000ULL;
  s.host.cpu.isa = {"avx2", "avx512f"};
  s.host.mounts.push_back(Mount{"/home/alice/data", "/dev/nvme0n1p2", "ext4", "nvme",
                                1'000'000'000'000ULL, std::nullopt});
  Gpu g;
  g.bdf = "0000:18:00.0";
  g.link.current_gts = 16.0;
  g.link.current_width = 16;
  g.nvml = NvmlGpu{};
  g.nvml->uuid = "GPU-1234";
  g.nvml->power_draw_w = 71.25;
  g.nvml->throttle_reasons = {"gpu-idle"};
  s.gpus.push_back(g);
  s.nvidia.driver_version = "550.54.15";
  s.software.env["CUDA_HOME"] = "/home/alice/cuda";
  s.notes.push_back(ProbeNote{"host.shm.size_bytes", "/proc/mounts", "no /dev/shm mount"});
  return s;
}

TEST(Snapshot, JsonRoundTripIsLossless) {
  Snapshot s = sample();
  Json first = to_json(s);
  auto back = snapshot_from_json(first.dump());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(to_json(*back), first);
  EXPECT_EQ(back->gpus[0].nvml->power_draw_w, 71.25);
}

TEST(Snapshot, UnknownIsNullNeverZero) {
  Snapshot s;
  Json j = to_json(s);
  EXPECT_TRUE(j["host"]["memory"]["total_bytes"].is_null());
  EXPECT_TRUE(j["host"]["shm"]["size_bytes"].is_null());
  auto back = snapshot_from_json(j.dump());
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->host.memory.total_bytes.has_value());
}

// The CPU's ISA list is unknown (null) until its flags are read; read and empty ([]) means none
// of the flags PyTorch uses. Both survive a round trip.
TEST(Snapshot, UnknownIsaIsNullAndReadEmptyIsaIsAList) {
  Snapshot s;
  EXPECT_FALSE(s.host.cpu.isa_known());
  Json j = to_json(s);
  EXPECT_TRUE(j["host"]["cpu"]["isa"].is_null()) << j["host"]["cpu"].dump();
  auto back = snapshot_from_json(j.dump());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_FALSE(back->host.cpu.isa_known());

  s.host.cpu.isa_read = true;
  j = to_json(s);
  ASSERT_TRUE(j["host"]["cpu"]["isa"].is_array());
  EXPECT_TRUE(j["host"]["cpu"]["isa"].empty());
  back = snapshot_from_json(j.dump());
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->host.cpu.isa_known());

  back = snapshot_from_json(R"({"schema_version":1})");
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->host.cpu.isa_known());
  EXPECT_FALSE(gpus_known(*back)); // nothing was probed: no GPU is not "none"
  back = snapshot_from_json(R"({"schema_version":1,"host":{"cpu":{"isa":["avx2"]}}})");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->host.cpu.isa_known());
}

TEST(Snapshot, MalformedJsonNamesThePosition) {
  auto r = snapshot_from_json("{\n  \"schema_version\": 1,\n  \"host\": {,}\n}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 3"), std::string::npos) << r.error().message;
}

TEST(Snapshot, UnknownSchemaVersionIsRejected) {
  auto r = snapshot_from_json(R"({"schema_version": 99})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("schema_version 99"), std::string::npos);
}

TEST(Snapshot, WrongTypeNamesTheField) {
  auto r =
      snapshot_from_json(R"({"schema_version": 1, "host": {"memory": {"total_bytes": "lots"}}})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/host/memory/total_bytes"), std::string::npos)
      << r.error().message;
}

TEST(Snapshot, MissingFileNamesTheFile) {
  auto r = load_snapshot("/nonexistent/snap.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/snap.json"), std::string::npos);
  EXPECT_EQ(r.error().kind, ErrorKind::not_found);
  EXPECT_EQ(exit_code_for(r.error().kind), ExitCode::bad_input);
}

TEST(Snapshot, SpecialFilesAreRefusedWithoutBlocking) {
  auto dev = load_snapshot("/dev/zero");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.error().message.find("a device, not a regular file"), std::string::npos)
      << dev.error().message;
  auto dir = load_snapshot("/");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("is a folder"), std::string::npos) << dir.error().message;
  EXPECT_EQ(dir.error().kind, ErrorKind::bad_input);
  auto empty = load_snapshot("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().kind, ErrorKind::usage);
}

// Issue 11.4: every number is checked against its field's type and range, and the field named.
std::string range_error(const std::string &json) {
  auto r = snapshot_from_json(json);
  EXPECT_FALSE(r.ok()) << json;
  if (r.ok())
    return "";
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().message.find("json.exception"), std::string::npos) << r.error().message;
  return r.error().message;
}

TEST(Snapshot, NegativeCountIsOutOfRange) {
  auto m = range_error(
      R"({"schema_version":1,"gpus":[{"bdf":"x","nvml":{"ecc_uncorrected_volatile":-1}}]})");
  EXPECT_NE(m.find("field /gpus/0/nvml/ecc_uncorrected_volatile"), std::string::npos) << m;
  EXPECT_NE(m.find("out of range"), std::string::npos) << m;
}

// A count (CPU threads, a link width) below 0 is no reading: it names the field, never shows "-5".
TEST(Snapshot, NegativeCpuThreadsAndOtherCountsAreOutOfRange) {
  auto m = range_error(R"({"schema_version":1,"host":{"cpu":{"threads":-5}}})");
  EXPECT_NE(m.find("field /host/cpu/threads"), std::string::npos) << m;
  EXPECT_NE(m.find("out of range"), std::string::npos) << m;
  m = range_error(R"({"schema_version":1,"host":{"cpu":{"cores":-1}}})");
  EXPECT_NE(m.find("field /host/cpu/cores"), std::string::npos) << m;
  m = range_error(R"({"schema_version":1,"gpus":[{"bdf":"x","link":{"max_width":-16}}]})");
  EXPECT_NE(m.find("field /gpus/0/link/max_width"), std::string::npos) << m;
  EXPECT_TRUE(snapshot_from_json(R"({"schema_version":1,"host":{"cpu":{"threads":0}}})").ok());
  EXPECT_TRUE(snapshot_from_json(R"({"schema_version":1,"host":{"cpu":{"threads":null}}})").ok());
}

TEST(Snapshot, HugeFloatIntoIntIsOutOfRange) {
  auto m =
      range_error(R"({"schema_version":1,"gpus":[{"bdf":"x","link":{"current_width":1e26}}]})");
  EXPECT_NE(m.find("field /gpus/0/link/current_width"), std::string::npos) << m;
  m = range_error(R"({"schema_version":1,"gpus":[{"bdf":"x","link":{"current_width":2.5}}]})");
  EXPECT_NE(m.find("whole number"), std::string::npos) << m;
  m = range_error(R"({"schema_version":1,"gpus":[{"bdf":"x","nvml":{"index":1e26}}]})");
  EXPECT_NE(m.find("field /gpus/0/nvml/index"), std::string::npos) << m;
  m = range_error(R"({"schema_version":1,"gpus":[{"bdf":"x","nvml":{"index":-3}}]})");
  EXPECT_NE(m.find("field /gpus/0/nvml/index"), std::string::npos) << m;
}

TEST(Snapshot, MemoryOf2To63BytesIsOutOfRange) {
  auto m = range_error(
      R"({"schema_version":1,"gpus":[{"bdf":"x","nvml":{"memory_total_bytes":9223372036854775808}}]})");
  EXPECT_NE(m.find("field /gpus/0/nvml/memory_total_bytes"), std::string::npos) << m;
  auto ok = snapshot_from_json(
      R"({"schema_version":1,"gpus":[{"bdf":"x","nvml":{"memory_total_bytes":9223372036854775807}}]})");
  EXPECT_TRUE(ok.ok()) << ok.error().message;
}

TEST(Snapshot, SchemaVersionIsNotTruncated) {
  auto m = range_error(R"({"schema_version":4294967297})");
  EXPECT_NE(m.find("unknown schema_version 4294967297"), std::string::npos) << m;
  m = range_error(R"({"schema_version":-4294967295})");
  EXPECT_NE(m.find("unknown schema_version"), std::string::npos) << m;
}

TEST(Snapshot, NumberBeyondDoubleIsMalformedNotACrash) {
  auto m = range_error(R"({"schema_version":1,"x":1e999})");
  EXPECT_NE(m.find("1e999"), std::string::npos) << m;
  EXPECT_NE(m.find("too large"), std::string::npos) << m;
}

TEST(Snapshot, LibraryWordsDoNotLeak) {
  auto m = range_error(R"({"schema_version":1,"host":[]})");
  EXPECT_NE(m.find("field /host: expected an object, found an array"), std::string::npos) << m;
  EXPECT_EQ(m.find("value()"), std::string::npos) << m;
  m = range_error(R"([1,2])");
  EXPECT_NE(m.find("found an array"), std::string::npos) << m;
}

TEST(Snapshot, RedactRemovesIdentity) {
  Snapshot s = sample();
  redact(s);
  EXPECT_FALSE(s.host.hostname);
  EXPECT_FALSE(s.gpus[0].nvml->uuid);
  EXPECT_EQ(s.host.mounts[0].mountpoint, "~/data");
  EXPECT_EQ(s.software.env["CUDA_HOME"], "~/cuda");
  EXPECT_TRUE(s.context.redacted);
  EXPECT_EQ(to_json(s).dump().find("alice"), std::string::npos);
}

// A home outside /home (a cluster's /scratch/alice) is written as ~ and a user's name as $USER
// when given by the caller (this process's HOME and USER) or held in the snapshot's environment.
TEST(Snapshot, RedactTakesOutAHomeThatLiesElsewhereAndTheUsersName) {
  Snapshot s = sample();
  s.host.mounts[0].mountpoint = "/scratch/alice/data";
  s.software.env["CUDA_HOME"] = "/gpfs/u/bob/cuda";
  s.software.env["VIRTUAL_ENV"] = "/work/projects/carol/venv";
  s.software.env["HOME"] = "/gpfs/u/bob";
  s.software.env["LOGNAME"] = "carol";
  redact(s, Identity{{"/scratch/alice/"}, {}});
  EXPECT_EQ(s.host.mounts[0].mountpoint, "~/data");
  EXPECT_EQ(s.software.env["CUDA_HOME"], "~/cuda");
  EXPECT_EQ(s.software.env["VIRTUAL_ENV"], "/work/projects/$USER/venv");
  EXPECT_FALSE(s.software.env.contains("HOME"));
  EXPECT_FALSE(s.software.env.contains("LOGNAME"));
}

TEST(Snapshot, HomePathsAndUserNamesEndWhereAPathPartEnds) {
  const Identity who{{"/scratch/alice"}, {"dave"}};
  EXPECT_EQ(redact_home_paths("/scratch/alice/venv/bin/python", who), "~/venv/bin/python");
  EXPECT_EQ(redact_home_paths("PATH=/scratch/alice/bin:/usr/bin", who), "PATH=~/bin:/usr/bin");
  EXPECT_EQ(redact_home_paths("/scratch/alicex/y and /scratch/alice", who),
            "/scratch/alicex/y and ~");
  EXPECT_EQ(redact_home_paths("(/home/alice), '/root'; \x1b[1m/Users/bob\x1b[0m"),
            "(~), '~'; \x1b[1m~\x1b[0m");
  EXPECT_EQ(redact_home_paths("/rootfs/x /home/alice2/y"), "/rootfs/x ~/y");
  EXPECT_EQ(redact_home_paths("/data/dave/x /data/daves/y /home/dave/z dave", who),
            "/data/$USER/x /data/daves/y ~/z dave");
  // "/" or a relative HOME names no home folder; root or a one-letter user is no name to hide.
  EXPECT_EQ(redact_home_paths("/usr/lib", Identity{{"/"}, {}}), "/usr/lib");
  EXPECT_EQ(redact_home_paths("alice/x", Identity{{"alice"}, {}}), "alice/x");
  EXPECT_EQ(redact_home_paths("/a/b", Identity{{}, {"root", "a"}}), "/a/b");
  // A user named as a system folder keeps it: /usr/local/cuda is not the user's path.
  EXPECT_EQ(redact_home_paths("/usr/local/cuda:/opt/x:/data/usr", Identity{{}, {"usr", "local"}}),
            "/usr/local/cuda:/opt/x:/data/usr");
  EXPECT_EQ(redact_home_paths("/usr/local/cuda:/data/bin2", Identity{{}, {"bin2"}}),
            "/usr/local/cuda:/data/$USER");
}

} // namespace
} // namespace dlrig

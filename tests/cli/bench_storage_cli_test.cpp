// `dlrig bench storage.read` through the real binary on a temporary directory (--data), exit 1
// below an expectation, and Ctrl-C mid-run (results so far stored, the temporary file removed).
#include "support/cli.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dlrig::test {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "dlrig-bench-storage-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(path), {}));
  }
};

TEST(BenchStorageCli, MeasuresSequentialAndRandomOnATempFileAndRemovesIt) {
  TempDir dir;
  auto db = scratch("storage.db").string();
  auto r = run_dlrig(
      {"bench", "--quick", "storage.read", "--data", dir.path.string(), "--json", "--db", db},
      {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u) << r.out;
  for (auto &res : j["results"]) {
    EXPECT_EQ(res["status"], "measured") << res.dump();
    EXPECT_GT(res["rate"]["median"].get<double>(), 0);
    EXPECT_EQ(res["details"]["verified"], true) << res.dump();
    EXPECT_EQ(res["details"]["path"], dir.path.string());
    EXPECT_FALSE(res["details"]["page_cache"].get<std::string>().empty());
    // Not interrupted: no note says so (a `false` here read as "cut short by Ctrl-C" before).
    EXPECT_FALSE(res["details"].contains("interrupted")) << res.dump();
  }
  EXPECT_EQ(r.err.find("cut short"), std::string::npos) << r.err;
  EXPECT_EQ(j["results"][0]["id"], "storage.read.seq");
  EXPECT_EQ(j["results"][0]["rate_unit"], "GB/s");
  EXPECT_EQ(j["results"][1]["id"], "storage.read.rand");
  EXPECT_EQ(j["results"][1]["rate_unit"], "IOPS");
  EXPECT_EQ(dir.entries(), 0u); // the temporary file is gone
}

TEST(BenchStorageCli, AWrongReadExitsTwoAndTheFileIsStillRemoved) {
  TempDir dir;
  auto r = run_dlrig({"bench", "--quick", "storage.read", "--data", dir.path.string(), "--db",
                      scratch("storage_wrong.db").string()},
                     {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_CORRUPT=1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verification failed"), std::string::npos) << r.out;
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(BenchStorageCli, ExistingFileIsReadOnly) {
  TempDir dir;
  auto file = dir.path / "shard.bin";
  {
    std::string content(2 << 20, 'x');
    for (std::size_t i = 0; i < content.size(); ++i)
      content[i] = static_cast<char>((i * 2654435761u) >> 13);
    std::FILE *f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(content.data(), 1, content.size(), f);
    std::fclose(f);
  }
  auto before = fs::last_write_time(file);
  auto r = run_dlrig({"bench", "--quick", "storage.read.seq", "--data", file.string(), "--json",
                      "--db", scratch("storage_ro.db").string()},
                     {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_TRUE(j["results"][0]["details"]["verified"].is_null()); // nothing to compare with
  EXPECT_NE(j["results"][0]["details"]["mode"].get<std::string>().find("read-only"),
            std::string::npos);
  EXPECT_EQ(fs::last_write_time(file), before);
  EXPECT_EQ(dir.entries(), 1u);
}

TEST(BenchStorageCli, AnEmptyOrTinyFileSaysWhatTheReadsNeed) {
  TempDir dir;
  auto empty = dir.path / "empty.bin", tiny = dir.path / "tiny.bin";
  std::ofstream(empty).close();
  std::ofstream(tiny) << "abc";
  auto db = scratch("storage_tiny.db").string();
  auto e = run_dlrig({"bench", "--quick", "storage.read", "--data", empty.string(), "--db", db},
                     {"DLRIG_BENCH_SMALL=1"});
  EXPECT_NE(e.err.find("storage.read.seq 1 MiB qd=8 --data files: failed: --data " +
                       empty.string() + ": the file holds no byte: nothing to read"),
            std::string::npos)
      << e.err;
  auto t = run_dlrig({"bench", "--quick", "storage.read.rand", "--data", tiny.string(), "--db", db},
                     {"DLRIG_BENCH_SMALL=1"});
  EXPECT_NE(t.err.find("failed: --data " + tiny.string() +
                       ": no file of at least 4096 bytes, which a random 4 KiB read needs"),
            std::string::npos)
      << t.err;
}

TEST(BenchStorageCli, MissingDataNamesThePath) {
  auto r = run_dlrig({"bench", "--quick", "storage.read", "--data", "/nonexistent/dlrig-disk",
                      "--db", scratch("storage_missing.db").string()},
                     {"DLRIG_BENCH_SMALL=1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("/nonexistent/dlrig-disk"), std::string::npos) << r.err;
}

TEST(BenchStorageCli, BelowItsExpectationExitsOne) {
  auto db = scratch("expect.db").string();
  // 1e12 GFLOP/s: no CPU reaches it, so the result is below and the run exits 1.
  auto r = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--json", "--db", db},
                     {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_EXPECT=cpu.gemm.sgemm=1e12"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (auto &res : j["results"]) {
    EXPECT_EQ(res["status"], "measured");
    EXPECT_EQ(res["expectation"]["met"], false) << res.dump();
    EXPECT_EQ(res["expectation"]["min"], 1e12);
  }
  auto table = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", db},
                         {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_EXPECT=cpu.gemm.sgemm=1e12"});
  EXPECT_EQ(table.exit_code, 1);
  EXPECT_NE(table.out.find("BELOW"), std::string::npos) << table.out;
  // A floor every CPU clears: exit 0, the expectation met.
  auto met = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--json", "--db", db},
                       {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_EXPECT=cpu.gemm.sgemm=1e-9"});
  ASSERT_EQ(met.exit_code, 0) << met.err;
  EXPECT_EQ(nlohmann::json::parse(met.out)["results"][0]["expectation"]["met"], true);
  // A wrong result outranks a low one: exit 2.
  auto both = run_dlrig(
      {"bench", "--quick", "cpu.gemm.sgemm", "--db", db},
      {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_CORRUPT=1", "DLRIG_BENCH_EXPECT=cpu.gemm.sgemm=1e12"});
  EXPECT_EQ(both.exit_code, 2);
  auto bad = run_dlrig({"bench", "--quick", "cpu.gemm.sgemm", "--db", db},
                       {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_EXPECT=cpu.gemm.sgemm"});
  EXPECT_EQ(bad.exit_code, 64) << bad.err;
}

// Ctrl-C while storage.read writes or reads its temporary file: dlrig removes the file, stores
// and prints what it measured before (cpu.gemm.sgemm) and exits 130.
TEST(BenchStorageCli, SigintKeepsEarlierResultsAndRemovesTheTempFile) {
  TempDir dir;
  auto db = scratch("sigint.db").string();
  Exec exec({"bench", "--quick", "--db", db, "cpu.gemm.sgemm", "storage.read", "--data",
             dir.path.string()},
            {"DLRIG_BENCH_SMALL=1", "DLRIG_BENCH_STORAGE_MIB=768"});
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, DLRIG_BINARY, &actions, nullptr, exec.argv.data(), exec.envp.data()),
            0);
  posix_spawn_file_actions_destroy(&actions);
  bool seen = false;
  for (int i = 0; i < 6000 && !seen; ++i) { // up to 60 s: the probe and sgemm run first
    seen = dir.entries() > 0;
    if (!seen)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(seen) << "the temporary file never appeared";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_EQ(dir.entries(), 0u);
  auto h = run_dlrig({"bench", "history", "cpu.gemm.sgemm", "--db", db, "--json"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  auto j = nlohmann::json::parse(h.out);
  ASSERT_FALSE(j["results"].empty());
  EXPECT_EQ(j["results"][0]["status"], "measured");
}

// --cpu-vs-gpu: one step of a catalog model on this CPU (cpu.gemm.sgemm measured first, no result
// being stored) and on a catalog GPU; then fit on this machine uses the same measured rate.
TEST(BenchCpuVsGpuCli, MeasuresTheCpuThenComparesAndFitUsesIt) {
  auto home = scratch("xdg");
  fs::create_directories(home / "dlrig");
  auto db = (home / "dlrig" / "results.db").string();
  auto r =
      run_dlrig({"bench", "--cpu-vs-gpu", "resnet-50", "--gpu", "RTX 4090", "--json", "--db", db},
                {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("measuring it now"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["flops_per_step"].get<double>(), 1e9);
  EXPECT_GT(j["cpu"]["seconds_per_step"].get<double>(), 0);
  EXPECT_GT(j["gpu"]["seconds_per_step"].get<double>(), 0);
  EXPECT_NE(j["cpu"]["source"].get<std::string>().find("measured cpu.gemm.sgemm"),
            std::string::npos);
  EXPECT_GT(j["speedup"].get<double>(), 1); // an RTX 4090 out-runs any CPU
  EXPECT_NE(j["line"].get<std::string>().find("one step: CPU"), std::string::npos);
  // A second run finds the stored result and measures nothing.
  auto again = run_dlrig({"bench", "--cpu-vs-gpu", "resnet-50", "--gpu", "RTX 4090", "--db", db},
                         {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("measuring it now"), std::string::npos) << again.err;
  EXPECT_NE(again.out.find("one step: CPU"), std::string::npos) << again.out;
  // A checkpoint stored quantised is timed as the model it was quantised from: the same FLOPs.
  auto config = nlohmann::json::parse(std::ifstream(fixture("models/qwen3-8b.json")));
  auto flops = [&](const std::string &path) {
    auto out =
        run_dlrig({"bench", "--cpu-vs-gpu", path, "--gpu", "RTX 4090", "--db", db, "--json"});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    return nlohmann::json::parse(out.out)["flops_per_step"].get<double>();
  };
  const double plain = flops(fixture("models/qwen3-8b.json"));
  config["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}};
  const auto gptq = (home / "qwen3-8b-gptq.json").string();
  std::ofstream(gptq) << config.dump();
  EXPECT_EQ(flops(gptq), plain);
  // fit on this machine reads the same database (XDG_DATA_HOME) for its CPU line.
  auto fit = run_dlrig({"fit", "resnet-50", "--gpu", "RTX 4090", "--json"},
                       {"XDG_DATA_HOME=" + home.string()});
  ASSERT_LE(fit.exit_code, 1) << fit.err;
  auto f = nlohmann::json::parse(fit.out);
  ASSERT_TRUE(f["cpu"].is_object()) << fit.out;
  EXPECT_NE(f["cpu"]["throughput_source"].get<std::string>().find("measured cpu.gemm.sgemm"),
            std::string::npos)
      << f["cpu"].dump();
  auto fit_elsewhere =
      run_dlrig({"fit", "resnet-50", "--from", fixture("snapshots/healthy-desktop.json"), "--json"},
                {"XDG_DATA_HOME=" + home.string()});
  ASSERT_LE(fit_elsewhere.exit_code, 1) << fit_elsewhere.err;
  auto e = nlohmann::json::parse(fit_elsewhere.out);
  if (e["cpu"].is_object()) { // another machine's snapshot: never this CPU's results
    EXPECT_EQ(e["cpu"]["throughput_source"].get<std::string>().find("measured"), std::string::npos);
  }
  auto nogpu = run_dlrig({"bench", "--cpu-vs-gpu", "resnet-50", "--db", db, "cpu.gemm"});
  EXPECT_EQ(nogpu.exit_code, 64);
}

// doctor on this machine reads the stored storage.read.seq and data.decode.jpeg results
// (XDG_DATA_HOME's database) and reports bench.storage_feed, passed or warned.
TEST(BenchDoctorCli, DoctorComparesTheStoredDiskWithTheStoredDecoders) {
  TempDir dir;
  auto home = scratch("xdg-doctor");
  fs::create_directories(home / "dlrig");
  auto db = (home / "dlrig" / "results.db").string();
  auto before = run_dlrig({"doctor", "--json"}, {"XDG_DATA_HOME=" + home.string()});
  EXPECT_EQ(before.out.find("bench.storage_feed"), std::string::npos); // no results: no check
  auto disk =
      run_dlrig({"bench", "--quick", "storage.read.seq", "--data", dir.path.string(), "--db", db},
                {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(disk.exit_code, 0) << disk.err;
  auto decode = run_dlrig({"bench", "--quick", "data.decode", "--db", db}, {"DLRIG_BENCH_SMALL=1"});
  ASSERT_EQ(decode.exit_code, 0) << decode.err;
  auto r = run_dlrig({"doctor", "--json"}, {"XDG_DATA_HOME=" + home.string()});
  ASSERT_NE(r.out, "") << r.err;
  auto j = nlohmann::json::parse(r.out);
  bool seen = false;
  for (auto &id : j["passed"])
    seen = seen || id == "bench.storage_feed";
  for (auto &f : j["findings"])
    seen = seen || f.value("id", "") == "bench.storage_feed";
  EXPECT_TRUE(seen) << r.out;
  // A saved snapshot is another machine: its doctor never reads this machine's results.
  auto other = run_dlrig({"doctor", "--json", "--from", fixture("snapshots/healthy-desktop.json")},
                         {"XDG_DATA_HOME=" + home.string()});
  EXPECT_EQ(other.out.find("bench.storage_feed"), std::string::npos);
}

} // namespace
} // namespace dlrig::test

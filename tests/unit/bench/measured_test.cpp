// Reading stored results for fit, doctor and --cpu-vs-gpu (bench/measured.hpp), on a database the
// test fills.
#include "dlrig/bench/measured.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/kb/kb.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace dlrig::bench {
namespace {

namespace fs = std::filesystem;

struct Db {
  fs::path path = fs::temp_directory_path() /
                  ("dlrig-measured-" + std::to_string(::getpid()) + "-" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
  Db() { fs::remove(path); }
  ~Db() {
    fs::remove(path);
    fs::remove(path.string() + "-wal");
    fs::remove(path.string() + "-shm");
  }
};

Record measured(const std::string &id, const std::string &config, double rate,
                const std::string &unit, Json details = Json::object()) {
  Record r;
  r.id = id;
  r.family = id.substr(0, id.rfind('.'));
  r.config = config;
  r.rate_median = r.rate_best = r.rate_worst = rate;
  r.rate_unit = unit;
  r.seconds.n = 5;
  r.seconds.median = 1;
  r.details = std::move(details);
  return r;
}

TEST(Measured, NoDatabaseMeansNoResultsAndNothingIsCreated) {
  Db db;
  auto s = load_stored(db.path.string());
  EXPECT_TRUE(s.results.empty());
  EXPECT_FALSE(s.problem);
  EXPECT_FALSE(fs::exists(db.path));
  EXPECT_FALSE(measured_cpu_gemm(s, std::nullopt));
}

// fit and doctor read the results database and never write it: a dlrig database a user put back
// in rollback-journal mode (copied, or opened by another tool) keeps every byte (no WAL switch).
TEST(Measured, ReadingNeverChangesTheFile) {
  Db db;
  {
    auto store = Store::open(db.path.string());
    ASSERT_TRUE(store) << store.error().message;
    auto run = *store.value()->begin_run("t1", "quick", {{"cpu_model", "Test CPU"}});
    store.value()->add(run, measured("cpu.gemm.sgemm", "n=512 threads=4", 900, "GFLOP/s"));
  }
  sqlite3 *h = nullptr;
  ASSERT_EQ(sqlite3_open(db.path.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "pragma journal_mode=delete;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  auto bytes = [&] {
    std::ifstream f(db.path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string before = bytes();
  auto s = load_stored(db.path.string());
  EXPECT_FALSE(s.problem) << *s.problem;
  EXPECT_EQ(s.results.size(), 1u);
  EXPECT_EQ(bytes(), before);
}

TEST(Measured, CpuGemmIsTheFastestResultOfTheLatestRun) {
  Db db;
  {
    auto store = Store::open(db.path.string());
    ASSERT_TRUE(store) << store.error().message;
    auto run1 = *store.value()->begin_run("t1", "quick", {{"cpu_model", "Test CPU"}});
    store.value()->add(
        run1, measured("cpu.gemm.sgemm", "n=512 threads=4", 900, "GFLOP/s", {{"threads", 4}}));
    auto run2 = *store.value()->begin_run("t2", "quick", {{"cpu_model", "Test CPU"}});
    store.value()->add(
        run2, measured("cpu.gemm.sgemm", "n=256 threads=4", 100, "GFLOP/s", {{"threads", 4}}));
    store.value()->add(
        run2, measured("cpu.gemm.sgemm", "n=512 threads=4", 150, "GFLOP/s", {{"threads", 4}}));
    store.value()->add(
        run2, measured("cpu.gemm.sgemm", "n=512 threads=1", 60, "GFLOP/s", {{"threads", 1}}));
  }
  auto s = load_stored(db.path.string());
  auto rate = measured_cpu_gemm(s, std::string("Test CPU"));
  ASSERT_TRUE(rate);
  EXPECT_DOUBLE_EQ(rate->flops_per_s, 150e9);
  EXPECT_NE(rate->source.find("run 2"), std::string::npos) << rate->source;
  EXPECT_NE(rate->source.find("n=512 threads=4"), std::string::npos) << rate->source;
  EXPECT_FALSE(measured_cpu_gemm(s, std::string("Another CPU"))); // measured elsewhere
  CpuInfo cpu;
  cpu.model = "Test CPU";
  auto target = measured_cpu_target(s, cpu);
  ASSERT_TRUE(target);
  EXPECT_DOUBLE_EQ(target->peak(), 150e9);
  EXPECT_FALSE(measured_gpu_gemm(s, "bf16")); // no part-2 results
}

TEST(Measured, StorageSlowerThanTheDecodersIsAWarning) {
  Db db;
  {
    auto store = Store::open(db.path.string());
    ASSERT_TRUE(store);
    auto run = *store.value()->begin_run("t", "quick", Json::object());
    store.value()->add(run, measured("data.decode.jpeg", "threads=1", 500, "images/s",
                                     {{"threads", 1}, {"bytes_per_image", 100000.0}}));
    store.value()->add(run, measured("data.decode.jpeg", "threads=8", 4000, "images/s",
                                     {{"threads", 8}, {"bytes_per_image", 100000.0}}));
    store.value()->add(
        run, measured("storage.read.seq", "1 MiB qd=8", 0.2, "GB/s", {{"path", "/data"}}));
  }
  // 8 threads x 4000 images/s x 100 kB = 0.4 GB/s > 0.2 GB/s from the disk.
  auto c = storage_feed_check(load_stored(db.path.string()));
  ASSERT_TRUE(c);
  ASSERT_EQ(c->findings.size(), 1u);
  EXPECT_EQ(c->findings[0].severity, doctor::Severity::warn);
  EXPECT_NE(c->findings[0].title.find("0.40 GB/s"), std::string::npos) << c->findings[0].title;
  EXPECT_EQ(c->check->id, "bench.storage_feed");
  {
    auto store = Store::open(db.path.string());
    auto run = *store.value()->begin_run("t2", "quick", Json::object());
    store.value()->add(run, measured("storage.read.seq", "1 MiB qd=8", 3.0, "GB/s"));
  }
  auto fast = storage_feed_check(load_stored(db.path.string()));
  ASSERT_TRUE(fast);
  EXPECT_TRUE(fast->findings.empty()); // passed: the newer, faster disk keeps up
}

// Results whose details are of another shape than dlrig writes (a database edited by hand): a
// bytes_per_image that is text threw nlohmann's type_error out of the doctor, a storage path that
// is a number too, a config's "threads=" beyond int overflowed atoi, and a stored rate of 0 became
// fit's CPU and memory rates (a step of infinite time).
TEST(Measured, ResultsOfAnotherShapeAreLeftOutNotThrown) {
  StoredResults s;
  auto add = [&](Record r) { s.results.push_back({1, "t", std::move(r)}); };
  add(measured("data.decode.jpeg", "threads=99999999999999999999", 4000, "images/s",
               {{"bytes_per_image", "100 kB"}}));
  add(measured("storage.read.seq", "1 MiB qd=8", 0.2, "GB/s", {{"path", 7}}));
  EXPECT_FALSE(storage_feed_check(s)); // no usable decode result: no check
  s.results.clear();
  add(measured("data.decode.jpeg", "threads=99999999999999999999", 4000, "images/s",
               {{"bytes_per_image", 100000.0}}));
  add(measured("storage.read.seq", "1 MiB qd=8", 0.2, "GB/s", {{"path", 7}}));
  auto c = storage_feed_check(s);
  ASSERT_TRUE(c);
  ASSERT_EQ(c->findings.size(), 1u);
  bool unknown_path = false;
  for (const auto &e : c->findings[0].evidence)
    unknown_path = unknown_path || (e.key == "storage_path" && e.value == "?");
  EXPECT_TRUE(unknown_path);
  s.results.clear();
  add(measured("cpu.gemm.sgemm", "n=512 threads=2", 0, "GFLOP/s"));
  add(measured("cpu.stream.triad", "threads=2", 0, "GB/s"));
  auto host = measured_host_rates(s);
  EXPECT_FALSE(host.cpu_gemm_flops);
  EXPECT_FALSE(host.cpu_memory_bw);
  EXPECT_FALSE(measured_cpu_gemm(s, std::nullopt));
}

// A database that exists but whose rows cannot be read: the doctor's check is not run, saying
// why, and fit's assumption says no result is used.
TEST(Measured, AnUnreadableDatabaseIsSaidNotIgnored) {
  StoredResults s;
  s.problem = "results database x.db: result 1 (run 1, cpu.gemm.sgemm): status is 'great'";
  auto c = storage_feed_check(s);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->findings.empty());
  EXPECT_EQ(c->not_run, s.problem);
  EXPECT_EQ(unread_results(s), "no `dlrig bench` result is used: " + *s.problem);
}

TEST(Measured, GpuGemmRatesPerGpuAndPrecisionFeedFitsTimeModel) {
  Db db;
  {
    auto store = Store::open(db.path.string());
    ASSERT_TRUE(store) << store.error().message;
    Json h100{{"name", "NVIDIA H100 80GB HBM3"}}, a100{{"name", "NVIDIA A100-SXM4-80GB"}};
    auto run1 = *store.value()->begin_run("t1", "quick", Json::object());
    store.value()->add(run1,
                       measured("gpu.gemm.bf16", "gpu0 8192x8192x8192", 900, "TFLOP/s", h100));
    auto run2 = *store.value()->begin_run("t2", "quick", Json::object());
    store.value()->add(run2,
                       measured("gpu.gemm.bf16", "gpu0 4096x4096x4096", 700, "TFLOP/s", h100));
    store.value()->add(run2,
                       measured("gpu.gemm.bf16", "gpu0 8192x8192x8192", 760, "TFLOP/s", h100));
    store.value()->add(run2,
                       measured("gpu.gemm.bf16", "gpu1 8192x8192x8192", 250, "TFLOP/s", a100));
    store.value()->add(run2, measured("gpu.gemm.int8", "gpu0 8192x8192x8192", 1500, "TOP/s",
                                      h100)); // not a FLOP rate: fit does not use it
  }
  auto s = load_stored(db.path.string());
  auto rates = measured_gpu_gemm_rates(s);
  ASSERT_EQ(rates.size(), 2u); // bf16 on each GPU
  const fit::MeasuredGemm *h = nullptr;
  for (auto &r : rates)
    if (r.gpu == "NVIDIA H100 80GB HBM3")
      h = &r;
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->precision, "bf16");
  EXPECT_DOUBLE_EQ(h->flops, 760e12); // the latest run's fastest, not the older 900
  EXPECT_EQ(h->source, "gpu.gemm.bf16 gpu0 8192x8192x8192, dlrig bench run 2");
  EXPECT_EQ(measured_host_rates(s).gpu_gemm.size(), 2u);

  // fit: the catalog GPU the driver's name resolves to uses the measured rate, and says so.
  const auto &kb = kb::builtin();
  const kb::GpuSpec *spec = kb.find_gpu("NVIDIA H100 80GB HBM3");
  ASSERT_NE(spec, nullptr);
  fit::GpuTarget gpu = fit::gpu_target(*spec);
  fit::DeviceRates r = fit::gpu_rates(gpu, kb);
  const auto bf16 = static_cast<std::size_t>(fit::Precision::bf16);
  ASSERT_TRUE(r.gemm[bf16]);
  EXPECT_NE(*r.gemm[bf16], 760e12);
  fit::HostRates host;
  host.gpu_gemm = rates;
  fit::apply_measured_gemm(r, gpu, host, kb);
  EXPECT_DOUBLE_EQ(*r.gemm[bf16], 760e12);
  EXPECT_DOUBLE_EQ(*r.gemm[static_cast<std::size_t>(fit::Precision::bf16_amp)], 760e12);
  bool said = false;
  for (auto &line : r.basis)
    said |= line.rfind("GEMM bf16: measured 760 TFLOP/s on this machine's NVIDIA H100 80GB HBM3",
                       0) == 0;
  EXPECT_TRUE(said) << r.basis.front();
  // Another GPU keeps the catalog's figure.
  fit::GpuTarget other = fit::gpu_target(*kb.find_gpu("RTX 4090"));
  fit::DeviceRates o = fit::gpu_rates(other, kb);
  auto before = o.gemm[bf16];
  fit::apply_measured_gemm(o, other, host, kb);
  EXPECT_EQ(o.gemm[bf16], before);
}

} // namespace
} // namespace dlrig::bench

// The harness's pure parts: statistics, the stopping rule, the work formulas and peaks, the
// registry's lookup; and verification catching a damaged result (the DLRIG_BENCH_CORRUPT hook).
#include "dlrig/bench/bench.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

namespace dlrig::bench {
namespace {

TEST(BenchStats, MedianQuartilesAndSpread) {
  auto s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
  EXPECT_DOUBLE_EQ(s.iqr(), 2);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.stdev, 1.5811388300841898, 1e-12); // sample stdev (n - 1)
  EXPECT_NEAR(s.rsd(), 1.5811388300841898 / 3, 1e-12);
}

TEST(BenchStats, EvenCountInterpolates) {
  auto s = summarize({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.q1, 1.75); // R type 7
  EXPECT_DOUBLE_EQ(s.q3, 3.25);
}

TEST(BenchStats, EmptyAndSingle) {
  EXPECT_EQ(summarize({}).n, 0u);
  auto one = summarize({2});
  EXPECT_EQ(one.n, 1u);
  EXPECT_DOUBLE_EQ(one.median, 2);
  EXPECT_DOUBLE_EQ(one.stdev, 0);
}

TEST(BenchStop, NeedsMinimumSamplesThenLowSpread) {
  StopRule r;
  r.min_samples = 5;
  r.target_rsd = 0.01;
  r.max_seconds = 100;
  std::vector<double> steady = {1, 1, 1, 1};
  EXPECT_FALSE(enough(steady, r)); // four identical samples: still under the minimum
  steady.push_back(1);
  EXPECT_TRUE(enough(steady, r));
  std::vector<double> noisy = {1, 2, 1, 2, 1, 2};
  EXPECT_FALSE(enough(noisy, r));
}

TEST(BenchStop, TimeAndCountCaps) {
  StopRule r;
  r.max_seconds = 2;
  r.max_samples = 10;
  EXPECT_TRUE(enough({1.5, 0.6}, r)); // 2.1 s of samples, noisy or not
  std::vector<double> many(10, 0.001);
  many[0] = 0.1;
  EXPECT_TRUE(enough(many, r));
  EXPECT_FALSE(enough({}, r));
}

TEST(BenchStop, SustainedRunsForItsWholeCap) {
  auto r = stop_rule(Tier::sustained);
  std::vector<double> steady(100, 0.1); // 10 s, perfectly steady
  EXPECT_FALSE(enough(steady, r));
  steady.resize(700, 0.1); // 70 s
  EXPECT_TRUE(enough(steady, r));
}

// --long's 60 s are wall-clock seconds too: samples whose timed part is tiny (a GPU sample's flush,
// hold and readings are outside it) still stop when the wall clock says so.
TEST(BenchStop, WallClockCapEndsAConfigurationWhoseTimedPartIsSmall) {
  EXPECT_EQ(stop_rule(Tier::sustained).max_wall_seconds, 60.0);
  StopRule r = stop_rule(Tier::sustained);
  r.max_wall_seconds = 0.02;
  Sampler s(r);
  int passes = 0;
  while (s.more() && passes < 1000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s.add(1e-6); // timed: 1 us of the 2 ms pass
    ++passes;
  }
  EXPECT_LT(passes, 1000) << "the wall-clock cap never stopped the loop";
  EXPECT_GE(passes, 5);
  EXPECT_FALSE(stop_rule(Tier::standard).max_wall_seconds.has_value());
}

// What else the machine did while a configuration ran: /proc/stat's aggregate line less this
// process's own CPU time, and steal, in CPUs.
TEST(BenchHostLoad, OtherProcessesAndStealInCpus) {
  auto t = parse_proc_stat("cpu  100 10 50 800 20 5 5 10 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->busy, 170u); // user + nice + system + irq + softirq
  EXPECT_EQ(t->steal, 10u);
  EXPECT_EQ(t->total, 1000u); // + idle + iowait + steal
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3 4 5 6 7 8\n"));
  EXPECT_FALSE(parse_proc_stat("cpu  1 2 3\n"));
  EXPECT_FALSE(parse_proc_stat(""));
  // comm may hold spaces and parentheses: fields count from the last ')'.
  auto self = parse_self_stat("4242 (dlrig (x) y) R 1 2 3 4 5 6 7 8 9 10 300 45 0 0 20 0 3");
  ASSERT_TRUE(self);
  EXPECT_EQ(*self, 345u);
  EXPECT_FALSE(parse_self_stat("4242 dlrig R 1"));
  EXPECT_FALSE(parse_self_stat("4242 (dlrig) R 1 2 3 4 5 6 7 8 9 10 x 45"));

  // 2 CPUs for 1 s at 100 ticks/s: 200 ticks; 150 busy of which 60 this process's, 20 stolen.
  HostLoadMark a{{1000, 100, 5000}, 500, 2}, b{{1150, 120, 5200}, 560, 2};
  auto l = host_load_between(a, b);
  ASSERT_TRUE(l);
  EXPECT_DOUBLE_EQ(l->other_cpus, 0.9);
  EXPECT_DOUBLE_EQ(l->steal_cpus, 0.2);
  EXPECT_EQ(l->cpus, 2);
  EXPECT_FALSE(host_load_between(b, a)); // counters that went back: no figure
  l->seconds = 1;
  EXPECT_EQ(host_load_note(*l).value_or(""),
            "other processes used 0.9 of 2 CPUs while this ran: its rate may be low");
  EXPECT_FALSE(host_load_json(*l, false).contains("note")); // a GPU family: figures only
  l->other_cpus = 0.2;
  EXPECT_FALSE(host_load_note(*l));
  l->steal_cpus = 0.5;
  EXPECT_EQ(host_load_note(*l).value_or(""),
            "the hypervisor took 0.5 CPUs (steal) while this ran: its rate may be low");
  l->seconds = 0.05; // under a few ticks: no verdict
  EXPECT_FALSE(host_load_note(*l));
}

TEST(BenchWork, GemmIsTwoMnk) {
  EXPECT_DOUBLE_EQ(gemm_flop(2, 3, 4), 48);
  EXPECT_DOUBLE_EQ(gemm_flop(1024, 1024, 1024), 2147483648.0);
}

TEST(BenchWork, StreamBytesByStreamsConvention) {
  EXPECT_DOUBLE_EQ(stream_bytes("copy", 1000), 16000);
  EXPECT_DOUBLE_EQ(stream_bytes("scale", 1000), 16000);
  EXPECT_DOUBLE_EQ(stream_bytes("add", 1000), 24000);
  EXPECT_DOUBLE_EQ(stream_bytes("triad", 1000), 24000);
}

TEST(BenchPeak, FromIsaCoresAndFrequency) {
  auto avx2 = cpu_flop_per_cycle({"avx2", "fma"}, false);
  ASSERT_TRUE(avx2.value);
  EXPECT_DOUBLE_EQ(*avx2.value, 32);
  EXPECT_DOUBLE_EQ(*cpu_flop_per_cycle({"avx2", "fma"}, true).value, 16);
  EXPECT_DOUBLE_EQ(*cpu_flop_per_cycle({"avx2", "fma", "avx512f"}, false).value, 64);
  EXPECT_DOUBLE_EQ(*cpu_flop_per_cycle({"avx512f"}, true).value, 32);
  EXPECT_FALSE(cpu_flop_per_cycle({"sse4_2"}, false).value);
  EXPECT_FALSE(cpu_flop_per_cycle({"avx2"}, false).value); // AVX2 without FMA: not guessed
  // 8 cores x 3 GHz x 32 FLOP/cycle = 768 GFLOP/s
  auto p = cpu_peak_gflops(8, 3e9, 32);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(*p, 768);
  EXPECT_FALSE(cpu_peak_gflops(8, std::nullopt, 32)); // unknown frequency: unknown peak
  EXPECT_FALSE(cpu_peak_gflops(std::nullopt, 3e9, 32));
  EXPECT_FALSE(cpu_peak_gflops(8, 3e9, std::nullopt));
}

TEST(BenchRegistry, SelectsByIdFamilyAndPrefix) {
  auto one = select({"cpu.gemm.sgemm"});
  ASSERT_TRUE(one);
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0]->id, "cpu.gemm.sgemm");
  auto fam = select({"cpu.gemm"});
  ASSERT_TRUE(fam);
  EXPECT_GE(fam->size(), 2u);
  auto prefix = select({"cpu"});
  ASSERT_TRUE(prefix);
  EXPECT_GE(prefix->size(), fam->size()); // every cpu.* family
  auto twice = select({"cpu.gemm.sgemm", "cpu.gemm"});
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->size(), fam->size()); // no benchmark runs twice
  auto all = select({});
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), registry().size());
}

TEST(BenchRegistry, UnknownNameSuggestsNearest) {
  auto r = select({"cpu.gem"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::usage);
  EXPECT_NE(r.error().message.find("cpu.gemm"), std::string::npos) << r.error().message;
}

TEST(BenchRegistry, IdsAreUniqueAndUnderTheirFamily) {
  std::set<std::string> seen;
  for (auto &b : registry()) {
    EXPECT_TRUE(seen.insert(b.id).second) << b.id;
    EXPECT_EQ(b.id.rfind(b.family + ".", 0), 0u) << b.id;
    EXPECT_TRUE(b.configs) << b.id;
  }
}

Context small(bool corrupt) {
  Context c;
  c.tier = Tier::quick;
  c.small = true;
  c.hardware_threads = 1;
  c.corrupt = corrupt;
  return c;
}

TEST(BenchRunner, GemmIsVerifiedAndACorruptedResultIsWrong) {
  auto which = select({"cpu.gemm.sgemm", "cpu.gemm.dgemm"});
  ASSERT_TRUE(which);
  RunOptions good{small(false), nullptr, nullptr};
  for (auto &r : run_all(*which, good)) {
    EXPECT_EQ(r.status, Status::measured) << r.id << ": " << r.reason.value_or("");
    EXPECT_GE(r.seconds.n, 1u);
    EXPECT_DOUBLE_EQ(r.work, gemm_flop(128, 128, 128));
  }
  RunOptions bad{small(true), nullptr, nullptr};
  auto wrong = run_all(*which, bad);
  ASSERT_FALSE(wrong.empty());
  for (auto &r : wrong)
    EXPECT_EQ(r.status, Status::wrong) << r.id;
}

TEST(BenchRunner, StreamIsVerifiedAndACorruptedElementIsWrong) {
  auto which = select({"cpu.stream"});
  ASSERT_TRUE(which);
  ASSERT_EQ(which->size(), 4u);
  for (auto &r : run_all(*which, RunOptions{small(false), nullptr, nullptr})) {
    EXPECT_EQ(r.status, Status::measured) << r.id << ": " << r.reason.value_or("");
    EXPECT_EQ(r.seconds.n, 10u); // STREAM: 10 timed passes after the first
  }
  for (auto &r : run_all(*which, RunOptions{small(true), nullptr, nullptr}))
    EXPECT_EQ(r.status, Status::wrong) << r.id;
}

// Ctrl-C while a configuration samples (a --long one would run on for its minute): sampling ends
// at the next sample, the result is kept, says so in details.interrupted, and nothing else starts.
TEST(BenchRunner, CtrlCCutsTheConfigurationInProgressShortAndKeepsIt) {
  int taken = 0;
  bool ctrl_c = false;
  Benchmark steady{"x.steady",
                   "x",
                   "samples steadily",
                   "nothing",
                   nullptr,
                   [](const Context &) {
                     return std::vector<Config>{{"first", {}}, {"second", {}}};
                   },
                   [&](const Config &, const Context &, Sampler &s) {
                     while (s.more()) {
                       s.add(1e-3);
                       if (++taken == 7)
                         ctrl_c = true; // SIGINT arrives during the 7th sample
                     }
                     Outcome o;
                     o.work = 1e6;
                     o.work_unit = "B";
                     o.rate_unit = "GB/s";
                     return o;
                   }};
  Context c = small(false);
  c.tier = Tier::sustained; // 60 s of samples (60000 here) unless interrupted
  std::vector<std::string> said;
  RunOptions o{c, [&](const std::string &line) { said.push_back(line); }, nullptr,
               [&] { return ctrl_c; }};
  auto rs = run_all({&steady}, o);
  ASSERT_EQ(rs.size(), 1u); // "second" never started
  EXPECT_EQ(rs[0].status, Status::measured);
  EXPECT_EQ(rs[0].seconds.n, 7u);
  EXPECT_EQ(taken, 7);
  ASSERT_TRUE(rs[0].details.contains("interrupted")) << rs[0].details.dump();
  EXPECT_NE(rs[0].details["interrupted"].get<std::string>().find("after 7 samples"),
            std::string::npos);
  EXPECT_NE(said.back().find("(cut short by Ctrl-C)"), std::string::npos) << said.back();
  // A configuration that met its stopping rule before the Ctrl-C is not marked.
  taken = 0;
  ctrl_c = false;
  Sampler s(stop_rule(Tier::quick), [&] { return ctrl_c; });
  while (s.more())
    s.add(0.1);
  ctrl_c = true;
  EXPECT_FALSE(s.more());
  EXPECT_FALSE(s.cut_short());
}

// A fault (an Xid on a GPU the configuration uses) ends the sampling at the next sample without
// calling it a Ctrl-C: the configuration's bracket fails it (gpu::watching_faults).
TEST(BenchRunner, AFaultEndsTheSamplingWithoutCallingItCtrlC) {
  Sampler s(stop_rule(Tier::sustained)); // 60 s of samples
  int asked = 0;
  s.end_on_fault([&] { return ++asked > 3; });
  int taken = 0;
  while (s.more()) {
    s.add(1e-6);
    ++taken;
  }
  EXPECT_EQ(taken, 3);
  EXPECT_FALSE(s.cut_short());
}

TEST(BenchRunner, OneFailingBenchmarkNeverStopsTheOthers) {
  Benchmark boom{"x.boom",
                 "x",
                 "throws",
                 "nothing",
                 nullptr,
                 [](const Context &) {
                   return std::vector<Config>{{"a", {}}};
                 },
                 [](const Config &, const Context &, Sampler &) -> Outcome {
                   throw std::runtime_error("kaput");
                 }};
  Benchmark skip{"x.skip",
                 "x",
                 "skips",
                 "a GPU",
                 [](const Context &) -> std::optional<std::string> { return "no CUDA device"; },
                 [](const Context &) { return std::vector<Config>{}; },
                 nullptr};
  Benchmark ok{"x.ok",
               "x",
               "counts",
               "nothing",
               nullptr,
               [](const Context &) {
                 return std::vector<Config>{{"a", {}}};
               },
               [](const Config &, const Context &, Sampler &s) {
                 while (s.more())
                   s.add(0.5);
                 Outcome o;
                 o.work = 1e9;
                 o.work_unit = "B";
                 o.rate_unit = "GB/s";
                 o.peak = 4;
                 return o;
               }};
  auto rs = run_all({&boom, &skip, &ok}, RunOptions{small(false), nullptr, nullptr});
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].status, Status::failed);
  EXPECT_EQ(rs[0].reason.value_or(""), "kaput");
  EXPECT_EQ(rs[1].status, Status::skipped);
  EXPECT_EQ(rs[1].reason.value_or(""), "no CUDA device");
  EXPECT_EQ(rs[2].status, Status::measured);
  EXPECT_DOUBLE_EQ(*rs[2].rate_median, 2); // 1e9 B in 0.5 s
  EXPECT_DOUBLE_EQ(*rs[2].share_of_peak, 0.5);
}

} // namespace
} // namespace dlrig::bench

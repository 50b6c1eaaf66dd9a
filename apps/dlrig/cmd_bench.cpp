// `dlrig bench [ID|FAMILY ...]`: runs the registered benchmarks (src/dlrig/bench) on this machine
// and prints the results; progress goes to stderr, one line per configuration (no animation).
// Exit codes: 0 measured (or skipped with a reason), 2 a result failed its verification, 64
// usage (an unknown id, with the nearest names), 65 bad input.
// DLRIG_BENCH_SMALL=1 shrinks every sweep to its smallest size (tests); DLRIG_BENCH_CORRUPT=1 is
// a test hook that damages each result before verification (so it must exit 2).
#include "commands.hpp"
#include "dlrig/bench/bench.hpp"
#include "dlrig/bench/report.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <thread>

namespace dlrig::cli {
namespace {

struct BenchArgs {
  std::vector<std::string> names;
  bool list = false, quick = false, sustained = false;
  OutputOptions out;
};

bool env_flag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

} // namespace

Runner setup_bench(CLI::App &sub) {
  auto a = std::make_shared<BenchArgs>();
  sub.add_option("names", a->names,
                 "Benchmark ids or families (cpu.gemm, cpu.gemm.sgemm); all when none is named")
      ->type_name("ID|FAMILY");
  sub.add_flag("--list", a->list, "List every benchmark, what it needs and whether it runs here");
  auto *q = sub.add_flag("--quick", a->quick, "Short sweep: the host suite in under a minute");
  sub.add_flag("--long", a->sustained, "Sustained runs (60 s per configuration)")->excludes(q);
  add_output_options(sub, a->out);
  return [a](const Envelope &run) -> ExitCode {
    bench::Context ctx;
    ctx.tier = a->quick       ? bench::Tier::quick
               : a->sustained ? bench::Tier::sustained
                              : bench::Tier::standard;
    ctx.hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ctx.small = env_flag("DLRIG_BENCH_SMALL");
    ctx.corrupt = env_flag("DLRIG_BENCH_CORRUPT");
    if (a->list) {
      print(bench::list_report(ctx), run, a->out);
      return ExitCode::ok;
    }
    auto which = value_or_throw(bench::select(a->names));
    SnapshotSource src;
    Snapshot snap = obtain_snapshot(src);
    ctx.snapshot = &snap;
    bench::RunOptions opts;
    opts.ctx = ctx;
    opts.progress = [](const std::string &line) { std::cerr << "bench: " << line << "\n"; };
    auto records = bench::run_all(which, opts);
    Json env = bench::environment(snap, ctx.hardware_threads, bench::read_governor());
    print(bench::results_report(records, env), with_source(run, src), a->out);
    return bench::exit_status(records) == 2 ? ExitCode::failures : ExitCode::ok;
  };
}

} // namespace dlrig::cli

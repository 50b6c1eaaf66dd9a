// `dlrig bench [ID|FAMILY ...]`: runs the registered benchmarks (src/dlrig/bench) on this machine,
// prints the results and keeps them in the results database (bench/store.hpp); progress goes to
// stderr, one line per configuration (no animation). `dlrig bench history [ID]`, `bench show RUN`
// and `bench compare A B` read the database.
// Exit codes: 0 measured (or skipped with a reason), 2 a result failed its verification, 64
// usage (an unknown id, with the nearest names; an unknown run), 65 a database that is not a
// database, corrupt or of a newer schema, 74 a database locked past 5 s or read-only.
// DLRIG_BENCH_SMALL=1 shrinks every sweep to its smallest size (tests); DLRIG_BENCH_CORRUPT=1 is
// a test hook that damages each result before verification (so it must exit 2).
#include "commands.hpp"
#include "dlrig/bench/bench.hpp"
#include "dlrig/bench/report.hpp"
#include "dlrig/bench/store.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace dlrig::cli {
namespace {

struct BenchArgs {
  std::vector<std::string> names;
  bool list = false, quick = false, sustained = false;
  std::string db;
  std::string data;
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
  sub.add_option("--db", a->db,
                 "Results database (default $XDG_DATA_HOME/dlrig/results.db, else "
                 "~/.local/share/dlrig/results.db)")
      ->type_name("PATH")
      ->check(non_empty());
  sub.add_option("--data", a->data,
                 "Your own data for data.decode: a JPEG file or a folder of them (read only)")
      ->type_name("PATH")
      ->check(non_empty())
      ->check(CLI::ExistingPath);
  add_output_options(sub, a->out);
  return [a](const Envelope &run) -> ExitCode {
    bench::Context ctx;
    ctx.tier = a->quick       ? bench::Tier::quick
               : a->sustained ? bench::Tier::sustained
                              : bench::Tier::standard;
    ctx.hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ctx.small = env_flag("DLRIG_BENCH_SMALL");
    ctx.corrupt = env_flag("DLRIG_BENCH_CORRUPT");
    if (!a->data.empty())
      ctx.data = a->data;
    std::optional<std::string> db_path = a->db.empty() ? bench::default_db_path() : a->db;
    auto open_db = [&] {
      if (!db_path)
        throw Failure(ExitCode::usage, "no results database: neither XDG_DATA_HOME nor HOME is "
                                       "set; give one with --db PATH");
      return value_or_throw(bench::Store::open(*db_path));
    };
    auto run_id = [&](const std::string &text) {
      auto v = parse_ranged<std::int64_t>(text, 1, INT64_MAX);
      if (!v)
        throw Failure(ExitCode::usage, "\"" + text +
                                           "\" is not a run number (see `dlrig bench "
                                           "history`)");
      return *v;
    };
    auto stored = [&](bench::Store &db, std::int64_t id) {
      auto rs = value_or_throw(db.results(id));
      if (rs.empty())
        throw Failure(ExitCode::usage,
                      fmt::format("{}: no run {} (see `dlrig bench history`)", db.path(), id));
      return rs;
    };
    const std::string verb = a->names.empty() ? "" : a->names.front();
    if (verb == "history") {
      if (a->names.size() > 2)
        throw Failure(ExitCode::usage, "bench history takes at most one ID or FAMILY");
      auto db = open_db();
      std::string id = a->names.size() == 2 ? a->names[1] : "";
      if (!id.empty())
        value_or_throw(bench::select({id}));
      print(bench::history_report(value_or_throw(db->results(std::nullopt, id))), run, a->out);
      return ExitCode::ok;
    }
    if (verb == "show") {
      if (a->names.size() != 2)
        throw Failure(ExitCode::usage, "bench show takes one RUN number");
      auto db = open_db();
      auto rs = stored(*db, run_id(a->names[1]));
      std::vector<bench::Record> records;
      for (auto &s : rs)
        records.push_back(s.record);
      Json env = nullptr;
      for (auto &r : value_or_throw(db->runs()))
        if (r.id == rs.front().run)
          env = r.environment;
      print(bench::results_report(records, env), run, a->out);
      return ExitCode::ok;
    }
    if (verb == "compare") {
      if (a->names.size() != 3)
        throw Failure(ExitCode::usage, "bench compare takes two RUN numbers");
      auto db = open_db();
      auto ia = run_id(a->names[1]), ib = run_id(a->names[2]);
      print(bench::compare_report(ia, stored(*db, ia), ib, stored(*db, ib)), run, a->out);
      return ExitCode::ok;
    }
    if (a->list) {
      print(bench::list_report(ctx), run, a->out);
      return ExitCode::ok;
    }
    auto which = value_or_throw(bench::select(a->names));
    SnapshotSource src;
    Snapshot snap = obtain_snapshot(src);
    ctx.snapshot = &snap;
    Json env = bench::environment(snap, ctx.hardware_threads, bench::read_governor());
    auto db = open_db();
    std::int64_t stored_run =
        value_or_throw(db->begin_run(run.time, bench::tier_name(ctx.tier), env));
    std::optional<Error> store_error;
    bench::RunOptions opts;
    opts.ctx = ctx;
    opts.progress = [](const std::string &line) { std::cerr << "bench: " << line << "\n"; };
    opts.on_record = [&](const bench::Record &r) {
      if (!store_error)
        store_error = db->add(stored_run, r);
    };
    auto records = bench::run_all(which, opts);
    print(bench::results_report(records, env), with_source(run, src), a->out);
    if (store_error)
      throw Failure(*store_error);
    std::cerr << fmt::format("bench: run {} stored in {}\n", stored_run, db->path());
    return bench::exit_status(records) == 2 ? ExitCode::failures : ExitCode::ok;
  };
}

} // namespace dlrig::cli

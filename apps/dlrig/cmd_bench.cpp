// `dlrig bench [ID|FAMILY ...]`: runs the registered benchmarks (src/dlrig/bench) on this machine,
// prints the results and keeps them in the results database (bench/store.hpp); progress goes to
// stderr, one line per configuration (no animation). `dlrig bench history [ID]`, `bench show RUN`
// and `bench compare A B` read the database.
// Exit codes: 0 measured (or skipped with a reason), 1 a result below its expectation, 2 a result
// failed its verification or a GPU failed mid-run (device lost, uncorrectable ECC error: the
// results so far are stored and printed, that GPU's remaining benchmarks skipped), 64 usage (an
// unknown id, with the nearest names; an unknown run), 65 a database that is not a regular file,
// not a database, corrupt, another program's or of a newer schema (history, show, compare: also
// no database file; they and --cpu-vs-gpu: also a row dlrig did not write; a --data that is
// neither a regular file nor a folder, refused before anything runs), 74 a database locked
// past 5 s or read-only (history, show and compare open it read-only and never create it), or
// standard output that cannot be written, 130 interrupted (SIGINT/SIGTERM: the results so far are
// stored and printed, the temporary file of storage.read is removed). DLRIG_BENCH_SMALL=1 shrinks
// every sweep to its smallest size (tests); DLRIG_BENCH_CORRUPT=1 is a test hook that damages each
// result before verification (so it must exit 2); DLRIG_BENCH_EXPECT=ID=MIN[,ID=MIN] is a test hook
// that sets an expectation (so it can exit 1). Before any cpu.gemm benchmark runs, when OpenBLAS
// fell back to kernels for an older instruction set than this CPU's, dlrig runs itself again with
// OPENBLAS_CORETYPE set (bench/openblas_core.hpp; DLRIG_OPENBLAS_AUTO_CORE=0 turns it off, a user's
// OPENBLAS_CORETYPE is kept); DLRIG_BENCH_OPENBLAS_DETECTED=CORE is a test hook that decides as if
// OpenBLAS had detected CORE. `--rank R --nranks N --rendezvous HOST:PORT` (or torchrun's RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) runs nccl.* as one rank of a multi-process job
// (bench/ranks.hpp, docs/bench.md "Multi-node"): rank 0 prints and stores the results, the other
// ranks print one line per result on stderr and store nothing; 65 a peer that sent junk or whose
// nranks or benchmarks differ, 69 a rendezvous that timed out.
#include "commands.hpp"
#include "dlrig/bench/bench.hpp"
#include "dlrig/bench/cpu_vs_gpu.hpp"
#include "dlrig/bench/gpu.hpp"
#include "dlrig/bench/measured.hpp"
#include "dlrig/bench/openblas_core.hpp"
#include "dlrig/bench/ranks.hpp"
#include "dlrig/bench/report.hpp"
#include "dlrig/bench/storage.hpp"
#include "dlrig/bench/store.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/load.hpp"
#include "dlrig/fit/targets.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"
#include "dlrig/platform/fs.hpp"
#include "dlrig/platform/process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

namespace dlrig::cli {
namespace {

struct BenchArgs {
  std::vector<std::string> names;
  bool list = false, quick = false, sustained = false;
  std::string db;
  std::string data;
  std::string cpu_vs_gpu, gpu, precision = "bf16-amp";
  std::int64_t batch = 0;
  std::optional<int> rank, nranks; // --rank, --nranks
  std::string rendezvous;
  SnapshotSource source; // --nvml-timeout
  OutputOptions out;
};

bool env_flag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

// DLRIG_BENCH_EXPECT=ID=MIN[,ID=MIN] (a test hook).
std::map<std::string, double> env_expectations() {
  std::map<std::string, double> out;
  const char *v = std::getenv("DLRIG_BENCH_EXPECT");
  std::string all = v ? v : "";
  for (std::size_t at = 0; at < all.size();) {
    auto end = all.find(',', at);
    auto item = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
    auto eq = item.find('=');
    auto min = eq == std::string::npos ? std::nullopt
                                       : parse_ranged<double>(item.substr(eq + 1), 0, 1e300);
    if (!min)
      throw Failure(ExitCode::usage, "DLRIG_BENCH_EXPECT: \"" + item + "\" is not ID=MIN");
    out[item.substr(0, eq)] = *min;
    at = end == std::string::npos ? all.size() : end + 1;
  }
  return out;
}

// Before a cpu.gemm benchmark runs: when OpenBLAS runs kernels for an older instruction set than
// this CPU's, runs dlrig again with OPENBLAS_CORETYPE set (OpenBLAS reads it only while it loads).
// Returns only when it did not; a failed exec is a warning, and the run goes on as it is.
void choose_openblas_core(const Snapshot &snap) {
  const auto &cpu = snap.host.cpu;
  auto sw = bench::openblas_core_switch(bench::openblas_config(), cpu.isa, cpu.vendor.value_or(""),
                                        bench::OpenblasCoreEnv::read());
  if (!sw)
    return;
  to_stderr("bench: " + sw->message);
  auto why =
      reexec_self({{"OPENBLAS_CORETYPE", sw->core}, {bench::kOpenblasCoreFromVar, sw->detected}});
  to_stderr(fmt::format("bench: warning: could not run dlrig again ({}); going on with "
                        "OpenBLAS's {} kernels",
                        why, sw->detected));
}

bool runs_cpu_gemm(const std::vector<const bench::Benchmark *> &which) {
  return std::any_of(which.begin(), which.end(),
                     [](const bench::Benchmark *b) { return b->family == "cpu.gemm"; });
}

// The GPU's peak field for a precision, and the token part 2's gpu.gemm ids use for it.
struct PrecisionField {
  std::optional<double> fit::GpuTarget::*field;
  const char *token;
};
PrecisionField precision_field(fit::Precision p) {
  using P = fit::Precision;
  return p == P::fp32       ? PrecisionField{&fit::GpuTarget::fp32_flops, "fp32"}
         : p == P::tf32     ? PrecisionField{&fit::GpuTarget::tf32_flops, "tf32"}
         : p == P::fp16_amp ? PrecisionField{&fit::GpuTarget::fp16_flops, "fp16"}
         : p == P::fp8      ? PrecisionField{&fit::GpuTarget::fp8_flops, "fp8"}
                            : PrecisionField{&fit::GpuTarget::bf16_flops, "bf16"};
}

// `--cpu-vs-gpu MODEL`: one training step of MODEL (fit's step FLOPs and time model) on this
// CPU at its measured SGEMM rate and on a GPU at its measured GEMM rate (part 2's gpu.gemm) or
// its catalog peak. With no stored SGEMM result for this CPU, cpu.gemm.sgemm runs first.
Report cpu_vs_gpu_report(const BenchArgs &a, const Snapshot &snap, bench::StoredResults stored,
                         const std::function<void()> &measure_cpu, const std::string &db_path) {
  const auto &kb = kb::builtin();
  fit::ModelInput model = value_or_throw(fit::load_model(a.cpu_vs_gpu, std::nullopt, kb));
  fit::Run run;
  run.precision = value_or_throw(fit::parse_precision(a.precision), ErrorKind::usage);
  if (a.batch > 0)
    run.batch = a.batch;
  std::vector<std::string> assumptions;
  if (model.arch.stored_quant) { // a step's FLOPs are the architecture's, however it is stored
    assumptions.push_back(fmt::format("{} is stored quantised ({}): timed as the 16-bit model it "
                                      "was quantised from",
                                      model.arch.display_name,
                                      model::describe(*model.arch.stored_quant)));
    model.arch.stored_quant.reset();
  }
  run = value_or_throw(fit::resolve_run(model, run, &assumptions), ErrorKind::usage);
  fit::Targets targets = a.gpu.empty() ? fit::machine_gpus(snap, kb) : fit::catalog_gpu(kb, a.gpu);
  if (targets.error)
    throw Failure(ExitCode::usage, targets.error->message());
  if (targets.gpus.empty())
    throw Failure(ExitCode::usage, "--cpu-vs-gpu: this machine has no GPU to compare with; name "
                                   "one with --gpu NAME (`dlrig kb gpus` lists them)");
  fit::GpuTarget gpu = targets.gpus.front();

  auto cpu_target = bench::measured_cpu_target(stored, snap.host.cpu);
  if (!cpu_target) {
    measure_cpu();
    stored = bench::load_stored(db_path);
    if (stored.problem) // the caller refused such a database before it measured
      throw Failure(ExitCode::bad_input, *stored.problem);
    cpu_target = bench::measured_cpu_target(stored, snap.host.cpu);
  }
  if (!cpu_target)
    throw Failure(ExitCode::io, "--cpu-vs-gpu: cpu.gemm.sgemm did not produce a measured rate");
  // The GPU: its measured GEMM rate when part 2 stored one for this machine's GPU.
  std::string gpu_source;
  if (a.gpu.empty()) {
    const auto pf = precision_field(run.precision);
    if (auto m = bench::measured_gpu_gemm(stored, pf.token)) {
      gpu_source = m->source;
      gpu.*pf.field = m->flops_per_s;
    }
  }
  const auto g = fit::estimate_time(model, run, gpu);
  const auto c = fit::estimate_time_cpu(model, run, *cpu_target);
  if (gpu_source.empty())
    gpu_source = g.throughput_source;
  std::optional<bench::StepRate> cpu_rate, gpu_rate;
  // Each side's effective rate from fit's per-operation time model: FLOPs / its time per step.
  if (c.seconds_per_step && *c.seconds_per_step > 0)
    cpu_rate = bench::StepRate{c.flops_per_step / *c.seconds_per_step, cpu_target->assumption};
  if (g.seconds_per_step && *g.seconds_per_step > 0)
    gpu_rate = bench::StepRate{g.flops_per_step / *g.seconds_per_step, gpu_source};
  auto cmp = bench::compare_step(g.flops_per_step, cpu_rate, gpu_rate, gpu.name);
  const std::string line = bench::cpu_vs_gpu_line(cmp);
  const std::string model_name = model.arch.name.empty() ? a.cpu_vs_gpu : model.arch.name;
  Report r;
  r.json = [=] {
    auto opt = [](const std::optional<double> &v) { return v ? Json(*v) : Json(nullptr); };
    return Json{
        {"model", model_name},
        {"precision", std::string(fit::name(run.precision))},
        {"batch", run.batch},
        {"flops_per_step", cmp.flops_per_step},
        {"time_model", "fit's per-operation roofline"},
        {"cpu", {{"seconds_per_step", opt(cmp.cpu_s)}, {"source", cmp.cpu_source}}},
        {"gpu",
         {{"name", gpu.name}, {"seconds_per_step", opt(cmp.gpu_s)}, {"source", cmp.gpu_source}}},
        {"speedup", opt(cmp.speedup)},
        {"line", line},
        {"assumptions", assumptions}};
  };
  auto tables = [=] {
    Table t;
    t.title = line;
    t.add({"model", fmt::format("{}, batch {}, {} on the GPU, FP32 on the CPU", model_name,
                                run.batch, fit::name(run.precision))});
    t.add({"FLOPs per training step",
           fmt::format("{:.3g} (fit's step formula)", cmp.flops_per_step)});
    t.add({"time model", "fit's per-operation roofline on each side (docs/fit.md \"Time\")"});
    t.add({"CPU rate", cmp.cpu_source});
    t.add({gpu.name + " rate", cmp.gpu_source});
    for (const auto &as : assumptions)
      t.add({"assumed", as});
    return std::vector<Table>{t};
  };
  r.table = [tables](const TextStyle &s) { return render(tables(), Format::table, s.width); };
  r.markdown = [tables] { return render(tables(), Format::markdown); };
  r.csv = tables;
  return r;
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
                 "data.decode: a JPEG file or a folder of them (read only); storage.read: a "
                 "directory on the disk to measure (a temporary file is written there and "
                 "deleted) or an existing file (read only)")
      ->type_name("PATH")
      ->check(non_empty())
      ->check(CLI::ExistingPath);
  sub.add_option("--cpu-vs-gpu", a->cpu_vs_gpu,
                 "One training step of MODEL on this CPU (measured SGEMM rate) and on a GPU "
                 "(measured GEMM rate, else its catalog peak), with fit's step FLOPs")
      ->type_name("MODEL")
      ->check(non_empty());
  sub.add_option("--gpu", a->gpu, "--cpu-vs-gpu: this catalog GPU instead of this machine's")
      ->type_name("NAME");
  sub.add_option("--precision", a->precision,
                 "--cpu-vs-gpu: the GPU's precision (fp32 | tf32 | fp16-amp | bf16-amp | bf16 | "
                 "fp8); the CPU runs FP32")
      ->type_name("P");
  add_ranged_option<std::int64_t>(sub, "--batch", a->batch, "--cpu-vs-gpu: micro-batch", "N", 1,
                                  1 << 20);
  add_ranged_option<std::int64_t>(
      sub, "--rank",
      std::function<void(std::int64_t)>([a](std::int64_t v) { a->rank = static_cast<int>(v); }),
      "nccl.*: this process's rank in a multi-process job (with --nranks and --rendezvous; "
      "default: torchrun's RANK)",
      "R", 0, 1 << 20);
  add_ranged_option<std::int64_t>(
      sub, "--nranks",
      std::function<void(std::int64_t)>([a](std::int64_t v) { a->nranks = static_cast<int>(v); }),
      "nccl.*: the job's number of ranks, one GPU each (default: torchrun's WORLD_SIZE)", "N", 1,
      1 << 20);
  sub.add_option("--rendezvous", a->rendezvous,
                 "nccl.*: rank 0's HOST:PORT; rank 0 listens there and hands NCCL's unique id to "
                 "the others (default: torchrun's MASTER_ADDR:MASTER_PORT); alone, under mpirun, "
                 "srun or mpiexec, the rank and size come from the launcher's variables")
      ->type_name("HOST:PORT")
      ->check(non_empty());
  add_nvml_timeout(
      sub, [a](std::chrono::milliseconds t) { a->source.probe.nvml_timeout = t; },
      "How long the probe waits for NVML, in seconds (default 30); past it the GPU benchmarks are "
      "skipped (a GPU or the driver has stopped responding)");
  add_output_options(sub, a->out);
  return [a](const Envelope &run) -> ExitCode {
    bench::Context ctx;
    ctx.tier = a->quick       ? bench::Tier::quick
               : a->sustained ? bench::Tier::sustained
                              : bench::Tier::standard;
    ctx.hardware_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ctx.small = env_flag("DLRIG_BENCH_SMALL");
    ctx.corrupt = env_flag("DLRIG_BENCH_CORRUPT");
    ctx.test_expectations = env_expectations();
    if (!a->data.empty()) {
      // A FIFO, socket or device is refused before anything runs: no benchmark can use it.
      std::error_code ec;
      if (!std::filesystem::is_directory(a->data, ec))
        if (auto why = not_a_regular_file(a->data))
          throw Failure(exit_code_for(why->kind),
                        "--data " + why->message +
                            " or folder: give a JPEG file or a folder of them (data.decode), or "
                            "a directory on the disk to measure (storage.read)");
      ctx.data = a->data;
    }
    std::optional<std::string> db_path = a->db.empty() ? bench::default_db_path() : a->db;
    auto need_db_path = [&] {
      if (!db_path)
        throw Failure(ExitCode::usage, "no results database: neither XDG_DATA_HOME nor "
                                       "HOME is an absolute path; give one with --db PATH");
      return *db_path;
    };
    auto open_db = [&] { return value_or_throw(bench::Store::open(need_db_path())); };
    // history, show and compare only read: the file is never created, switched or migrated.
    auto read_db = [&] { return value_or_throw(bench::Store::open_for_reading(need_db_path())); };
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
      auto db = read_db();
      std::string id = a->names.size() == 2 ? a->names[1] : "";
      if (!id.empty())
        value_or_throw(bench::select({id}));
      print(bench::history_report(value_or_throw(db->results(std::nullopt, id))), run, a->out);
      return ExitCode::ok;
    }
    if (verb == "show") {
      if (a->names.size() != 2)
        throw Failure(ExitCode::usage, "bench show takes one RUN number");
      auto db = read_db();
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
      auto db = read_db();
      auto ia = run_id(a->names[1]), ib = run_id(a->names[2]);
      print(bench::compare_report(ia, stored(*db, ia), ib, stored(*db, ib)), run, a->out);
      return ExitCode::ok;
    }
    if (a->list) {
      // The snapshot as a run reads it, so that --list finds cuBLASLt and NCCL where a run would
      // (the torch environment's copies).
      Snapshot snap = obtain_snapshot(a->source);
      ctx.snapshot = &snap;
      bench::gpu::withhold_gpus(snap);
      print(bench::list_report(ctx), run, a->out);
      return ExitCode::ok;
    }
    if (!a->cpu_vs_gpu.empty() && !a->names.empty())
      throw Failure(ExitCode::usage, "--cpu-vs-gpu runs cpu.gemm.sgemm itself when needed; give "
                                     "no benchmark names with it");
    auto which = value_or_throw(bench::select(a->names));
    // One rank of a multi-process NCCL job: from the flags, else torchrun's environment when
    // every benchmark named is nccl.* (a torchrun job's other commands are left alone).
    const bool only_nccl =
        !a->names.empty() &&
        std::all_of(which.begin(), which.end(), [](const auto *b) { return b->family == "nccl"; });
    const bool rank_flags = a->rank || a->nranks || !a->rendezvous.empty();
    std::optional<bench::RankSpec> job;
    if (rank_flags || only_nccl) {
      job = value_or_throw(bench::rank_spec(
          {a->rank, a->nranks, a->rendezvous}, [](const char *name) -> std::optional<std::string> {
            const char *v = std::getenv(name);
            return v ? std::optional<std::string>(v) : std::nullopt;
          }));
      if (job && !only_nccl)
        throw Failure(ExitCode::usage, "--rank, --nranks and --rendezvous run nccl.* only: name "
                                       "nccl or nccl.ID (e.g. `dlrig bench nccl.all_reduce "
                                       "--rank 0 --nranks 2 --rendezvous node0:29500`)");
      if (job && !a->cpu_vs_gpu.empty())
        throw Failure(ExitCode::usage, "--cpu-vs-gpu does not take --rank");
    }
    Snapshot snap = obtain_snapshot(a->source);
    ctx.snapshot = &snap;
    bench::gpu::withhold_gpus(snap);
    if (job) {
      std::vector<std::string> ids;
      for (const auto *b : which)
        ids.push_back(b->id);
      const std::string plan = fmt::format("{} tier={}{}", join(ids, ","),
                                           bench::tier_name(ctx.tier), ctx.small ? " small" : "");
      to_stderr(fmt::format("bench: rank {} of {} ({}): rendezvous with rank 0 at {}:{}", job->rank,
                            job->nranks, job->source, job->host, job->port));
      bench::join_nccl_job(ctx, *job, plan);
      if (job->rank != 0) {
        // Not rank 0: the same collectives, verified on this rank's GPU; one line per result
        // on stderr, nothing stored (rank 0 keeps the job's results).
        bench::RunOptions opts;
        opts.ctx = ctx;
        opts.progress = [](const std::string &line) { to_stderr("bench: " + line); };
        auto records = bench::run_all(which, opts);
        for (const auto &r : records)
          to_stderr(fmt::format("bench: rank {} of {}: {} {}: {}{}", job->rank, job->nranks, r.id,
                                r.config, bench::status_name(r.status),
                                r.rate_median ? fmt::format(", {:.3g} {} median (each sample the "
                                                            "slowest rank's)",
                                                            *r.rate_median, r.rate_unit)
                                : r.reason    ? ": " + *r.reason
                                              : ""));
        if (auto stopped = bench::end_nccl_job(ctx, true)) {
          to_stderr(fmt::format("bench: rank {} of {}: the job stopped: {}", job->rank, job->nranks,
                                *stopped));
          return ExitCode::failures;
        }
        if (auto faults = bench::gpu::faults(); !faults.empty())
          return ExitCode::failures;
        return bench::exit_status(records) == 2 ? ExitCode::failures : ExitCode::ok;
      }
    }
    if (a->cpu_vs_gpu.empty() && runs_cpu_gemm(which))
      choose_openblas_core(snap); // before anything is stored or printed
    Json env = bench::environment(snap, ctx.hardware_threads, bench::read_governor());
    // --cpu-vs-gpu reads the stored results first: a database whose rows cannot be read is
    // refused before it is opened for writing (and switched to WAL) or measured into.
    bench::StoredResults earlier;
    if (!a->cpu_vs_gpu.empty()) {
      earlier = bench::load_stored(need_db_path());
      if (earlier.problem)
        throw Failure(ExitCode::bad_input, *earlier.problem);
    }
    auto db = open_db();
    // Runs the benchmarks, storing each result as it completes (its own transaction).
    // Ctrl-C: storage.read's temporary file is removed in the handler, the benchmark in progress
    // stops (storage) or ends its sampling at the next sample (the others: kept, with
    // details.interrupted), no further one starts; what was measured is stored and printed. A
    // second Ctrl-C ends dlrig at once.
    std::optional<Error> store_error;
    auto execute = [&](const std::vector<const bench::Benchmark *> &benches) {
      std::int64_t stored_run =
          value_or_throw(db->begin_run(run.time, bench::tier_name(ctx.tier), env));
      bench::RunOptions opts;
      opts.ctx = ctx;
      opts.progress = [](const std::string &line) { to_stderr("bench: " + line); };
      opts.on_record = [&](const bench::Record &r) {
        if (!store_error)
          store_error = db->add(stored_run, r);
      };
      bench::reset_storage_stop();
      bench::install_storage_signal_cleanup();
      opts.stop = [] { return bench::storage_stop_requested(); };
      auto records = bench::run_all(benches, opts);
      if (!store_error)
        to_stderr(fmt::format("bench: run {} stored in {}", stored_run, db->path()));
      return records;
    };
    if (!a->cpu_vs_gpu.empty()) {
      auto measure_cpu = [&] {
        choose_openblas_core(snap);
        to_stderr("bench: no stored cpu.gemm.sgemm result for this CPU: measuring it now");
        execute(value_or_throw(bench::select({"cpu.gemm.sgemm"})));
        if (store_error)
          throw Failure(*store_error);
      };
      print(cpu_vs_gpu_report(*a, snap, std::move(earlier), measure_cpu, db->path()),
            with_source(run, a->source), a->out);
      return ExitCode::ok;
    }
    auto records = execute(which);
    // Rank 0 of a job: "done" to the other ranks, or why the job stopped.
    const auto stopped =
        job ? bench::end_nccl_job(ctx, !bench::storage_stop_requested()) : std::nullopt;
    print(bench::results_report(records, env), with_source(run, a->source), a->out);
    if (store_error)
      throw Failure(*store_error);
    if (bench::storage_stop_requested()) {
      to_stderr("bench: interrupted; the results above are stored");
      return static_cast<ExitCode>(130);
    }
    if (stopped) {
      to_stderr("bench: the job stopped: " + *stopped);
      to_stderr("bench: the results measured before it stopped are above and stored");
      return ExitCode::failures;
    }
    if (auto faults = bench::gpu::faults(); !faults.empty()) {
      for (const auto &f : faults)
        to_stderr("bench: GPU fault: " + f);
      to_stderr("bench: the results measured before the fault are above and stored");
      return ExitCode::failures;
    }
    switch (bench::exit_status(records)) {
    case 2:
      return ExitCode::failures;
    case 1:
      to_stderr("bench: a result is below its expectation (BELOW in the table)");
      return ExitCode::warnings;
    default:
      return ExitCode::ok;
    }
  };
}

} // namespace dlrig::cli

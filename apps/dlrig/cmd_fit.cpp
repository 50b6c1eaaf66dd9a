// `dlrig fit`: parses the command line into a model, a run and GPUs, and prints the library's
// answer. Exit codes: 0 it fits (with --all-gpus: on at least one GPU), 1 it does not (or the GPU's
// memory is unknown), 64 usage, 65 bad input files.
#include "commands.hpp"
#include "dlrig/bench/measured.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/load.hpp"
#include "dlrig/fit/report.hpp"
#include "dlrig/fit/targets.hpp"
#include "dlrig/fit/weights.hpp"
#include "workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace dlrig::cli {
namespace {

struct FitArgs {
  WorkloadArgs w;
  std::string gpu;
  bool all_gpus = false;
  bool max_batch = false;
  SnapshotSource src;
  OutputOptions out;
};

ExitCode run_fit(FitArgs &a, const Envelope &envelope) {
  const auto &kb = kb::builtin();
  fit::Run run = workload_run(a.w, kb);
  fit::ModelInput model = workload_model(a.w, kb);
  if (model.weights_only) { // unrecognised tensor names, no config.json: what the header says
    std::vector<fit::GpuTarget> gpus;
    if (!a.gpu.empty() || a.all_gpus) {
      auto t = a.all_gpus ? fit::all_catalog_gpus(kb) : fit::catalog_gpu(kb, a.gpu);
      if (t.error)
        throw Failure(ExitCode::usage, t.error->message());
      gpus = std::move(t.gpus);
    }
    auto w = fit::weights_report(model, gpus, run);
    print(fit::weights_output(w), envelope, a.out);
    return ExitCode::ok;
  }

  // What is read of this machine: the CPU for the CPU comparison; the GPUs and the software stack
  // (PyTorch, CUDA, CUDA_MODULE_LOADING) only when sizing for this machine. --all-gpus without
  // --from reads nothing.
  const bool this_machine = !a.all_gpus && a.gpu.empty();
  std::optional<fit::CpuTarget> cpu;
  std::optional<Snapshot> snap;
  if (!a.all_gpus || !a.src.from.empty()) {
    SnapshotSource src = a.src;
    src.probe.host_only = !this_machine;
    snap = obtain_snapshot(src);
  }
  if (snap)
    cpu = fit::cpu_target(snap->host.cpu);
  // This machine's stored `dlrig bench` results (read once; never another machine's): the
  // measured SGEMM rate over the ISA peak, and the rates the time model uses.
  std::optional<bench::StoredResults> stored;
  if (snap && a.src.from.empty() && a.src.probe.sysroot == "/") {
    stored = bench::load_stored();
    if (auto measured = bench::measured_cpu_target(*stored, snap->host.cpu))
      cpu = measured;
  }
  if (!a.w.torch.empty())
    run = value_or_throw(fit::with_torch(run, a.w.torch, kb), ErrorKind::usage);
  else if (this_machine && snap)
    run = fit::with_machine_stack(run, *snap);

  std::vector<std::string> assumptions;
  if (stored && stored->problem)
    assumptions.push_back(bench::unread_results(*stored));
  run = value_or_throw(fit::resolve_run(model, run, &assumptions), ErrorKind::usage);

  fit::Targets targets = a.all_gpus       ? fit::all_catalog_gpus(kb)
                         : !a.gpu.empty() ? fit::catalog_gpu(kb, a.gpu)
                                          : fit::machine_gpus(*snap, kb);
  // A machine without a GPU: the memory needs no GPU, so size against the catalog and say which
  // GPUs it fits.
  const bool no_local_gpu =
      this_machine && targets.error && targets.error->kind == fit::TargetError::Kind::no_local_gpu;
  if (no_local_gpu)
    targets = fit::all_catalog_gpus(kb);
  if (targets.error)
    throw Failure(ExitCode::usage, targets.error->message());
  if (targets.chosen)
    assumptions.push_back(targets.chosen->message());
  std::vector<fit::GpuTarget> gpus = std::move(targets.gpus);

  fit::FitOptions opts;
  opts.max_batch = a.max_batch;
  if (stored)
    opts.host = bench::measured_host_rates(*stored);
  opts.suggestions = !a.all_gpus && !no_local_gpu;
  auto report = fit::fit(model, run, gpus, opts, cpu);
  report.assumptions = std::move(assumptions);
  report.no_local_gpu = no_local_gpu;

  // --all-gpus without --from sizes catalog GPUs only: no snapshot is read.
  print(fit::fit_report(report, a.all_gpus), snap ? with_source(envelope, a.src) : envelope, a.out);

  bool any = std::any_of(report.gpus.begin(), report.gpus.end(),
                         [](const fit::GpuFit &g) { return g.fits.value_or(false); });
  bool ok = a.all_gpus || no_local_gpu ? any : report.all_fit();
  return ok ? ExitCode::ok : ExitCode::warnings;
}

} // namespace

Runner setup_fit(CLI::App &sub) {
  auto a = std::make_shared<FitArgs>();
  add_workload_options(sub, a->w, [&sub, a] {
    sub.add_flag("--max-batch", a->max_batch, "Also find the largest micro-batch that fits");
  });
  auto *gpu = sub.add_option("--gpu", a->gpu, "Size for this catalog GPU instead of this machine's")
                  ->type_name("NAME")
                  ->check(CLI::Validator(
                      [](std::string &s) -> std::string {
                        return s.find_first_not_of(" \t") == std::string::npos
                                   ? "empty: give a catalog GPU name (`dlrig kb gpus`)"
                                   : "";
                      },
                      "NAME"));
  sub.add_flag("--all-gpus", a->all_gpus, "A table over every GPU of the catalog")->excludes(gpu);
  add_snapshot_options(sub, a->src);
  add_output_options(sub, a->out);
  return [a](const Envelope &run) { return run_fit(*a, run); };
}

} // namespace dlrig::cli

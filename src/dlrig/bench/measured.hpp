#pragma once
// The latest stored `dlrig bench` results, for the commands that use them: `fit` (the CPU's time
// per step from the measured SGEMM rate), `doctor` (storage against what the decoders read) and
// `bench --cpu-vs-gpu`. Reading never creates a database: no file means no results.
#include "dlrig/bench/cpu_vs_gpu.hpp"
#include "dlrig/bench/store.hpp"
#include "dlrig/core/snapshot.hpp"
#include "dlrig/doctor/report.hpp"
#include "dlrig/fit/time.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlrig::bench {

struct StoredResults {
  std::string db_path;
  std::vector<StoredResult> results; // oldest first
  std::vector<StoredRun> runs;
  std::optional<std::string> problem; // the database exists but could not be read: why
};
// Every stored result of the database at `path` (default_db_path() when nullopt); an empty set
// when there is no database.
StoredResults load_stored(const std::optional<std::string> &path = std::nullopt);

// fit's and pick's assumption when `s.problem` is set: "the results database ... could not be
// read (...): no measured rate is used".
std::string unread_results(const StoredResults &s);

// The CPU's FP32 GEMM rate: the fastest median of cpu.gemm.sgemm over the configurations of the
// latest run that measured it, when that run's CPU model is `cpu_model` (or either is unknown).
// The source says which result (its size and threads).
std::optional<StepRate> measured_cpu_gemm(const StoredResults &s,
                                          const std::optional<std::string> &cpu_model);

// A GPU's GEMM rate at a precision ("bf16", "fp16", "tf32", "fp32", "fp8") from part 2's
// results: the fastest median of family "gpu.gemm" whose id names the precision, in the latest
// run that has one. nullopt until such results exist.
std::optional<StepRate> measured_gpu_gemm(const StoredResults &s, const std::string &precision);

// Every GPU's GEMM rate per precision from gpu.gemm.{fp32,tf32,fp16,bf16,fp8}: per GPU name
// (details.name) and precision, the fastest median of the latest run that measured it there.
std::vector<fit::MeasuredGemm> measured_gpu_gemm_rates(const StoredResults &s);

// The latest measured result of `id` whose config contains `config_part` ("" for any), with the
// run it came from.
std::optional<StoredResult> latest(const StoredResults &s, const std::string &id,
                                   const std::string &config_part = "");

// fit's time model: the fastest configuration of the latest run of cpu.gemm.sgemm,
// cpu.stream.triad and data.decode.jpeg, in base units (FLOP/s, B/s, images/s); each nullopt
// when none is stored; and measured_gpu_gemm_rates().
fit::HostRates measured_host_rates(const StoredResults &s);

// fit: this machine's CPU as a target whose peak is the measured SGEMM rate (the time model then
// times each operation at that rate), or nullopt without a stored result.
std::optional<fit::CpuTarget> measured_cpu_target(const StoredResults &s, const CpuInfo &cpu);

// doctor: the latest storage.read.seq against what the latest data.decode.jpeg (all threads)
// would read (images/s x bytes per image). A warning when the disk is the slower: the data loader
// waits on it. nullopt when either result is missing; not run, saying why, when the database
// could not be read.
std::optional<doctor::CheckResult> storage_feed_check(const StoredResults &s);
// The check's registry-style description (its id, area "bench", what it reads, its source).
const doctor::Check &storage_feed_description();

} // namespace dlrig::bench

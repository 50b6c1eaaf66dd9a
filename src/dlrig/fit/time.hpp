#pragma once
// The time model: FLOPs per step over the device's throughput at the precision, times a stated
// utilisation (docs/fit.md "Time"). The throughput is the catalog's dense peak: measured
// `dlrig bench` results do not exist yet, and the output says so.
#include "dlrig/core/snapshot_host.hpp"
#include "dlrig/fit/memory.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dlrig::fit {

// memory.md §1.11: achieved MFU anchors are 42-54% for Megatron at scale, 14-42% for HF
// fine-tuning; 40% is the stated utilisation the estimates use.
inline constexpr double kUtilisation = 0.40;
// memory.md §1.11: gpt-fast reaches 1397 GB/s of the A100 80GB's 2039 GB/s in batch-1 decode.
inline constexpr double kBandwidthUtilisation = 1397.31 / 2039.0;

struct TimeEstimate {
  std::optional<double> peak_flops; // per device at the run's precision; nullopt = unknown
  std::string throughput_source;    // which figure peak_flops is
  double utilisation = kUtilisation;
  double flops_per_step = 0; // all devices together (training) or one prefill (serving)
  std::optional<double> seconds_per_step;
  std::optional<double> tokens_per_s;  // transformers
  std::optional<double> samples_per_s; // sequences or images per second
  std::optional<double> seconds_per_epoch;
  // Serving.
  std::optional<double> prefill_s;
  std::optional<double> decode_tokens_per_s; // all sequences together
  std::vector<std::string> notes;
};

// FLOPs of one optimizer step (training: 6 x active params x tokens + attention + recompute) or
// of one prefill (serving: 2 x active params x tokens + attention), for all GPUs together.
double step_flops(const ModelInput &model, const Run &run);

TimeEstimate estimate_time(const ModelInput &model, const Run &run, const GpuTarget &gpu);

// This machine's CPU as a compute device: cores x clock x FP32 FLOPs per cycle per core from the
// ISA flags (benchmarking.md: AVX-512 with two FMA units = 32 FP64 = 64 FP32 FLOP/cycle; AVX2 with
// FMA = 32 FP32).
struct CpuTarget {
  std::string model;
  int cores = 0;
  double hz = 0;
  double flops_per_cycle = 0;
  std::string assumption; // said in the output
  double peak() const { return cores * hz * flops_per_cycle; }
};
std::optional<CpuTarget> cpu_target(const CpuInfo &cpu);
TimeEstimate estimate_time_cpu(const ModelInput &model, const Run &run, const CpuTarget &cpu);

} // namespace dlrig::fit

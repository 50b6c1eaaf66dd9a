#pragma once
// The time model: every operation of a step (ops.hpp) timed by a roofline on the device —
// max(FLOPs / the GEMM or attention rate for its shape and precision, bytes / memory bandwidth,
// kernels x launch overhead) — plus the communication a parallel run cannot hide, the pipeline
// bubble, and the input: the step is the slowest of the GPU, the host-to-device link and the input
// pipeline. Each rate and rule, with its source, is in docs/fit.md "Time".
#include "dlrig/core/snapshot_host.hpp"
#include "dlrig/fit/memory.hpp"
#include "dlrig/fit/ops.hpp"
#include "dlrig/kb/kb.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::fit {

// A published fused-attention rate as a share of its GPU's 16-bit peak
// (data/attention_achieved.csv): pass is "forward", "backward" or "both".
struct AttentionPoint {
  std::string pass;
  int head_dim = 0;
  bool causal = false;
  double seq = 0;
  double share = 0;
};

// What a device sustains, per precision (indexed by Precision). nullopt: unknown.
struct DeviceRates {
  std::array<std::optional<double>, 6> gemm;      // FLOP/s of a large GEMM
  std::array<std::optional<double>, 6> attention; // FLOP/s of fused attention
  // 16-bit fused attention's share of `attention` by pass, head dimension, mask and sequence
  // length (attention_share); empty: `attention` whatever the shape.
  std::vector<AttentionPoint> attention_curve;
  std::optional<double> memory_bw; // B/s an element-wise kernel streams
  double launch_s = 0;             // per kernel (the framework's dispatch + launch)
  double kernel_s = 0; // per kernel, on the GPU itself, added to its work (kGpuKernelSeconds)
  std::vector<std::string> basis; // where each rate comes from, in words
};

// Per-kernel overhead of eager PyTorch: one operator issued from Python, 4.2 us on an H100 NVL
// (benchmarking.md §2.7: susun-blog.com/blog/pegainfer-3-cuda-graph).
inline constexpr double kLaunchSeconds = 4.2e-6;
// What one kernel costs on the GPU itself, beyond its work, when the CPU has already queued it:
// 1.28 us per kernel of a replayed CUDA graph on an H100 NVL (benchmarking.md §2.7:
// susun-blog.com/blog/pegainfer-3-cuda-graph), where no CPU launch is left to wait for. It is the
// fixed latency of a kernel (launch on the device, block scheduling, the tail of the last wave)
// that its own data movement cannot hide, so it adds to the roofline (latency + bytes / rate)
// rather than competing with it.
inline constexpr double kGpuKernelSeconds = 1.28e-6;
// A streaming kernel reaches ~85-92 % of the memory's peak (benchmarking.md §2.2: nvbandwidth
// and copy-kernel measurements on H100/A100); the low end.
inline constexpr double kStreamFraction = 0.85;
// FP32/TF32 attention (PyTorch's memory-efficient kernel; FlashAttention and cuDNN run 16 bits
// only), for which no published rate by shape exists, as a fraction of that precision's peak:
// FlashAttention-2's 50-73 % of an A100 (Dao 2023, arXiv:2307.08691) and 35 % of an H100 (Shah et
// al. 2024, arXiv:2407.08608), the low end. 16-bit attention follows data/attention_achieved.csv.
inline constexpr double kAttentionFraction = 0.50;
inline constexpr double kAttentionFractionHopper = 0.35;
// The smallest GEMM tile cuBLAS uses on tensor cores: a dimension is computed in whole tiles
// (NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background": tile quantization).
inline constexpr double kGemmTile = 64;
// PyTorch DDP's gradient bucket, bucket_cap_mb = 25 (torch.nn.parallel.DistributedDataParallel).
inline constexpr double kDdpBucketBytes = 25e6;

// The GPU's rates: the catalog peak x the fraction large GEMMs measurably reach on that GPU
// (data/gemm_achieved.csv) or, without a row, the median fraction of the rows of the same
// precision and class (datacenter or desktop); memory at kStreamFraction of the spec.
// 16-bit fused attention: the published rates (data/attention_achieved.csv) of the kernel the
// run's PyTorch calls on this GPU's architecture (attention_kernel), as shares of this GPU's peak.
DeviceRates gpu_rates(const GpuTarget &gpu, const kb::KnowledgeBase &kb, const Run &run = Run{});

// The share of the 16-bit peak fused attention reaches for this op (its pass, head dimension, mask
// and sequence length): the published points interpolated linearly in log2(sequence) and in head
// dimension, held at the ends; a causal backward nobody published is the non-causal backward times
// the forward's causal/non-causal ratio at the same shape.
double attention_share(const std::vector<AttentionPoint> &curve, const Op &op);

// A GEMM rate `dlrig bench gpu.gemm.*` measured on one of this machine's GPUs.
struct MeasuredGemm {
  std::string gpu;       // the driver's device name, "NVIDIA H100 80GB HBM3"
  std::string precision; // fp32 | tf32 | fp16 | bf16 | fp8 (precision_class)
  double flops = 0;      // FLOP/s, the fastest configuration of the latest run
  std::string source;    // "gpu.gemm.bf16 gpu0 8192x8192x8192, dlrig bench run 3"
};

// What the host measured (`dlrig bench`): nullopt when no result is stored.
struct HostRates {
  std::optional<double> images_per_s; // data.decode, all threads
  std::optional<double> cpu_gemm_flops;
  std::optional<double> cpu_memory_bw;
  std::string basis;
  // Used for a GPU of the same name (or the same catalog row) instead of the catalog's peak x
  // the achieved fraction; the estimate's basis then says "measured".
  std::vector<MeasuredGemm> gpu_gemm;
};

// `rates` with the GEMM rate of each precision `host` measured on this GPU (matched by name, or
// by both names resolving to the same catalog row), its basis line rewritten to say so.
void apply_measured_gemm(DeviceRates &rates, const GpuTarget &gpu, const HostRates &host,
                         const kb::KnowledgeBase &kb);

// Where the step's time goes, seconds per optimizer step (training) or per decode step.
struct StepBreakdown {
  double gemm = 0;      // compute-bound matrix multiplies
  double attention = 0; // compute-bound fused attention
  double memory = 0;    // bound by memory traffic (element-wise, optimizer, small GEMMs)
  double launch = 0;    // bound by kernel launches (kernels too small to fill the GPU)
  double bubble = 0;    // pipeline-parallel idle time
  std::optional<double> communication; // not hidden behind compute; nullopt: unknown
  std::optional<double> host_link;     // host-to-device copy of the inputs
  std::optional<double> input;         // the input pipeline (decode), when measured
  double gpu() const { return gemm + attention + memory + launch + bubble; }
};

struct OpTime {
  std::string name;
  Phase phase = Phase::forward;
  std::string bound; // compute | memory | launch
  double seconds = 0, flops = 0, bytes = 0;
  OpKind kind = OpKind::memory;
  double kernels = 0; // kernel launches per step
};

struct TimeEstimate {
  std::optional<double> peak_flops; // per device at the run's precision; nullopt = unknown
  std::string throughput_source;    // the GEMM rate's basis, in words
  std::vector<std::string> basis;   // every rate used
  double flops_per_step = 0;        // all devices together (training) or one prefill (serving)
  std::optional<double> seconds_per_step;
  std::optional<double> tokens_per_s;  // transformers
  std::optional<double> samples_per_s; // sequences or images per second
  std::optional<double> seconds_per_epoch;
  std::optional<double> seconds_total; // --epochs x the epoch
  std::optional<double> mfu;           // model FLOPs / (time x peak x GPUs)
  std::optional<StepBreakdown> breakdown;
  std::string bottleneck;      // in plain words
  std::vector<OpTime> top_ops; // the slowest operations, slowest first
  std::vector<OpTime> ops;     // every operation of the step timed, in the order they run
  // Serving.
  std::optional<double> prefill_s;                      // time to first token
  std::optional<double> decode_tokens_per_s;            // all sequences together
  std::optional<double> decode_tokens_per_s_per_stream; // one sequence
  // Serving over the host link (an eGPU's Thunderbolt tunnel, a narrow slot): the rate charged,
  // the weights crossing it once when the model loads, and what crosses it per decode step
  // (token ids only: HF generate samples on the GPU), already in the decode step above.
  std::optional<double> host_link_bytes_per_s;
  std::optional<double> load_s;
  std::optional<double> link_s_per_step;
  std::vector<std::string> notes;
};

// FLOPs of one optimizer step (training, with recompute) or of one prefill (serving), for all
// GPUs together.
double step_flops(const ModelInput &model, const Run &run);

TimeEstimate estimate_time(const ModelInput &model, const Run &run, const GpuTarget &gpu,
                           const HostRates &host = {});

// Ops timed on a device: the breakdown and the per-op times (exposed for tests).
StepBreakdown time_ops(const std::vector<Op> &ops, const DeviceRates &rates,
                       std::vector<OpTime> *times = nullptr);

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
// The CPU's time: the measured SGEMM rate and STREAM bandwidth when `dlrig bench` stored them,
// else the theoretical peak (an upper bound on speed) and element-wise work untimed.
TimeEstimate estimate_time_cpu(const ModelInput &model, const Run &run, const CpuTarget &cpu,
                               const HostRates &host = {});

} // namespace dlrig::fit

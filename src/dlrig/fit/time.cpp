#include "dlrig/fit/time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dlrig::fit {
namespace {

bool is_transformer(model::ModelFamily f) {
  return f != model::ModelFamily::cnn && f != model::ModelFamily::unet;
}

std::optional<double> peak_at(const GpuTarget &g, Precision p, std::string &which) {
  switch (p) {
  case Precision::fp32:
    which = "FP32";
    return g.fp32_flops;
  case Precision::tf32:
    which = "TF32";
    return g.tf32_flops;
  case Precision::fp16_amp:
    which = "FP16 (FP32 accumulate)";
    return g.fp16_flops;
  case Precision::bf16_amp:
  case Precision::bf16:
    which = "BF16";
    return g.bf16_flops;
  case Precision::fp8:
    which = "FP8";
    return g.fp8_flops;
  }
  return std::nullopt;
}

// Forward multiply-accumulates of one image (CNN or UNet): the sum over the walk's records.
double image_macs(const model::ModelArch &m, std::int64_t side) {
  double macs = 0;
  if (auto modules = model::walk(m, side))
    for (const auto &r : *modules)
      macs += r.macs;
  return macs;
}

double active_params(const ModelInput &m) {
  return static_cast<double>(m.params - inactive_expert_params(dims_of(m.arch)));
}

// Attention score and context FLOPs, forward + backward (Megatron-LM's 12 B s^2 L h term,
// memory.md §1.11), halved for causal attention (the lower triangle).
double attention_flops_train(const Dims &d, double seqs, double s) {
  double f = 12 * seqs * s * s * static_cast<double>(d.layers + d.decoder_layers) *
             static_cast<double>(d.q_dim);
  return d.causal ? f / 2 : f;
}

void fill_rates(TimeEstimate &t, const ModelInput &model, const Run &run, double seconds) {
  t.seconds_per_step = seconds;
  const double samples = static_cast<double>(run.batch * run.grad_accum) * run.dp();
  t.samples_per_s = samples / seconds;
  if (is_transformer(model.arch.family)) {
    t.tokens_per_s = samples * static_cast<double>(run.seq) / seconds;
    if (run.dataset_tokens)
      t.seconds_per_epoch = *run.dataset_tokens / *t.tokens_per_s;
  }
  if (run.samples)
    t.seconds_per_epoch = *run.samples / *t.samples_per_s;
}

} // namespace

double step_flops(const ModelInput &model, const Run &run) {
  const auto &arch = model.arch;
  const Dims d = dims_of(arch);
  if (run.mode == Mode::infer) {
    const double seqs = static_cast<double>(run.batch * run.concurrency);
    if (!is_transformer(arch.family))
      return 2 * image_macs(arch, run.image_size) * seqs;
    const double s = static_cast<double>(run.seq);
    return 2 * active_params(model) * s * seqs + attention_flops_train(d, seqs, s) / 3;
  }
  const double samples = static_cast<double>(run.batch * run.grad_accum) * run.dp();
  if (!is_transformer(arch.family)) {
    // Forward 2 x MACs, backward twice the forward (memory.md §1.11's 2 + 4); full checkpointing
    // runs the forward once more (4 + 4).
    const double f = (run.checkpointing == Checkpointing::full ? 8 : 6);
    return f * image_macs(arch, run.image_size) * samples;
  }
  const double s = static_cast<double>(run.seq);
  const double tokens = samples * s;
  const double p = active_params(model);
  // LoRA: the frozen weights need no weight-gradient GEMMs, so backward is 2 x params x tokens.
  double f = (run.lora() ? 4 : 6) * p * tokens;
  const double attn = attention_flops_train(d, samples, s);
  f += attn;
  if (run.checkpointing == Checkpointing::full)
    f += 2 * p * tokens + attn / 3; // one more forward (memory.md §1.11: factor 4 instead of 3)
  else if (run.checkpointing == Checkpointing::selective)
    f += attn / 3; // the attention core's forward again (Korthikanti et al. §5)
  return f;
}

TimeEstimate estimate_time(const ModelInput &model, const Run &run, const GpuTarget &gpu) {
  TimeEstimate t;
  std::string which;
  Precision p = run.precision;
  t.peak_flops = peak_at(gpu, p, which);
  t.throughput_source =
      fmt::format("catalog dense {} peak of {} (no `dlrig bench` results yet)", which, gpu.name);
  t.flops_per_step = step_flops(model, run);
  if (!t.peak_flops || *t.peak_flops <= 0) {
    t.peak_flops.reset();
    t.notes.push_back(
        fmt::format("{} has no {} throughput in the catalog: time unknown", gpu.name, which));
    return t;
  }
  const double rate = *t.peak_flops * t.utilisation;
  if (run.mode == Mode::infer) {
    const double replica = static_cast<double>(run.tp) * run.pp;
    t.prefill_s = t.flops_per_step / (replica * rate);
    t.seconds_per_step = t.prefill_s;
    if (gpu.memory_bandwidth_bytes_per_s && run.max_tokens > 0 &&
        is_transformer(model.arch.family)) {
      // Decode is bandwidth-bound: each new token reads the weights and the KV cache so far.
      auto m = estimate_memory(model, run, gpu);
      const double seqs = static_cast<double>(run.batch * run.concurrency);
      const double mean_len =
          static_cast<double>(run.seq) + static_cast<double>(run.max_tokens) / 2;
      const double total_len = static_cast<double>(run.seq + run.max_tokens);
      const double kv_read = static_cast<double>(m.kv_cache) * mean_len / total_len;
      const double per_step = (static_cast<double>(m.weights) + kv_read) /
                              (*gpu.memory_bandwidth_bytes_per_s * kBandwidthUtilisation);
      t.decode_tokens_per_s = seqs / per_step;
      t.notes.push_back(fmt::format("decode: weights + KV cache read per token at {:.0f}% of the "
                                    "memory bandwidth (gpt-fast's A100 figure)",
                                    kBandwidthUtilisation * 100));
    }
    return t;
  }
  double seconds = t.flops_per_step / (run.world() * rate);
  if (run.pp > 1) {
    // The 1F1B pipeline bubble: (p - 1) / m of the step idle (Narayanan et al. 2021).
    seconds *= 1 + static_cast<double>(run.pp - 1) / static_cast<double>(run.grad_accum);
    t.notes.push_back("pipeline bubble (p-1)/m included; communication time is not modelled");
  } else if (run.world() > 1) {
    t.notes.push_back("communication time is not modelled (assumed overlapped)");
  }
  fill_rates(t, model, run, seconds);
  return t;
}

std::optional<CpuTarget> cpu_target(const CpuInfo &cpu) {
  if (!cpu.cores || *cpu.cores <= 0)
    return std::nullopt;
  auto hz = cpu.max_hz ? cpu.max_hz : cpu.base_hz;
  if (!hz || *hz <= 0)
    return std::nullopt;
  auto has = [&](std::string_view f) {
    return std::find(cpu.isa.begin(), cpu.isa.end(), f) != cpu.isa.end();
  };
  CpuTarget c;
  c.model = cpu.model.value_or("CPU");
  c.cores = *cpu.cores;
  c.hz = *hz;
  if (has("avx512f")) {
    c.flops_per_cycle = 64;
    c.assumption = "AVX-512 with two FMA units: 64 FP32 FLOP/cycle/core";
  } else if (has("avx2") && has("fma")) {
    c.flops_per_cycle = 32;
    c.assumption = "AVX2 with two FMA units: 32 FP32 FLOP/cycle/core";
  } else if (has("avx2") || has("avx")) {
    c.flops_per_cycle = 16;
    c.assumption = "AVX without FMA: 16 FP32 FLOP/cycle/core";
  } else {
    return std::nullopt; // no ISA flags we can rate (e.g. aarch64 without a known figure)
  }
  c.assumption += fmt::format(", {} cores at {:.2f} GHz", c.cores, c.hz / 1e9);
  return c;
}

TimeEstimate estimate_time_cpu(const ModelInput &model, const Run &run, const CpuTarget &cpu) {
  TimeEstimate t;
  // PyTorch trains in fp32 on the CPU; the CPU estimate uses the FP32 peak whatever --precision.
  Run r = run;
  r.gpus = 1;
  r.nodes = 1;
  r.tp = r.pp = 1;
  t.peak_flops = cpu.peak();
  t.throughput_source = "this machine's CPU: " + cpu.assumption;
  t.flops_per_step = step_flops(model, r);
  const double rate = cpu.peak() * t.utilisation;
  if (run.mode == Mode::infer) {
    t.prefill_s = t.flops_per_step / rate;
    t.seconds_per_step = t.prefill_s;
    return t;
  }
  fill_rates(t, model, r, t.flops_per_step / rate);
  return t;
}

} // namespace dlrig::fit

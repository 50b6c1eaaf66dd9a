#pragma once
// The operations one GPU runs for a step, each with the work it does: FLOPs (at a GEMM or an
// attention rate), bytes moved through device memory, and kernels launched. The time model
// (time.cpp) times each by a roofline. Every count is derived in docs/fit.md "Time"; the kernel
// sequences follow the PyTorch and transformers code a user runs (eager mode) or, with
// Kernels::fused, the fused kernels of Megatron-LM / Transformer Engine / torch.compile.
#include "dlrig/fit/model_input.hpp"
#include "dlrig/fit/run.hpp"

#include <string>
#include <vector>

namespace dlrig::fit {

enum class OpKind {
  gemm,      // a matrix multiply (nn.Linear, convolution as implicit GEMM, eager attention BMMs)
  attention, // a fused attention kernel (SDPA / FlashAttention): FLOPs at the attention rate
  memory,    // element-wise, reductions, casts, the optimizer step: bound by bytes or launches
};

enum class Phase { forward, backward, recompute, optimizer };
std::string_view name(Phase p);
std::string_view name(OpKind k); // "gemm" | "attention" | "memory"

struct Op {
  std::string name; // "mlp.down_proj", "rmsnorm", "adamw (foreach)"
  OpKind kind = OpKind::memory;
  Phase phase = Phase::forward;
  Precision precision = Precision::bf16_amp; // the GEMM/attention rate it runs at
  double flops = 0;                          // per step on this GPU
  double bytes = 0;                          // device-memory traffic per step
  double kernels = 0;                        // kernel launches per step
  double m = 0, n = 0, k = 0;                // GEMM shape of one instance (tile quantisation)
  // A linear layer's input and output features (0: not a linear layer): the dimensions that are
  // some operand's leading dimension in memory, whose alignment decides cuBLAS's kernels
  // (time.cpp).
  double features_in = 0, features_out = 0;
  // Fused attention's shape: tokens per sequence, head dimension, causal mask.
  double seq = 0, head_dim = 0;
  bool causal = false;
};

// One optimizer step on one GPU (all --grad-accum micro-batches, recompute, the optimizer).
// Communication is not an op: time.cpp adds it from the gradient and activation bytes.
std::vector<Op> train_ops(const ModelInput &model, const Run &run);

// Serving on one GPU (one tensor/pipeline-parallel replica shard): the prefill of every sequence
// in flight, and one decode step (one new token for each) at mean context `context` tokens.
std::vector<Op> prefill_ops(const ModelInput &model, const Run &run);
std::vector<Op> decode_ops(const ModelInput &model, const Run &run, double context);

// Parameters this GPU trains: all (or LoRA's adapters) / (tp x pp), and / dp under ZeRO/FSDP.
double trained_params(const ModelInput &model, const Run &run);

// Model FLOPs of one optimizer step for all GPUs: what MFU divides by (no recompute).
double model_flops(const ModelInput &model, const Run &run);
// The same from `ops` = train_ops(model, run) where they are what model_flops counts (run without
// recompute, tp = pp = 1: the ops are not built again); else model_flops(model, run).
double model_flops(const ModelInput &model, const Run &run, const std::vector<Op> &ops);

// Bytes of activation dtype (4 for fp32/tf32 runs, else 2).
double activation_bytes(Precision p);

} // namespace dlrig::fit

#include "dlrig/fit/memory.hpp"

#include "dlrig/core/text.hpp"
#include "dlrig/core/version.hpp"
#include "dlrig/model/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>

namespace dlrig::fit {
namespace {

// A CNN's modules at its default image size (parameters and buffers do not depend on it); none
// when the walk fails.
std::shared_ptr<const std::vector<model::Module>> cnn_modules(const model::ModelArch &m) {
  auto modules = model::walk_shared(m, model::default_image_size(m));
  return modules ? *modules : std::make_shared<const std::vector<model::Module>>();
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

// memory.md §4.1: the CUDA context, as measured (nvidia-smi "used" minus what torch allocated),
// by module loading, PyTorch / CUDA version and GPU. Lazy loading (CUDA >= 11.7) loads kernels
// when first used instead of every kernel of the binary at startup; PyTorch sets
// CUDA_MODULE_LOADING=LAZY by default since 1.13 (pytorch/pytorch#86509).
struct ContextRow {
  bool lazy;
  const char *torch; // the PyTorch release measured ("" when the source names none)
  const char *cuda;
  int cc_major, cc_minor;
  double bytes;
  const char *where;
};
constexpr ContextRow kContextRows[] = {
    {true, "2.1.1", "12.1", 8, 0, 0.47 * kGiB,
     "A100 80GB, torch 2.1.1+cu121, lazy loading (stas00/ml-engineering training/performance)"},
    {true, "2.10.0", "13.0", 8, 9, 426 * kMiB,
     "RTX 6000 Ada, torch 2.10.0+cu130 (unslothai/unsloth-zoo#1053)"},
    {true, "2.11.0", "13.0", 9, 0, 804'061'184,
     "H200, torch 2.11.0+cu130, lazy loading, after training steps: NVML used minus torch's "
     "reserved, smallest of ten runs (perf/fit_measure.py, docs/fit-accuracy.md \"GPU results\")"},
    {false, "2.1.1", "12.1", 8, 0, 0.92 * kGiB,
     "A100 80GB, torch 2.1.1+cu121, CUDA_MODULE_LOADING=EAGER (stas00/ml-engineering)"},
    {false, "1.13.1", "11.7", 8, 0, 0.90 * kGiB,
     "A100 80GB, torch 1.13.1, CUDA_MODULE_LOADING=EAGER (stas00/ml-engineering)"},
    {false, "1.10.2", "11.3", 8, 0, 1.78 * kGiB,
     "A100 80GB, torch 1.10.2, before lazy loading (stas00/ml-engineering)"},
    {false, "", "11.2", 7, 0, 1343 * kMiB,
     "V100 16GB, CUDA 11.2 (huggingface.co/docs/transformers/model_memory_anatomy)"},
};
// memory.md §4.2: torch.distributed init + first collective on 2 GPUs: +1.45 GiB per GPU.
constexpr double kNcclInit = 1.45 * kGiB;
// memory.md §4.4: observed reserved/allocated ratios 1.00-1.14; the upper end is the margin.
constexpr double kFragmentation = 0.14;
// memory.md §4.3: cuBLAS workspace per handle and stream: 4096 KiB x 2 + 16 KiB x 8 before Hopper,
// 4096 KiB x 8 on sm90+; cuBLASLt: 1 MiB, 4 MiB on Ampere with >= 24 GB, 32 MiB on Hopper+.
constexpr double kCublasPreHopper = 8'519'680;
constexpr double kCublasHopper = 32 * kMiB;
// memory.md §1.7: NF4 + double quantisation = 4.127 bits/param (QLoRA); bitsandbytes' plain
// load_in_4bit default (FP4, no double quantisation) = 4.5 bits/param.
constexpr double kNf4DqBytes = 4.127 / 8;
constexpr double kFp4Bytes = 4.5 / 8;
// memory.md §1.9: HF models materialise the logits as bf16 then fp32 ("a factor of 6 instead of
// 4" bytes per element of b x s x V kept after the forward). The peak comes at the start of
// backward, with every layer's activations still alive: the bf16 logits the output holds (2), the
// saved log-softmax output (4), its incoming gradient (4) and the gradient it returns (4); 16 with
// fp32 logits. transformers' ForCausalLMLoss (upcast, shift, contiguous, cross-entropy) measured
// at 13.99 and 15.95 B per element with PyTorch 2.5.1's MemTracker (docs/fit-accuracy.md).
constexpr double kLossPeakBytes16 = 14;
constexpr double kLossPeakBytes32 = 16;

// Bytes of one nn.Linear(in, out) as `q` stores it: GPTQ (AutoGPTQ's QuantLinear: qweight
// int32 [in / (32 / bits), out], qzeros int32 [groups, out / (32 / bits)], scales fp16
// [groups, out], g_idx int32 [in]) and AWQ (AutoAWQ's WQLinear_GEMM: the same less g_idx) with
// groups = ceil(in / group_size), one when the config's group_size is -1; compressed-tensors the
// packed weights and a 16-bit scale per group (or per output row); bitsandbytes 8-bit int8
// weights and an fp32 scale per row (Int8Params.SCB), 4-bit QLoRA's figures (memory.md §1.7);
// FP8 one byte and an fp32 scale per row. A bias stays 16-bit.
double stored_linear_bytes(const model::StoredQuant &q, double in, double out, bool bias) {
  const double groups = q.group_size > 0 ? std::ceil(in / static_cast<double>(q.group_size)) : 1;
  const double packed = in * out * q.bits / 8;
  double bytes = 0;
  if (q.method == "gptq" || q.method == "awq")
    bytes = packed + groups * out * (2 + static_cast<double>(q.bits) / 8) +
            (q.method == "gptq" ? 4 * in : 0);
  else if (q.method == "compressed-tensors")
    bytes = packed + groups * out * 2;
  else if (q.method == "bitsandbytes" && q.bits == 4)
    bytes = in * out * (q.double_quant ? kNf4DqBytes : kFp4Bytes);
  else
    bytes = packed + 4 * out;
  return bytes + (bias ? 2 * out : 0);
}

// The frozen or served weights on one GPU of a checkpoint stored quantised: the safetensors
// header's bytes when the checkpoint was read (every quantised tensor, scale and 16-bit tensor as
// stored), else the transformer blocks' nn.Linear modules as the method stores them (the output
// head, classifier, pooler and MoE router stay 16-bit, as quantizers leave them) and the rest at
// `rest_bytes`.
double stored_weights(const ModelInput &model, const Dims &d, double shard, double rest_bytes) {
  if (model.checkpoint && model.checkpoint->weight_bytes > 0)
    return static_cast<double>(model.checkpoint->weight_bytes) / shard;
  const auto &q = *model.arch.stored_quant;
  double linear_params = 0, linear_bytes = 0;
  for (const auto &l : model::linear_layers(model.arch)) {
    if (stored_unpacked(l))
      continue;
    const double n = static_cast<double>(l.count);
    linear_params += static_cast<double>(l.params());
    linear_bytes +=
        n * stored_linear_bytes(q, static_cast<double>(l.in), static_cast<double>(l.out), l.bias);
  }
  if (linear_params == 0) { // no transformer blocks listed: all but the embeddings packed
    linear_params = static_cast<double>(
        std::max<std::int64_t>(0, model.params - d.vocab * d.hidden * (d.tied ? 1 : 2)));
    linear_bytes = linear_params * stored_bytes_per_weight(q).value_or(rest_bytes);
  }
  return (linear_bytes + (static_cast<double>(model.params) - linear_params) * rest_bytes) / shard;
}

bool mixed(Precision p) {
  return p == Precision::fp16_amp || p == Precision::bf16_amp || p == Precision::fp8;
}
bool full32(Precision p) {
  return p == Precision::fp32 || p == Precision::tf32;
}
bool is_zero(Strategy s) {
  return s == Strategy::zero1 || s == Strategy::zero2 || s == Strategy::zero3;
}
bool is_transformer(model::ModelFamily f) {
  return f != model::ModelFamily::cnn && f != model::ModelFamily::unet;
}

// Optimizer states in bytes per parameter when held in fp32 (memory.md §1.3: AdamW 8 for m and v,
// SGD+momentum 4, bitsandbytes 8-bit Adam 2; Lion keeps one momentum).
double optimizer_state_bytes(Optimizer o, double adafactor_bytes_per_param) {
  switch (o) {
  case Optimizer::sgd:
    return 0;
  case Optimizer::sgd_momentum:
  case Optimizer::lion:
    return 4;
  case Optimizer::adam:
  case Optimizer::adamw:
    return 8;
  case Optimizer::adamw_8bit:
    return 2;
  case Optimizer::adafactor:
    return adafactor_bytes_per_param;
  }
  return 8;
}

// Adafactor keeps factored second moments: a row and a column vector per matrix (fp32).
double adafactor_bytes_per_param(const ModelInput &m, const Dims &d) {
  double rc = 0;
  if (m.arch.family == model::ModelFamily::cnn) {
    // A conv weight [out, in, k, k] factors as out rows and in·k·k columns.
    const auto modules = cnn_modules(m.arch);
    for (const auto &r : *modules)
      if (r.kind == "conv")
        rc += static_cast<double>(r.output.channels + r.params / r.output.channels);
  } else {
    double h = static_cast<double>(d.hidden), q = static_cast<double>(d.q_dim);
    double kv = static_cast<double>(d.kv_dim), i = static_cast<double>(d.intermediate);
    double per_layer =
        2 * (h + q) + 2 * (h + kv) +
        (d.gated ? 3 : 2) * (h + i) * std::max<double>(1, static_cast<double>(d.experts));
    rc = per_layer * static_cast<double>(d.layers + d.decoder_layers) +
         (static_cast<double>(d.vocab) + h) * (d.tied ? 1 : 2);
  }
  return m.params > 0 ? 4 * rc / static_cast<double>(m.params) : 0;
}

// Registered buffers that live on the GPU beside the weights: BERT-style models keep int64
// position_ids and token_type_ids of max_positions entries each (memory.md §1.1: the 8,192 B that
// accelerate's bert-base-cased total includes).
// A CNN's BatchNorm layers keep running_mean and running_var (fp32, one per channel) and an int64
// num_batches_tracked (the rest of accelerate's resnet50 total, memory.md §1.1).
double buffer_bytes(const model::ModelArch &m) {
  if (m.type_vocab > 0 && m.max_positions > 0)
    return 2.0 * 8 * static_cast<double>(m.max_positions);
  double bytes = 0;
  if (m.family == model::ModelFamily::cnn) {
    const auto modules = cnn_modules(m);
    for (const auto &r : *modules)
      if (r.kind == "batchnorm")
        bytes += 2.0 * 4 * static_cast<double>(r.output.channels) + 8;
  }
  return bytes;
}

// Whether LoRA adapts a linear of this role (model::LinearShape::role): PEFT's default targets
// are the query and value projections (the fused c_attn / qkv_proj where a model fuses them; T5's
// self- and cross-attention q and v); "all-linear" takes every linear but the output head; a
// custom list names roles (a fused module is adapted when one of its parts is listed).
bool lora_adapts(const Run &run, std::string_view role) {
  if (role.starts_with("cross_"))
    role.remove_prefix(6);
  switch (run.lora_targets) {
  case LoraTargets::qv:
    return role == "q" || role == "v" || role == "qkv";
  case LoraTargets::all_linear:
    return role != "lm_head" && role != "classifier";
  case LoraTargets::custom:
    break;
  }
  auto has = [&](std::string_view r) {
    return std::find(run.lora_modules.begin(), run.lora_modules.end(), r) != run.lora_modules.end();
  };
  if (role == "qkv")
    return has("q") || has("k") || has("v");
  if (role == "gate_up")
    return has("gate") || has("up");
  return has(role);
}

// LoRA's trainable parameters: r x (in + out) per adapted linear (memory.md §1.7). Without a
// linear-layer table, the query and value shapes from the dimensions.
double lora_adapter_params(const model::ModelArch &m, const Dims &d, const Run &run) {
  const double r = run.lora_rank > 0 ? run.lora_rank : 8;
  const auto moe = model::moe_linears(m.hf_model_type, run.transformers_version);
  double per_rank = 0;
  for (const auto &l : model::linear_layers(m)) {
    const auto a = lora_adapter(run, l, moe);
    per_rank += static_cast<double>(l.count) * a.rank * a.width;
  }
  // Under all-linear, the linears outside the blocks (outside_linears, as bitsandbytes counts
  // them too).
  const bool all_linear = run.lora_targets == LoraTargets::all_linear;
  auto outside = [&](const model::ModelArch &v) {
    double w = 0;
    if (all_linear)
      for (const auto &l : outside_linears(v))
        w += static_cast<double>(l.count * (l.in + l.out));
    return w;
  };
  per_rank += outside(m);
  // An image-text model: PEFT's module names (q_proj, v_proj...) match the vision tower's linears
  // too (a fused qkv only under all-linear). CLIP's text tower is in its layer list already.
  if (m.family == model::ModelFamily::decoder || m.family == model::ModelFamily::moe_decoder)
    for (const auto &t : m.towers) {
      for (const auto &l : model::linear_layers(t))
        if (l.role != "qkv" || all_linear) {
          const auto a = lora_adapter(run, l, {});
          per_rank += static_cast<double>(l.count) * a.rank * a.width;
        }
      per_rank += outside(t);
    }
  if (m.family == model::ModelFamily::unet) {
    if (auto u = unet_cost(m, model::default_image_size(m)))
      per_rank = run.lora_targets == LoraTargets::all_linear ? u->lora_all_per_rank
                                                             : u->lora_qkvo_per_rank;
  } else if (per_rank == 0) {
    per_rank =
        static_cast<double>((d.layers + d.decoder_layers) * (2 * d.hidden + d.q_dim + d.kv_dim));
  }
  return r * per_rank;
}

// Which linear inputs a transformer layer saves for backward. A linear saves its input only to
// compute its weight's gradient: PyTorch's autograd saves an input of mm/addmm only when the other
// operand requires grad (tools/autograd/gen_variable_type.py, should_compute_output), and
// bitsandbytes' 4-bit matmul keeps no input (MatMul4Bit saves (None, B)). So a frozen LoRA base
// keeps the input of an adapted linear (lora_A's weight gradient needs it) and none of a linear
// without an adapter; lora_A's r-wide output is saved for lora_B.
//
// The same holds for Hugging Face's RMSNorm, `weight * normed`: the normalised tensor is saved only
// for the weight's gradient, so a frozen norm keeps just its fp32 input (measured with saved-tensor
// hooks on a Llama-shaped model, docs/fit-accuracy.md).
struct LinearInputs {
  bool qkv = true, o = true, mlp = true, down = true;
  bool norm_weights = true; // the norms' weights are trained
  double adapter_width = 0; // r x adapted linears per layer (lora_A outputs, per token)
};

LinearInputs lora_inputs(const model::ModelArch &m, const Run &run) {
  LinearInputs in;
  if (!run.lora())
    return in;
  auto adapted = [&](std::initializer_list<std::string_view> roles) {
    for (auto r : roles)
      if (lora_adapts(run, r))
        return true;
    return false;
  };
  in.norm_weights = false;
  in.qkv = adapted({"q", "k", "v", "qkv"});
  in.o = adapted({"o"});
  in.mlp = adapted({"gate", "up", "gate_up"});
  in.down = adapted({"down"});
  const double r = run.lora_rank > 0 ? run.lora_rank : 8;
  const double layers = static_cast<double>(std::max<std::int64_t>(1, m.layers + m.decoder_layers));
  const auto moe = model::moe_linears(m.hf_model_type, run.transformers_version);
  for (const auto &l : model::linear_layers(m))
    if (!model::head_linear(l.role) && l.role != "router")
      in.adapter_width +=
          r * lora_adapter(run, l, moe).rank * static_cast<double>(l.count) / layers;
  return in;
}

// The temporaries of PyTorch's Adam/AdamW step (torch/optim/adam.py), in bytes, for p parameters
// whose largest tensor holds `largest` elements, with states of `state` bytes per element:
//  foreach (_multi_tensor_adam, the default on CUDA since 2.0): exp_avg_sq_sqrt =
//    torch._foreach_sqrt(exp_avg_sqs) for every parameter at once, one state's size;
//  loop (_single_tensor_adam, the default before 2.0): per parameter, exp_avg_sq.sqrt() and its
//    division by the bias correction before add_(eps) frees the first: two of the largest tensor;
//  fused (_fused_adam, one kernel per group): none.
// Other optimizers (SGD, Lion, bitsandbytes' 8-bit kernels, Adafactor) are counted without.
double adam_step_temp(const Run &run, double p, double largest, double state) {
  if (run.optimizer != Optimizer::adam && run.optimizer != Optimizer::adamw)
    return 0;
  switch (run.optimizer_impl.value_or(OptimizerImpl::foreach)) {
  case OptimizerImpl::foreach:
    return p * state;
  case OptimizerImpl::loop:
    return 2 * std::min(p, largest) * state;
  case OptimizerImpl::fused:
    return 0;
  }
  return p * state;
}

struct States {
  double weights = 0, cache = 0, gradients = 0, optimizer = 0, step_temp = 0, live = 0;
  double host = 0;
};

// Model states per GPU for full training of p parameters (already divided by TP x PP), before
// offload. See docs/fit.md "Model states" for the table this implements.
States full_states(double p, double live_unit_params, const Run &run, double k,
                   double largest_tensor = 0) {
  States s;
  const double n = run.dp();
  const bool zero = is_zero(run.strategy);
  const bool fsdp = run.strategy == Strategy::fsdp;
  double w = 4, g = 4, o = k, temp = 0, cache = 0;
  if (mixed(run.precision)) {
    if (zero) {
      // DeepSpeed: fp16 params and grads, fp32 master + states in the optimizer (ZeRO paper K=12);
      // stage 3 reduces straight into an fp32 gradient partition, stages 1-2 build one at the
      // step (memory.md §1.2: 2Psi + 18Psi/N, LL + 18Psi/N).
      w = 2;
      g = run.strategy == Strategy::zero3 ? 4 : 2;
      o = 4 + k;
      temp = run.strategy == Strategy::zero3 ? 0 : 4;
    } else {
      // PyTorch autocast (ddp) and FSDP mixed precision: fp32 params, grads and states; the
      // 16-bit weight copies live during forward/backward (autocast's cache, FSDP's gathered
      // units). fp8 (Transformer Engine) adds 1-byte copies.
      cache = run.strategy == Strategy::fsdp ? 0 : (run.precision == Precision::fp8 ? 3 : 2);
    }
  } else if (run.precision == Precision::bf16) {
    w = 2;
    g = 2;
    o = run.optimizer == Optimizer::adamw_8bit ? k : k / 2; // states in bf16
  }
  const bool shard_w = run.strategy == Strategy::zero3 || fsdp;
  const bool shard_g = run.strategy == Strategy::zero2 || shard_w;
  const bool shard_o = zero || fsdp;
  s.weights = p * w / (shard_w ? n : 1);
  s.cache = p * cache;
  s.gradients = p * g / (shard_g ? n : 1);
  s.optimizer = p * o / (shard_o ? n : 1);
  s.step_temp = p * temp / (shard_o ? n : 1);
  if (!zero) // PyTorch's optimizer (DeepSpeed steps with its own fused Adam)
    s.step_temp = adam_step_temp(run, p / (shard_o ? n : 1),
                                 (largest_tensor > 0 ? largest_tensor : p) / (shard_o ? n : 1),
                                 run.precision == Precision::bf16 ? 2 : 4);
  if (shard_w)
    s.live = 4 * live_unit_params; // gathered 16-bit params + their grads (memory.md §1.2 LL)
  // DDP keeps bucket copies of the gradients (memory.md §1.9) unless gradient_as_bucket_view
  // makes the gradients views into the buckets (pytorch/pytorch#41954).
  if (run.strategy == Strategy::ddp && n > 1 && !run.gradient_as_bucket_view)
    s.gradients *= 2;
  if (run.offload != Offload::none) {
    s.host = s.gradients + s.optimizer + s.step_temp;
    s.gradients = s.optimizer = s.step_temp = 0;
    if (run.offload == Offload::params) {
      s.host += s.weights;
      s.weights = 0;
    }
  }
  return s;
}

double bytes_per_weight_infer(Precision p) {
  if (full32(p))
    return 4;
  if (p == Precision::fp8)
    return 1;
  return 2;
}

// One transformer layer split into what stays whole under TP and what Megatron shards.
struct LayerParts {
  double replicated = 0, sharded = 0, scores = 0;
};

// autocast: PyTorch's CUDA autocast runs layer_norm and softmax in fp32 (its "ops that can
// autocast to float32" list, https://docs.pytorch.org/docs/stable/amp.html): LayerNorm saves an
// fp32 input, and eager attention's softmax saves an fp32 output, which the matmul with V casts
// to a 16-bit copy that it saves in turn.
struct LayerOptions {
  Attention attention = Attention::sdpa;
  bool training = true;
  bool cross_attention = false; // a decoder layer of an encoder-decoder (T5)
  bool autocast = false;
  // Autocast over fp32 weights (full training; not LoRA's 16-bit frozen base): the residual
  // stream is fp32 (fp32 embeddings), so every norm returns fp32 and each linear reading it saves
  // its own 16-bit cast (Dims::qkv_linears, up_linears).
  bool fp32_stream = false;
  LinearInputs inputs; // which linear inputs are saved (all for full training)
  // SDPA on a current stack (SdpaSaved below): the output projection's input is the kernel's
  // saved output, and grouped K/V are saved at their own width instead of repeated.
  bool sdpa_output_is_o_input = false;
  bool sdpa_grouped_kv = false;
};

LayerParts layer_parts(const Dims &d, double s, double b, double ab, const LayerOptions &o) {
  const Attention attention = o.attention;
  const bool training = o.training, cross_attention = o.cross_attention, autocast = o.autocast;
  const LinearInputs &in = o.inputs;
  const double h = static_cast<double>(d.hidden);
  const double sbh = s * b * h;
  const double fq = d.hidden > 0 ? static_cast<double>(d.q_dim) / h : 1;
  const double fkv = d.hidden > 0 ? static_cast<double>(d.kv_dim) / h : 1;
  // Dropout masks exist only in training, 1 byte per element (bool on CUDA).
  const bool drop = training && d.dropout;
  const bool attn_drop = training && d.attn_dropout;
  const bool act_drop = training && d.act_dropout;
  LayerParts p;
  // Norm inputs (LayerNorm: the input; Hugging Face RMSNorm: an fp32 copy plus the normalised
  // tensor), the attention and MLP inputs, and the dropout masks after the attention and MLP
  // outputs.
  // Hugging Face RMSNorm on an fp32 stream (autocast over fp32 weights) saves the fp32 input and
  // the fp32 normalised tensor (weight * x.to(input_dtype), input_dtype fp32): 8 bytes.
  double norm = d.weightless_fp32_norm ? 4
                : d.rmsnorm            ? (!in.norm_weights ? 4
                                          : o.fp32_stream  ? 8
                                          : ab >= 4        ? 2 * ab
                                                           : 4 + ab)
                                       : (autocast ? 4 : ab);
  int blocks = cross_attention ? 3 : 2;
  // The 16-bit inputs the attention and MLP linears save: one shared tensor, or under autocast on
  // an fp32 stream one cast per linear reading it (a cross-attention's k and v cast the encoder's
  // output, its q the decoder's stream: as many as self-attention). An MoE's router reads one.
  const double qkv_copies = o.fp32_stream ? d.qkv_linears : 1;
  const double up_copies = o.fp32_stream && d.experts == 0 ? d.up_linears : 1;
  const double inputs =
      (blocks - 1) * (in.qkv ? ab * qkv_copies : 0) + (in.mlp ? ab * up_copies : 0);
  p.replicated =
      sbh * (blocks * norm + inputs + (drop ? blocks : 0)) + s * b * in.adapter_width * ab;
  // Hugging Face's eager path, and its SDPA path without enable_gqa, repeat K and V to every
  // query head (repeat_kv) before the kernel, which then saves the repeated copies;
  // flash-attention and SDPA with enable_gqa take the grouped heads as they are.
  const bool sdpa = attention == Attention::sdpa;
  double kv_saved = attention == Attention::flash || (sdpa && o.sdpa_grouped_kv) ? fkv : fq;
  double attn = ab * (fq + 2 * kv_saved); // Q, K, V
  if (attention != Attention::eager)
    attn += ab * fq; // the fused kernel saves its output for backward
  // o_proj's input: its own tensor, unless it is the SDPA kernel's saved output itself.
  if (in.o && !(sdpa && o.sdpa_output_is_o_input))
    attn += ab * fq;
  if (cross_attention)
    attn *= 2;
  double experts = d.experts > 0 ? static_cast<double>(d.experts_per_token) : 1;
  double i_ratio = static_cast<double>(d.intermediate) / h;
  // A dropout inside the MLP (T5's DenseReluDense) keeps its mask and its output, which the
  // second linear saves instead of the activation's output.
  // The last of the 2 (4 gated) MLP tensors is the down projection's input.
  // Under autocast, act_fp32 of those tensors are fp32 (Dims::act_fp32).
  double mlp =
      (((d.gated ? 4 : 2) + d.act_extra + (d.act_sigmoid ? 1 : 0) - (in.down ? 0 : 1)) * ab +
       (autocast ? d.act_fp32 * (4 - ab) : 0) + (o.fp32_stream ? d.act_param_fp32 * (4 - ab) : 0) +
       (d.act_mask ? 1 : 0) + (act_drop ? 1 + ab : 0)) *
      i_ratio * experts;
  if (d.experts > 0) // expert inputs, fp32 router
    mlp += (in.mlp ? ab * experts : 0) + 4 * static_cast<double>(d.experts) / h;
  p.sharded = sbh * (attn + mlp);
  if (attention == Attention::eager && d.heads > 0) {
    // The softmax output (saved by softmax and by the matmul with V); with attention dropout, its
    // 1-byte mask and the dropout's output, which the matmul saves instead (Korthikanti's 5as^2b
    // at 16-bit). SDPA and flash regenerate the dropout mask in backward (no mask kept). Under
    // autocast, and for 16-bit scores of a type whose softmax upcasts (Dims::softmax_fp32), the
    // softmax output is fp32 (4) and the matmul saves its own 16-bit copy. Softcapping's tanh
    // keeps its output in the scores' dtype (Gemma 2; saved-tensor hooks, docs/fit.md).
    const double a = static_cast<double>(d.heads);
    const bool fp32_softmax = autocast || (d.softmax_fp32 && ab < 4);
    const double per =
        (fp32_softmax ? 4 + ab + (attn_drop ? 1 : 0) : ab + (attn_drop ? 1 + ab : 0)) +
        (d.attn_softcap ? ab : 0);
    p.scores = a * s * s * b * per * (cross_attention ? 2 : 1);
    // DeBERTa's disentangled attention (DisentangledSelfAttention.disentangled_attention_bias),
    // per c2p/p2c term: the query (key) times the relative positions' keys (queries), heads x s x
    // 2k, which torch.gather saves; gather's int64 index, s x s before its expand; the position
    // projection repeated to every sequence, b x 2k x hidden; and one more key, divided by the
    // scale before QK^T. Saved-tensor hooks on a one-layer DeBERTa-v3-base shape (CPU,
    // transformers 5.25.0; docs/fit.md).
    if (training && d.rel_types > 0) {
      const double w = static_cast<double>(d.rel_width);
      p.scores += d.rel_types * (a * s * w * b * ab + 8 * s * s + b * w * h * ab) + sbh * fkv * ab;
    }
  }
  return p;
}

// What SDPA's fused kernels (flash, memory-efficient, cuDNN) save on a current stack, as the
// H200 run listed them (torch 2.11, transformers 5.17; tests/data/measured/h200/saved-tensors/):
//  - output_is_o_input: the output projection's input is the kernel's saved output itself when
//    the query reaches the kernel dense in [b, s, heads, d] order, as a view of its own q
//    projection's output (or a rotary embedding's output of it) is. PyTorch's flash and
//    memory-efficient wrappers return the kernel's [b, s, heads, d] output transposed to
//    [b, heads, s, d], and cuDNN allocates its output in the query's layout
//    (aten/src/ATen/native/cudnn/MHA.cpp, alloc_with_matching_layout), so transformers'
//    transpose(1, 2).contiguous() (or reshape) back to [b, s, heads * d] copies nothing: the
//    Llama, BERT and CLIP listings add up only so. A fused q/k/v projection keeps its own o_proj
//    input until a listing shows otherwise (GPT-2's fits it better; Falcon's cannot tell;
//    docs/fit.md).
//  - grouped_kv: transformers' sdpa_attention_forward passes grouped K/V unexpanded
//    (enable_gqa=True, no repeat_kv copy) when use_gqa_in_sdpa holds: torch >= 2.5, no attention
//    mask (causal, unpadded, shorter than any sliding window; transformers' masking_utils
//    _ignore_causal_mask_sdpa), key/value head_dim <= 256 (huggingface/transformers#46960; above,
//    SDPA would run its math kernel), for the model types data/model_types.json
//    "sdpa_grouped_kv" lists since the release it names. Before compute capability 8.0 no fused
//    kernel takes grouped heads and SDPA runs its math kernel (huggingface/transformers#48633).
// Both from torch 2.5 (the grouped path's first release; before it the earlier count is kept: no
// measurement of an earlier release, and the count the published per-layer measurements are
// compared with, transformer_layer_activation_bytes). An unknown torch is a current one. The
// grouped path also needs the table's transformers release (Run::transformers_version, from
// `--transformers` or the snapshot): an older one repeats K and V (repeat_kv), and an unknown one
// is taken as a release with the path, which a note says.
struct SdpaSaved {
  bool output_is_o_input = false, grouped_kv = false;
  std::string since;       // transformers' first release with the grouped path for this model type
  std::string not_grouped; // why grouped K/V are repeated although the type has the path
};
// For training (serving's one-layer working set keeps the count before).
SdpaSaved sdpa_saved(const model::ModelArch &arch, const Dims &d, const Run &run,
                     const GpuTarget &gpu) {
  SdpaSaved r;
  if (run.attention != Attention::sdpa ||
      (!run.torch_version.empty() && compare_versions(run.torch_version, "2.5") < 0))
    return r;
  r.output_is_o_input = d.qkv_linears > 1;
  if (d.kv_dim >= d.q_dim || d.heads <= 0)
    return r;
  auto since = model::sdpa_grouped_kv_since(arch.hf_model_type);
  if (!since || !d.causal)
    return r;
  r.since = *since;
  const std::int64_t head_dim = d.q_dim / d.heads;
  if (!run.transformers_version.empty() && compare_versions(run.transformers_version, r.since) < 0)
    r.not_grouped = fmt::format("transformers {} repeats them (repeat_kv; enable_gqa=True from {})",
                                run.transformers_version, r.since);
  else if (head_dim > 256)
    r.not_grouped = fmt::format("head_dim {} > 256: transformers repeats them (without its check, "
                                "SDPA runs the math kernel)",
                                head_dim);
  else if (arch.sliding_window > 0 && run.seq >= arch.sliding_window)
    r.not_grouped = fmt::format("the sequence ({}) is not shorter than the sliding window ({}), so "
                                "transformers builds a mask and repeats them",
                                run.seq, arch.sliding_window);
  else if (gpu.cc_major() > 0 && gpu.cc_major() < 8)
    r.not_grouped = fmt::format(
        "compute capability {}: no fused SDPA kernel takes grouped heads before 8.0, so "
        "enable_gqa=True runs the math kernel, which keeps the s^2 scores "
        "(huggingface/transformers#48633; --attention eager sizes that path)",
        gpu.compute_capability);
  else
    r.grouped_kv = true;
  return r;
}

// A CNN's training peak during backward. Backward walks the layers from the classifier down,
// freeing each layer's saved tensors and allocating its weights' gradients (zero_grad sets them to
// None, so none exist before), so the peak is the largest (activations still saved + gradients
// made so far) over that walk: early in the walk for a ResNet, whose big activations sit in its
// first layers and big weights in its last. grad_bytes: bytes per parameter of the gradients made
// during backward.
struct BackwardPeak {
  double activations = 0, gradients = 0;
};
//
// With full checkpointing (torch.utils.checkpoint around each residual block, as torchvision
// users wrap layer1..layer4) a block keeps only its input; its saved tensors come back while it is
// recomputed in backward, one block at a time.
BackwardPeak cnn_backward_peak(const model::ModelArch &m, double side, double b, double ab,
                               double grad_bytes, bool checkpoint) {
  static const std::vector<model::Module> none;
  auto walked = model::walk_shared(m, static_cast<std::int64_t>(side));
  const std::vector<model::Module> &layers = walked ? **walked : none;
  std::vector<double> saved;
  double acts = static_cast<double>(m.channels > 0 ? m.channels : 3) * side * side * b * ab;
  for (const auto &r : layers) {
    saved.push_back((r.saved * ab + r.saved_int64 * 8) * b);
    acts += saved.back();
  }
  double grads = 0;
  if (checkpoint) {
    // Kept: the image, the stem's tensors and each block's input (the previous module's output).
    double kept = acts;
    std::vector<double> block_saved, block_input, block_grads;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto &r = layers[i];
      if (r.block < 0) {
        if (!block_saved.empty()) // the head after the blocks: its gradients come first
          grads += static_cast<double>(r.params) * grad_bytes;
        continue;
      }
      kept -= saved[i];
      const auto k = static_cast<std::size_t>(r.block);
      if (k >= block_saved.size()) {
        block_input.push_back(static_cast<double>(r.input.elements()) * b * ab);
        block_saved.push_back(0);
        block_grads.push_back(0);
        kept += block_input.back();
      }
      block_saved[k] += saved[i];
      block_grads[k] += static_cast<double>(r.params) * grad_bytes;
    }
    BackwardPeak best{kept, grads};
    for (std::size_t k = block_saved.size(); k-- > 0;) {
      grads += block_grads[k];
      // The block recomputed: its saved tensors live beside every input still kept.
      if (kept + block_saved[k] + grads > best.activations + best.gradients)
        best = {kept + block_saved[k], grads};
      kept -= block_input[k];
    }
    return best;
  }
  // Backward walks the modules from the classifier down, in autograd's order (the reverse of the
  // forward), freeing each one's saved tensors and making its gradients.
  BackwardPeak best{acts, grads};
  for (std::size_t i = layers.size(); i-- > 0;) {
    grads += static_cast<double>(layers[i].params) * grad_bytes;
    acts -= saved[i];
    if (acts + grads > best.activations + best.gradients)
      best = {acts, grads};
  }
  return best;
}

// The causal-LM loss's bytes at the start of backward for `tokens` = b x s on one GPU:
//  standard: transformers' loss, 14 B per logit (16 in fp32; kLossPeakBytes16), and e more with
//    Gemma 2's final_logit_softcapping, whose tanh keeps its output (saved-tensor hooks on the CPU:
//    TanhBackward0's bf16 [b, s, V] result; docs/fit.md);
//  chunked: torchtune's CEWithChunkedOutputLoss, which "saves memory by only upcasting one chunk
//    at a time" (torchtune/modules/loss/ce_chunked_output_loss.py, num_output_chunks = 8): the
//    16-bit logits of every chunk stay (e bytes per logit), the fp32 upcast, log-softmax and their
//    gradients (the rest of the 14) exist for one chunk at a time;
//  fused: Liger-Kernel's fused linear cross-entropy (liger_kernel/ops/
//    fused_linear_cross_entropy.py) never holds b x s x V: it computes the hidden states'
//    gradient in forward (e x b s h), an fp32 loss per token, and one chunk of logits of
//    next_pow2(ceil(b s / ceil(V / h))) rows at a time (about b s h elements). Cut-CE keeps less.
constexpr double kLossChunks = 8;
double loss_bytes(const Run &run, const Dims &d, double tokens, double ab) {
  const double v = static_cast<double>(d.logits) / run.tp, h = static_cast<double>(d.hidden);
  const double standard = full32(run.precision) ? kLossPeakBytes32 : kLossPeakBytes16;
  switch (run.loss) {
  case Loss::standard:
    break;
  case Loss::chunked:
    return (ab + (standard - ab) / kLossChunks) * tokens * v;
  case Loss::fused: {
    const double inc = std::ceil(v / std::max(1.0, h));
    const double rows = std::ceil(tokens / std::max(1.0, inc));
    const double chunk = std::min(tokens, std::exp2(std::ceil(std::log2(std::max(1.0, rows)))));
    return ab * tokens * h + chunk * v * ab + 4 * tokens;
  }
  }
  return (standard + (d.final_softcap ? ab : 0)) * tokens * v;
}

} // namespace

bool stored_unpacked(const model::LinearShape &l) {
  return model::head_linear(l.role) || l.role == "router";
}

LoraAdapter lora_adapter(const Run &run, const model::LinearShape &l,
                         const model::MoeLinears &moe) {
  const double in = static_cast<double>(l.in), out = static_cast<double>(l.out);
  const bool mlp = l.role == "gate" || l.role == "up" || l.role == "down" || l.role == "gate_up";
  if (run.lora_targets == LoraTargets::all_linear && moe.peft_target_parameters && !moe.experts) {
    if (l.routed)
      return l.role == "gate"   ? LoraAdapter{2, in + 2 * out}
             : l.role == "down" ? LoraAdapter{1, in + out}
                                : LoraAdapter{};
    if (l.role == "router")
      return {1, in + out};
    if (mlp)
      return {};
  }
  if ((l.routed && !moe.experts) || (l.role == "router" && !moe.router) ||
      !lora_adapts(run, l.role))
    return {};
  return {1, in + out};
}

double adapter_params(const ModelInput &model, const Run &run) {
  return run.lora() ? lora_adapter_params(model.arch, dims_of(model.arch), run) : 0;
}

double quantized_params(const ModelInput &model, const Run &run) {
  const double q = static_cast<double>(bnb_linears(model.arch, run.transformers_version).params);
  // --params N sized from a catalog model's shapes: the same share of N.
  const double derived = static_cast<double>(model::derive_params(model.arch));
  return derived > 0 && static_cast<double>(model.params) != derived
             ? q * static_cast<double>(model.params) / derived
             : q;
}

double bnb_serving_bytes(double params, double quantized, Quant quant) {
  return quantized * (quant == Quant::int8 ? 1 : kFp4Bytes) + (params - quantized) * 2;
}

CudaContext cuda_context(const Run &run, const GpuTarget &gpu) {
  // Lazy loading needs CUDA 11.7 or later; PyTorch turns it on (when CUDA_MODULE_LOADING is
  // unset) since 1.13. An unknown version is taken as a current release.
  bool lazy = true;
  if (run.module_loading == "EAGER")
    lazy = false;
  else if (run.module_loading.empty() && !run.torch_version.empty() &&
           compare_versions(run.torch_version, "1.13") < 0)
    lazy = false;
  if (!run.cuda_version.empty() && compare_versions(run.cuda_version, "11.7") < 0)
    lazy = false;
  // The measured row nearest to this stack: the same loading; then the nearest PyTorch release
  // when it is known, the nearest GPU architecture otherwise (and to break ties).
  auto torch_key = [](std::string_view v) {
    auto p = parse_version(v).parts;
    return p.empty() ? 0.0 : static_cast<double>(p[0]) * 100 + (p.size() > 1 ? p[1] : 0);
  };
  const int cc = gpu.cc_major();
  int minor = 0;
  if (auto dot = gpu.compute_capability.find('.'); dot != std::string::npos)
    minor = std::atoi(gpu.compute_capability.c_str() + dot + 1);
  const ContextRow *best = nullptr;
  double best_score = 0;
  for (const auto &r : kContextRows) {
    if (r.lazy != lazy)
      continue;
    double arch = cc > 0 ? std::abs(cc - r.cc_major) * 10.0 + std::abs(minor - r.cc_minor) : 0;
    double torch = run.torch_version.empty() ? 0
                   : r.torch[0] ? std::abs(torch_key(run.torch_version) - torch_key(r.torch))
                                : 1e3; // a row whose release is unknown comes last
    double newest = -torch_key(r.torch[0] ? r.torch : "0") * 1e-6; // ties: the newer release
    double score = (run.torch_version.empty() ? arch * 1e3 : torch * 1e3 + arch) + newest;
    if (!best || score < best_score) {
      best = &r;
      best_score = score;
    }
  }
  CudaContext c;
  c.lazy = lazy;
  c.bytes = best ? best->bytes : 0;
  c.basis = best ? best->where : "";
  return c;
}

std::string_view level_name(Level l) {
  switch (l) {
  case Level::allocated:
    return "allocated";
  case Level::reserved:
    return "reserved";
  case Level::device:
    return "device";
  }
  return "?";
}

int GpuTarget::cc_major() const {
  if (compute_capability.empty() || compute_capability[0] < '0' || compute_capability[0] > '9')
    return 0;
  return std::atoi(compute_capability.c_str());
}

double zero_model_states(double params, int stage, double dp, double k) {
  switch (stage) {
  case 0:
    return (2 + 2 + k) * params;
  case 1:
    return 2 * params + 2 * params + k * params / dp;
  case 2:
    return 2 * params + (2 + k) * params / dp;
  default:
    return (2 + 2 + k) * params / dp;
  }
}

ModelStates deepspeed_model_states(double params, double largest_layer, int stage, int gpus,
                                   int gpus_per_node, Offload offload) {
  Run run;
  run.precision = Precision::fp16_amp;
  run.optimizer = Optimizer::adam;
  run.strategy = stage >= 3 ? Strategy::zero3 : stage == 2 ? Strategy::zero2 : Strategy::zero1;
  run.gpus = gpus;
  run.offload = offload;
  auto s = full_states(params, largest_layer, run, 8);
  ModelStates out;
  out.weights = s.weights;
  out.gradients = s.gradients;
  out.optimizer = s.optimizer;
  out.step_temp = s.step_temp;
  out.live = s.live;
  // DeepSpeed's host-side figure (memory.md §1.2) is what loading needs per node, with its 1.5
  // buffer factor, not the steady state; kept for comparison with its estimators.
  const double n = gpus, nn = gpus_per_node, nodes = std::ceil(n / nn);
  if (stage < 3)
    out.host =
        offload == Offload::none ? params * 4 * nn * 1.5 : params * std::max(4 * n, 16.0) * 1.5;
  else if (offload == Offload::params)
    out.host = params * std::max(4 * nn, 18 / nodes) * 1.5;
  else if (offload == Offload::optimizer)
    out.host = params * std::max(4 * nn, 16 / nodes) * 1.5;
  else
    out.host = params * 4 * nn * 1.5;
  return out;
}

namespace {

// accelerate's largest unit (memory.md §1.1): the embeddings (one module holding word, position and
// type tables, LayerNorm and buffers in BERT; separate leaves elsewhere), one transformer layer
// (encoder and decoder layers averaged for T5), the pooler; for a CNN its largest conv, BatchNorm
// (with running statistics) or classifier.
double accelerate_largest_bytes(const ModelInput &model) {
  const auto &m = model.arch;
  if (m.family == model::ModelFamily::cnn) {
    // fp32 weights; a BatchNorm adds its running statistics and num_batches_tracked.
    double best = 0;
    const auto modules = cnn_modules(m);
    for (const auto &r : *modules) {
      double bytes = 4.0 * static_cast<double>(r.params);
      if (r.kind == "batchnorm")
        bytes += 4.0 * 2 * static_cast<double>(r.output.channels) + 8;
      best = std::max(best, bytes);
    }
    return best;
  }
  const double h = static_cast<double>(m.hidden);
  double best = 0;
  if (m.type_vocab > 0) {
    const double rows = static_cast<double>(m.vocab + m.max_positions + m.type_vocab);
    best = 4 * (rows * h + 2 * h) + buffer_bytes(m);
  } else {
    best = 4 * static_cast<double>(m.vocab) * h;
    if (m.learned_positions)
      best = std::max(best, 4 * static_cast<double>(m.max_positions) * h);
  }
  double layer = 0;
  for (const auto &l : model::linear_layers(m))
    if (!model::head_linear(l.role))
      layer += static_cast<double>(l.params());
  const double layers = static_cast<double>(m.layers + m.decoder_layers);
  const double norm = m.norm == "layernorm" ? 2 * h : m.norm == "none" ? 0 : h;
  if (layers > 0)
    best = std::max(best, 4 * (layer / layers + static_cast<double>(m.norms_per_layer) * norm));
  if (m.pooler)
    best = std::max(best, 4 * (h * h + h));
  return best;
}

} // namespace

std::vector<AccelerateRow> accelerate_rows(const ModelInput &model) {
  if (model.arch.family == model::ModelFamily::unet)
    return {};
  const double total32 = 4 * static_cast<double>(model.params) + buffer_bytes(model.arch);
  const double largest32 = accelerate_largest_bytes(model);
  std::vector<AccelerateRow> rows;
  const std::pair<const char *, double> dtypes[] = {
      {"float32", 1}, {"float16", 2}, {"int8", 4}, {"int4", 8}};
  for (auto [name, div] : dtypes) {
    AccelerateRow r;
    r.dtype = name;
    r.largest_layer = largest32 / div;
    r.total = total32 / div;
    r.training_docs = 4 * r.total;
    if (div == 1)
      r.training = 4 * total32;
    else if (div == 2)
      r.training = 2 * total32;
    rows.push_back(r);
  }
  return rows;
}

double korthikanti_layer_bytes(KorthikantiCase c, double s, double b, double h, double a,
                               double t) {
  const double sbh = s * b * h;
  switch (c) {
  case KorthikantiCase::none:
    return sbh * (34 + 5 * a * s / h);
  case KorthikantiCase::tensor_parallel:
    return sbh * (10 + 24 / t + 5 * a * s / (h * t));
  case KorthikantiCase::tp_sequence_parallel:
    return sbh / t * (34 + 5 * a * s / h);
  case KorthikantiCase::tp_selective:
    return sbh * (10 + 24 / t);
  case KorthikantiCase::tp_sp_selective:
    return 34 * sbh / t;
  case KorthikantiCase::full:
    return 2 * sbh;
  }
  return 0;
}

std::optional<double> stored_bytes_per_weight(const model::StoredQuant &q) {
  if (q.bits == 0)
    return std::nullopt;
  const double g = static_cast<double>(q.group_size);
  const double bits = q.bits;
  if (q.method == "gptq" || q.method == "awq") // AutoGPTQ QuantLinear, AutoAWQ WQLinear_GEMM
    return bits / 8 + (g > 0 ? (2 + bits / 8) / g : 0);
  if (q.method == "bitsandbytes" && q.bits == 4)
    return q.double_quant ? kNf4DqBytes : kFp4Bytes;
  return bits / 8 + (g > 0 ? 2 / g : 0);
}

std::uint64_t kv_bytes_per_token(const Dims &d, double bytes) {
  return static_cast<std::uint64_t>(2.0 * static_cast<double>(d.layers + d.decoder_layers) *
                                    static_cast<double>(d.kv_dim) * bytes);
}

bool mla_latent_cache(const model::ModelArch &arch, const std::string &transformers_version) {
  if (arch.kv_lora_rank <= 0)
    return false;
  auto since = model::mla_latent_cache_since(arch.hf_model_type);
  return since && model::transformers_at_least(transformers_version, *since);
}

bool kv_windows_apply(const Dims &d, const std::string &transformers_version) {
  return d.sliding_layers > 0 && d.sliding_window > 0 &&
         model::transformers_at_least(transformers_version, model::kv_window_since());
}

double kv_cache_layer_tokens(const Dims &d, double prompt, double new_tokens, bool windows) {
  const double layers = static_cast<double>(d.layers + d.decoder_layers);
  const double tokens = prompt + new_tokens;
  if (!windows || d.sliding_layers <= 0)
    return layers * tokens;
  const double sliding = static_cast<double>(std::min(d.sliding_layers, d.layers));
  const double after_decoding = (layers - sliding) * tokens +
                                sliding * std::min(tokens, static_cast<double>(d.sliding_window));
  return std::max(layers * prompt, after_decoding);
}

double transformer_layer_activation_bytes(const Dims &d, double s, double b, double ab, int tp,
                                          Attention attention, bool training, bool autocast) {
  LayerOptions o;
  o.attention = attention;
  o.training = training;
  o.autocast = autocast;
  auto p = layer_parts(d, s, b, ab, o);
  return p.replicated + (p.sharded + p.scores) / tp;
}

MemoryEstimate estimate_memory(const ModelInput &model, const Run &run, const GpuTarget &gpu) {
  MemoryEstimate e;
  const auto &arch = model.arch;
  const Dims d = dims_of(arch);
  const bool transformer = is_transformer(arch.family);
  const double P = static_cast<double>(model.params);
  const double shard = static_cast<double>(run.tp) * run.pp;
  const double p_gpu = P / shard;
  const double ab = full32(run.precision) ? 4 : 2; // bytes per stored activation element
  const double b = static_cast<double>(run.batch);
  const double s = static_cast<double>(run.seq);

  double weights = 0, cache = 0, grads = 0, opt = 0, temp = 0, acts = 0, kv = 0;
  // Gradients that exist when backward starts, and those backward has made by its peak.
  double grads_held = 0, grads_made = 0;
  // bitsandbytes' share (--quant, --qlora): the weights it quantises on this GPU.
  const bool bnb_run = (run.quant != Quant::none || run.qlora) && !arch.stored_quant;
  const double qparams = bnb_run ? quantized_params(model, run) / shard : 0;
  if (bnb_run) {
    const auto bnb = bnb_linears(arch, run.transformers_version);
    if (bnb.moe_kept > 0) {
      const auto moe = model::moe_linears(arch.hf_model_type, run.transformers_version);
      e.notes.push_back(fmt::format(
          "bitsandbytes replaces nn.Linear modules only: transformers {} builds {}'s {} as "
          "parameters, so their {} weights stay 16-bit ({} of {} parameters quantised)",
          run.transformers_version.empty() ? "(version not known, --transformers VERSION; taken "
                                             "as the newest)"
                                           : run.transformers_version,
          arch.display_name,
          !moe.experts && !moe.router ? "routed experts and routers"
          : !moe.experts              ? "routed experts"
                                      : "MoE routers",
          group_digits(bnb.moe_kept), group_digits(std::llround(qparams * shard)),
          group_digits(model.params)));
    }
  }

  if (run.mode == Mode::train) {
    const double k = optimizer_state_bytes(run.optimizer, adafactor_bytes_per_param(model, d));
    const double live_unit = run.strategy == Strategy::fsdp
                                 ? static_cast<double>(layer_params(d))
                                 : static_cast<double>(largest_layer_params(arch, d));
    if (run.lora()) {
      // Frozen base in 16-bit (or NF4 + double quantisation for QLoRA on the nn.Linear weights),
      // adapters r x (d_in + d_out) on the target linears trained in fp32 with their own
      // gradients and optimizer states (memory.md §1.7).
      const double adapters = lora_adapter_params(arch, d, run) / shard;
      const double base_bytes = full32(run.precision) ? 4 : 2;
      double base = arch.stored_quant ? stored_weights(model, d, shard, base_bytes)
                    : run.qlora       ? qparams * kNf4DqBytes + (p_gpu - qparams) * base_bytes
                                      : p_gpu * base_bytes;
      if (run.strategy == Strategy::zero3 || run.strategy == Strategy::fsdp)
        base /= run.dp();
      weights = base + adapters * 4;
      grads = adapters * 4;
      opt = adapters * k;
      const double r = run.lora_rank > 0 ? run.lora_rank : 8;
      temp = adam_step_temp(
          run, adapters, r * static_cast<double>(std::max({d.hidden, d.intermediate, d.q_dim})), 4);
      const bool unet = arch.family == model::ModelFamily::unet;
      std::string targets;
      for (const auto &m : run.lora_modules)
        targets += (targets.empty() ? "" : ", ") + m;
      e.notes.push_back(run.lora_targets == LoraTargets::all_linear
                            ? "LoRA adapters on every linear layer but the output head"
                        : run.lora_targets == LoraTargets::custom
                            ? "LoRA adapters on the " + targets + " projections"
                        : unet ? "LoRA adapters on the attention blocks' to_q, to_k, to_v and "
                                 "to_out (diffusers' LoRA training default)"
                               : "LoRA adapters on the query and value projections (PEFT's "
                                 "default)");
      if (transformer)
        e.notes.push_back("frozen linears without an adapter keep no input for backward: only "
                          "the adapted linears' inputs and the adapters' r-wide outputs are saved");
    } else {
      auto st = full_states(p_gpu, live_unit / shard, run, k,
                            static_cast<double>(largest_layer_params(arch, d)) / shard);
      weights = st.weights + st.live;
      cache = st.cache;
      grads = st.gradients;
      opt = st.optimizer;
      temp = st.step_temp;
      e.host_bytes = static_cast<std::uint64_t>(st.host);
    }

    if (run.optimizer_in_backward) {
      // torchtune's optimizer_in_bwd: a hook steps each parameter as soon as backward makes its
      // gradient and frees it, so one parameter's gradient (and step temporaries) exists at a
      // time and no phase holds every gradient (pytorch/torchtune recipes: "True saves memory.
      // Requires gradient_accumulation_steps=1").
      const double r = run.lora_rank > 0 ? run.lora_rank : 8;
      const double largest =
          run.lora() ? r * static_cast<double>(std::max({d.hidden, d.intermediate, d.q_dim}))
                     : static_cast<double>(largest_layer_params(arch, d)) / shard;
      const double trained = run.lora() ? lora_adapter_params(arch, d, run) / shard : p_gpu;
      const double frac = trained > 0 ? std::min(1.0, largest / trained) : 1.0;
      grads *= frac;
      if (run.optimizer_impl.value_or(OptimizerImpl::foreach) != OptimizerImpl::loop)
        temp *= frac;
      e.notes.push_back("optimizer step fused into backward: one parameter's gradient exists at "
                        "a time");
    }
    if (run.paged_optimizer) {
      // bitsandbytes' paged optimizers allocate their states in CUDA unified memory
      // (cudaMallocManaged), outside PyTorch's allocator: the driver pages them to host memory
      // when the GPU runs short instead of failing (QLoRA paper §3; bitsandbytes docs, "Paged
      // optimizers"). Their 8-bit and 32-bit steps are fused kernels without temporaries.
      e.paged_bytes = static_cast<std::uint64_t>(opt);
      opt = 0;
      temp = 0;
      e.notes.push_back("paged optimizer: its states are in CUDA unified memory (shown apart, not "
                        "in the totals): on the GPU while there is room, paged to the host, at a "
                        "speed cost, when there is not");
    }

    // Gradients that exist before backward starts: those accumulated over earlier micro-batches,
    // ZeRO-2/3's and FSDP's gradient partitions (allocated ahead), DDP's bucket copies; otherwise
    // none. A UNet is counted with every gradient (no per-block walk of its weights yet: an upper
    // bound).
    const bool sharded_grads = run.strategy == Strategy::zero2 || run.strategy == Strategy::zero3 ||
                               run.strategy == Strategy::fsdp;
    // PyTorch before 2.0 zeroed gradients in place (zero_grad(set_to_none=False) was the default
    // until torch 2.0, pytorch/pytorch#92731): every gradient is held through forward/backward.
    const bool kept_zeroed =
        !run.torch_version.empty() && compare_versions(run.torch_version, "2.0") < 0;
    if (run.grad_accum > 1 || sharded_grads || kept_zeroed ||
        arch.family == model::ModelFamily::unet)
      grads_held = grads;
    else if (run.strategy == Strategy::ddp && run.dp() > 1 && !run.lora() &&
             !run.gradient_as_bucket_view)
      grads_held = grads / 2;
    if (run.optimizer_in_backward) {
      grads_held = 0;
      grads_made = grads;
    }
    if (kept_zeroed && !(run.grad_accum > 1 || sharded_grads))
      e.notes.push_back("PyTorch " + run.torch_version +
                        ": zero_grad() zeroes the gradients instead of freeing them (set_to_none "
                        "became the default in 2.0), so they are held through forward/backward");

    if (transformer) {
      // Pipeline: the first stage holds its L/p layers for min(p, micro-batches) micro-batches
      // in flight (1F1B; memory.md §1.4, Megatron).
      const double in_flight = std::min<double>(run.pp, static_cast<double>(run.grad_accum));
      const double layers_enc = static_cast<double>(d.layers) / run.pp;
      const double layers_dec = static_cast<double>(d.decoder_layers) / run.pp;
      // Selective recompute keeps Q, K, V and recomputes the attention core (Korthikanti §5): no
      // s^2 scores, no saved kernel output, as with flash-attention.
      const Attention att =
          run.checkpointing == Checkpointing::selective ? Attention::flash : run.attention;
      // DeepSpeed's fp16/bf16 modes run a 16-bit model without autocast.
      LayerOptions lo;
      lo.attention = att;
      lo.autocast = mixed(run.precision) && !is_zero(run.strategy);
      lo.fp32_stream = lo.autocast && !run.lora();
      lo.inputs = lora_inputs(arch, run);
      const SdpaSaved sdpa = sdpa_saved(arch, d, run, gpu);
      lo.sdpa_output_is_o_input = sdpa.output_is_o_input;
      lo.sdpa_grouped_kv = sdpa.grouped_kv;
      auto one = layer_parts(d, s, b, ab, lo);
      double per_layer = one.replicated + (one.sharded + one.scores) / run.tp;
      LayerOptions lc = lo;
      lc.cross_attention = true;
      auto cross = layer_parts(d, s, b, ab, lc);
      double per_dec_layer = cross.replicated + (cross.sharded + cross.scores) / run.tp;
      // What the layers keep, and what one layer (or checkpoint) keeps: with activation
      // offloading (torchtune's OffloadActivations) the saved tensors go to pinned host memory as
      // forward makes them and come back one layer ahead of backward, so the GPU holds about two
      // layers' worth (the one in use and the one being copied).
      double kept = 0, one_layer = 0, working = 0;
      if (run.checkpointing == Checkpointing::full) {
        // Only each layer's input is kept (Korthikanti: 2sbh at 16-bit), plus one layer's full
        // working set while it is recomputed during backward (memory.md §1.10).
        LayerOptions lf = lo;
        lf.attention = run.attention;
        auto full_one = layer_parts(d, s, b, ab, lf);
        working = full_one.replicated + (full_one.sharded + full_one.scores) / run.tp;
        one_layer = ab * s * b * static_cast<double>(d.hidden);
        kept = in_flight * (layers_enc + layers_dec) * one_layer;
      } else {
        one_layer = std::max(per_layer, layers_dec > 0 ? per_dec_layer : 0.0);
        kept = in_flight * (layers_enc * per_layer + layers_dec * per_dec_layer);
      }
      if (run.activation_offload) {
        const double on_gpu = std::min(kept, 2 * one_layer);
        e.host_bytes += static_cast<std::uint64_t>(kept - on_gpu);
        kept = on_gpu;
        e.notes.push_back("activation offloading: the layers' saved tensors live in host memory "
                          "(counted in host memory); two layers' worth stay on the GPU");
      }
      acts = kept + working;
      if (!sdpa.since.empty() && att == Attention::sdpa) {
        const double heads = static_cast<double>(d.heads);
        const double kv_heads =
            heads * static_cast<double>(d.kv_dim) / static_cast<double>(d.q_dim);
        if (sdpa.grouped_kv) {
          LayerOptions rep = lo;
          rep.sdpa_grouped_kv = false;
          const double extra =
              (layer_parts(d, s, b, ab, rep).sharded - one.sharded) / run.tp *
              (run.checkpointing == Checkpointing::full ? 1 : in_flight * layers_enc);
          const std::string version =
              run.transformers_version.empty()
                  ? fmt::format("transformers' version is not known (--transformers VERSION), "
                                "taken as >= {}: an older one or padded batches repeat them",
                                sdpa.since)
                  : fmt::format("transformers {}; padded batches repeat them",
                                run.transformers_version);
          e.notes.push_back(fmt::format(
              "SDPA with grouped K/V: K and V saved at their {:g} heads, not repeated to all {:g} "
              "(transformers >= {} with torch >= 2.5 passes enable_gqa=True when it builds no "
              "attention mask: causal training without padding); {} (+{:.2f} GiB)",
              kv_heads, heads, sdpa.since, version, extra / kGiB));
        } else if (!sdpa.not_grouped.empty()) {
          e.notes.push_back(fmt::format("SDPA with grouped K/V: K and V counted repeated to the "
                                        "{:g} query heads: {}",
                                        heads, sdpa.not_grouped));
        }
      }
      acts += 8 * s * b; // int64 token ids
      if (d.embed_dropout)
        acts += s * b * static_cast<double>(d.hidden); // embedding dropout mask
      if (run.pp == 1 && d.logits > 0)                 // the head's logits (vocabulary or labels)
        acts += loss_bytes(run, d, b * s, ab);
      if (arch.family == model::ModelFamily::encoder && arch.patch_size > 0)
        acts += 3.0 * static_cast<double>(run.image_size * run.image_size) * b * ab;
    } else if (arch.family == model::ModelFamily::cnn) {
      auto peak = cnn_backward_peak(arch, static_cast<double>(run.image_size), b, ab,
                                    P > 0 ? (grads - grads_held) / P : 0,
                                    run.checkpointing == Checkpointing::full);
      acts = peak.activations;
      grads_made = peak.gradients;
    } else if (auto u = unet_cost(arch, run.image_size)) {
      const bool eager = run.attention == Attention::eager;
      if (run.checkpointing == Checkpointing::full)
        acts = (u->ckpt_elements + u->ckpt_working + (eager ? u->ckpt_working_scores : 0)) * ab * b;
      else
        acts = (u->saved_elements + (eager ? u->score_elements : 0)) * ab * b;
      e.notes.push_back("UNet only: the VAE and text encoder are not counted (frozen, or their "
                        "outputs precomputed)");
    }
  } else {
    // Serving: weights at the precision (or int8 / int4 on nn.Linear weights), the KV cache for
    // every request's prompt + new tokens, one layer's working set at prefill and the logits.
    const double wb = bytes_per_weight_infer(run.precision);
    if (arch.stored_quant)
      weights = stored_weights(model, d, shard, 2);
    else if (run.quant != Quant::none)
      weights = bnb_serving_bytes(p_gpu, qparams, run.quant);
    else
      weights = p_gpu * wb;
    const double seqs = b * static_cast<double>(run.concurrency);
    if (transformer) {
      const double kv_elem = full32(run.precision) ? 4 : 2;
      const bool windows = kv_windows_apply(d, run.transformers_version);
      const double slots =
          kv_cache_layer_tokens(d, s, static_cast<double>(run.max_tokens), windows);
      // One token of one layer: K and V (kv_bytes_per_token's share of a layer), or the latent
      // and the rotary key where transformers caches DeepSeek's latent.
      const bool latent_cache = mla_latent_cache(arch, run.transformers_version);
      const std::int64_t latent = arch.kv_lora_rank + arch.qk_rope_dim;
      const std::int64_t expanded = arch.heads * (arch.head_dim + arch.v_head_dim);
      const double slot_bytes = latent_cache ? static_cast<double>(latent) * kv_elem
                                             : static_cast<double>(kv_bytes_per_token(d, kv_elem)) /
                                                   static_cast<double>(d.layers + d.decoder_layers);
      double mla_expand = 0;
      if (latent_cache) {
        // Each forward expands the whole cached context of one layer at a time: kv_b_proj's
        // output (heads x (nope + v)) and the assembled keys (heads x (nope + rope)).
        mla_expand = static_cast<double>(arch.heads) *
                     static_cast<double>(2 * arch.head_dim - arch.qk_rope_dim + arch.v_head_dim) *
                     (s + static_cast<double>(run.max_tokens)) * seqs * ab / run.tp;
        e.notes.push_back(fmt::format(
            "KV cache: DeepSeek's latent attention caches its {}-value latent per token and "
            "layer (transformers from {}; before it every head's key and value, {} values) and "
            "expands one layer's whole context at each step ({} counted in activations)",
            latent, *model::mla_latent_cache_since(arch.hf_model_type), expanded,
            mla_expand >= 1e9 ? fmt::format("{:.1f} GB", mla_expand / 1e9)
                              : fmt::format("{:.1f} MB", mla_expand / 1e6)));
      } else if (arch.kv_lora_rank > 0) {
        e.notes.push_back(fmt::format(
            "KV cache: transformers {}keeps every head's key and value of DeepSeek's latent "
            "attention ({} values per token and layer); from {} it caches the {}-value latent",
            run.transformers_version.empty() ? "" : run.transformers_version + " ", expanded,
            model::mla_latent_cache_since(arch.hf_model_type).value_or("a later release"), latent));
      }
      if (windows && d.chunked_layers > 0)
        e.notes.push_back(fmt::format(
            "KV cache: {} of {} layers attend within chunks of {} tokens (chunked attention) and "
            "keep the last {} as transformers' DynamicCache from {} caches them, as a sliding "
            "window{}; right after prefill they still hold the whole prompt",
            d.chunked_layers, d.layers, d.sliding_window, d.sliding_window,
            model::kv_window_since(),
            d.sliding_layers > d.chunked_layers
                ? fmt::format(" (and {} sliding-window layers the same)",
                              d.sliding_layers - d.chunked_layers)
                : ""));
      else if (windows)
        e.notes.push_back(fmt::format(
            "KV cache: {} of {} layers keep a sliding window of {} tokens (transformers' "
            "DynamicCache from {}); right after prefill they still hold the whole prompt",
            d.sliding_layers, d.layers, d.sliding_window, model::kv_window_since()));
      else if (d.sliding_layers > 0)
        e.notes.push_back(fmt::format(
            "KV cache: every layer keeps every token with transformers {} (the {} sliding-window "
            "layers keep only their window from {})",
            run.transformers_version, d.sliding_layers, model::kv_window_since()));
      kv = slot_bytes * slots * seqs / shard;
      LayerOptions lo;
      lo.attention = run.attention;
      lo.training = false;
      auto one = layer_parts(d, s, seqs, ab, lo);
      acts = one.replicated + (one.sharded + one.scores) / run.tp;
      acts += 4 * seqs * static_cast<double>(d.logits) / run.tp; // fp32 logits, last position
      acts += mla_expand;
    } else if (arch.family == model::ModelFamily::cnn) {
      // No graph is kept: the largest layer's input and output at once.
      double best = 0;
      if (auto modules = model::walk_shared(arch, run.image_size))
        for (const auto &r : **modules)
          best = std::max(best, static_cast<double>(r.output.elements()));
      acts = 2 * best * seqs * ab;
    } else if (auto u = unet_cost(arch, run.image_size)) {
      acts = (u->infer_elements + (run.attention == Attention::eager ? u->infer_scores : 0)) * ab *
             seqs;
    }
  }

  weights += buffer_bytes(arch);

  // The peak phase: forward/backward holds activations, autocast's weight copies and the
  // gradients that exist by then; the optimizer step holds every gradient and the step's
  // temporaries instead (memory.md §1.12). The end of backward (every gradient, no activation)
  // is never above the step.
  const double fwd = weights + cache + grads_held + grads_made + opt + acts + kv;
  const double step = weights + grads + opt + temp;
  if (run.mode == Mode::infer) {
    e.peak_phase = run.max_tokens > 0 ? "prefill + full KV cache" : "prefill";
  } else if (step > fwd) {
    e.peak_phase = "optimizer step";
    opt += temp;
    acts = 0;
    cache = 0;
  } else {
    e.peak_phase = "forward/backward";
    weights += cache;
    if (grads_held + grads_made < grads)
      e.notes.push_back(
          "at this peak only part of the gradients exists: backward makes them as it frees "
          "activations (zero_grad(set_to_none=True), PyTorch's default since 2.0)");
    grads = grads_held + grads_made;
  }
  auto u = [](double v) { return static_cast<std::uint64_t>(std::llround(std::max(0.0, v))); };
  e.weights = u(weights);
  e.gradients = u(grads);
  e.optimizer = u(opt);
  e.activations = u(acts);
  e.kv_cache = u(kv);

  const int cc = gpu.cc_major();
  const bool hopper = cc >= 9;
  e.overhead_parts.push_back(
      {"cuBLAS workspace", u(hopper ? kCublasHopper : kCublasPreHopper), Level::allocated});
  double lt =
      hopper ? 32 * kMiB
             : (cc == 8 && gpu.memory_bytes && *gpu.memory_bytes >= 24e9 ? 4 * kMiB : 1 * kMiB);
  e.overhead_parts.push_back({"cuBLASLt workspace", u(lt), Level::allocated});
  if (run.mode == Mode::train && is_zero(run.strategy) && !run.lora()) {
    // DeepSpeed's own buffers (deepspeed/runtime/zero/stage_1_and_2.py, stage3.py; sizes from
    // the ZeRO config, defaults in deepspeed/runtime/zero/config.py): the gradient reduce bucket
    // (contiguous_gradients, the default: reduce_bucket_size 16-bit elements allocated at every
    // backward), the all-gather bucket of the updated partitions (stages 1-2,
    // allgather_bucket_size), and stage 3's prefetched parameters (stage3_prefetch_bucket_size
    // beyond the layer in use, at most stage3_max_live_parameters gathered).
    const double eb = full32(run.precision) ? 4 : 2;
    e.overhead_parts.push_back(
        {"ZeRO reduce bucket", u(run.reduce_bucket_size * eb), Level::allocated});
    if (run.strategy == Strategy::zero3) {
      const double live = static_cast<double>(largest_layer_params(arch, d)) / shard;
      const double prefetch =
          std::max(0.0, std::min({run.stage3_prefetch_bucket_size,
                                  run.stage3_max_live_parameters - live, p_gpu - live}));
      e.overhead_parts.push_back(
          {"ZeRO-3 prefetched parameters", u(prefetch * eb), Level::allocated});
    } else {
      e.overhead_parts.push_back({"ZeRO all-gather bucket",
                                  u(std::min(run.allgather_bucket_size, p_gpu) * eb),
                                  Level::allocated});
    }
  }
  double allocated = e.weights + e.gradients + e.optimizer + e.activations + e.kv_cache;
  for (const auto &o : e.overhead_parts)
    allocated += static_cast<double>(o.bytes);
  // Serving allocates the weights once; the caching allocator's churn is in the activations and
  // the growing KV cache, so the margin applies to those alone there.
  const double churn =
      run.mode == Mode::infer ? static_cast<double>(e.activations + e.kv_cache) : allocated;
  e.overhead_parts.push_back(
      {"allocator rounding and fragmentation", u(churn * kFragmentation), Level::reserved});
  const auto context = cuda_context(run, gpu);
  e.overhead_parts.push_back({context.lazy ? "CUDA context" : "CUDA context (eager module loading)",
                              u(context.bytes), Level::device});
  if (run.world() > 1)
    e.overhead_parts.push_back({"NCCL / torch.distributed", u(kNcclInit), Level::device});

  e.allocated = u(allocated);
  std::uint64_t reserved = e.allocated, device = 0;
  for (const auto &o : e.overhead_parts) {
    e.overhead += o.bytes;
    if (o.level == Level::reserved)
      reserved += o.bytes;
    if (o.level == Level::device)
      device += o.bytes;
  }
  e.reserved = reserved;
  e.device = reserved + device;
  return e;
}

} // namespace dlrig::fit

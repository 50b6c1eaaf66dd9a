#pragma once
// What the user wants to run: training or serving, batch, sequence, precision, optimizer,
// parallelism. Plain values; validate_run (fit.hpp) checks them against a model.
#include "dlrig/core/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::fit {

enum class Mode { train, infer };
enum class Precision { fp32, tf32, fp16_amp, bf16_amp, bf16, fp8 };
enum class Optimizer { sgd, sgd_momentum, adam, adamw, adamw_8bit, adafactor, lion };
enum class Checkpointing { none, selective, full };
enum class Strategy { ddp, zero1, zero2, zero3, fsdp };
enum class Offload { none, optimizer, params };
enum class Attention { eager, sdpa, flash };
enum class Quant { none, int8, int4 };
// The kernels the training code runs: eager PyTorch and transformers (each element-wise operation
// its own kernel, the foreach optimizer) or fused ones (Megatron-LM / Transformer Engine /
// torch.compile: one kernel per norm, activation and loss, a fused optimizer). Time model only.
enum class Kernels { eager, fused };
// The linear layers LoRA adapts: PEFT's default for the model type (query and value; GPT-2's fused
// c_attn, Phi-3's qkv_proj), every nn.Linear but the output head (PEFT's "all-linear"), or the
// roles listed in Run::lora_modules (custom: "q,v,o,gate,up,down").
enum class LoraTargets { qv, all_linear, custom };
// How the causal-LM loss is computed: transformers' standard (fp32 logits of b x s x V), fused
// linear + cross-entropy (Liger-Kernel, Cut-CE: no b x s x V tensor), or torchtune's chunked
// output loss (the upcast and cross-entropy one chunk at a time).
enum class Loss { standard, fused, chunked };
// PyTorch's Adam/AdamW implementation: foreach (multi-tensor; the default on CUDA since 2.0),
// fused (one kernel), loop (single-tensor; the default before 2.0).
enum class OptimizerImpl { foreach, fused, loop };

struct Run {
  Mode mode = Mode::train;
  std::int64_t batch = 1;      // micro-batch per data-parallel rank (samples or sequences)
  std::int64_t seq = 0;        // tokens per sample; 0 = the model's default (resolve_defaults)
  std::int64_t image_size = 0; // CNN / ViT / UNet input side in pixels; 0 = the model's default
  Precision precision = Precision::bf16_amp;
  Optimizer optimizer = Optimizer::adamw;
  Checkpointing checkpointing = Checkpointing::none;
  std::int64_t grad_accum = 1; // micro-batches per optimizer step
  int gpus = 1;                // GPUs per node
  int nodes = 1;
  Strategy strategy = Strategy::ddp;
  int tp = 1;
  int pp = 1;
  Offload offload = Offload::none;
  int lora_rank = 0; // 0 = full fine-tuning
  bool qlora = false;
  LoraTargets lora_targets = LoraTargets::qv;
  // With LoraTargets::custom: the roles adapted, from q, k, v, o, gate, up, down (a fused qkv or
  // gate_up module is adapted when one of its parts is listed; T5's cross-attention too).
  std::vector<std::string> lora_modules;
  // --attention; when not given (attention_given false) resolve_run runs what transformers picks
  // for the model (SDPA, or eager where the class cannot run SDPA: Gemma 2, gpt-oss).
  Attention attention = Attention::sdpa;
  bool attention_given = false;
  Quant quant = Quant::none;
  Kernels kernels = Kernels::eager;
  std::int64_t max_tokens = 0;  // serving: new tokens generated per request
  std::int64_t concurrency = 1; // serving: requests in flight (each of --batch sequences)
  std::optional<double> dataset_tokens;
  std::optional<double> samples;
  double epochs = 0;              // 0 = not given (no total time)
  double network_bytes_per_s = 0; // between nodes, per GPU per direction; 0 = unknown

  Loss loss = Loss::standard;
  // nullopt: the default of the PyTorch version (resolve_run fills it).
  std::optional<OptimizerImpl> optimizer_impl;
  bool optimizer_in_backward = false;   // torchtune's optimizer_in_bwd: each gradient freed at once
  bool paged_optimizer = false;         // bitsandbytes' paged optimizers (CUDA unified memory)
  bool activation_offload = false;      // torchtune's enable_activation_offloading
  bool gradient_as_bucket_view = false; // DDP(gradient_as_bucket_view=True)
  // CNNs: activations in NHWC (model.to(memory_format=torch.channels_last)); PyTorch's default is
  // NCHW, which cuDNN transposes around every tensor-core convolution. Time model only.
  bool channels_last = false;
  // DeepSpeed ZeRO buffer sizes in elements (deepspeed/runtime/zero/config.py defaults).
  double reduce_bucket_size = 5e8;
  double allgather_bucket_size = 5e8;
  double stage3_prefetch_bucket_size = 5e7;
  double stage3_max_live_parameters = 1e9;
  // The software stack: PyTorch and CUDA versions ("2.5.1", "12.4"; empty = unknown, taken as a
  // current release) and CUDA_MODULE_LOADING as set ("LAZY", "EAGER"; empty = not set).
  std::string torch_version, cuda_version, module_loading;
  // transformers' version ("4.46.3"; empty = unknown, taken as a release with the paths a current
  // one takes, and said in a note where it matters).
  std::string transformers_version;

  int world() const { return gpus * nodes; }
  int dp() const { return world() / (tp * pp); }
  bool lora() const { return lora_rank > 0 || qlora; }
};

// Names as the command line spells them ("bf16-amp", "sgd-momentum", "zero3"...).
std::string_view name(Mode v);
std::string_view name(Precision v);
std::string_view name(Optimizer v);
std::string_view name(Checkpointing v);
std::string_view name(Strategy v);
std::string_view name(Offload v);
std::string_view name(Attention v);
std::string_view name(Quant v);
std::string_view name(LoraTargets v);
std::string_view name(Kernels v);
std::string_view name(Loss v);
std::string_view name(OptimizerImpl v);

// Parsers for the command line; the error lists the accepted names.
Result<Mode> parse_mode(std::string_view s);
Result<Precision> parse_precision(std::string_view s);
Result<Optimizer> parse_optimizer(std::string_view s);
Result<Checkpointing> parse_checkpointing(std::string_view s);
Result<Strategy> parse_strategy(std::string_view s);
Result<Offload> parse_offload(std::string_view s);
Result<Attention> parse_attention(std::string_view s);
Result<Quant> parse_quant(std::string_view s);
Result<LoraTargets> parse_lora_targets(std::string_view s);
Result<Kernels> parse_kernels(std::string_view s);
Result<Loss> parse_loss(std::string_view s);
Result<OptimizerImpl> parse_optimizer_impl(std::string_view s);
// --lora-targets as given: qv, all-linear, or a comma-separated list of roles (q, k, v, o, gate,
// up, down; PEFT's module names q_proj ... down_proj are accepted too) -> custom.
Result<LoraTargets> parse_lora_targets(std::string_view s, std::vector<std::string> &modules);

// All accepted names of an enum (for --help and suggestions).
template <class E> std::vector<std::string_view> names();

} // namespace dlrig::fit

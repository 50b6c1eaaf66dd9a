#pragma once
// The memory model: per-GPU peak bytes of a run, by component, at the level each is counted.
// Every formula and constant is in docs/fit.md, whose table maps "memory.md §x" to public URLs.
#include "dlrig/fit/model_input.hpp"
#include "dlrig/fit/run.hpp"
#include "dlrig/model/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::fit {

// Where a number is counted:
//  allocated: live tensors (torch.cuda.max_memory_allocated);
//  reserved:  the caching allocator's segments (torch.cuda.max_memory_reserved) >= allocated;
//  device:    what nvidia-smi / NVML shows used: reserved + CUDA context + NCCL buffers.
// An out-of-memory error happens when the device level passes the GPU's memory, so the verdict is
// judged there.
enum class Level { allocated, reserved, device };
std::string_view level_name(Level l);

// The GPU a run is sized for. Unknown figures are nullopt.
struct GpuTarget {
  std::string name;
  std::optional<std::uint64_t> memory_bytes;
  std::string compute_capability; // "8.9"; empty when unknown
  std::optional<double> fp32_flops, tf32_flops, fp16_flops, bf16_flops, fp8_flops;
  std::optional<double> memory_bandwidth_bytes_per_s;
  std::string origin; // "catalog" | "this machine (NVML)" ...
  // For the time model.
  std::string architecture;                 // "Hopper (GH100)"
  std::string form_factor;                  // desktop | workstation | pcie-server | sxm | embedded
  std::optional<int> pcie_gen, pcie_lanes;  // the host link (this machine's current one, else spec)
  std::optional<double> nvlink_bytes_per_s; // bidirectional per GPU, as NVIDIA quotes it
  std::optional<double> host_link_bytes_per_s; // measured or known host-to-device rate (an eGPU
                                               // tunnel); nullopt: from pcie_gen x pcie_lanes
  std::string host_link;                       // "PCIe 4.0 x16", "Thunderbolt 3"
  int cc_major() const;
};

struct OverheadPart {
  std::string name; // "CUDA context", "cuBLAS workspace"...
  std::uint64_t bytes = 0;
  Level level = Level::allocated;
};

struct MemoryEstimate {
  // The peak phase's components, per GPU, in bytes (allocated level).
  std::uint64_t weights = 0;
  std::uint64_t gradients = 0;
  std::uint64_t optimizer = 0;
  std::uint64_t activations = 0;
  std::uint64_t kv_cache = 0;
  std::vector<OverheadPart> overhead_parts;
  std::uint64_t overhead = 0; // sum of overhead_parts

  std::uint64_t allocated = 0;  // peak allocated
  std::uint64_t reserved = 0;   // peak reserved
  std::uint64_t device = 0;     // as nvidia-smi shows it: the level the verdict is judged at
  std::string peak_phase;       // "forward/backward" | "optimizer step" | "prefill" | "decode"
  std::uint64_t host_bytes = 0; // CPU memory held for offloaded states and activations
  // Optimizer states in CUDA unified memory (bitsandbytes' paged optimizers): on the GPU while
  // there is room, paged to the host under pressure instead of failing; not in the totals.
  std::uint64_t paged_bytes = 0;
  std::vector<std::string> notes;
};

// The ZeRO paper's model-state bytes per device for mixed-precision training (memory.md §1.5):
// (2 + 2 + K)Psi at stage 0, 2Psi + 2Psi + K Psi/N at stage 1, 2Psi + (2 + K)Psi/N at 2,
// (2 + 2 + K)Psi/N at 3.
double zero_model_states(double params, int stage, double dp, double k = 12);

// Bytes per quantised nn.Linear weight of a checkpoint stored as `q` (config.json's
// quantization_config): GPTQ and AWQ pack `bits`-bit weights into int32 with one fp16 scale and
// one packed zero point per group; compressed-tensors one 16-bit scale per group; bitsandbytes
// 4-bit as QLoRA's figures (memory.md §1.7), 8-bit and FP8 one byte. nullopt for a method dlrig
// does not know (bits 0): only the checkpoint's header says.
std::optional<double> stored_bytes_per_weight(const model::StoredQuant &q);

// What DeepSpeed's ZeRO allocates per GPU for model states in mixed precision with Adam,
// as its estimators count it (memory.md §1.2): fp16 params, gradients, fp32 master + Adam
// (optimizer) and the fp32 gradient partition of the step, on the GPU; the rest on the host.
struct ModelStates {
  double weights = 0, gradients = 0, optimizer = 0, step_temp = 0, live = 0; // GPU bytes
  double host = 0;                                                           // CPU bytes
  double gpu() const { return weights + gradients + optimizer + step_temp + live; }
};
ModelStates deepspeed_model_states(double params, double largest_layer_params, int stage, int gpus,
                                   int gpus_per_node, Offload offload);

// What `accelerate estimate-memory` prints for a model (memory.md §1.1), for comparison with
// dlrig's estimate: parameters and buffers counted in fp32 and divided by 2, 4 or 8 for float16,
// int8 and int4; the largest unit it would not split (an HF model's `_no_split_modules`: a BERT
// embeddings module or one transformer layer; for a CNN the largest leaf module); "Training using
// Adam" as its docs table prints it (4 x the row's total, the code before accelerate#2581) and as
// its code prints it now (the largest of model, gradients, optimizer and step: 4 x the fp32 total
// for float32, 2 x for 16-bit, none for int8/int4). Bytes; accelerate prints them / 2^20 or 2^30
// labelled "MB"/"GB". No batch, no activations, no CUDA context. Empty for a UNet (accelerate
// builds transformers and timm models only).
struct AccelerateRow {
  std::string dtype; // float32 | float16 | int8 | int4
  double largest_layer = 0, total = 0;
  double training_docs = 0;
  std::optional<double> training; // nullopt: accelerate prints "N/A"
};
std::vector<AccelerateRow> accelerate_rows(const ModelInput &model);

// Korthikanti et al. 2022 Table 2, bytes of activations per transformer layer with 16-bit
// activations and 1-byte dropout masks (memory.md §1.4).
enum class KorthikantiCase {
  none,
  tensor_parallel,
  tp_sequence_parallel,
  tp_selective,
  tp_sp_selective,
  full
};
double korthikanti_layer_bytes(KorthikantiCase c, double s, double b, double h, double a, double t);

// KV cache bytes per token of one sequence: 2 x L x kv_heads x head_dim x bytes (memory.md §1.6).
std::uint64_t kv_bytes_per_token(const Dims &d, double bytes_per_element);

// Whether this run's transformers caches DeepSeek's compressed latent (model::
// mla_latent_cache_since; an unknown release is a current one) rather than every head's K and V.
bool mla_latent_cache(const model::ModelArch &arch, const std::string &transformers_version);

// A linear that quantisers leave 16-bit in a checkpoint stored quantised (GPTQ, AWQ...): the
// output head, pooler, classification and masked-LM heads' linears, the MoE router.
bool stored_unpacked(const model::LinearShape &l);

// PEFT's LoRA adapter on one linear of model::linear_layers: its rank as a multiple of r (0: no
// adapter) and the in + out it spans. PEFT wraps nn.Linear modules (all-linear: every one but the
// output head; dlrig leaves classification heads out, as PEFT's SEQ_CLS task does); fused experts
// and routers that transformers builds as parameters get none, except for the types
// model::MoeLinears::peft_target_parameters names under all-linear: the router at r, each expert's
// fused gate_up_proj at 2r over in + 2 x intermediate (listed on the gate; the up linear gets
// none), down_proj at r, and no adapter on the nn.Linear gate/up/down of shared experts and dense
// layers.
struct LoraAdapter {
  double rank = 0;
  double width = 0;
};
LoraAdapter lora_adapter(const Run &run, const model::LinearShape &l, const model::MoeLinears &moe);

// LoRA's adapter parameters on the whole model (--lora, --qlora; 0 without): r x (in + out) per
// adapted linear.
double adapter_params(const ModelInput &model, const Run &run);

// The weights --quant or --qlora quantises on the whole model (bnb_linears under the run's
// transformers; for --params N sized from a catalog model's shapes, the same share of N).
double quantized_params(const ModelInput &model, const Run &run);

// Serving weights under --quant int8 or int4 (bitsandbytes' LLM.int8() or load_in_4bit's FP4):
// `quantized` of the `params` at 1 byte or 4.5 bits, the rest at 16 bits.
double bnb_serving_bytes(double params, double quantized, Quant quant);

// Whether the KV cache of this run keeps sliding windows: the model has sliding layers and
// transformers is model::kv_window_since() or later (an unknown release is a current one).
bool kv_windows_apply(const Dims &d, const std::string &transformers_version);

// The KV cache's peak in token slots summed over the layers, serving `prompt` tokens and then
// `new_tokens` more (transformers' DynamicCache; data/model_types.json "kv_window"): right after
// prefill every layer holds the whole prompt (a sliding layer keeps its last window - 1 tokens as
// a view of the prompt's keys and values); after a decoding step a sliding layer holds
// min(tokens, window), the others every token. Without windows: every layer, every token.
double kv_cache_layer_tokens(const Dims &d, double prompt, double new_tokens, bool windows);

// Activation bytes of one transformer layer on one GPU, generalised from Korthikanti's count
// (see docs/fit.md): Q/K/V, attention output, MLP intermediates, norms, dropout masks, the s^2
// scores when attention is eager, TP sharding of the parts Megatron shards. autocast: PyTorch
// autocast (fp16-amp, bf16-amp), which keeps LayerNorm's saved input and the softmax in fp32.
double transformer_layer_activation_bytes(const Dims &d, double s, double b, double bytes, int tp,
                                          Attention attention, bool training,
                                          bool autocast = false);

// The CUDA context's size (nvidia-smi "used" beyond PyTorch's allocations) for the run's software
// stack (Run::torch_version, cuda_version, module_loading) on this GPU: the measured figure
// (memory.md §4.1) nearest to it, with lazy module loading from CUDA 11.7 and PyTorch 1.13 unless
// CUDA_MODULE_LOADING=EAGER. basis says which measurement.
struct CudaContext {
  double bytes = 0;
  bool lazy = true;
  std::string basis;
};
CudaContext cuda_context(const Run &run, const GpuTarget &gpu);

// The whole estimate. seq/image size must already be resolved (resolve_defaults in fit.hpp).
MemoryEstimate estimate_memory(const ModelInput &model, const Run &run, const GpuTarget &gpu);

} // namespace dlrig::fit

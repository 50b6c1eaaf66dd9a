#pragma once
// The model as the estimator sees it: the architecture (model::ModelArch), its parameter count, and
// the shapes the memory and FLOP formulas need, derived once.
#include "dlrig/core/result.hpp"
#include "dlrig/fit/safetensors.hpp"
#include "dlrig/model/model.hpp"
#include "dlrig/model/walk.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::fit {

// Transformer shapes (0 where the family has none).
struct Dims {
  std::int64_t hidden = 0; // h
  std::int64_t layers = 0; // L (encoder layers for T5)
  std::int64_t decoder_layers = 0;
  std::int64_t heads = 0;  // a (0 = unknown: no eager attention-score term possible)
  std::int64_t q_dim = 0;  // heads x head_dim
  std::int64_t kv_dim = 0; // kv_heads x head_dim
  // Layers whose KV cache keeps only the last sliding_window tokens (model::ModelArch).
  std::int64_t sliding_layers = 0, sliding_window = 0;
  std::int64_t chunked_layers = 0; // of sliding_layers: chunked attention (Llama 4)
  std::int64_t intermediate = 0;   // I
  std::int64_t vocab = 0;
  // Width of the logits the loss reads (model::logits_width): the vocabulary for an LM or
  // masked-LM head, the labels of a classifier, 0 for a base model without a head.
  std::int64_t logits = 0;
  std::int64_t experts = 0, experts_per_token = 0;
  bool gated = false; // SwiGLU/GeGLU MLP
  // Tensors of the MLP's width that the activation function saves beyond its input: 3 for
  // transformers' "gelu_new"/"gelu_fast" (a Python tanh formula: tanh, 0.5x and 1 + tanh are kept),
  // 0 for the fused gelu, silu and gelu_pytorch_tanh kernels.
  int act_extra = 0;
  // How many of the MLP's saved tensors are fp32 under CUDA autocast although the linear before
  // them returns 16 bits: transformers' "gelu_new" (NewGELUActivation) calls torch.pow, which
  // autocast runs in fp32 (https://docs.pytorch.org/docs/stable/amp.html, "CUDA Ops that can
  // autocast to float32"), so pow's input is saved as an fp32 copy and tanh's output and 1 + tanh
  // are promoted to fp32: 3. 0 for every other activation ("gelu_fast" has no pow).
  int act_fp32 = 0;
  // "quick_gelu" (CLIP; transformers' QuickGELUActivation, input * torch.sigmoid(1.702 * input)):
  // sigmoid saves its output and the multiply saves both operands, one more tensor of the MLP's
  // width than a fused GELU; three element-wise kernels forward.
  bool act_sigmoid = false;
  // transformers' XIELUActivation ("xielu", Apertus) in its Python form (the one it runs unless
  // the xielu package's CUDA kernel is installed): torch.where(x > 0, alpha_p * x * x + beta * x,
  // (expm1(min(x, eps)) - x) * alpha_n + beta * x) keeps alpha_p * x, expm1's result and
  // expm1 - x (act_extra 3) and the 1-byte condition (act_mask). alpha_p is a one-element
  // parameter, not a 0-dim scalar, so it promotes: over fp32 weights (autocast's fp32 stream)
  // alpha_p * x is fp32 (act_param_fp32 1). Measured with saved-tensor hooks (transformers
  // 5.25.0, torch 2.15.0, CPU autocast bf16; the promotion is the device's own).
  int act_param_fp32 = 0;
  bool act_mask = false;
  // nn.Linear modules reading the attention block's input (3 for separate q, k and v
  // projections, 1 for a fused qkv) and the MLP's input (2 for separate gate and up projections,
  // 1 otherwise). Under autocast each casts the fp32 norm output to its own 16-bit copy and saves
  // it: autocast caches casts only of leaf tensors that require grad (the weights;
  // aten/src/ATen/autocast_mode.cpp, cached_cast).
  int qkv_linears = 1, up_linears = 1;
  bool rmsnorm = false; // Hugging Face RMSNorm upcasts to fp32 (saves more than LayerNorm)
  // A norm without weights that upcasts to fp32 (OLMo 1's OlmoLayerNorm: F.layer_norm on an fp32
  // copy): it saves that fp32 input whatever is trained.
  bool weightless_fp32_norm = false;
  // Dropouts the config trains with (probability > 0), each adding 1-byte masks: after the
  // attention and MLP outputs (hidden), after the embeddings, on the attention probabilities (with
  // eager attention: one per score element), inside the MLP (activation; T5's dropout_rate).
  bool dropout = false;
  bool embed_dropout = false, attn_dropout = false, act_dropout = false;
  bool causal = true;
  bool tied = true;
  // Eager attention's scores: softmax in fp32 even without autocast (transformers'
  // softmax(..., dtype=torch.float32).to(query.dtype); model::eager_softmax_fp32), and Gemma 2's
  // softcapping, whose tanh keeps its output (one more score-sized tensor).
  bool softmax_fp32 = true;
  bool attn_softcap = false;
  bool final_softcap = false; // Gemma 2's logits through tanh (ModelArch::final_softcap)
  // DeBERTa's disentangled attention: c2p/p2c terms (ModelArch::relative_types) over
  // rel_width = 2 x the attention span (ModelArch::relative_rows).
  int rel_types = 0;
  std::int64_t rel_width = 0;
  std::int64_t default_seq = 0; // tokens per sample when --seq is not given
};

struct ModelInput {
  model::ModelArch arch;
  std::int64_t params = 0;              // total parameters (every expert of an MoE)
  std::string origin;                   // how the model was given: "catalog", "config.json PATH"...
  std::optional<Checkpoint> checkpoint; // when read from safetensors
  std::vector<std::string> assumptions; // shapes guessed or inferred, said in the output
  // A checkpoint whose tensor names dlrig does not recognise, without a config.json: params and
  // the checkpoint are exact, the arch has no shapes (fit/weights.hpp reports what is known).
  bool weights_only = false;
  // A config whose layers fit does not model (Qwen3-Next's gated DeltaNet layers): weights_only
  // too, with the exact count from the config; what is not estimated, in words.
  std::vector<std::string> not_modelled;
};

// The shapes of a transformer family model (decoder, moe_decoder, encoder, encoder_decoder).
Dims dims_of(const model::ModelArch &m);

// Per-layer parameters of a transformer block (attention + MLP, all experts); for FSDP units.
std::int64_t layer_params(const Dims &d);
// Parameters that an MoE token does not touch: (experts - experts_per_token) x expert MLP x L.
std::int64_t inactive_expert_params(const Dims &d);
// Per linear of `linears` (model::linear_layers(m), in its order): whether bitsandbytes replaces
// it when transformers `transformers_version` (empty: the newest) loads the model with
// BitsAndBytesConfig (--quant, --qlora). Every nn.Linear but: the output head; a classifier or
// pooler that is the model's last module (from 5.0.0 only when it has no bias); the roles
// model::bnb_kept names (T5's wo; all of Falcon's from 5.5.0); MoE experts and routers built as
// parameters (model::moe_linears). bnb_linears also keeps the model's last parameter's module (a
// tied OLMo 1's last down projection).
std::vector<bool> bnb_converted(const model::ModelArch &m,
                                const std::vector<model::LinearShape> &linears,
                                const std::string &transformers_version);
// Their weights (biases stay 16-bit), and the MoE parameters left 16-bit. The rest (embeddings,
// norms, biases, those parameters) stays 16-bit too (memory.md §1.7).
struct BnbLinears {
  std::int64_t params = 0;   // weight elements quantised
  std::int64_t moe_kept = 0; // routed experts' and routers' parameters left 16-bit
};
BnbLinears bnb_linears(const model::ModelArch &m, const std::string &transformers_version);

// The nn.Linear modules outside model::linear_layers' blocks and heads (they barely count for
// time), which bitsandbytes converts and PEFT's all-linear adapts: OPT's project_in/project_out
// and DeBERTa's embed_proj ("embed_proj"), DeBERTa's unshared position projections ("pos_proj"),
// CLIP's "visual_projection" and "text_projection", SigLIP's pooling head ("map_out_proj", an
// nn.MultiheadAttention's, and "map_fc"), an image-text projector's or a vision tower's merger
// ("projector"). Not a tower's own.
std::vector<model::LinearShape> outside_linears(const model::ModelArch &m);
// The largest module's direct parameters (DeepSpeed's largest_layer_params, memory.md §1.2).
std::int64_t largest_layer_params(const model::ModelArch &m, const Dims &d);

// The diffusion UNet (diffusers UNet2DConditionModel) as the estimator folds it from the one walk
// (model/walk.hpp), per image of image_side pixels.
struct UnetCost {
  double saved_elements = 0; // activation elements kept for backward (16-bit each)
  double score_elements = 0; // eager self-attention scores (heads x s^2), not kept with SDPA/flash
  double macs = 0;           // multiply-accumulates of one forward
  double infer_elements = 0; // serving: the largest module's working set (no graph kept)
  double infer_scores = 0;   // serving with eager attention: the largest heads x s^2
  // Full checkpointing (diffusers' enable_gradient_checkpointing: every ResNet block and every
  // Transformer2DModel recomputed in backward): the elements kept (each checkpointed module's
  // input and the parts not checkpointed), and the largest module's saved elements and eager
  // scores while it is recomputed.
  double ckpt_elements = 0, ckpt_working = 0, ckpt_working_scores = 0;
  // LoRA parameters per unit of rank: diffusers' LoRA training targets (to_q, to_k, to_v, to_out.0
  // of self- and cross-attention), and every linear of the attention blocks (adding the GEGLU
  // feed-forward and proj_in/proj_out).
  double lora_qkvo_per_rank = 0, lora_all_per_rank = 0;
  double params = 0; // the walk's parameters (== model::derive_params)
  std::int64_t latent_side = 0;
};
// The fold over the walk's records; nullopt when the walk refuses the model or the image size
// (model::walk's error says why).
std::optional<UnetCost> unet_cost(const model::ModelArch &m, std::int64_t image_side);
UnetCost unet_cost(const std::vector<model::Module> &modules);

// A decoder's shapes read from a checkpoint's tensor names when no config.json is given:
// embed_tokens/wte [V, h], q_proj/k_proj/up_proj/gate_proj shapes, layers.N indices.
Result<model::ModelArch> arch_from_checkpoint(const Checkpoint &c, model::ModelFamily family,
                                              const std::string &where);

// --params N --family F: the shape of the catalog model of that family nearest in size, so that
// activations and attention have a shape; said as an assumption.
Result<ModelInput> model_from_params(std::int64_t params, model::ModelFamily family,
                                     const std::vector<model::ModelArch> &catalog);

Result<model::ModelFamily> parse_family(std::string_view s);
std::string_view family_name(model::ModelFamily f);

} // namespace dlrig::fit

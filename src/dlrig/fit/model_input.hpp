#pragma once
// The model as the estimator sees it: the architecture (kb::ModelArch), its parameter count, and
// the shapes the memory and FLOP formulas need, derived once.
#include "dlrig/core/result.hpp"
#include "dlrig/fit/safetensors.hpp"
#include "dlrig/kb/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::fit {

// One convolution (with its BatchNorm) of a CNN, for activations and FLOPs.
struct ConvLayer {
  std::int64_t in_ch = 0, out_ch = 0, kernel = 1, stride = 1;
  std::int64_t out_side = 0; // output height = width, for the model's default image size
  int saved_outputs = 2;     // tensors of the output's size kept for backward (BN input, ReLU out)
  int block = -1;            // residual block index (stem and max-pool: -1)
  // The convolution's weight elements (0 for the max-pool), and with its BatchNorm's affine pair.
  std::int64_t weights() const { return in_ch * out_ch * kernel * kernel; }
  std::int64_t params() const { return kernel > 0 ? weights() + 2 * out_ch : 0; }
};

// Transformer shapes (0 where the family has none).
struct Dims {
  std::int64_t hidden = 0; // h
  std::int64_t layers = 0; // L (encoder layers for T5)
  std::int64_t decoder_layers = 0;
  std::int64_t heads = 0;        // a (0 = unknown: no eager attention-score term possible)
  std::int64_t q_dim = 0;        // heads x head_dim
  std::int64_t kv_dim = 0;       // kv_heads x head_dim
  std::int64_t intermediate = 0; // I
  std::int64_t vocab = 0;
  std::int64_t experts = 0, experts_per_token = 0;
  bool gated = false; // SwiGLU/GeGLU MLP
  // Tensors of the MLP's width that the activation function saves beyond its input: 3 for
  // transformers' "gelu_new"/"gelu_fast" (a Python tanh formula: tanh, 0.5x and 1 + tanh are kept),
  // 0 for the fused gelu, silu and gelu_pytorch_tanh kernels.
  int act_extra = 0;
  bool rmsnorm = false; // Hugging Face RMSNorm upcasts to fp32 (saves more than LayerNorm)
  bool dropout = false; // the config trains with dropout (adds 1-byte masks)
  bool causal = true;
  bool tied = true;
  std::int64_t default_seq = 0; // tokens per sample when --seq is not given
};

struct ModelInput {
  kb::ModelArch arch;
  std::int64_t params = 0;              // total parameters (every expert of an MoE)
  std::string origin;                   // how the model was given: "catalog", "config.json PATH"...
  std::optional<Checkpoint> checkpoint; // when read from safetensors
  std::vector<std::string> assumptions; // shapes guessed or inferred, said in the output
};

// The shapes of a transformer family model (decoder, moe_decoder, encoder, encoder_decoder).
Dims dims_of(const kb::ModelArch &m);

// Per-layer parameters of a transformer block (attention + MLP, all experts); for FSDP units.
std::int64_t layer_params(const Dims &d);
// Parameters that an MoE token does not touch: (experts - experts_per_token) x expert MLP x L.
std::int64_t inactive_expert_params(const Dims &d);
// Parameters of nn.Linear modules (what int8/int4 quantisation replaces); embeddings, the output
// head and norms stay 16-bit (memory.md §1.7, transformers' bitsandbytes integration).
std::int64_t quantizable_params(const Dims &d, std::int64_t total);
// The largest module's direct parameters (DeepSpeed's largest_layer_params, memory.md §1.2).
std::int64_t largest_layer_params(const kb::ModelArch &m, const Dims &d);

// CNNs (torchvision ResNet): the convolutions for an image side; empty when the arch does not say
// its depth. Depth comes from extra["layers"] (blocks per stage) and extra["block"]
// ("basic"|"bottleneck"), or from a "resnetNN" name.
std::vector<ConvLayer> resnet_layers(const kb::ModelArch &m, std::int64_t image_side);
// The classifier's outputs (torchvision's num_classes, 1000 for ImageNet).
std::int64_t resnet_classes(const kb::ModelArch &m);
// ResNet parameters from the same walk (conv weights, BatchNorm affine, the fc head).
std::int64_t resnet_params(const kb::ModelArch &m);

// The diffusion UNet (diffusers UNet2DConditionModel) walked from its config (kept in
// ModelArch::extra: block_out_channels, layers_per_block, down_block_types,
// transformer_layers_per_block, attention_head_dim, cross_attention_dim, sample_size, in_channels).
// Per image, at a latent side of image_side / 8 (the VAE's downsampling).
struct UnetCost {
  double saved_elements = 0; // activation elements kept for backward (16-bit each)
  double score_elements = 0; // eager self-attention scores (heads x s^2), not kept with SDPA/flash
  double macs = 0;           // multiply-accumulates of one forward
  double infer_elements = 0; // serving: the largest block's working set (no graph kept)
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
  double params = 0; // parameters of the same walk (checks the walk's structure)
  std::int64_t latent_side = 0;
};
// nullopt when the config does not give block_out_channels.
std::optional<UnetCost> unet_cost(const kb::ModelArch &m, std::int64_t image_side);
// The UNet's default image side in pixels: sample_size x 8, or 512.
std::int64_t unet_default_image(const kb::ModelArch &m);

// The arch's parameters: kb::derive_params, or for a ResNet or a UNet this module's walk when the
// catalog has not derived it.
std::int64_t params_of(const kb::ModelArch &m);

// A decoder's shapes read from a checkpoint's tensor names when no config.json is given:
// embed_tokens/wte [V, h], q_proj/k_proj/up_proj/gate_proj shapes, layers.N indices.
Result<kb::ModelArch> arch_from_checkpoint(const Checkpoint &c, kb::ModelFamily family,
                                           const std::string &where);

// --params N --family F: the shape of the catalog model of that family nearest in size, so that
// activations and attention have a shape; said as an assumption.
Result<ModelInput> model_from_params(std::int64_t params, kb::ModelFamily family,
                                     const std::vector<kb::ModelArch> &catalog);

Result<kb::ModelFamily> parse_family(std::string_view s);
std::string_view family_name(kb::ModelFamily f);

} // namespace dlrig::fit

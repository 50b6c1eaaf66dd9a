#pragma once
// One walk over a CNN's or a UNet's modules, in forward order, as the PyTorch implementations
// build them (torchvision resnet.py, diffusers unet_2d_condition.py). Every number the model layer
// and the estimator need about these models is a fold over its records: the parameter count
// (derive_params), fit's activation memory, checkpointing, LoRA sizes and forward FLOPs.
// docs/models.md describes each record's accounting.
#include "dlrig/core/result.hpp"
#include "dlrig/model/model.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dlrig::model {

// One sample's tensor: channels × height × width (a vector is channels × 1 × 1).
struct Shape {
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t elements() const { return channels * height * width; }
};

// One module for one sample. Element counts are in the activation dtype unless named otherwise.
struct Module {
  std::string name; // module path as PyTorch names it: "layer1.0.conv1", "down_blocks.1.resnets.0"
  std::string kind; // CNN: conv | batchnorm | relu | maxpool | add | avgpool | linear;
                    // UNet: conv | linear | resnet | transformer | downsample | upsample | norm
  std::int64_t params = 0; // its own parameters (PyTorch's numel over its parameters)
  Shape input;             // UNet up-block resnets: the concatenation with the skip
  Shape output;
  std::int64_t kernel = 0; // conv: kernel side
  std::int64_t stride = 1; // conv: stride
  double saved = 0;        // elements kept for backward (PyTorch autograd's saved tensors)
  double saved_int64 = 0;  // int64 elements kept for backward (max-pool indices)
  double scores = 0;       // eager self-attention scores kept for backward, heads × (h·w)² per
                           // transformer layer (SDPA and flash attention keep none)
  double working = 0;      // inference: elements alive at once while it runs (no graph kept)
  double macs = 0;         // forward multiply-accumulates
  std::int64_t heads = 0;  // transformer: attention heads
  std::int64_t transformer_layers = 0; // transformer: BasicTransformerBlocks inside
  int block = -1; // CNN: residual block index, in forward order (torch.utils.checkpoint's unit)
  bool checkpointed = false; // UNet: recomputed by diffusers' gradient checkpointing
                             // (every ResnetBlock2D and Transformer2DModel)
  // LoRA parameters per unit of rank, r · (in + out) summed over the adapted linears: diffusers'
  // training targets (to_q, to_k, to_v, to_out.0 of self- and cross-attention), and every linear
  // of the attention block (adding the GEGLU feed-forward and proj_in/proj_out).
  double lora_qkvo = 0;
  double lora_all = 0;
};

// The text tokens a UNet's cross-attention reads (CLIP's 77-token context, Stable Diffusion).
inline constexpr std::int64_t kUnetContextTokens = 77;

// The modules of one sample of side image_size pixels, in forward order. CNN: every conv, batch
// norm, ReLU, pooling, residual add and the classifier. UNet: image_size is in pixels and the UNet
// runs at image_size / vae_scale_factor (a 512 px image is a 64×64 latent): conv_in, the time
// (and SDXL's added) embeddings, each resnet, transformer, down/upsampler, conv_norm_out and
// conv_out. Errors: a family with no per-module image walk (transformers take a sequence), an
// architecture missing its stages, or an image size the model cannot take.
Result<std::vector<Module>> walk(const ModelArch &m, std::int64_t image_size);
// walk(), shared: the last few walks are kept (by everything a walk depends on), so walking the
// same model again costs a look-up. The modules are immutable and outlive the caller's use.
// Thread-safe.
Result<std::shared_ptr<const std::vector<Module>>> walk_shared(const ModelArch &m,
                                                               std::int64_t image_size);

// The image side the model was built for: a CNN's image_size (224 when unset); a UNet's
// sample_size × vae_scale_factor (512 for Stable Diffusion 1.5). 0 for other families.
std::int64_t default_image_size(const ModelArch &m);

// Σ params over the records.
std::int64_t total_params(const std::vector<Module> &modules);

} // namespace dlrig::model

#pragma once
// A model's architecture as a Hugging Face config.json (or diffusers/torchvision equivalent)
// states it. Parameter counts are derived from these hyperparameters by code (params.cpp),
// never typed in.
#include "dlrig/core/json.hpp"
#include "dlrig/core/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::kb {

enum class ModelFamily {
  decoder,         // GPT-2, Llama, Mistral, Qwen, Gemma, Phi, GPT-3
  moe_decoder,     // Mixtral and other mixture-of-experts decoders
  encoder,         // BERT, ViT
  encoder_decoder, // T5
  cnn,             // ResNet
  unet             // Stable Diffusion UNet
};

struct ModelArch {
  std::string name;          // catalog name, e.g. "llama-3.1-8b"
  std::string display_name;  // "Llama 3.1 8B"
  ModelFamily family = ModelFamily::decoder;
  std::string hf_model_type; // config.json model_type: llama, gpt2, bert, t5, mixtral, ...

  // Transformers (config.json names in comments).
  std::int64_t hidden = 0;            // hidden_size / n_embd / d_model
  std::int64_t layers = 0;            // num_hidden_layers / n_layer / num_layers
  std::int64_t decoder_layers = 0;    // T5: num_decoder_layers
  std::int64_t heads = 0;             // num_attention_heads / n_head
  std::int64_t kv_heads = 0;          // num_key_value_heads (== heads without GQA)
  std::int64_t head_dim = 0;          // head_dim (hidden/heads when absent)
  std::int64_t intermediate = 0;      // intermediate_size / n_inner / d_ff
  std::int64_t vocab = 0;             // vocab_size
  std::int64_t max_positions = 0;     // max_position_embeddings / n_positions (learned positions)
  bool learned_positions = false;     // GPT-2, BERT: a position embedding table
  std::int64_t type_vocab = 0;        // BERT token types
  bool tied_embeddings = true;        // tie_word_embeddings
  bool gated_mlp = false;             // SwiGLU/GeGLU: gate, up, down projections
  bool attention_bias = false;        // q/k/v/o biases
  bool qkv_bias = false;              // q/k/v biases only (Qwen2)
  bool mlp_bias = false;
  std::string norm = "rmsnorm";       // rmsnorm | layernorm
  std::int64_t experts = 0;           // num_local_experts
  std::int64_t experts_per_token = 0; // num_experts_per_tok
  std::int64_t image_size = 0;        // ViT / CNN input side
  std::int64_t patch_size = 0;        // ViT
  std::int64_t channels = 3;

  // Everything else the family needs (CNN stages, UNet blocks, T5 relative buckets...), kept as
  // the original config.json object so nothing is lost.
  Json extra;

  std::int64_t published_params = 0; // the published exact count, for tests; 0 = none published
  std::string source;                // where the hyperparameters come from
};

// Derived from the hyperparameters; the count PyTorch's model.parameters() would give.
std::int64_t derive_params(const ModelArch& m);

// A config.json object (transformers, diffusers or the catalog's own rows) to a ModelArch. Errors
// name the missing or wrong field.
Result<ModelArch> model_from_config(const Json& config, const std::string& name);

// The catalog embedded from data/models.json, validated; a bad row is a bug in dlrig's data and
// throws Failure(internal) naming the file and the model.
std::vector<ModelArch> load_model_catalog();

} // namespace dlrig::kb

#pragma once
// The table-driven model types (data/model_types.json) and head classes (data/model_heads.csv):
// a config.json of a known structure is read through its type's entry, and `architectures[0]`
// decides the head. Internal to src/dlrig/model (config.cpp calls it), but for the per-type facts
// fit's memory model reads (sdpa_grouped_kv_since, tie_forced_since).
#include "dlrig/core/json.hpp"
#include "dlrig/core/result.hpp"
#include "dlrig/model/model.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::model {

// A JSON value as an error message names it: "the string \"768\"", "true", "a list", "null".
std::string kind_of(const Json &v);

// True when data/model_types.json has an entry for this model_type.
bool table_knows(std::string_view type);

// Every model_type dlrig reads (the built-in readers and the table), sorted, for messages.
std::vector<std::string> known_model_types();

// Reads a config.json of a table type. Errors name the model and the config field.
Result<ModelArch> model_from_table(const Json &config, const std::string &name,
                                   const std::string &type);

// Applies the head class: architectures[0] when the config names one, else the type's default
// head. Sets pooler, lm_head, mlm_head, cls_dense, num_labels and classifier_bias. An
// architectures entry that names a head this model type has no row for is an error naming it.
Result<ModelArch> apply_head(ModelArch m, const Json &config, const std::string &name);

// A decoder's sliding-window KV cache layers, as transformers' DynamicCache builds them from the
// config (data/model_types.json "kv_window"): the config's layer_types when it has them, else the
// type's rule. Sets sliding_window (0: no layer slides) and sliding_layers. Errors name the model
// and the config field.
Result<ModelArch> with_kv_window(ModelArch m, const Json &config, const std::string &name,
                                 const std::string &type);

// The first transformers release whose DynamicCache keeps sliding layers' windows only
// (data/model_types.json "kv_window" "since"); before it every layer keeps every token.
std::string kv_window_since();

// The first transformers release whose SDPA path hands this model_type's grouped K/V to the kernel
// unexpanded (enable_gqa=True) where use_gqa_in_sdpa holds (data/model_types.json
// "sdpa_grouped_kv"); nullopt: its attention repeats K/V to every query head (Falcon) or the type
// is not listed.
std::optional<std::string> sdpa_grouped_kv_since(std::string_view type);

// The first transformers release that caches this latent-attention model_type's compressed latent
// rather than every head's key and value (data/model_types.json "mla_latent_cache": DeepSeek-V2
// and V3 from 5.15.0); nullopt: not listed.
std::optional<std::string> mla_latent_cache_since(std::string_view type);

// How transformers `version` (empty: the newest) runs this model_type's attention when none is
// asked for (data/model_types.json "eager_attention"): eager by default, SDPA or flash-attention
// refused, and why.
struct EagerAttention {
  bool by_default = false;    // from_pretrained without attn_implementation runs eager
  bool sdpa_refused = false;  // attn_implementation="sdpa" raises (_supports_sdpa = False)
  bool flash_refused = false; // "flash_attention_2" raises (_supports_flash_attn = False)
  std::string why;            // "SDPA cannot softcap the attention logits"
};
EagerAttention eager_attention(std::string_view type, const std::string &version);

// Whether this model_type's eager attention runs softmax in fp32 (softmax(..., dtype=float32)
// .to(query.dtype): an fp32 output and its 16-bit copy even without autocast); false for the
// types of data/model_types.json "eager_attention" "softmax_input_dtype" (BERT, GPT-2, T5...)
// and without a model type (--params: Korthikanti's count, as Megatron's fused softmax).
bool eager_softmax_fp32(std::string_view type);

// Whether transformers `version` is `since` or later; an unknown (empty) version is taken as the
// newest release, as every table-driven rule here takes it.
bool transformers_at_least(const std::string &version, std::string_view since);

// Which parts of a model_type's MoE layers transformers `version` (empty: the newest) builds as
// nn.Linear modules, the only ones bitsandbytes quantises (data/model_types.json "moe_linears":
// from 5.0.0 most types fuse their routed experts into parameters); a type not listed: both.
struct MoeLinears {
  bool experts = true;
  bool router = true;
  bool peft_target_parameters = false; // "peft_target_parameters": PEFT adapts them anyway
};
MoeLinears moe_linears(std::string_view type, const std::string &version);

// PEFT's default LoRA targets for a model_type as roles (q, v, up, down...) where they are not
// the query and value projections (data/model_types.json "peft_default_targets": Phi's q_proj,
// v_proj, fc1, fc2); empty: q and v.
std::vector<std::string> peft_default_targets(std::string_view type);

// What else bitsandbytes leaves unquantised in a model_type under transformers `version` (empty:
// the newest; data/model_types.json "bnb_kept"): linear roles kept ("all": every one), whether
// a classifier or pooler that is the model's last module is converted when it has a bias, and
// whether only modules of type exactly nn.Linear are converted (subclasses kept).
struct BnbKept {
  std::vector<std::string> roles;
  bool biased_head_converted = true;
  bool exact_linear_type = true;
};
BnbKept bnb_kept(std::string_view type, const std::string &version);

// The first transformers release whose config class for this model_type ties the output head to
// the input embedding whatever tie_word_embeddings says (data/model_types.json "tie_forced": T5,
// mT5 from 5.0.0); nullopt: the config's tie_word_embeddings decides.
std::optional<std::string> tie_forced_since(std::string_view type);

} // namespace dlrig::model

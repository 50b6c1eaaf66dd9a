// config.json (transformers, diffusers, torchvision-style catalog rows) to ModelArch. Each model
// type reads the keys its transformers/diffusers class serialises, with that class's defaults where
// a saved config may leave a key out (save_pretrained omits values equal to the class default).
#include "dlrig/core/python_json.hpp"
#include "dlrig/model/model.hpp"
#include "dlrig/model/types.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace dlrig::model {
namespace {

// Thrown inside this file only and turned into a Result at model_from_config's boundary, so that
// each reader stays a straight list of fields.
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The largest value each key may take. Generous next to any real model (hidden sizes reach ~2^15,
// layer counts ~2^7), and small enough that no derived count or layer shape can overflow 64 bits,
// whatever a hostile config.json holds.
std::int64_t limit_of(std::string_view key) {
  static constexpr std::array<std::pair<std::string_view, std::int64_t>, 36> limits{{
      {"num_hidden_layers", 1 << 10},
      {"n_layer", 1 << 10},
      {"num_layers", 1 << 10},
      {"num_decoder_layers", 1 << 10},
      {"num_attention_heads", 1 << 10},
      {"n_head", 1 << 10},
      {"num_heads", 1 << 10},
      {"num_key_value_heads", 1 << 10},
      {"num_local_experts", 1 << 10},
      {"num_experts_per_tok", 1 << 10},
      {"relative_attention_num_buckets", 1 << 10},
      {"norm_num_groups", 1 << 10},
      {"layers", 1 << 10},
      {"depths", 1 << 10},
      {"num_channels", 1 << 10},
      {"patch_size", 1 << 10},
      {"layers_per_block", 1 << 8},
      {"transformer_layers_per_block", 1 << 8},
      {"attention_head_dim", 1 << 10},
      {"head_dim", 1 << 14},
      {"d_kv", 1 << 14},
      {"vocab_size", 1 << 24},
      {"type_vocab_size", 1 << 24},
      {"num_labels", 1 << 24},
      {"num_classes", 1 << 24},
      {"max_position_embeddings", 1 << 26},
      {"n_positions", 1 << 26},
      {"sliding_window", 1 << 26},
      {"image_size", 1 << 16},
      {"sample_size", 1 << 16},
      {"block_out_channels", 1 << 16},
      {"widths", 1 << 16},
      {"hidden_sizes", 1 << 18},
      {"cross_attention_dim", 1 << 16},
      {"in_channels", 1 << 16},
      {"out_channels", 1 << 16},
  }};
  for (const auto &[k, v] : limits)
    if (k == key)
      return v;
  // Widths: hidden_size, intermediate_size, d_model, d_ff, n_embd, time and class embeddings.
  return std::int64_t{1} << 20;
}

// Lists (blocks, stages) longer than this are not a real model.
constexpr std::size_t max_list = 16;

// Reads config keys, naming the model and the key in every error.
class Fields {
public:
  Fields(const Json &j, const std::string &name, std::string type)
      : j_(j), name_(name), type_(std::move(type)) {}

  bool has(const char *key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  bool given_null(const char *key) const { return j_.contains(key) && j_.at(key).is_null(); }
  const Json &at(const char *key) const { return j_.at(key); }

  [[noreturn]] void fail(const char *key, const std::string &what) const {
    throw ConfigError(fmt::format("{}: config field '{}' {}", name_, key, what));
  }

  // A positive integer (or, with min 0, a non-negative one); required.
  std::int64_t count(const char *key, std::int64_t min = 1) const {
    if (!has(key))
      fail(key, fmt::format("is missing; a {} config.json has it (copy it from the model's "
                            "config.json)",
                            type_));
    return as_count(key, j_.at(key), min);
  }
  std::int64_t count_or(const char *key, std::int64_t fallback, std::int64_t min = 1) const {
    return has(key) ? as_count(key, j_.at(key), min) : fallback;
  }
  bool flag_or(const char *key, bool fallback) const {
    if (!has(key))
      return fallback;
    if (!j_.at(key).is_boolean())
      fail(key, fmt::format("must be true or false, got {}", kind_of(j_.at(key))));
    return j_.at(key).get<bool>();
  }
  std::string text_or(const char *key, std::string fallback) const {
    if (!has(key))
      return fallback;
    if (!j_.at(key).is_string())
      fail(key, fmt::format("must be a string, got {}", kind_of(j_.at(key))));
    return j_.at(key).get<std::string>();
  }
  std::vector<std::int64_t> counts(const char *key) const {
    if (!has(key))
      fail(key, fmt::format("is missing; a {} config.json has it", type_));
    return as_counts(key, j_.at(key));
  }
  std::vector<std::string> texts(const char *key) const {
    if (!has(key))
      fail(key, fmt::format("is missing; a {} config.json has it", type_));
    const Json &v = j_.at(key);
    if (!v.is_array() || v.empty())
      fail(key, fmt::format("must be a non-empty list of strings, got {}", kind_of(v)));
    if (v.size() > max_list)
      fail(key, fmt::format("has {} entries; at most {} are supported", v.size(), max_list));
    std::vector<std::string> out;
    for (const Json &e : v) {
      if (!e.is_string())
        fail(key, fmt::format("must be a list of strings, found {}", kind_of(e)));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  // An integer or a list of integers, spread to n entries (diffusers' per-block settings).
  std::vector<std::int64_t> per_block(const char *key, std::int64_t fallback, std::size_t n) const {
    if (!has(key))
      return std::vector<std::int64_t>(n, fallback);
    const Json &v = j_.at(key);
    if (v.is_array()) {
      auto out = as_counts(key, v);
      if (out.size() != n)
        fail(key, fmt::format("has {} entries; it needs one per block ({})", out.size(), n));
      return out;
    }
    return std::vector<std::int64_t>(n, as_count(key, v, 1));
  }
  // A key dlrig cannot derive a count for unless it is absent, null or `ok`.
  void unsupported_unless(const char *key, const Json &ok = nullptr) const {
    if (!has(key) || j_.at(key) == ok)
      return;
    fail(key, fmt::format("= {} is not supported by dlrig's {} parameter count", j_.at(key).dump(),
                          type_));
  }

private:
  std::int64_t as_count(const char *key, const Json &v, std::int64_t min) const {
    if (!v.is_number_integer())
      fail(key, fmt::format("must be an integer, got {}", kind_of(v)));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{1} << 62)
      fail(key, fmt::format("must be at most {}, got {}", limit_of(key), v.dump()));
    auto n = v.get<std::int64_t>();
    if (n < min)
      fail(key, fmt::format("must be at least {}, got {}", min, n));
    if (n > limit_of(key))
      fail(key, fmt::format("must be at most {}, got {}", limit_of(key), n));
    return n;
  }
  std::vector<std::int64_t> as_counts(const char *key, const Json &v) const {
    if (!v.is_array() || v.empty())
      fail(key, fmt::format("must be a non-empty list of positive integers, got {}", kind_of(v)));
    if (v.size() > max_list)
      fail(key, fmt::format("has {} entries; at most {} are supported", v.size(), max_list));
    std::vector<std::int64_t> out;
    for (const Json &e : v) {
      if (!e.is_number_integer())
        fail(key, fmt::format("must be a list of positive integers, found {}", kind_of(e)));
      out.push_back(as_count(key, e, 1));
    }
    return out;
  }

  const Json &j_;
  const std::string &name_;
  std::string type_;
};

// head_dim when the config leaves it out: hidden / heads, which must then divide exactly.
std::int64_t head_dim_of(const Fields &f, std::int64_t hidden, std::int64_t heads,
                         const char *hidden_key, const char *heads_key) {
  if (f.has("head_dim"))
    return f.count("head_dim");
  if (hidden % heads != 0)
    f.fail(heads_key, fmt::format("= {} does not divide {} = {}; give head_dim explicitly", heads,
                                  hidden_key, hidden));
  return hidden / heads;
}

void check_kv(const Fields &f, const ModelArch &m) {
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    f.fail("num_key_value_heads",
           fmt::format("= {} must divide num_attention_heads = {}", m.kv_heads, m.heads));
}

// Llama and the decoders built like it: RMSNorm, rotary positions, gated MLP, optional GQA.
ModelArch read_llama_like(const Fields &f, const std::string &type) {
  ModelArch m;
  m.family = ModelFamily::decoder;
  m.hidden = f.count("hidden_size");
  m.layers = f.count("num_hidden_layers");
  m.heads = f.count("num_attention_heads");
  // LlamaConfig and Phi3Config fall back to multi-head attention when the key is absent; the
  // other classes always serialise it.
  bool kv_default = type == "llama" || type == "phi3";
  m.kv_heads =
      kv_default ? f.count_or("num_key_value_heads", m.heads) : f.count("num_key_value_heads");
  check_kv(f, m);
  m.head_dim = type == "gemma2"
                   ? f.count("head_dim")
                   : head_dim_of(f, m.hidden, m.heads, "hidden_size", "num_attention_heads");
  m.intermediate = f.count("intermediate_size");
  m.vocab = f.count("vocab_size");
  m.max_positions = f.count_or("max_position_embeddings", 0, 0);
  m.gated_mlp = true;
  m.norm = "rmsnorm";
  // Class defaults: Gemma2Config ties the LM head; Llama, Mistral, Mixtral, Qwen2, Phi3 do not.
  m.tied_embeddings = f.flag_or("tie_word_embeddings", type == "gemma2");
  if (type == "llama" || type == "gemma2") {
    m.attention_bias = f.flag_or("attention_bias", false);
  }
  if (type == "llama")
    m.mlp_bias = f.flag_or("mlp_bias", false);
  if (type == "qwen2")
    m.qkv_bias = true; // Qwen2Attention always builds q/k/v with bias, o_proj without
  if (type == "gemma2") {
    m.norms_per_layer = 4; // input, post-attention, pre- and post-feed-forward RMSNorms
    // Gemma2Config's attn_logit_softcapping (50.0) and final_logit_softcapping (30.0), unless the
    // config holds null.
    for (const char *key : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (f.has(key) && !f.at(key).is_number())
        f.fail(key, fmt::format("must be a number or null, got {}", kind_of(f.at(key))));
    m.attn_softcap = !f.given_null("attn_logit_softcapping");
    m.final_softcap = !f.given_null("final_logit_softcapping");
  }
  if (type == "phi3")
    m.fused_qkv = m.fused_gate_up = true;
  if (type == "mixtral") {
    m.family = ModelFamily::moe_decoder;
    m.experts = f.count("num_local_experts");
    m.experts_per_token = f.count("num_experts_per_tok");
    if (m.experts_per_token > m.experts)
      f.fail("num_experts_per_tok",
             fmt::format("= {} exceeds num_local_experts = {}", m.experts_per_token, m.experts));
  }
  return m;
}

ModelArch read_gpt2(const Fields &f) {
  ModelArch m;
  m.family = ModelFamily::decoder;
  m.hidden = f.count("n_embd");
  m.layers = f.count("n_layer");
  m.heads = f.count("n_head");
  m.kv_heads = m.heads;
  m.head_dim = head_dim_of(f, m.hidden, m.heads, "n_embd", "n_head");
  m.intermediate = f.count_or("n_inner", 4 * m.hidden); // null in GPT-2 configs: 4 × n_embd
  m.vocab = f.count("vocab_size");
  m.max_positions = f.count("n_positions");
  m.learned_positions = true;
  m.tied_embeddings = f.flag_or("tie_word_embeddings", true);
  m.attention_bias = true;
  m.mlp_bias = true;
  m.norm = "layernorm";
  return m;
}

ModelArch read_bert(const Fields &f) {
  ModelArch m;
  m.family = ModelFamily::encoder;
  m.hidden = f.count("hidden_size");
  m.layers = f.count("num_hidden_layers");
  m.heads = f.count("num_attention_heads");
  m.kv_heads = m.heads;
  m.head_dim = head_dim_of(f, m.hidden, m.heads, "hidden_size", "num_attention_heads");
  m.intermediate = f.count("intermediate_size");
  m.vocab = f.count("vocab_size");
  m.max_positions = f.count("max_position_embeddings");
  m.type_vocab = f.count("type_vocab_size");
  m.learned_positions = true;
  m.attention_bias = true;
  m.mlp_bias = true;
  m.norm = "layernorm";
  m.embed_norm = true; // embeddings.LayerNorm; no norm after the last layer
  m.final_norm = false;
  // BertModel's default; the published counts are BertModel's (with the pooler).
  m.pooler = f.flag_or("add_pooling_layer", true);
  return m;
}

ModelArch read_vit(const Fields &f) {
  ModelArch m;
  m.family = ModelFamily::encoder;
  m.hidden = f.count("hidden_size");
  m.layers = f.count("num_hidden_layers");
  m.heads = f.count("num_attention_heads");
  m.kv_heads = m.heads;
  m.head_dim = head_dim_of(f, m.hidden, m.heads, "hidden_size", "num_attention_heads");
  m.intermediate = f.count("intermediate_size");
  m.image_size = f.count("image_size");
  m.patch_size = f.count("patch_size");
  m.channels = f.count_or("num_channels", 3);
  // A Conv2d of stride patch_size: image_size // patch_size patches a side (SigLIP at 384 px
  // with patch 14: 27); a patch larger than the image leaves none.
  if (m.patch_size > m.image_size)
    f.fail("patch_size", fmt::format("= {} exceeds image_size = {}", m.patch_size, m.image_size));
  m.qkv_bias = f.flag_or("qkv_bias", true);
  m.out_bias = true;
  m.mlp_bias = true;
  m.norm = "layernorm";
  // ViTForImageClassification (a classifier over the [CLS] token, no pooler) when the config
  // names its labels; ViTModel (with its pooler) otherwise.
  if (f.has("num_labels"))
    m.num_labels = f.count("num_labels");
  else if (f.has("id2label") && f.at("id2label").is_object())
    m.num_labels = static_cast<std::int64_t>(f.at("id2label").size());
  m.pooler = m.num_labels == 0;
  return m;
}

ModelArch read_t5(const Fields &f) {
  ModelArch m;
  m.family = ModelFamily::encoder_decoder;
  m.hidden = f.count("d_model");
  m.layers = f.count("num_layers");
  m.decoder_layers = f.count_or("num_decoder_layers", m.layers);
  m.heads = f.count("num_heads");
  m.kv_heads = m.heads;
  m.head_dim = f.count("d_kv");
  m.intermediate = f.count("d_ff");
  m.vocab = f.count("vocab_size");
  m.relative_attention_buckets = f.count_or("relative_attention_num_buckets", 32);
  m.tied_embeddings = f.flag_or("tie_word_embeddings", true);
  std::string ff = f.text_or("feed_forward_proj", "relu");
  if (ff.starts_with("gated-"))
    m.gated_mlp = true;
  else if (ff.find('-') != std::string::npos)
    f.fail("feed_forward_proj",
           fmt::format("= \"{}\" is not of the form ACT or gated-ACT (T5Config)", ff));
  m.norm = "rmsnorm"; // T5LayerNorm: a weight, no bias
  return m;
}

ModelArch read_resnet(const Fields &f) {
  ModelArch m;
  m.family = ModelFamily::cnn;
  CnnArch &c = m.cnn;
  if (f.has("block")) {
    // torchvision resnet.py: ResNet(block, layers, num_classes); widths are the planes per stage.
    // block is "basic" or "bottleneck" (the catalog's spelling) or torchvision's class name.
    std::string block = f.text_or("block", "");
    if (block == "BasicBlock" || block == "basic")
      c.block = "basic";
    else if (block == "Bottleneck" || block == "bottleneck")
      c.block = "bottleneck";
    else
      f.fail("block", fmt::format("= \"{}\" must be BasicBlock or Bottleneck", block));
    c.stage_blocks = f.counts("layers");
    c.stage_widths =
        f.has("widths") ? f.counts("widths") : std::vector<std::int64_t>{64, 128, 256, 512};
    c.stem_width = f.count_or("stem_width", 64);
    c.num_classes = f.count_or("num_classes", 1000);
    m.channels = f.count_or("num_channels", 3);
  } else {
    // transformers ResNetConfig: hidden_sizes are each stage's output channels (×4 the planes for
    // bottleneck stages).
    std::string type = f.text_or("layer_type", "bottleneck");
    if (type != "basic" && type != "bottleneck")
      f.fail("layer_type", fmt::format("= \"{}\" must be basic or bottleneck", type));
    c.block = type;
    c.stage_blocks = f.counts("depths");
    auto sizes = f.counts("hidden_sizes");
    for (auto s : sizes) {
      if (type == "bottleneck" && s % 4 != 0)
        f.fail("hidden_sizes", fmt::format("entry {} is not a multiple of 4 (bottleneck)", s));
      c.stage_widths.push_back(type == "bottleneck" ? s / 4 : s);
    }
    c.stem_width = f.count_or("embedding_size", 64);
    m.channels = f.count_or("num_channels", 3);
    if (f.has("num_labels"))
      c.num_classes = f.count("num_labels");
    else if (f.has("id2label") && f.at("id2label").is_object())
      c.num_classes = static_cast<std::int64_t>(f.at("id2label").size());
    else
      c.num_classes = 0; // ResNetModel: no classifier
  }
  if (c.stage_blocks.size() != c.stage_widths.size())
    f.fail(f.has("block") ? "widths" : "hidden_sizes",
           fmt::format("has {} stages but the block counts list has {}", c.stage_widths.size(),
                       c.stage_blocks.size()));
  m.num_labels = c.num_classes;
  m.image_size = f.count_or("image_size", 224);
  return m;
}

ModelArch read_unet(const Fields &f) {
  ModelArch m;
  m.family = ModelFamily::unet;
  UNetArch &u = m.unet;
  // Options that add or reshape parameters in ways this derivation does not model.
  for (const char *key : {"class_embed_type", "encoder_hid_dim", "encoder_hid_dim_type",
                          "time_cond_proj_dim", "num_class_embeds", "projection_class_embeddings"})
    f.unsupported_unless(key);
  f.unsupported_unless("resnet_time_scale_shift", "default");
  f.unsupported_unless("time_embedding_type", "positional");
  f.unsupported_unless("conv_in_kernel", 3);
  f.unsupported_unless("conv_out_kernel", 3);
  f.unsupported_unless("dual_cross_attention", false);
  f.unsupported_unless("only_cross_attention", false);
  f.unsupported_unless("attention_type", "default");
  f.unsupported_unless("mid_block_type", "UNetMidBlock2DCrossAttn");

  u.in_channels = f.count_or("in_channels", 4);
  u.out_channels = f.count_or("out_channels", 4);
  u.block_out_channels = f.counts("block_out_channels");
  u.down_block_types = f.texts("down_block_types");
  u.up_block_types = f.texts("up_block_types");
  std::size_t n = u.block_out_channels.size();
  if (u.down_block_types.size() != n)
    f.fail("down_block_types",
           fmt::format("has {} entries; block_out_channels has {}", u.down_block_types.size(), n));
  if (u.up_block_types.size() != n)
    f.fail("up_block_types",
           fmt::format("has {} entries; block_out_channels has {}", u.up_block_types.size(), n));
  for (const auto &t : u.down_block_types)
    if (t != "CrossAttnDownBlock2D" && t != "DownBlock2D")
      f.fail("down_block_types",
             fmt::format("names \"{}\"; dlrig knows CrossAttnDownBlock2D and DownBlock2D", t));
  for (const auto &t : u.up_block_types)
    if (t != "CrossAttnUpBlock2D" && t != "UpBlock2D")
      f.fail("up_block_types",
             fmt::format("names \"{}\"; dlrig knows CrossAttnUpBlock2D and UpBlock2D", t));
  if (f.has("layers_per_block") && f.at("layers_per_block").is_array())
    f.fail("layers_per_block", "as a per-block list is not supported; give one integer");
  u.layers_per_block = f.count_or("layers_per_block", 2);
  // UNet2DConditionModel: num_attention_heads = num_attention_heads or attention_head_dim.
  u.attention_heads = f.has("num_attention_heads") ? f.per_block("num_attention_heads", 8, n)
                                                   : f.per_block("attention_head_dim", 8, n);
  if (f.has("transformer_layers_per_block") && f.at("transformer_layers_per_block").is_array())
    for (const Json &e : f.at("transformer_layers_per_block"))
      if (e.is_array())
        f.fail("transformer_layers_per_block", "as nested lists is not supported");
  u.transformer_layers = f.per_block("transformer_layers_per_block", 1, n);
  if (f.has("reverse_transformer_layers_per_block"))
    f.fail("reverse_transformer_layers_per_block", "is not supported");
  u.up_transformer_layers.assign(u.transformer_layers.rbegin(), u.transformer_layers.rend());
  // diffusers' UNet2DConditionModel defaults cross_attention_dim to 1280.
  u.cross_attention_dim = f.count_or("cross_attention_dim", 1280);
  u.time_embed_dim = f.count_or("time_embedding_dim", 4 * u.block_out_channels[0]);
  u.norm_num_groups = f.count_or("norm_num_groups", 32);
  u.use_linear_projection = f.flag_or("use_linear_projection", false);
  u.addition_embed_type = f.text_or("addition_embed_type", "");
  if (!u.addition_embed_type.empty()) {
    if (u.addition_embed_type != "text_time")
      f.fail("addition_embed_type",
             fmt::format("= \"{}\" is not supported; dlrig knows text_time (SDXL)",
                         u.addition_embed_type));
    u.addition_time_embed_dim = f.count("addition_time_embed_dim");
    u.projection_class_embeddings_input_dim = f.count("projection_class_embeddings_input_dim");
  }
  u.sample_size = f.count_or("sample_size", 64);
  for (std::size_t i = 0; i < n; ++i) {
    auto c = u.block_out_channels[i];
    if (c % u.norm_num_groups != 0)
      f.fail("block_out_channels", fmt::format("entry {} is not a multiple of norm_num_groups = {}",
                                               c, u.norm_num_groups));
    bool attn = u.down_block_types[i].starts_with("CrossAttn") ||
                u.up_block_types[n - 1 - i].starts_with("CrossAttn") || i == n - 1;
    if (attn && c % u.attention_heads[i] != 0)
      f.fail("attention_head_dim",
             fmt::format("= {} heads do not divide {} channels", u.attention_heads[i], c));
  }
  m.channels = u.in_channels;
  return m;
}

// config.json's quantization_config, as transformers' quantizers save it
// (src/transformers/utils/quantization_config.py): GPTQConfig and AwqConfig `bits` (AutoAWQ:
// `w_bit`) and `group_size` (-1: one scale per output column); BitsAndBytesConfig `load_in_4bit`
// or `load_in_8bit` (configs saved before `quant_method` existed have only these) and
// `bnb_4bit_use_double_quant`; FineGrainedFP8Config ("fp8") and FbgemmFp8Config;
// compressed-tensors' `config_groups.*.weights.num_bits` and `group_size`. Another method is kept
// with bits 0.
StoredQuant read_stored_quant(const Json &q, const std::string &name) {
  auto fail = [&](const std::string &key, const std::string &what) {
    throw ConfigError(fmt::format("{}: config field 'quantization_config.{}' {}", name, key, what));
  };
  if (!q.is_object())
    throw ConfigError(fmt::format(
        "{}: config field 'quantization_config' must be an object, got {}", name, kind_of(q)));
  auto has = [&](const Json &o, const char *key) {
    return o.contains(key) && !o.at(key).is_null();
  };
  auto flag = [&](const char *key) {
    if (!has(q, key))
      return false;
    if (!q.at(key).is_boolean())
      fail(key, fmt::format("must be true or false, got {}", kind_of(q.at(key))));
    return q.at(key).get<bool>();
  };
  // `path` names the key in errors (quantization_config.PATH).
  auto bits_of = [&](const Json &o, const char *key, const std::string &path) {
    const Json &v = o.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 2 || v.get<std::int64_t>() > 8 ||
        v.get<std::int64_t>() == 5 || v.get<std::int64_t>() == 6 || v.get<std::int64_t>() == 7)
      fail(path, fmt::format("must be 2, 3, 4 or 8, got {}", v.dump()));
    return static_cast<int>(v.get<std::int64_t>());
  };
  auto group_of = [&](const Json &o, const char *key, const std::string &path) -> std::int64_t {
    if (!has(o, key))
      return 0;
    const Json &v = o.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() == 0 || v.get<std::int64_t>() < -1 ||
        v.get<std::int64_t>() > (1 << 20))
      fail(path, fmt::format("must be -1 or a group size from 1 to {}, got {}", 1 << 20, v.dump()));
    return std::max<std::int64_t>(0, v.get<std::int64_t>());
  };
  StoredQuant sq;
  if (has(q, "quant_method")) {
    if (!q.at("quant_method").is_string())
      fail("quant_method", fmt::format("must be a string, got {}", kind_of(q.at("quant_method"))));
    sq.method = q.at("quant_method").get<std::string>();
  } else if (has(q, "load_in_4bit") || has(q, "load_in_8bit")) {
    sq.method = "bitsandbytes";
  } else {
    fail("quant_method", "is missing; a quantised model's config.json has it");
  }
  if (sq.method == "gptq" || sq.method == "awq") {
    const char *key = has(q, "bits") || sq.method == "gptq" ? "bits" : "w_bit";
    if (!has(q, key))
      fail(key, fmt::format("is missing; a {} config.json has it", sq.method));
    sq.bits = bits_of(q, key, key);
    const char *group =
        sq.method == "awq" && has(q, "q_group_size") ? "q_group_size" : "group_size";
    sq.group_size = group_of(q, group, group);
  } else if (sq.method == "bitsandbytes") {
    const bool four = flag("load_in_4bit"), eight = flag("load_in_8bit");
    if (four == eight)
      fail("load_in_4bit", "or 'load_in_8bit' must be true (and not both)");
    sq.bits = four ? 4 : 8;
    sq.double_quant = four && flag("bnb_4bit_use_double_quant");
  } else if (sq.method == "fp8" || sq.method == "fbgemm_fp8") {
    sq.bits = 8;
  } else if (sq.method == "compressed-tensors") {
    if (!has(q, "config_groups") || !q.at("config_groups").is_object() ||
        q.at("config_groups").empty())
      fail("config_groups", "must be an object of quantisation groups (compressed-tensors)");
    for (const auto &[group, g] : q.at("config_groups").items()) {
      const std::string at = "config_groups." + group + ".weights";
      if (!g.is_object() || !has(g, "weights") || !g.at("weights").is_object() ||
          !has(g.at("weights"), "num_bits"))
        fail(at, "must be an object with num_bits");
      const int bits = bits_of(g.at("weights"), "num_bits", at + ".num_bits");
      if (sq.bits != 0 && bits != sq.bits)
        fail(at + ".num_bits", fmt::format("= {} differs from another group's {}: dlrig sizes one "
                                           "width; give the .safetensors checkpoint beside it",
                                           bits, sq.bits));
      sq.bits = bits;
      sq.group_size = group_of(g.at("weights"), "group_size", at + ".group_size");
    }
  }
  return sq;
}

} // namespace

Result<ModelArch> model_from_config(const Json &config, const std::string &name) {
  if (!config.is_object())
    return make_error(
        fmt::format("{}: a model config must be a JSON object, got {}", name, kind_of(config)));
  try {
    std::string type;
    if (config.contains("model_type") && config.at("model_type").is_string())
      type = config.at("model_type").get<std::string>();
    else if (config.contains("_class_name") && config.at("_class_name").is_string()) {
      auto cls = config.at("_class_name").get<std::string>();
      if (cls != "UNet2DConditionModel")
        return make_error(fmt::format(
            "{}: config field '_class_name' = \"{}\" is not a model dlrig knows; it reads "
            "UNet2DConditionModel from diffusers",
            name, cls));
      type = "unet";
    } else if (config.contains("model_type")) {
      return make_error(fmt::format("{}: config field 'model_type' must be a string, got {}", name,
                                    kind_of(config.at("model_type"))));
    } else {
      return make_error(fmt::format(
          "{}: config field 'model_type' is missing (or '_class_name' for a diffusers UNet); "
          "pass the model's config.json as published",
          name));
    }
    Fields f(config, name, type);
    ModelArch m;
    static constexpr std::array llama_like{"llama", "mistral", "mixtral",
                                           "qwen2", "gemma2",  "phi3"};
    if (std::find(llama_like.begin(), llama_like.end(), type) != llama_like.end())
      m = read_llama_like(f, type);
    else if (type == "gpt2")
      m = read_gpt2(f);
    else if (type == "bert")
      m = read_bert(f);
    else if (type == "vit")
      m = read_vit(f);
    else if (type == "t5")
      m = read_t5(f);
    else if (type == "resnet")
      m = read_resnet(f);
    else if (type == "unet")
      m = read_unet(f);
    else if (table_knows(type)) {
      auto t = model_from_table(config, name, type);
      if (!t)
        return t;
      m = std::move(t).value();
    } else
      return make_error(fmt::format(
          "{}: config field 'model_type' = \"{}\" is not a model type dlrig knows ({}, or a "
          "diffusers UNet2DConditionModel); a .safetensors checkpoint gives the exact count "
          "without one, or give --params N with --family",
          name, type, fmt::join(known_model_types(), ", ")));
    if (!table_knows(type) &&
        (m.family == ModelFamily::decoder || m.family == ModelFamily::moe_decoder)) {
      auto w = with_kv_window(std::move(m), config, name, type); // the table's types read theirs
      if (!w)
        return w;
      m = std::move(w).value();
    }
    m.name = name;
    m.display_name = name;
    m.hf_model_type = type;
    m.extra = config;
    if (config.contains("quantization_config") && !config.at("quantization_config").is_null())
      m.stored_quant = read_stored_quant(config.at("quantization_config"), name);
    return apply_head(std::move(m), config, name);
  } catch (const ConfigError &e) {
    return make_error(e.what());
  }
}

Result<StoredQuant> stored_quant_from_config(const Json &quantization_config,
                                             const std::string &name) {
  try {
    return read_stored_quant(quantization_config, name);
  } catch (const ConfigError &e) {
    return make_error(e.what());
  }
}

std::string describe(const StoredQuant &q) {
  if (q.bits == 0)
    return q.method;
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> names{
      {{"gptq", "GPTQ"}, {"awq", "AWQ"}, {"fp8", "FP8"}, {"fbgemm_fp8", "FBGEMM FP8"}}};
  std::string out = q.method;
  for (const auto &[method, shown] : names)
    if (method == q.method)
      out = shown;
  if (q.method != "fp8" && q.method != "fbgemm_fp8")
    out += fmt::format(" {}-bit", q.bits);
  if (q.group_size > 0)
    out += fmt::format(", groups of {}", q.group_size);
  if (q.double_quant)
    out += " (double quantisation)";
  return out;
}

Result<ModelArch> model_from_config_text(std::string_view text, const std::string &origin) {
  Json j;
  try {
    j = Json::parse(python_json_to_json(text));
  } catch (const Json::parse_error &e) {
    return make_error(fmt::format("{}: not valid JSON at byte {}: {}", origin, e.byte, e.what()));
  }
  return model_from_config(j, origin);
}

} // namespace dlrig::model

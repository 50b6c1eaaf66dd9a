// The table-driven model types and head classes: data/model_types.json gives each model_type its
// structure and the config fields (with class defaults) that size it; data/model_heads.csv gives
// each head class what it adds. docs/models.md describes both tables.
#include "dlrig/model/types.hpp"

#include "dlrig/core/embedded.hpp"
#include "dlrig/core/exit_code.hpp"
#include "dlrig/core/version.hpp"
#include "dlrig/kb/csv.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace dlrig::model {
namespace {

using I64 = std::int64_t;

struct TableError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const Json &types_table() {
  static const Json table = [] {
    auto bytes = embedded_file("model_types.json");
    if (!bytes)
      throw Failure(ExitCode::internal, "data/model_types.json was not embedded into this build");
    Json j;
    try {
      j = Json::parse(*bytes);
    } catch (const Json::exception &e) {
      throw Failure(ExitCode::internal, fmt::format("data/model_types.json: {}", e.what()));
    }
    if (!j.is_object() || !j.contains("types") || !j.at("types").is_object() ||
        !j.contains("builtin") || !j.at("builtin").is_object())
      throw Failure(ExitCode::internal,
                    "data/model_types.json: expected objects \"types\" and \"builtin\"");
    return j;
  }();
  return table;
}

struct HeadRow {
  std::string style, head;
  bool pooler = false, lm_head = false, mlm_head = false, cls_dense = false;
  std::string classifier; // none | labels | 1 | 2
  bool classifier_bias = false;
};

const std::vector<HeadRow> &head_rows() {
  static const std::vector<HeadRow> rows = [] {
    auto bytes = embedded_file("model_heads.csv");
    if (!bytes)
      throw Failure(ExitCode::internal, "data/model_heads.csv was not embedded into this build");
    auto table = kb::parse_csv(*bytes, "data/model_heads.csv");
    if (!table)
      throw Failure(ExitCode::internal, table.error().message);
    std::vector<HeadRow> out;
    auto col = [&](const kb::CsvRecord &r, const char *name) -> const std::string & {
      int c = table->column(name);
      if (c < 0)
        throw Failure(ExitCode::internal,
                      fmt::format("data/model_heads.csv: no column '{}'", name));
      return r.fields[static_cast<std::size_t>(c)];
    };
    for (const auto &r : table->records) {
      auto yes = [&](const char *name) {
        const auto &v = col(r, name);
        if (v != "yes" && v != "no")
          throw Failure(ExitCode::internal,
                        fmt::format("data/model_heads.csv:{}: '{}' must be yes or no, got \"{}\"",
                                    r.line, name, v));
        return v == "yes";
      };
      HeadRow h{col(r, "style"), col(r, "head"),   yes("pooler"),        yes("lm_head"),
                yes("mlm_head"), yes("cls_dense"), col(r, "classifier"), yes("classifier_bias")};
      if (h.classifier != "none" && h.classifier != "labels" && h.classifier != "1" &&
          h.classifier != "2")
        throw Failure(ExitCode::internal,
                      fmt::format("data/model_heads.csv:{}: classifier must be none, labels, 1 or "
                                  "2, got \"{}\"",
                                  r.line, h.classifier));
      out.push_back(std::move(h));
    }
    return out;
  }();
  return rows;
}

// The largest value a knob may take: far above any real model, small enough that no derived count
// overflows 64 bits (docs/models.md, "Limits").
I64 limit_of(std::string_view knob) {
  if (knob == "layers" || knob == "decoder_layers" || knob == "heads" || knob == "kv_heads" ||
      knob == "experts" || knob == "experts_per_token" || knob == "relative_buckets" ||
      knob == "channels" || knob == "patch_size" || knob == "sparse_step" ||
      knob == "audio_mel_bins" || knob == "position_offset" || knob == "norms_per_layer" ||
      knob == "every" || knob == "max_window_layers" || knob == "gated_layers" || knob == "tiles" ||
      knob == "linear_key_heads" || knob == "linear_value_heads" || knob == "mamba_heads" ||
      knob == "mamba_groups" || knob == "linear_conv_kernel" || knob == "short_conv_kernel")
    return 1 << 10;
  if (knob == "head_dim" || knob == "linear_key_dim" || knob == "linear_value_dim" ||
      knob == "mamba_head_dim" || knob == "mamba_state")
    return 1 << 14;
  if (knob == "mamba_expand")
    return 1 << 4;
  if (knob == "spatial_merge" || knob == "temporal_patch" || knob == "projector_shuffle")
    return 1 << 3;
  if (knob == "vocab" || knob == "type_vocab")
    return 1 << 24;
  if (knob == "positions" || knob == "decoder_positions" || knob == "context" || knob == "window")
    return 1 << 26;
  if (knob == "image_size")
    return 1 << 16;
  return I64{1} << 20; // widths
}

I64 min_of(std::string_view knob) {
  static const std::set<std::string_view> zero_ok{
      "positions", "decoder_positions", "type_vocab",         "position_offset",
      "context",   "relative_buckets",  "sparse_step",        "shared_expert_intermediate",
      "window",    "max_window_layers", "first_dense_layers", "n_shared_experts"};
  if (knob == "last_sparse_layer") // ERNIE 4.5's moe_layer_end_index: -1 is the last layer
    return -1;
  return zero_ok.contains(knob) ? 0 : 1;
}

// Reads one entry's knobs against one config.json, naming the config field in every error.
class Knobs {
public:
  Knobs(Json spec, const Json &config, std::string name, std::string type)
      : spec_(std::move(spec)), cfg_(config), name_(std::move(name)), type_(std::move(type)) {
    // Overrides that apply when a config field has a given value (Falcon's new architecture).
    if (spec_.contains("when"))
      for (const Json &w : spec_.at("when")) {
        const Json *v = field(w.at("key"));
        const Json &value = v ? *v : w.at("default");
        if (value == w.at("equals"))
          for (const auto &[k, s] : w.at("set").items())
            spec_[k] = s;
      }
  }

  bool has(const std::string &knob) const { return spec_.contains(knob); }
  const Json &raw(const std::string &knob) const { return spec_.at(knob); }

  [[noreturn]] void fail(const std::string &key, const std::string &what) const {
    throw TableError(fmt::format("{}: config field '{}' {}", name_, key, what));
  }
  [[noreturn]] void table_fail(const std::string &knob, const std::string &what) const {
    throw Failure(ExitCode::internal,
                  fmt::format("data/model_types.json: type '{}': knob '{}' {}", type_, knob, what));
  }

  // The first of the spec's keys the config holds (non-null), or nullptr.
  const Json *field(const Json &keys) const {
    auto one = [&](const Json &k) -> const Json * {
      auto key = k.get<std::string>();
      if (cfg_.contains(key) && !cfg_.at(key).is_null())
        return &cfg_.at(key);
      return nullptr;
    };
    if (keys.is_array()) {
      for (const Json &k : keys)
        if (auto *v = one(k))
          return v;
      return nullptr;
    }
    return one(keys);
  }
  std::string key_name(const Json &keys) const {
    const Json &k = keys.is_array() ? keys.at(0) : keys;
    if (keys.is_array())
      for (const Json &e : keys)
        if (cfg_.contains(e.get<std::string>()))
          return e.get<std::string>();
    return k.get<std::string>();
  }

  I64 integer(const std::string &knob, std::optional<I64> fallback = std::nullopt) {
    if (auto it = memo_.find(knob); it != memo_.end())
      return it->second;
    if (!busy_.insert(knob).second)
      table_fail(knob, "refers to itself");
    I64 v = 0;
    if (!has(knob)) {
      if (!fallback)
        table_fail(knob, "is missing");
      v = *fallback;
    } else {
      v = value_of(knob, spec_.at(knob));
    }
    busy_.erase(knob);
    memo_[knob] = v;
    return v;
  }

  bool flag(const std::string &knob, bool fallback) const {
    if (!has(knob))
      return fallback;
    const Json &s = spec_.at(knob);
    if (s.is_boolean())
      return s.get<bool>();
    if (!s.is_object() || !s.contains("key"))
      table_fail(knob, "must be true, false or {\"key\": ..., \"default\": ...}");
    const Json *v = field(s.at("key"));
    if (s.contains("starts_with")) {
      auto prefix = s.at("starts_with").get<std::string>();
      std::string text =
          v ? (v->is_string() ? v->get<std::string>() : "") : s.at("default").get<std::string>();
      if (v && !v->is_string())
        fail(key_name(s.at("key")), fmt::format("must be a string, got {}", kind_of(*v)));
      return text.starts_with(prefix);
    }
    if (!v)
      return s.contains("default") ? s.at("default").get<bool>() : fallback;
    if (!v->is_boolean())
      fail(key_name(s.at("key")), fmt::format("must be true or false, got {}", kind_of(*v)));
    return v->get<bool>();
  }

  // The length of a list field ({"key": K, "default": N}: N when the config lacks it; 0 when the
  // knob is absent), as Qwen3-VL's deepstack_visual_indexes counts its extra mergers.
  I64 list_length(const std::string &knob) {
    if (!has(knob))
      return 0;
    const Json &s = spec_.at(knob);
    if (!s.is_object() || !s.contains("key") || !s.contains("default"))
      table_fail(knob, "must be {\"key\": ..., \"default\": N}");
    const Json *v = field(s.at("key"));
    if (!v || v->is_null())
      return s.at("default").get<I64>();
    if (!v->is_array())
      fail(key_name(s.at("key")), fmt::format("must be a list, got {}", kind_of(*v)));
    if (v->size() > 16)
      fail(key_name(s.at("key")), fmt::format("must have at most 16 entries, got {}", v->size()));
    return static_cast<I64>(v->size());
  }

  // True when the config holds the knob's field as null: a field whose null means "none"
  // (sliding_window, q_lora_rank), not the class default.
  bool null_in_config(const std::string &knob) const {
    const std::string key = config_name(knob);
    return cfg_.contains(key) && cfg_.at(key).is_null();
  }

  // A number field whose null means "none" ({"key": K, "default": D}: Gemma 2's
  // attn_logit_softcapping, default 50.0; Gemma 3's final_logit_softcapping, default null): true
  // when the config gives a number, or leaves it out and the default is one.
  bool set_unless_null(const std::string &knob) const {
    if (!has(knob))
      return false;
    const Json &s = spec_.at(knob);
    if (!s.is_object() || !s.contains("key") || !s.contains("default"))
      table_fail(knob, "must be {\"key\": ..., \"default\": ...}");
    if (const Json *v = field(s.at("key"))) {
      if (!v->is_number())
        fail(key_name(s.at("key")), fmt::format("must be a number or null, got {}", kind_of(*v)));
      return true;
    }
    return !null_in_config(knob) && !s.at("default").is_null();
  }

  // The config field a knob reads (the first of its keys the config holds), else the knob.
  std::string config_name(const std::string &knob) const {
    if (has(knob) && spec_.at(knob).is_object() && spec_.at(knob).contains("key"))
      return key_name(spec_.at(knob).at("key"));
    return knob;
  }

  std::string text(const std::string &knob, std::string fallback) const {
    if (!has(knob))
      return fallback;
    if (!spec_.at(knob).is_string())
      table_fail(knob, "must be a string");
    return spec_.at(knob).get<std::string>();
  }

private:
  I64 value_of(const std::string &knob, const Json &s) {
    if (s.is_number_integer())
      return s.get<I64>();
    if (s.is_string())
      return expression(knob, s.get<std::string>(), knob);
    if (!s.is_object() || !s.contains("key"))
      table_fail(knob, "must be an integer, an expression or {\"key\": ..., \"default\": ...}");
    const Json *v = field(s.at("key"));
    std::string key = key_name(s.at("key"));
    if (!v) {
      if (!s.contains("default"))
        fail(key, fmt::format("is missing; a {} config.json has it (copy it from the model's "
                              "config.json)",
                              type_));
      const Json &d = s.at("default");
      return d.is_string() ? expression(knob, d.get<std::string>(), key) : d.get<I64>();
    }
    // InternVL's image_size and patch_size: [side, side].
    if (v->is_array() && (knob == "image_size" || knob == "patch_size")) {
      if (v->size() != 2 || !(*v)[0].is_number_integer() || (*v)[0] != (*v)[1])
        fail(key, fmt::format("must be a side or [side, side], got {}", v->dump()));
      v = &(*v)[0];
    }
    // InternVL's downsample_ratio 0.5: the knob is its reciprocal, a whole number.
    if (s.value("reciprocal", false) && v->is_number() && v->get<double>() > 0) {
      const double r = 1 / v->get<double>();
      if (std::abs(r - std::round(r)) > 1e-9 || r < 1 || r > 64)
        fail(key, fmt::format("must be 1/n for a whole n up to 64, got {}", v->dump()));
      return static_cast<I64>(std::round(r));
    }
    if (!v->is_number_integer())
      fail(key, fmt::format("must be an integer, got {}", kind_of(*v)));
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > std::uint64_t{1} << 62)
      fail(key, fmt::format("must be at most {}, got {}", limit_of(knob), v->dump()));
    I64 n = v->get<I64>();
    if (n < min_of(knob))
      fail(key, fmt::format("must be at least {}, got {}", min_of(knob), n));
    if (n > limit_of(knob))
      fail(key, fmt::format("must be at most {}, got {}", limit_of(knob), n));
    return n;
  }

  // "4*hidden", "hidden/heads" (must divide), "hidden//heads" (floor, as transformers' modeling
  // code divides where the config has no head_dim), "heads", "512": over integers and knobs.
  I64 expression(const std::string &knob, const std::string &e, const std::string &key) {
    auto term = [&](const std::string &t) -> I64 {
      if (!t.empty() &&
          std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::stoll(t);
      return integer(t);
    };
    if (auto plus = e.find('+'); plus != std::string::npos)
      return expression(knob, e.substr(0, plus), key) + expression(knob, e.substr(plus + 1), key);
    if (auto star = e.find('*'); star != std::string::npos)
      return term(e.substr(0, star)) * term(e.substr(star + 1));
    if (auto floor = e.find("//"); floor != std::string::npos) { // Python's floor division
      const std::string num = e.substr(0, floor), den = e.substr(floor + 2);
      I64 a = term(num), b = term(den);
      if (b <= 0 || a < b)
        fail(config_name(den),
             fmt::format("= {} exceeds {} = {}; give {} explicitly", b, config_name(num), a, key));
      return a / b;
    }
    if (auto slash = e.find('/'); slash != std::string::npos) {
      const std::string num = e.substr(0, slash), den = e.substr(slash + 1);
      I64 a = term(num), b = term(den);
      if (b <= 0 || a % b != 0)
        fail(config_name(den), fmt::format("= {} does not divide {} = {}; give {} explicitly", b,
                                           config_name(num), a, key));
      return a / b;
    }
    (void)knob;
    return term(e);
  }

  Json spec_;
  const Json &cfg_;
  std::string name_, type_;
  std::map<std::string, I64> memo_;
  std::set<std::string> busy_;
};

ModelFamily family_of(const std::string &structure, const std::string &type) {
  if (structure == "decoder")
    return ModelFamily::decoder;
  if (structure == "moe_decoder")
    return ModelFamily::moe_decoder;
  if (structure == "encoder" || structure == "vision" || structure == "dual_encoder")
    return ModelFamily::encoder;
  if (structure == "encoder_decoder")
    return ModelFamily::encoder_decoder;
  throw Failure(
      ExitCode::internal,
      fmt::format("data/model_types.json: type '{}': unknown structure \"{}\"", type, structure));
}

const Json &entry_of(const std::string &type) {
  const Json &types = types_table().at("types");
  if (!types.contains(type))
    throw Failure(
        ExitCode::internal,
        fmt::format("data/model_types.json: no type '{}' (named by another entry)", type));
  return types.at(type);
}

// DeBERTa-v2's disentangled attention (modeling_deberta_v2.py DebertaV2Encoder and
// DisentangledSelfAttention): rel_embeddings, their LayerNorm, pos_key_proj/pos_query_proj when
// keys are not shared, the ConvLayer.
void read_disentangled(ModelArch &m, const Json &cfg, Knobs &k) {
  auto flag = [&](const char *key, bool d) {
    if (!cfg.contains(key) || cfg.at(key).is_null())
      return d;
    if (!cfg.at(key).is_boolean())
      k.fail(key, fmt::format("must be true or false, got {}", kind_of(cfg.at(key))));
    return cfg.at(key).get<bool>();
  };
  auto number = [&](const char *key, I64 d) {
    if (!cfg.contains(key) || cfg.at(key).is_null())
      return d;
    if (!cfg.at(key).is_number_integer())
      k.fail(key, fmt::format("must be an integer, got {}", kind_of(cfg.at(key))));
    I64 v = cfg.at(key).get<I64>();
    if (v > (1 << 20))
      k.fail(key, fmt::format("must be at most {}, got {}", 1 << 20, v));
    return v;
  };
  if (flag("relative_attention", false)) {
    I64 max_rel = number("max_relative_positions", -1);
    if (max_rel < 1)
      max_rel = number("max_position_embeddings", 512);
    I64 buckets = number("position_buckets", -1);
    m.relative_rows = 2 * (buckets > 0 ? buckets : max_rel);
    {
      std::vector<std::string> types;
      if (cfg.contains("pos_att_type") && cfg.at("pos_att_type").is_array()) {
        for (const Json &t : cfg.at("pos_att_type"))
          if (t.is_string())
            types.push_back(t.get<std::string>());
      } else if (cfg.contains("pos_att_type") && cfg.at("pos_att_type").is_string()) {
        std::string s = cfg.at("pos_att_type").get<std::string>();
        for (std::size_t b = 0; b <= s.size();) {
          auto e = s.find('|', b);
          std::string part = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
          part.erase(0, part.find_first_not_of(' '));
          part.erase(part.find_last_not_of(' ') + 1);
          types.push_back(part);
          if (e == std::string::npos)
            break;
          b = e + 1;
        }
      }
      for (const auto &t : types)
        if (t == "c2p" || t == "p2c")
          ++m.relative_types;
      if (!flag("share_att_key", false))
        m.position_projections = m.relative_types;
    }
  }
  if (cfg.contains("norm_rel_ebd") && cfg.at("norm_rel_ebd").is_string())
    m.relative_norm =
        cfg.at("norm_rel_ebd").get<std::string>().find("layer_norm") != std::string::npos;
  m.conv_kernel = number("conv_kernel_size", 0);
  if (m.conv_kernel > 0) {
    m.conv_groups = number("conv_groups", 1);
    if (m.conv_groups < 1 || m.hidden % m.conv_groups != 0)
      k.fail("conv_groups",
             fmt::format("= {} must divide hidden_size = {}", m.conv_groups, m.hidden));
  }
}

ModelArch read_entry(const Json &entry, const Json &cfg, const std::string &name,
                     const std::string &type);

// The sliding-window layers of a decoder (data/model_types.json "kv_window"): the config's
// layer_types when it has them (transformers' DynamicCache reads them whatever the type), else
// the type's rule over the layer indices.
void read_kv_window(ModelArch &m, const Json &cfg, const std::string &name,
                    const std::string &type) {
  const Json &rules = types_table().at("kv_window").at("rules");
  Json rule = rules.contains(type) ? rules.at(type) : rules.at("default");
  // sliding_window: the class default (null: none) when absent; null or 0 (Qwen2-MoE's "not
  // used") in the config means none.
  // Llama 4's chunked-attention layers: the cache keeps attention_chunk_size tokens, as a
  // sliding layer keeps its window (cache_utils: "sliding and chunked are the same").
  const Json class_default = rule.value("window", Json());
  rule["window"] = Json{{"key", rule.value("window_key", "sliding_window")},
                        {"default", class_default.is_null() ? Json(0) : class_default}};
  Knobs k(rule, cfg, name, type);
  I64 window = k.null_in_config("window") ? 0 : k.integer("window");
  I64 sliding = 0;
  if (cfg.contains("layer_types") && !cfg.at("layer_types").is_null()) {
    const Json &types = cfg.at("layer_types");
    if (!types.is_array())
      k.fail("layer_types", fmt::format("must be a list of strings, got {}", kind_of(types)));
    if (types.size() != static_cast<std::size_t>(m.layers))
      k.fail("layer_types",
             fmt::format("has {} entries; the model has {} layers", types.size(), m.layers));
    I64 chunked = 0;
    // linear_attention: the gated DeltaNet layers or Mamba-2 mixers of a type that has them (no
    // KV cache); a Mamba type's configs may say "mamba" and "attention" (transformers maps them).
    const bool linear = m.linear_key_heads > 0 || m.mamba_heads > 0;
    const bool mamba = m.mamba_heads > 0;
    for (const Json &t : types) {
      if (!t.is_string() ||
          (t != "full_attention" && t != "sliding_attention" && t != "chunked_attention" &&
           !(linear && t == "linear_attention") && !(mamba && (t == "mamba" || t == "attention")) &&
           !(m.short_conv && t == "conv")))
        k.fail("layer_types", fmt::format("entry {} is not full_attention, sliding_attention{} or "
                                          "chunked_attention, the layers dlrig sizes",
                                          t.is_string() ? t.dump() : kind_of(t),
                                          mamba          ? ", linear_attention, mamba, attention"
                                          : linear       ? ", linear_attention"
                                          : m.short_conv ? ", conv"
                                                         : ""));
      sliding += t == "sliding_attention";
      chunked += t == "chunked_attention";
    }
    if (chunked > 0) {
      Json spec{{"chunk", {{"key", "attention_chunk_size"}, {"default", 0}}}};
      Knobs c(spec, cfg, name, type);
      const I64 chunk = c.null_in_config("chunk") ? 0 : c.integer("chunk");
      if (chunk == 0)
        c.fail("attention_chunk_size",
               fmt::format("is missing or null but layer_types has {} chunked_attention layers; "
                           "give the chunk size",
                           chunked));
      if (sliding > 0 && window != chunk)
        c.fail("attention_chunk_size",
               fmt::format("= {} differs from sliding_window = {}; dlrig sizes one window", chunk,
                           window));
      window = chunk;
      sliding += chunked;
      m.chunked_layers = chunked;
    }
    if (sliding > 0 && window == 0)
      k.fail("sliding_window", fmt::format("is null but layer_types has {} sliding_attention "
                                           "layers; give the window",
                                           sliding));
  } else if (window > 0 && k.flag("enabled", true)) {
    const std::string layers = k.text("layers", "");
    const I64 every = layers.ends_with("every") ? k.integer("every") : 1;
    const I64 below = layers.ends_with("max_window_layers") ? k.integer("max_window_layers") : 0;
    std::vector<bool> listed;
    if (k.has("list_key")) {
      const auto key = k.text("list_key", "");
      // Llama 4 takes an empty no_rope_layers as absent (its class derives the list).
      const bool empty_default = k.flag("list_empty_is_default", false) && cfg.contains(key) &&
                                 cfg.at(key).is_array() && cfg.at(key).empty();
      if (cfg.contains(key) && !cfg.at(key).is_null() && !empty_default) {
        const Json &v = cfg.at(key);
        if (!v.is_array() || v.size() != static_cast<std::size_t>(m.layers))
          k.fail(key, fmt::format("must be a list of {} integers, one per layer", m.layers));
        for (const Json &e : v) {
          if (!e.is_number_integer())
            k.fail(key, fmt::format("must be a list of integers, found {}", kind_of(e)));
          // SmolLM3's no_rope_layers: 0 marks a sliding layer; Llama 4's: 1 a chunked one.
          listed.push_back((e.get<I64>() == 0) != k.flag("list_nonzero_slides", false));
        }
      }
    }
    for (I64 i = 0; i < m.layers; ++i) {
      bool slides = false;
      if (layers == "all")
        slides = true;
      else if (layers == "except_every")
        slides = listed.empty() ? (i + 1) % every != 0 : listed[static_cast<std::size_t>(i)];
      else if (layers == "only_every")
        slides = listed.empty() ? (i + 1) % every == 0 : listed[static_cast<std::size_t>(i)];
      else if (layers == "from_max_window_layers")
        slides = i >= below;
      else if (layers == "even_below_max_window_layers")
        slides = i % 2 == 0 && i < below;
      else
        k.table_fail("layers", "must be all, except_every, only_every, from_max_window_layers or "
                               "even_below_max_window_layers");
      sliding += slides;
    }
  }
  m.sliding_layers = sliding;
  m.sliding_window = sliding > 0 ? window : 0;
  // Llama 4's rule: the layers it slides are chunked-attention layers.
  if (!cfg.contains("layer_types") || cfg.at("layer_types").is_null())
    m.chunked_layers = rule.value("window_key", "") == "attention_chunk_size" ? sliding : 0;
}

// The text and vision towers of a two-tower type, each read from its own config (text_config,
// vision_config). An absent or null sub-config takes the entry's "text_init"/"vision_init" (the
// parent class's sub_configs_defaults init_kwargs), else the tower type's class defaults; with
// "text_auto" (an AutoConfig sub-config) the text_config's own model_type picks the tower's type,
// which may be one of the built-in readers (Mistral 3's "mistral").
std::pair<ModelArch, ModelArch> read_towers(const Json &entry, const Json &cfg,
                                            const std::string &name, Knobs &k) {
  auto tower = [&](const char *role, const char *key, const char *init, const char *automatic) {
    auto type = entry.at(role).get<std::string>();
    Json sub = entry.value(init, Json::object());
    // A flat config (Qwen2.5-VL's hub configs): without text_config, the class takes the text
    // model's fields from the top level.
    if (std::string_view(key) == "text_config" && entry.value("text_flat", false))
      sub = cfg;
    if (cfg.contains(key) && !cfg.at(key).is_null()) {
      if (!cfg.at(key).is_object())
        k.fail(key, fmt::format("must be an object, got {}", kind_of(cfg.at(key))));
      sub = cfg.at(key);
    }
    if (entry.value(automatic, false) && sub.contains("model_type")) {
      if (!sub.at("model_type").is_string())
        k.fail(std::string(key) + ".model_type",
               fmt::format("must be a string, got {}", kind_of(sub.at("model_type"))));
      type = sub.at("model_type").get<std::string>();
      // A tower is one model: a two-tower type here would nest without end in a hostile file.
      if (table_knows(type) && (entry_of(type).value("structure", "") == "image_text" ||
                                entry_of(type).value("structure", "") == "dual_encoder"))
        k.fail(std::string(key) + ".model_type",
               fmt::format("= \"{}\" is a two-tower model; give the {} model's own type", type,
                           role == std::string_view("text_tower") ? "text" : "vision"));
    }
    ModelArch m;
    if (table_knows(type)) {
      m = read_entry(entry_of(type), sub, name + "." + key, type);
    } else {
      // An AutoConfig sub-config takes its class's defaults for the keys it leaves out (LLaVA
      // 1.5's text_config gives only the vocabulary and the context of a LlamaConfig()).
      const Json &defaults = types_table().at("builtin_defaults").at("types");
      if (sub.is_object() && defaults.contains(type))
        for (const auto &[field, value] : defaults.at(type).items())
          if (!sub.contains(field))
            sub[field] = value;
      sub["model_type"] = type;
      auto read = model_from_config(sub, name + "." + key); // a built-in reader
      if (!read)
        throw TableError(read.error().message);
      m = std::move(read).value();
    }
    m.hf_model_type = type;
    return m;
  };
  return {tower("text_tower", "text_config", "text_init", "text_auto"),
          tower("vision_tower", "vision_config", "vision_init", "vision_auto")};
}

// CLIP: the vision tower is the arch (its image shapes feed fit), the text tower rides along.
ModelArch read_dual(const Json &entry, const Json &cfg, const std::string &name,
                    const std::string &type, Knobs &k) {
  auto [text, m] = read_towers(entry, cfg, name, k);
  text.lm_head = false;
  m.towers.push_back(std::move(text));
  m.projection_dim = k.integer("projection_dim");
  m.family = family_of("dual_encoder", type);
  return m;
}

// An image-text model (Gemma 3): the language model of text_config is the arch (fit sizes its
// text tokens), the vision tower of vision_config rides along with the projector between them.
ModelArch read_image_text(const Json &entry, const Json &cfg, const std::string &name, Knobs &k) {
  auto [m, vision] = read_towers(entry, cfg, name, k);
  m.text_model_type = m.hf_model_type;
  const std::string projector = k.text("projector", "");
  const I64 v = vision.hidden, t = m.hidden;
  if (projector == "linear_after_rmsnorm") {
    // Gemma 3's mm_input_projection_weight (vision hidden x text hidden, no bias) after an
    // RMSNorm over the vision features (mm_soft_emb_norm): a parameter, no nn.Linear.
    m.projector_params = v * t + v;
  } else if (projector == "patch_merger_mlp" || projector == "mlp") {
    // LLaVA: linear_1 (vision hidden x the vision_feature_layer count -> text hidden) and
    // linear_2 (text -> text hidden), with multimodal_projector_bias; LLaVA-NeXT's image_newline
    // (text hidden). Mistral 3 first an RMSNorm over the vision features and the patch merger's
    // merging_layer (merge^2 x vision hidden -> vision hidden, no bias).
    I64 feature_layers = 1;
    if (cfg.contains("vision_feature_layer") && cfg.at("vision_feature_layer").is_array()) {
      const auto n = cfg.at("vision_feature_layer").size();
      if (n > 16)
        k.fail("vision_feature_layer", fmt::format("must have at most 16 entries, got {}", n));
      feature_layers = std::max<I64>(1, static_cast<I64>(n));
    }
    const bool bias = k.flag("projector_bias", false);
    // InternVL: a LayerNorm over the pixel-shuffled features (vision x shuffle^2) first.
    const I64 shuffle = k.integer("projector_shuffle", 1);
    const I64 width = feature_layers * v * shuffle * shuffle;
    m.projector_linears = {{width, t}, {t, t}};
    m.projector_params = (bias ? 2 * t : 0) + (k.flag("image_newline", false) ? t : 0) +
                         (k.flag("projector_norm", false) ? 2 * width : 0);
    if (projector == "patch_merger_mlp") {
      const I64 merge = k.integer("spatial_merge", 2);
      m.projector_linears.insert(m.projector_linears.begin(), {merge * merge * v, v});
      m.projector_params += v;
    }
    for (const auto &[in, out] : m.projector_linears)
      m.projector_params += in * out;
  } else if (projector == "swiglu_mlp") {
    // Aya Vision: a LayerNorm over the pixel-shuffled features (vision hidden x shuffle^2),
    // linear_1 to projector_mid (the text hidden when the config has none), a SwiGLU that halves
    // it, linear_2 to the text hidden; both linears with bias.
    const I64 shuffle = k.integer("projector_shuffle", 1);
    const I64 width = v * shuffle * shuffle;
    const I64 given_mid = k.integer("projector_mid", 0);
    const I64 mid = given_mid > 0 ? given_mid : t;
    if (mid % 2 != 0)
      k.fail(k.config_name("projector_mid"),
             fmt::format("= {} must be even (the SwiGLU halves it)", mid));
    m.projector_linears = {{width, mid}, {mid / 2, t}};
    m.projector_params = width * mid + mid / 2 * t +
                         (k.flag("projector_bias", false) ? mid + t : 0) +
                         (k.flag("projector_norm", false) ? 2 * width : 0);
  } else if (projector == "linear") {
    // Llama 4: linear_1 (the vision tower's feature width -> text hidden), no bias. PaliGemma:
    // linear (vision hidden -> projection_dim), with bias. SmolVLM, Idefics3: proj after a pixel
    // shuffle that folds projector_shuffle^2 patches into one (vision hidden x shuffle^2 -> text).
    const I64 shuffle = k.integer("projector_shuffle", 1);
    const I64 in = (vision.projection_dim > 0 ? vision.projection_dim : v) * shuffle * shuffle;
    const I64 out = k.integer("projector_out", t);
    m.projector_linears = {{in, out}};
    m.projector_params = in * out + (k.flag("projector_bias", false) ? out : 0);
  } else if (projector == "vision_merger") {
    // Qwen2.5-VL: the vision tower's own patch merger (read with it) maps to the text model.
    m.projector_params = std::exchange(vision.projector_params, 0);
    m.projector_linears = std::exchange(vision.projector_linears, {});
  } else {
    k.table_fail("projector",
                 "must be linear, linear_after_rmsnorm, mlp, swiglu_mlp, patch_merger_mlp or "
                 "vision_merger");
  }
  m.towers.push_back(std::move(vision));
  m.tied_embeddings = k.flag("tied", true);
  // Qwen2.5-VL: a text_config saved by transformers 4 with tie_word_embeddings true ties the head
  // when the top level leaves it false.
  if (!m.tied_embeddings && k.flag("tied_from_text", false) && cfg.contains("text_config") &&
      cfg.at("text_config").is_object() &&
      cfg.at("text_config").value("tie_word_embeddings", Json(false)) == Json(true))
    m.tied_embeddings = true;
  return m;
}

ModelArch read_entry(const Json &entry, const Json &cfg, const std::string &name,
                     const std::string &type) {
  Knobs k(entry, cfg, name, type);
  const std::string structure = k.text("structure", "");
  if (structure == "dual_encoder")
    return read_dual(entry, cfg, name, type, k);
  if (structure == "image_text")
    return read_image_text(entry, cfg, name, k);
  ModelArch m;
  m.family = family_of(structure, type);
  m.hf_model_type = type;
  m.hidden = k.integer("hidden");
  m.layers = k.integer("layers");
  m.heads = k.integer("heads");
  m.kv_heads = k.flag("multi_query", false) ? 1 : k.integer("kv_heads", m.heads);
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    k.fail("num_key_value_heads",
           fmt::format("= {} must divide the {} attention heads", m.kv_heads, m.heads));
  m.head_dim = k.integer("head_dim");
  if (k.flag("latent_attention", false)) { // DeepSeek's MLA: head_dim is the query/key head
    m.kv_lora_rank = k.integer("kv_lora_rank");
    m.qk_rope_dim = k.integer("qk_rope_head_dim");
    m.v_head_dim = k.integer("v_head_dim");
    // q_lora_rank null: one q_proj (DeepSeek-V2-Lite).
    m.q_lora_rank = k.null_in_config("q_lora_rank") ? 0 : k.integer("q_lora_rank");
    if (m.qk_rope_dim >= m.head_dim)
      k.fail("qk_rope_head_dim",
             fmt::format("= {} must be below the query/key head's {}", m.qk_rope_dim, m.head_dim));
  }
  m.intermediate = k.integer("intermediate");
  // LFM2's block_auto_adjust_ff_dim: the MLP is 2/3 of intermediate_size, times
  // block_ffn_dim_multiplier (1.0 when absent), rounded up to a multiple of block_multiple_of.
  if (k.has("ff_auto_adjust") && k.flag("ff_auto_adjust", true)) {
    const std::string key = k.config_name("ff_multiplier");
    const Json *given = cfg.contains(key) ? &cfg.at(key) : nullptr;
    if (given && (!given->is_number() || given->get<double>() <= 0 || given->get<double>() > 64))
      k.fail(key, fmt::format("must be a number above 0 and at most 64, got {}", given->dump()));
    const double multiplier = given ? given->get<double>() : 1.0;
    const I64 of = k.integer("ff_multiple_of");
    const auto scaled = static_cast<I64>(multiplier * static_cast<double>(2 * m.intermediate / 3));
    m.intermediate = std::max<I64>(of, (scaled + of - 1) / of * of);
  }
  m.vocab = k.has("vocab") ? k.integer("vocab") : 0;
  if (k.has("positions")) {
    m.max_positions = k.integer("positions");
    m.learned_positions = m.max_positions > 0;
  } else if (k.has("context")) {
    m.max_positions = k.integer("context");
  }
  m.position_offset = k.integer("position_offset", 0);
  m.type_vocab = k.integer("type_vocab", 0);
  I64 embed = k.integer("embed_dim", m.hidden);
  m.embed_dim = embed == m.hidden ? 0 : embed;
  if (m.family == ModelFamily::encoder_decoder) {
    m.decoder_layers = k.integer("decoder_layers", m.layers);
    I64 di = k.integer("decoder_intermediate", m.intermediate);
    m.decoder_intermediate = di == m.intermediate ? 0 : di;
    m.decoder_positions = k.integer("decoder_positions", 0);
    m.relative_attention_buckets = k.integer("relative_buckets", 0);
    m.audio_mel_bins = k.integer("audio_mel_bins", 0);
  }
  m.norm = k.text("norm", "layernorm");
  if (m.norm != "layernorm" && m.norm != "rmsnorm" && m.norm != "none")
    k.table_fail("norm", "must be layernorm, rmsnorm or none");
  m.norms_per_layer = k.flag("parallel", false) ? 1 : k.integer("norms_per_layer", 2);
  m.embed_norm = k.flag("embed_norm", false);
  m.final_norm = k.flag("final_norm", true);
  if (k.flag("qk_norm_on", true))
    m.qk_norm = k.text("qk_norm", "");
  if (!m.qk_norm.empty() && m.qk_norm != "head_rms" && m.qk_norm != "head_ln" &&
      m.qk_norm != "per_head_ln" && m.qk_norm != "proj_rms")
    k.table_fail("qk_norm", "must be head_rms, head_ln, per_head_ln or proj_rms");
  m.gated_mlp = k.flag("gated", false);
  m.fused_gate_up = m.gated_mlp && k.flag("fused_gate_up", false);
  m.qkv_bias = k.flag("qkv_bias", false);
  m.k_bias = k.flag("k_bias", true);
  m.out_bias = k.flag("o_bias", false);
  m.mlp_bias = k.flag("mlp_bias", false);
  m.lm_head_bias = k.flag("lm_head_bias", false);
  m.attention_sinks = k.flag("attention_sinks", false);
  m.act_params = k.flag("xielu", false) ? 2 : 0; // XIELUActivation's alpha_p and alpha_n
  m.attn_softcap = k.set_unless_null("attn_softcap");
  m.final_softcap = k.set_unless_null("final_softcap");
  m.tied_embeddings = k.has("tied") ? k.flag("tied", true) : [&] {
    Json spec{{"key", "tie_word_embeddings"}, {"default", true}};
    Knobs t(Json{{"tied", spec}}, cfg, name, type);
    return t.flag("tied", true);
  }();
  // A list of layer indices in the config field a knob names (null or absent: none given).
  auto index_list = [&](const char *knob) -> std::optional<std::set<I64>> {
    if (!k.has(knob))
      return std::nullopt;
    const auto key = k.raw(knob).get<std::string>();
    const Json *v = k.field(key);
    if (!v || v->is_null())
      return std::nullopt;
    if (!v->is_array())
      k.fail(key, fmt::format("must be a list of layer indices, got {}", kind_of(*v)));
    std::set<I64> out;
    for (const Json &e : *v) {
      if (!e.is_number_integer())
        k.fail(key, fmt::format("must be a list of layer indices, found {}", kind_of(e)));
      out.insert(e.get<I64>());
    }
    return out;
  };
  if (m.family == ModelFamily::moe_decoder) {
    m.experts = k.integer("experts");
    m.experts_per_token = k.integer("experts_per_token");
    if (m.experts_per_token > m.experts)
      k.fail("num_experts_per_tok",
             fmt::format("= {} exceeds the {} experts", m.experts_per_token, m.experts));
    m.dense_intermediate = k.integer("dense_intermediate", m.intermediate);
    m.shared_expert_intermediate = k.integer("shared_expert_intermediate", 0);
    m.shared_expert_gate = k.flag("shared_expert_gate", false);
    m.router_bias = k.flag("router_bias", false);
    m.routed_bias = k.flag("routed_bias", true);
    // transformers' rule: layer i has experts unless listed in mlp_only_layers, and only every
    // decoder_sparse_step-th layer does.
    I64 step = k.integer("sparse_step", 1);
    const std::set<I64> only = index_list("dense_layer_list").value_or(std::set<I64>{});
    // Llama 4: moe_layers, when the config gives it, lists the MoE layers whatever the step says.
    std::optional<std::set<I64>> sparse_only = index_list("sparse_layer_list");
    // GLM-4.7-Flash: mlp_layer_types, when the config gives it, says "sparse" or "dense" per layer.
    if (k.has("sparse_type_list")) {
      auto key = k.raw("sparse_type_list").get<std::string>();
      if (const Json *v = k.field(key); v && !v->is_null()) {
        if (!v->is_array() || v->size() != static_cast<std::size_t>(m.layers))
          k.fail(key, fmt::format("must be a list of {} entries, \"sparse\" or \"dense\", one per "
                                  "layer",
                                  m.layers));
        sparse_only.emplace();
        for (std::size_t i = 0; i < v->size(); ++i) {
          const Json &e = (*v)[i];
          if (e != "sparse" && e != "dense")
            k.fail(key, fmt::format("entry {} is not \"sparse\" or \"dense\"",
                                    e.is_string() ? e.dump() : kind_of(e)));
          if (e == "sparse")
            sparse_only->insert(static_cast<I64>(i));
        }
      }
    }
    // DeepSeek: the first first_k_dense_replace layers are dense; ERNIE 4.5: so are those after
    // moe_layer_end_index (-1: the last layer).
    const I64 first_dense = k.integer("first_dense_layers", 0);
    I64 last_sparse = k.integer("last_sparse_layer", -1);
    if (last_sparse == -1)
      last_sparse = m.layers - 1;
    for (I64 i = 0; i < m.layers; ++i)
      if (sparse_only ? !sparse_only->contains(i)
                      : i < first_dense || i > last_sparse || only.contains(i) || step <= 0 ||
                            (i + 1) % step != 0)
        ++m.dense_layers;
  }
  // Qwen3-Next, Qwen3.5: gated DeltaNet layers where layer_types says "linear_attention", or
  // without it all but every full_attention_interval-th layer (the config class's rule).
  m.attention_output_gate = k.flag("attention_output_gate", false);
  // The layers the config's layer_types gives as one of `kinds` (nullopt without layer_types; its
  // other entries and its length: read_kv_window).
  auto layers_of_kind = [&](std::initializer_list<std::string_view> kinds) -> std::optional<I64> {
    const Json *types = k.field("layer_types");
    if (!types)
      return std::nullopt;
    if (!types->is_array())
      k.fail("layer_types", fmt::format("must be a list of strings, got {}", kind_of(*types)));
    I64 n = 0;
    for (const Json &t : *types)
      n += t.is_string() &&
           std::find(kinds.begin(), kinds.end(), t.get<std::string>()) != kinds.end();
    return n;
  };
  if (k.has("linear_key_heads")) {
    m.linear_key_heads = k.integer("linear_key_heads");
    m.linear_value_heads = k.integer("linear_value_heads");
    m.linear_key_dim = k.integer("linear_key_dim");
    m.linear_value_dim = k.integer("linear_value_dim");
    m.linear_conv_kernel = k.integer("linear_conv_kernel");
    m.linear_split = k.flag("linear_split", false);
    if (auto listed = layers_of_kind({"linear_attention"})) {
      m.linear_attention_layers = *listed;
    } else {
      const I64 every = k.integer("full_attention_every");
      for (I64 i = 0; i < m.layers; ++i)
        m.linear_attention_layers += (i + 1) % every != 0;
    }
  }
  // Granite 4.0: Mamba-2 mixers where layer_types says "mamba" (or "linear_attention", as
  // transformers 5 renames it), every layer without it; mamba_d_head "auto" (or absent) is the
  // mixer's width over its heads, which must divide it as transformers checks.
  if (k.has("mamba_heads")) {
    m.mamba_heads = k.integer("mamba_heads");
    m.mamba_groups = k.integer("mamba_groups");
    m.mamba_state = k.integer("mamba_state");
    m.linear_conv_kernel = k.integer("linear_conv_kernel");
    m.mamba_conv_bias = k.flag("mamba_conv_bias", true);
    m.mamba_proj_bias = k.flag("mamba_proj_bias", false);
    const I64 width = k.integer("mamba_expand") * m.hidden;
    const std::string head_key = k.config_name("mamba_head_dim");
    const Json *head = k.field(head_key);
    if (!head || *head == "auto") {
      if (width % m.mamba_heads != 0)
        k.fail(
            k.config_name("mamba_heads"),
            fmt::format("= {} must divide mamba_expand x hidden_size = {}", m.mamba_heads, width));
      m.mamba_head_dim = width / m.mamba_heads;
    } else {
      m.mamba_head_dim = k.integer("mamba_head_dim");
      if (m.mamba_head_dim * m.mamba_heads != width)
        k.fail(head_key, fmt::format("= {} x {} heads must be mamba_expand x hidden_size = {}",
                                     m.mamba_head_dim, m.mamba_heads, width));
    }
    m.linear_attention_layers = layers_of_kind({"mamba", "linear_attention"}).value_or(m.layers);
  }
  // LFM2: gated short convolutions where layer_types says "conv"; without it, every layer that
  // full_attn_idxs does not list (all attention without either, the config class's rule).
  if (k.has("short_conv_kernel")) {
    m.short_conv = true;
    m.linear_conv_kernel = k.integer("short_conv_kernel");
    m.short_conv_bias = k.flag("short_conv_bias", false);
    if (auto listed = layers_of_kind({"conv"})) {
      m.linear_attention_layers = *listed;
    } else if (auto attention = index_list("attention_layer_list")) {
      m.linear_attention_layers = m.layers;
      for (I64 i : *attention)
        m.linear_attention_layers -= i >= 0 && i < m.layers;
    }
  }
  // Mllama: the layers cross_attention_layers lists (the class's list when absent; an index past
  // the last layer builds nothing) are gated cross-attention layers.
  if (k.has("cross_layer_list")) {
    std::set<I64> listed;
    if (auto given = index_list("cross_layer_list"))
      listed = *given;
    else
      for (const Json &e : k.raw("cross_layer_default"))
        listed.insert(e.get<I64>());
    for (I64 i : listed)
      m.cross_attention_layers += i >= 0 && i < m.layers;
    m.embed_extra_rows = k.integer("embed_extra_rows", 0);
  }
  if (structure == "vision") {
    m.image_size = k.integer("image_size");
    m.patch_size = k.integer("patch_size");
    m.channels = k.integer("channels", 3);
    // image_size // patch_size patches a side, as the strided Conv2d makes (SigLIP So400m/14 at
    // 384 px: 27); a patch larger than the image leaves none.
    if (m.patch_size > m.image_size)
      k.fail("patch_size", fmt::format("= {} exceeds image_size = {}", m.patch_size, m.image_size));
    m.patch_bias = k.flag("patch_bias", true);
    m.patch_positions = k.flag("patch_positions", true);
    m.temporal_patch = k.integer("temporal_patch", 1);
    if (k.has("position_rows")) // a learned table of its own size (Qwen3-VL's pos_embed)
      m.max_positions = k.integer("position_rows");
    const std::string merger = k.text("merger", "");
    if (merger == "rmsnorm_mlp" || merger == "layernorm_mlp") {
      // Qwen2.5-VL's PatchMerger: ln_q RMSNorm(hidden), then Linear(hidden x merge^2) twice, the
      // second to out_hidden_size (the text model's width), both with bias. Qwen3-VL's: a
      // LayerNorm, and one more merger per deepstack layer, normed after the merge.
      const I64 wide = k.integer("spatial_merge", 2) * k.integer("spatial_merge", 2) * m.hidden;
      const I64 out = k.integer("out_hidden");
      const I64 deepstack = k.list_length("deepstack");
      const I64 mlp = wide * wide + wide + wide * out + out;
      const I64 norm = merger == "rmsnorm_mlp" ? m.hidden : 2 * m.hidden;
      m.projector_params = norm + mlp + deepstack * (2 * wide + mlp);
      for (I64 i = 0; i <= deepstack; ++i) {
        m.projector_linears.emplace_back(wide, wide);
        m.projector_linears.emplace_back(wide, out);
      }
    } else if (merger == "pixel_shuffle_mlp") {
      // Llama 4's vision_adapter: fc1 (intermediate_size -> projector_input_dim) and fc2
      // (projector_output_dim -> itself) after the pixel shuffle, no bias.
      const I64 in = k.integer("projector_input"), out = k.integer("projector_output");
      m.projector_linears = {{m.intermediate, in}, {out, out}};
      m.projector_params = m.intermediate * in + out * out;
    } else if (!merger.empty()) {
      k.table_fail("merger", "must be rmsnorm_mlp, layernorm_mlp or pixel_shuffle_mlp");
    }
    // Llama 4's patch embedding is an nn.Linear over unfolded patches (no bias), which PEFT and
    // bitsandbytes take as a linear; its parameters are the patch convolution's.
    if (k.flag("patch_linear", false))
      m.projector_linears.insert(m.projector_linears.begin(),
                                 {m.channels * m.patch_size * m.patch_size, m.hidden});
    // The width of the features the tower hands the projector (Llama 4's vision_output_dim).
    if (k.has("feature_width"))
      m.projection_dim = k.integer("feature_width");
    m.class_token = k.flag("class_token", true);
    m.layer_scale = k.flag("layer_scale", false);
    m.mask_token = k.flag("mask_token", false);
    m.final_layernorm = k.flag("final_layernorm", false);
    // Mllama: a global transformer of gated layers after the layers, and per aspect ratio (plus
    // one row for none) a position embedding for every tile's patches (tile_embedding) and one for
    // every tile before and after the layers, each gated.
    if (k.has("gated_layers")) {
      m.gated_layers = k.integer("gated_layers");
      m.layers += m.gated_layers;
      const I64 rows = k.list_length("aspect_ratios") + 1, tiles = k.integer("tiles");
      const I64 patches = (m.image_size / m.patch_size) * (m.image_size / m.patch_size) + 1;
      // Each knob is bounded, their product is not: refuse a table no model could hold before
      // it overflows (a 448 px image in 14 px patches, 4 tiles, 9 rows: 47 M x hidden).
      if (static_cast<double>(rows) * static_cast<double>(tiles) * static_cast<double>(patches) >
          static_cast<double>(I64{1} << 30))
        k.fail(k.config_name("tiles"),
               fmt::format("= {} tiles of {} patches each over {} aspect ratios: a tile embedding "
                           "of more than 2^30 rows x hidden, beyond any model",
                           tiles, patches, rows - 1));
      m.tile_params = rows * tiles * patches * m.hidden + 2 * (rows * tiles * m.hidden + 1) + 1;
    }
    m.map_head = k.flag("map_head", false);
  }
  if (k.flag("disentangled", false))
    read_disentangled(m, cfg, k);
  if (k.has("modules")) {
    const Json &mods = k.raw("modules");
    const char *roles[] = {"q", "k", "v", "o", "gate", "up", "down", "qkv", "lm_head", "gate_up"};
    const char *fallback[] = {"q_proj",  "k_proj",    "v_proj", "o_proj",  "gate_proj",
                              "up_proj", "down_proj", "",       "lm_head", "gate_up_proj"};
    for (std::size_t i = 0; i < std::size(roles); ++i)
      m.module_names.push_back(mods.contains(roles[i]) ? mods.at(roles[i]).get<std::string>()
                                                       : fallback[i]);
  }
  if (m.family == ModelFamily::decoder || m.family == ModelFamily::moe_decoder)
    read_kv_window(m, cfg, name, type);
  return m;
}

std::string head_style(const std::string &type) {
  const Json &t = types_table();
  if (t.at("builtin").contains(type))
    return t.at("builtin").at(type).get<std::string>();
  if (t.at("types").contains(type))
    return t.at("types").at(type).value("head_style", "");
  return "";
}

} // namespace

std::string kind_of(const Json &v) {
  if (v.is_string())
    return fmt::format("the string {}", v.dump());
  if (v.is_boolean())
    return v.get<bool>() ? "true" : "false";
  if (v.is_number())
    return v.dump();
  if (v.is_array())
    return "a list";
  if (v.is_object())
    return "an object";
  return "null";
}

namespace {
// A model_type's release in one of the table's "since" sections.
std::optional<std::string> since_in(std::string_view section, std::string_view type) {
  const Json &t = types_table();
  if (!t.contains(section))
    return std::nullopt;
  const Json &since = t.at(section).at("since");
  auto it = since.find(std::string(type));
  if (it == since.end() || !it->is_string())
    return std::nullopt;
  return it->get<std::string>();
}
} // namespace

std::optional<std::string> mla_latent_cache_since(std::string_view type) {
  return since_in("mla_latent_cache", type);
}

std::optional<std::string> sdpa_grouped_kv_since(std::string_view type) {
  return since_in("sdpa_grouped_kv", type);
}

Result<ModelArch> with_kv_window(ModelArch m, const Json &config, const std::string &name,
                                 const std::string &type) {
  try {
    read_kv_window(m, config, name, type);
  } catch (const TableError &e) {
    return make_error(e.what());
  }
  return m;
}

std::string kv_window_since() {
  return types_table().at("kv_window").at("since").get<std::string>();
}

std::optional<std::string> tie_forced_since(std::string_view type) {
  return since_in("tie_forced", type);
}

bool transformers_at_least(const std::string &version, std::string_view since) {
  return version.empty() || compare_versions(version, since) >= 0;
}

namespace {
// Whether `version` (empty: the newest) falls in one of the [from, until) ranges.
bool in_ranges(const Json &ranges, const std::string &version) {
  for (const auto &r : ranges) {
    const Json &from = r.at(0), &until = r.at(1);
    if ((from.is_null() || transformers_at_least(version, from.get<std::string>())) &&
        (until.is_null() || !transformers_at_least(version, until.get<std::string>())))
      return true;
  }
  return false;
}
} // namespace

EagerAttention eager_attention(std::string_view type, const std::string &version) {
  const Json &types = types_table().at("eager_attention").at("types");
  auto it = types.find(std::string(type));
  if (it == types.end())
    return {};
  auto ranges = [&](const char *key) {
    return it->contains(key) && in_ranges(it->at(key), version);
  };
  return {ranges("default_eager"), ranges("sdpa_refused"), ranges("flash_refused"),
          it->at("why").get<std::string>()};
}

bool eager_softmax_fp32(std::string_view type) {
  if (type.empty()) // no model type (--params): Korthikanti's count, a 16-bit softmax (Megatron's)
    return false;
  const Json &input = types_table().at("eager_attention").at("softmax_input_dtype");
  return std::find(input.begin(), input.end(), Json(std::string(type))) == input.end();
}

MoeLinears moe_linears(std::string_view type, const std::string &version) {
  const Json &types = types_table().at("moe_linears").at("types");
  auto it = types.find(std::string(type));
  if (it == types.end())
    return {};
  const Json &peft = types_table().at("moe_linears").at("peft_target_parameters").at("types");
  return {in_ranges(it->at("experts"), version), in_ranges(it->at("router"), version),
          std::find(peft.begin(), peft.end(), Json(std::string(type))) != peft.end()};
}

std::vector<std::string> peft_default_targets(std::string_view type) {
  const Json &types = types_table().at("types");
  auto it = types.find(std::string(type));
  if (it == types.end() || !it->contains("peft_default_targets"))
    return {};
  return it->at("peft_default_targets").get<std::vector<std::string>>();
}

BnbKept bnb_kept(std::string_view type, const std::string &version) {
  const Json &section = types_table().at("bnb_kept");
  auto after = [&](const char *since) {
    return transformers_at_least(version, section.at(since).get<std::string>());
  };
  BnbKept k;
  k.biased_head_converted = after("biased_head_converted_since");
  k.exact_linear_type = after("exact_linear_type_since");
  auto it = section.at("types").find(std::string(type));
  if (it != section.at("types").end() && (!it->value("subclass", false) || k.exact_linear_type))
    k.roles = it->at("roles").get<std::vector<std::string>>();
  return k;
}

bool table_knows(std::string_view type) {
  return types_table().at("types").contains(std::string(type));
}

std::vector<std::string> known_model_types() {
  std::vector<std::string> out;
  for (const auto &[k, v] : types_table().at("builtin").items())
    out.push_back(k);
  for (const auto &[k, v] : types_table().at("types").items())
    if (!k.starts_with("clip_"))
      out.push_back(k);
  out.push_back("resnet");
  std::sort(out.begin(), out.end());
  return out;
}

Result<ModelArch> model_from_table(const Json &config, const std::string &name,
                                   const std::string &type) {
  try {
    ModelArch m = read_entry(entry_of(type), config, name, type);
    m.hf_model_type = type;
    return m;
  } catch (const TableError &e) {
    return make_error(e.what());
  }
}

Result<ModelArch> apply_head(ModelArch m, const Json &config, const std::string &name) {
  const std::string style = head_style(m.hf_model_type);
  if (style.empty() || m.family == ModelFamily::cnn || m.family == ModelFamily::unet)
    return m;
  std::string cls;
  if (config.contains("architectures") && !config.at("architectures").is_null()) {
    const Json &a = config.at("architectures");
    if (!a.is_array() || (!a.empty() && !a.at(0).is_string()))
      return make_error(fmt::format(
          "{}: config field 'architectures' must be a list of class "
          "names, got {}",
          name, a.is_array() ? "a list whose first item is " + kind_of(a.at(0)) : kind_of(a)));
    if (!a.empty())
      cls = a.at(0).get<std::string>();
  }
  auto labels_given = config.contains("num_labels") || config.contains("id2label");
  // Without architectures: a causal LM for decoders, the seq2seq LM for encoder-decoders, the base
  // model for encoders, an image classifier for a ViT config that names its labels.
  std::string suffix;
  if (cls.empty()) {
    if (style == "decoder")
      suffix = "ForCausalLM";
    else if (style == "seq2seq")
      suffix = "ForConditionalGeneration";
    else if (style == "vision" && labels_given)
      suffix = "ForImageClassification";
    else
      suffix = "Model";
  }
  const HeadRow *row = nullptr;
  std::vector<std::string> known;
  for (const auto &r : head_rows()) {
    if (r.style != style)
      continue;
    known.push_back(r.head);
    bool match = cls.empty() ? r.head == suffix
                             : cls.size() > r.head.size() && cls.ends_with(r.head) &&
                                   (r.head != "Model" || (cls.find("For") == std::string::npos &&
                                                          cls.find("Head") == std::string::npos));
    if (match && (!row || r.head.size() > row->head.size()))
      row = &r;
  }
  if (!row)
    return make_error(fmt::format(
        "{}: config field 'architectures' names {}, a head class dlrig does not know for "
        "model_type '{}' (it knows the class names ending in {}); give the config of a supported "
        "head or --params N with --family",
        name, cls, m.hf_model_type, fmt::join(known, ", ")));
  m.head_class = cls;
  // BertModel(add_pooling_layer=...) as some configs record it.
  bool pooling = true;
  if (config.contains("add_pooling_layer") && config.at("add_pooling_layer").is_boolean())
    pooling = config.at("add_pooling_layer").get<bool>();
  m.pooler = row->pooler && pooling;
  m.lm_head = row->lm_head;
  m.mlm_head = row->mlm_head;
  m.cls_dense = row->cls_dense;
  m.classifier_bias = row->classifier_bias;
  if (row->classifier == "none") {
    m.num_labels = 0;
  } else if (const Json &t = types_table().at("types");
             row->head == "ForQuestionAnswering" && t.contains(m.hf_model_type) &&
             t.at(m.hf_model_type).contains("qa_labels")) {
    // The type's QA class sets config.num_labels itself (BART: 2, whatever the config says).
    m.num_labels = t.at(m.hf_model_type).at("qa_labels").get<I64>();
  } else if (row->classifier == "labels") {
    // PretrainedConfig: num_labels, else the size of id2label, else 2.
    I64 n = 2;
    if (config.contains("num_labels") && config.at("num_labels").is_number_integer())
      n = config.at("num_labels").get<I64>();
    else if (config.contains("id2label") && config.at("id2label").is_object())
      n = static_cast<I64>(config.at("id2label").size());
    if (n < 1 || n > (1 << 24))
      return make_error(fmt::format("{}: config field 'num_labels' must be between 1 and {}, got "
                                    "{}",
                                    name, 1 << 24, n));
    m.num_labels = n;
  } else {
    m.num_labels = std::stoll(row->classifier);
  }
  for (auto &t : m.towers)
    t.lm_head = false;
  return m;
}

} // namespace dlrig::model

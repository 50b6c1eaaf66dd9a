#include "dlrig/fit/model_input.hpp"

#include "dlrig/model/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dlrig::fit {
namespace {

// Dropout probabilities as config.json files name them, and the dropouts each key controls in
// transformers' modeling code: hidden (after the attention and MLP outputs), embedding (after the
// embeddings), attention (on the softmax output, eager attention) and activation (inside the
// MLP, between its two linears). A dropout in training keeps a mask of 1 byte per element
// (Korthikanti et al. §4.1; PyTorch's CUDA native_dropout returns a bool mask).
struct DropoutKey {
  const char *key;
  bool hidden, embedding, attention, activation;
};
constexpr DropoutKey kDropoutKeys[] = {
    {"hidden_dropout_prob", true, true, false, false},           // BERT, ViT
    {"attention_probs_dropout_prob", false, false, true, false}, // BERT, ViT
    {"resid_pdrop", true, false, false, false},                  // GPT-2
    {"embd_pdrop", false, true, false, false},                   // GPT-2
    {"attn_pdrop", false, false, true, false},                   // GPT-2
    {"dropout_rate", true, true, true, true},                    // T5: every dropout
    {"attention_dropout", false, false, true, false},            // Llama, BART, Mistral...
    {"hidden_dropout", true, false, false, false},               // Falcon, BLOOM
    {"dropout", true, true, false, false},                       // BART, Whisper
    {"activation_dropout", false, false, false, true},           // BART, Whisper
};

void read_dropouts(const model::ModelArch &m, Dims &d) {
  if (!m.extra.is_object())
    return;
  for (const auto &k : kDropoutKeys) {
    auto it = m.extra.find(k.key);
    if (it == m.extra.end() || !it->is_number() || !(it->get<double>() > 0))
      continue;
    d.dropout = d.dropout || k.hidden;
    d.embed_dropout = d.embed_dropout || k.embedding;
    d.attn_dropout = d.attn_dropout || k.attention;
    d.act_dropout = d.act_dropout || k.activation;
  }
}

// Layer index after a ".layers." / ".h." / ".layer." / ".blocks." component; -1 if none.
long layer_index(std::string_view name) {
  for (std::string_view key : {"layers.", "h.", "layer.", "blocks.", "block."}) {
    auto pos = name.find(key);
    while (pos != std::string_view::npos) {
      if (pos == 0 || name[pos - 1] == '.') {
        std::size_t i = pos + key.size();
        long v = 0;
        bool digits = false;
        while (i < name.size() && name[i] >= '0' && name[i] <= '9' && v < 1'000'000) {
          v = v * 10 + (name[i] - '0');
          ++i;
          digits = true;
        }
        if (digits && i < name.size() && name[i] == '.')
          return v;
      }
      pos = name.find(key, pos + 1);
    }
  }
  return -1;
}

long expert_index(std::string_view name) {
  auto pos = name.find("experts.");
  if (pos == std::string_view::npos)
    return -1;
  long v = 0;
  std::size_t i = pos + 8;
  bool digits = false;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && v < 1'000'000) {
    v = v * 10 + (name[i] - '0');
    ++i;
    digits = true;
  }
  return digits ? v : -1;
}

} // namespace

Result<model::ModelFamily> parse_family(std::string_view s) {
  using F = model::ModelFamily;
  for (F f : {F::decoder, F::moe_decoder, F::encoder, F::encoder_decoder, F::cnn, F::unet})
    if (family_name(f) == s)
      return f;
  return make_error("--family: unknown family \"" + std::string(s) +
                    "\" (accepted: decoder, moe-decoder, encoder, encoder-decoder, cnn, unet)");
}

std::string_view family_name(model::ModelFamily f) {
  switch (f) {
  case model::ModelFamily::decoder:
    return "decoder";
  case model::ModelFamily::moe_decoder:
    return "moe-decoder";
  case model::ModelFamily::encoder:
    return "encoder";
  case model::ModelFamily::encoder_decoder:
    return "encoder-decoder";
  case model::ModelFamily::cnn:
    return "cnn";
  case model::ModelFamily::unet:
    return "unet";
  }
  return "?";
}

Dims dims_of(const model::ModelArch &m) {
  Dims d;
  d.hidden = m.hidden;
  // Mllama's cross-attention layers: a text-only batch skips them (no activations, no KV cache).
  d.layers = m.layers - m.cross_attention_layers;
  d.decoder_layers = m.decoder_layers;
  d.heads = m.heads;
  std::int64_t hd = m.head_dim > 0 ? m.head_dim : (m.heads > 0 ? m.hidden / m.heads : 0);
  std::int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  d.q_dim = m.heads > 0 ? m.heads * hd : m.hidden;
  d.kv_dim = kv > 0 ? kv * hd : m.hidden;
  if (m.kv_lora_rank > 0) // DeepSeek's MLA: transformers keeps every head's key and value
    d.kv_dim = m.heads * (hd + m.v_head_dim) / 2;
  d.sliding_layers = m.sliding_window > 0 ? m.sliding_layers : 0;
  d.sliding_window = d.sliding_layers > 0 ? m.sliding_window : 0;
  d.chunked_layers = d.sliding_layers > 0 ? m.chunked_layers : 0;
  d.intermediate = m.intermediate > 0 ? m.intermediate : 4 * m.hidden;
  d.vocab = m.vocab;
  d.logits = model::logits_width(m);
  d.experts = m.experts;
  d.experts_per_token = m.experts > 0 ? std::max<std::int64_t>(1, m.experts_per_token) : 0;
  d.gated = m.gated_mlp;
  if (m.extra.is_object()) {
    std::string act;
    for (const char *key : {"activation_function", "hidden_act", "hidden_activation"})
      if (m.extra.contains(key) && m.extra[key].is_string())
        act = m.extra[key].get<std::string>();
    // transformers activations.py: NewGELUActivation ("gelu_new") and FastGELUActivation
    // ("gelu_fast") are Python formulas of tanh; QuickGELUActivation ("quick_gelu") is
    // input * torch.sigmoid(1.702 * input).
    if (act == "gelu_new" || act == "gelu_fast")
      d.act_extra = 3;
    if (act == "gelu_new")
      d.act_fp32 = 3; // pow's fp32 input, tanh's output and 1 + tanh
    d.act_sigmoid = act == "quick_gelu";
  }
  if (m.act_params > 0) { // xIELU (Apertus), in its Python form
    d.act_extra = 3;
    d.act_param_fp32 = 1;
    d.act_mask = true;
  }
  // Separate or fused projections, from the model's linear layers (model::linear_layers).
  int q = 0, k = 0, v = 0, gate = 0, up = 0;
  for (const auto &l : model::linear_layers(m)) {
    q += l.role == "q";
    k += l.role == "k" || l.role == "kv";
    v += l.role == "v";
    gate += l.role == "gate";
    up += l.role == "up";
  }
  d.qkv_linears = (q > 0) + (k > 0) + (v > 0) > 1 ? (q > 0) + (k > 0) + (v > 0) : 1;
  d.up_linears = gate > 0 && up > 0 ? 2 : 1;
  d.rmsnorm = m.norm == "rmsnorm";
  d.weightless_fp32_norm = m.norm == "none";
  read_dropouts(m, d);
  d.causal = m.family == model::ModelFamily::decoder || m.family == model::ModelFamily::moe_decoder;
  d.tied = m.tied_embeddings;
  d.softmax_fp32 = model::eager_softmax_fp32(m.text_type());
  d.attn_softcap = m.attn_softcap;
  d.final_softcap = m.final_softcap && m.lm_head;
  d.rel_types = static_cast<int>(m.relative_types);
  d.rel_width = m.relative_types > 0 ? m.relative_rows : 0;
  if (m.family == model::ModelFamily::encoder && m.patch_size > 0 && m.image_size > 0) {
    auto side = m.image_size / m.patch_size;
    d.default_seq = side * side + 1; // patches + the class token (ViT)
  } else {
    // A sequence length is the user's choice; without --seq, 2048 tokens or the model's
    // context when shorter (said in the output).
    d.default_seq = m.max_positions > 0 ? std::min<std::int64_t>(m.max_positions, 2048) : 2048;
  }
  return d;
}

std::int64_t layer_params(const Dims &d) {
  std::int64_t attn = 2 * d.hidden * d.q_dim + 2 * d.hidden * d.kv_dim;
  std::int64_t mlp = (d.gated ? 3 : 2) * d.hidden * d.intermediate;
  return attn + mlp * std::max<std::int64_t>(1, d.experts) + 2 * d.hidden;
}

std::int64_t inactive_expert_params(const Dims &d) {
  if (d.experts <= 1)
    return 0;
  std::int64_t mlp = (d.gated ? 3 : 2) * d.hidden * d.intermediate;
  return d.layers * (d.experts - d.experts_per_token) * mlp;
}

std::vector<bool> bnb_converted(const model::ModelArch &m,
                                const std::vector<model::LinearShape> &linears,
                                const std::string &transformers_version) {
  const auto moe = model::moe_linears(m.hf_model_type, transformers_version);
  const auto kept = model::bnb_kept(m.hf_model_type, transformers_version);
  std::vector<bool> out;
  for (std::size_t i = 0; i < linears.size(); ++i) {
    const auto &l = linears[i];
    const bool last_head =
        i + 1 == linears.size() && (l.role == "classifier" || l.role == "pooler");
    const bool kept_role = std::any_of(kept.roles.begin(), kept.roles.end(),
                                       [&](const auto &r) { return r == "all" || r == l.role; });
    out.push_back(l.role != "lm_head" && !kept_role &&
                  (l.routed             ? moe.experts
                   : l.role == "router" ? moe.router
                   : last_head          ? l.bias && kept.biased_head_converted
                                        : true));
  }
  return out;
}

BnbLinears bnb_linears(const model::ModelArch &m, const std::string &transformers_version) {
  const auto linears = model::linear_layers(m);
  const auto converted = bnb_converted(m, linears, transformers_version);
  BnbLinears b;
  for (std::size_t i = 0; i < linears.size(); ++i) {
    const auto &l = linears[i];
    if (converted[i])
      b.params += l.count * l.in * l.out;
    else if (l.routed || l.role == "router")
      b.moe_kept += l.params();
  }
  // The model's last parameter stays 16-bit (get_keys_to_not_convert: "remove last module"). With
  // a tied head that is the final norm's weight, unless the norm has none (OLMo 1, OPT without
  // elementwise affine): then it is the last layer's down projection, one instance of the role,
  // when its weight is that parameter; a bias named it only before 5.0.0, which removed ".bias"
  // as well as ".weight" from the name (the rule of biased heads, model::bnb_kept).
  const bool biased_named =
      !model::bnb_kept(m.hf_model_type, transformers_version).biased_head_converted;
  if (m.lm_head && m.tied_embeddings && m.norm == "none" && m.towers.empty())
    for (std::size_t i = linears.size(); i-- > 0;)
      if (linears[i].role == "down") {
        if (converted[i] && (!linears[i].bias || biased_named))
          b.params -= linears[i].in * linears[i].out;
        break;
      }
  // Converted too, but CLIP's text_projection (the last module, kept) and, from 5.5.0, SigLIP's
  // MultiheadAttention out_proj (a subclass of nn.Linear).
  const bool exact = model::bnb_kept(m.hf_model_type, transformers_version).exact_linear_type;
  for (const auto &l : outside_linears(m))
    if (l.role != "text_projection" && !(l.role == "map_out_proj" && exact))
      b.params += l.count * l.in * l.out;
  if (m.family != model::ModelFamily::encoder) // an image-text model's vision tower
    for (const auto &t : m.towers)
      b.params += bnb_linears(t, transformers_version).params;
  return b;
}

std::vector<model::LinearShape> outside_linears(const model::ModelArch &m) {
  std::vector<model::LinearShape> out;
  const std::int64_t h = m.hidden, e = m.embed_dim > 0 ? m.embed_dim : h;
  if (e != h) // OPT's project_in and project_out (word_embed_proj_dim), DeBERTa's embed_proj
    out.push_back({"embed_proj", "embed_proj", e, h, m.hf_model_type == "opt" ? 2 : 1, false});
  if (m.position_projections > 0) // DeBERTa's pos_key_proj, pos_query_proj
    out.push_back(
        {"pos_proj", "pos_proj", h, m.heads * m.head_dim, m.layers * m.position_projections, true});
  if (m.family == model::ModelFamily::encoder && !m.towers.empty()) { // CLIP
    out.push_back({"visual_projection", "visual_projection", h, m.projection_dim, 1, false});
    out.push_back({"text_projection", "text_projection", m.towers.front().hidden, m.projection_dim,
                   1, false});
  }
  if (m.map_head) { // SigLIP's attention-pooling head
    out.push_back({"map_out_proj", "out_proj", h, h, 1, true});
    out.push_back({"map_fc", "fc1", h, m.intermediate, 1, true});
    out.push_back({"map_fc", "fc2", m.intermediate, h, 1, true});
  }
  for (const auto &[in, o] : m.projector_linears)
    out.push_back({"projector", "projector", in, o, 1, true});
  return out;
}

std::int64_t largest_layer_params(const model::ModelArch &m, const Dims &d) {
  if (m.family == model::ModelFamily::cnn) {
    std::int64_t best = 0;
    if (auto modules = model::walk_shared(m, model::default_image_size(m)))
      for (const auto &r : **modules)
        best = std::max(best, r.params);
    return best;
  }
  if (m.family == model::ModelFamily::unet) {
    // The walk's records are whole ResNet and attention blocks; the largest leaf is a 3×3 conv of
    // the widest block.
    std::int64_t c = 0;
    for (auto v : m.unet.block_out_channels)
      c = std::max(c, v);
    return 9 * c * c;
  }
  return std::max({d.vocab * d.hidden, d.hidden * d.intermediate, d.hidden * d.q_dim});
}

UnetCost unet_cost(const std::vector<model::Module> &modules) {
  UnetCost u;
  for (const auto &r : modules) {
    u.params += static_cast<double>(r.params);
    u.macs += r.macs;
    u.saved_elements += r.saved;
    u.score_elements += r.scores;
    u.infer_elements = std::max(u.infer_elements, r.working);
    if (r.transformer_layers > 0)
      u.infer_scores =
          std::max(u.infer_scores, r.scores / static_cast<double>(r.transformer_layers));
    if (r.checkpointed) {
      u.ckpt_elements += static_cast<double>(r.input.elements());
      u.ckpt_working = std::max(u.ckpt_working, r.saved);
      u.ckpt_working_scores = std::max(u.ckpt_working_scores, r.scores);
    } else {
      u.ckpt_elements += r.saved;
    }
    u.lora_qkvo_per_rank += r.lora_qkvo;
    u.lora_all_per_rank += r.lora_all;
  }
  if (!modules.empty())
    u.latent_side = modules.front().input.height;
  return u;
}

std::optional<UnetCost> unet_cost(const model::ModelArch &m, std::int64_t image_side) {
  if (m.family != model::ModelFamily::unet)
    return std::nullopt;
  auto modules = model::walk_shared(m, image_side);
  if (!modules)
    return std::nullopt;
  return unet_cost(**modules);
}

// No real weight matrix has a side this long; larger values would overflow the shape arithmetic.
constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 32;

Result<model::ModelArch> arch_from_checkpoint(const Checkpoint &c, model::ModelFamily family,
                                              const std::string &where) {
  model::ModelArch m;
  m.family = family;
  m.name = where;
  m.display_name = where;
  m.tied_embeddings = true;
  m.norm = "layernorm";
  std::int64_t q_dim = 0, kv_dim = 0;
  long max_layer = -1, max_expert = -1;
  for (const auto &t : c.tensors) {
    const auto &n = t.name;
    auto has = [&](std::string_view s) { return n.find(s) != std::string::npos; };
    max_layer = std::max(max_layer, layer_index(n));
    max_expert = std::max(max_expert, expert_index(n));
    bool weight2d = t.shape.size() == 2 && n.ends_with(".weight");
    if (weight2d && (t.shape[0] > kMaxDim || t.shape[1] > kMaxDim))
      return make_error(fmt::format("{}: tensor \"{}\" has a dimension over {}: not a model's "
                                    "weight",
                                    where, n, kMaxDim));
    if (weight2d && (has("embed_tokens") || has("wte") || has("word_embeddings"))) {
      m.vocab = static_cast<std::int64_t>(t.shape[0]);
      m.hidden = static_cast<std::int64_t>(t.shape[1]);
    }
    if (has("lm_head.weight"))
      m.tied_embeddings = false;
    if (weight2d && has("q_proj"))
      q_dim = static_cast<std::int64_t>(t.shape[0]);
    if (weight2d && has("k_proj"))
      kv_dim = static_cast<std::int64_t>(t.shape[0]);
    if (weight2d && (has("gate_proj") || has(".w1.")))
      m.gated_mlp = true;
    if (weight2d && (has("up_proj") || has("gate_proj") || has(".w1.") || has("fc1") ||
                     has("intermediate.dense")))
      m.intermediate = static_cast<std::int64_t>(t.shape[0]);
    if (weight2d && has("c_fc"))
      m.intermediate = static_cast<std::int64_t>(t.shape[1]); // GPT-2 Conv1D is [in, out]
    if (has("input_layernorm") || has("rms_norm") || has("rmsnorm"))
      m.norm = "rmsnorm";
  }
  if (m.hidden <= 0 || max_layer < 0)
    return make_error(where + ": cannot tell the model's shape from its tensor names (no "
                              "embedding matrix or no numbered layers); put its config.json "
                              "beside it or give the config.json instead");
  m.layers = max_layer + 1;
  if (q_dim <= 0)
    q_dim = m.hidden;
  if (kv_dim <= 0)
    kv_dim = q_dim;
  // Heads are not in the tensor shapes; head_dim 128 (the common size) when it divides both,
  // so that heads x head_dim and kv_heads x head_dim match the projections exactly.
  std::int64_t hd = (q_dim % 128 == 0 && kv_dim % 128 == 0) ? 128 : std::gcd(q_dim, kv_dim);
  m.head_dim = hd;
  m.heads = q_dim / hd;
  m.kv_heads = kv_dim / hd;
  if (max_expert >= 0) {
    m.experts = max_expert + 1;
    m.family = model::ModelFamily::moe_decoder;
  }
  m.source = "tensor shapes of " + where;
  return m;
}

Result<ModelInput> model_from_params(std::int64_t params, model::ModelFamily family,
                                     const std::vector<model::ModelArch> &catalog) {
  const model::ModelArch *best = nullptr;
  double best_d = 0;
  for (const auto &m : catalog) {
    if (m.family != family)
      continue;
    auto p = model::derive_params(m);
    if (p <= 0)
      continue;
    double dist = std::fabs(std::log(static_cast<double>(p) / static_cast<double>(params)));
    if (!best || dist < best_d) {
      best = &m;
      best_d = dist;
    }
  }
  if (!best)
    return make_error(fmt::format("--params with --family {}: the knowledge base has no model of "
                                  "that family to take a shape from; give a config.json instead",
                                  family_name(family)));
  ModelInput in;
  in.arch = *best;
  in.params = params;
  in.origin = fmt::format("--params {} --family {}", params, family_name(family));
  in.assumptions.push_back(fmt::format("layer shapes taken from {} ({} parameters), the catalog's "
                                       "{} nearest in size",
                                       best->name, model::derive_params(*best),
                                       family_name(family)));
  return in;
}

} // namespace dlrig::fit

#include "dlrig/fit/model_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dlrig::fit {
namespace {

// Dropout probabilities as config.json files name them; any above zero means the model trains
// with dropout masks (1 byte per element, Korthikanti et al. §4.1).
constexpr const char *kDropoutKeys[] = {"hidden_dropout_prob",
                                        "attention_probs_dropout_prob",
                                        "resid_pdrop",
                                        "attn_pdrop",
                                        "embd_pdrop",
                                        "dropout_rate",
                                        "attention_dropout",
                                        "hidden_dropout",
                                        "dropout"};

bool has_dropout(const kb::ModelArch &m) {
  if (!m.extra.is_object())
    return false;
  for (const char *k : kDropoutKeys) {
    auto it = m.extra.find(k);
    if (it != m.extra.end() && it->is_number() && it->get<double>() > 0)
      return true;
  }
  return false;
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

std::vector<std::int64_t> resnet_blocks(const kb::ModelArch &m, bool &bottleneck) {
  std::vector<std::int64_t> blocks;
  bottleneck = false;
  if (!m.cnn.stage_blocks.empty()) { // the catalog's parsed torchvision description
    bottleneck = m.cnn.block == "bottleneck" || m.cnn.block == "Bottleneck";
    return m.cnn.stage_blocks;
  }
  if (m.extra.is_object() && m.extra.contains("layers") && m.extra["layers"].is_array()) {
    for (const auto &v : m.extra["layers"])
      if (v.is_number_integer())
        blocks.push_back(v.get<std::int64_t>());
    auto block = m.extra.value("block", std::string());
    bottleneck = block == "bottleneck" || block == "Bottleneck";
    return blocks;
  }
  // torchvision's depths (pytorch/vision torchvision/models/resnet.py).
  struct Depth {
    const char *name;
    std::vector<std::int64_t> blocks;
    bool bottleneck;
  };
  static const Depth kDepths[] = {{"resnet18", {2, 2, 2, 2}, false},
                                  {"resnet34", {3, 4, 6, 3}, false},
                                  {"resnet50", {3, 4, 6, 3}, true},
                                  {"resnet101", {3, 4, 23, 3}, true},
                                  {"resnet152", {3, 8, 36, 3}, true}};
  std::string n;
  for (char c : m.name)
    if (c != '-' && c != '_')
      n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto &d : kDepths)
    if (n == d.name) {
      bottleneck = d.bottleneck;
      return d.blocks;
    }
  return {};
}

std::int64_t conv_out(std::int64_t side, std::int64_t kernel, std::int64_t stride) {
  // padding = kernel / 2, as torchvision's convolutions and max-pool use.
  return (side + 2 * (kernel / 2) - kernel) / stride + 1;
}

} // namespace

Result<kb::ModelFamily> parse_family(std::string_view s) {
  using F = kb::ModelFamily;
  for (F f : {F::decoder, F::moe_decoder, F::encoder, F::encoder_decoder, F::cnn, F::unet})
    if (family_name(f) == s)
      return f;
  return make_error("--family: unknown family \"" + std::string(s) +
                    "\" (accepted: decoder, moe-decoder, encoder, encoder-decoder, cnn, unet)");
}

std::string_view family_name(kb::ModelFamily f) {
  switch (f) {
  case kb::ModelFamily::decoder:
    return "decoder";
  case kb::ModelFamily::moe_decoder:
    return "moe-decoder";
  case kb::ModelFamily::encoder:
    return "encoder";
  case kb::ModelFamily::encoder_decoder:
    return "encoder-decoder";
  case kb::ModelFamily::cnn:
    return "cnn";
  case kb::ModelFamily::unet:
    return "unet";
  }
  return "?";
}

Dims dims_of(const kb::ModelArch &m) {
  Dims d;
  d.hidden = m.hidden;
  d.layers = m.layers;
  d.decoder_layers = m.decoder_layers;
  d.heads = m.heads;
  std::int64_t hd = m.head_dim > 0 ? m.head_dim : (m.heads > 0 ? m.hidden / m.heads : 0);
  std::int64_t kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  d.q_dim = m.heads > 0 ? m.heads * hd : m.hidden;
  d.kv_dim = kv > 0 ? kv * hd : m.hidden;
  d.intermediate = m.intermediate > 0 ? m.intermediate : 4 * m.hidden;
  d.vocab = m.vocab;
  d.experts = m.experts;
  d.experts_per_token = m.experts > 0 ? std::max<std::int64_t>(1, m.experts_per_token) : 0;
  d.gated = m.gated_mlp;
  if (m.extra.is_object()) {
    std::string act;
    for (const char *key : {"activation_function", "hidden_act", "hidden_activation"})
      if (m.extra.contains(key) && m.extra[key].is_string())
        act = m.extra[key].get<std::string>();
    if (act == "gelu_new" || act == "gelu_fast")
      d.act_extra = 3;
  }
  d.rmsnorm = m.norm == "rmsnorm";
  d.dropout = has_dropout(m);
  d.causal = m.family == kb::ModelFamily::decoder || m.family == kb::ModelFamily::moe_decoder;
  d.tied = m.tied_embeddings;
  if (m.family == kb::ModelFamily::encoder && m.patch_size > 0 && m.image_size > 0) {
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

std::int64_t quantizable_params(const Dims &d, std::int64_t total) {
  std::int64_t kept = d.vocab * d.hidden * (d.tied ? 1 : 2);
  return std::max<std::int64_t>(0, total - kept);
}

std::int64_t largest_layer_params(const kb::ModelArch &m, const Dims &d) {
  if (m.family == kb::ModelFamily::cnn) {
    std::int64_t best = 0;
    for (const auto &c : resnet_layers(m, m.image_size > 0 ? m.image_size : 224))
      best = std::max(best, c.weights());
    return best;
  }
  if (m.family == kb::ModelFamily::unet) {
    std::int64_t c = 0;
    if (m.extra.is_object() && m.extra.contains("block_out_channels"))
      for (const auto &v : m.extra["block_out_channels"])
        if (v.is_number_integer())
          c = std::max(c, v.get<std::int64_t>());
    return 9 * c * c;
  }
  return std::max({d.vocab * d.hidden, d.hidden * d.intermediate, d.hidden * d.q_dim});
}

std::vector<ConvLayer> resnet_layers(const kb::ModelArch &m, std::int64_t side) {
  bool bottleneck = false;
  auto blocks = resnet_blocks(m, bottleneck);
  if (blocks.empty())
    return {};
  std::vector<ConvLayer> out;
  std::int64_t x = conv_out(side, 7, 2);
  const std::int64_t stem = m.cnn.stem_width > 0 ? m.cnn.stem_width : 64;
  auto width_of = [&](std::size_t stage) {
    return stage < m.cnn.stage_widths.size() ? m.cnn.stage_widths[stage]
                                             : std::int64_t{64} << stage;
  };
  out.push_back({m.channels > 0 ? m.channels : 3, stem, 7, 2, x, 2});
  x = conv_out(x, 3, 2);
  out.push_back(
      {stem, stem, 0, 2, x, 1}); // max-pool: kernel 0 marks it (no weights, int64 indices)
  std::int64_t in = stem;
  const std::int64_t expansion = bottleneck ? 4 : 1;
  int block = 0;
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    std::int64_t width = width_of(stage);
    for (std::int64_t b = 0; b < blocks[stage]; ++b) {
      std::int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      std::int64_t y = conv_out(x, 3, stride);
      if (bottleneck) {
        out.push_back({in, width, 1, 1, x, 2});
        out.push_back({width, width, 3, stride, y, 2});
        out.push_back({width, width * 4, 1, 1, y, 2});
      } else {
        out.push_back({in, width, 3, stride, y, 2});
        out.push_back({width, width, 3, 1, y, 2});
      }
      if (stride != 1 || in != width * expansion)
        out.push_back({in, width * expansion, 1, stride, y, 1});
      for (auto it = out.rbegin(); it != out.rend() && it->block < 0 && it->kernel > 0; ++it)
        it->block = block;
      ++block;
      in = width * expansion;
      x = y;
    }
  }
  return out;
}

std::int64_t resnet_classes(const kb::ModelArch &m) {
  if (m.cnn.num_classes > 0)
    return m.cnn.num_classes;
  return m.extra.is_object() ? m.extra.value("num_classes", std::int64_t{1000}) : 1000;
}

std::int64_t resnet_params(const kb::ModelArch &m) {
  auto convs = resnet_layers(m, 224);
  if (convs.empty())
    return 0;
  std::int64_t p = 0;
  for (const auto &c : convs)
    p += c.params();
  std::int64_t classes = resnet_classes(m);
  p += convs.back().out_ch * classes + classes; // fc
  return p;
}

namespace {

std::vector<std::int64_t> int_list(const Json &extra, const char *key) {
  std::vector<std::int64_t> out;
  if (!extra.is_object() || !extra.contains(key))
    return out;
  const auto &v = extra[key];
  if (v.is_array()) {
    for (const auto &x : v)
      if (x.is_number_integer())
        out.push_back(x.get<std::int64_t>());
  } else if (v.is_number_integer()) {
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

} // namespace

std::int64_t unet_default_image(const kb::ModelArch &m) {
  if (m.image_size > 0)
    return m.image_size;
  auto sample = int_list(m.extra, "sample_size");
  return sample.empty() ? 512 : sample[0] * 8;
}

std::optional<UnetCost> unet_cost(const kb::ModelArch &m, std::int64_t image_side) {
  auto channels = int_list(m.extra, "block_out_channels");
  if (channels.empty() || image_side < 8)
    return std::nullopt;
  for (auto c : channels)
    if (c <= 0 || c > 100000)
      return std::nullopt;
  const std::size_t nb = channels.size();
  auto lpb = int_list(m.extra, "layers_per_block");
  const double layers =
      lpb.empty() ? 2 : static_cast<double>(std::clamp<std::int64_t>(lpb[0], 1, 64));
  auto tl = int_list(m.extra, "transformer_layers_per_block");
  auto heads_cfg = int_list(m.extra, "attention_head_dim");
  auto ctx_dim = int_list(m.extra, "cross_attention_dim");
  const double ctx_tokens = 77; // the CLIP text encoder's sequence (Stable Diffusion)
  const double ctx = ctx_dim.empty() ? 768 : static_cast<double>(ctx_dim[0]);
  std::vector<bool> attn(nb, true);
  if (m.extra.is_object() && m.extra.contains("down_block_types") &&
      m.extra["down_block_types"].is_array()) {
    const auto &types = m.extra["down_block_types"];
    for (std::size_t i = 0; i < nb && i < types.size(); ++i)
      attn[i] = types[i].is_string() &&
                types[i].get<std::string>().find("CrossAttn") != std::string::npos;
  } else {
    attn[nb - 1] = false; // Stable Diffusion's last down block has no attention
  }
  auto tlayers = [&](std::size_t i) {
    if (tl.empty())
      return 1.0;
    return static_cast<double>(tl[std::min(i, tl.size() - 1)]);
  };
  auto heads = [&](std::size_t i, double c) {
    // SD 1.x states the head count in attention_head_dim; SD 2.x/XL the head size.
    if (heads_cfg.empty())
      return 8.0;
    double v = static_cast<double>(heads_cfg[std::min(i, heads_cfg.size() - 1)]);
    return v >= 32 ? c / v : v;
  };
  UnetCost u;
  std::int64_t in_ch = m.channels > 0 && m.channels != 3 ? m.channels : 4;
  auto inc = int_list(m.extra, "in_channels");
  if (!inc.empty())
    in_ch = inc[0];
  const double side = static_cast<double>(image_side / 8);
  u.latent_side = image_side / 8;
  const double c0 = static_cast<double>(channels[0]);
  const double temb = 4 * c0; // the timestep embedding width (diffusers: 4 x block_out_channels[0])
  // A ResNet block: GroupNorm, SiLU, conv, GroupNorm, SiLU, conv: its input plus five tensors of
  // its output's size are kept (norm and activation inputs, conv inputs), and its convs' MACs.
  auto resnet = [&](double cin, double cout, double hw) {
    u.saved_elements += cin * hw + 5 * cout * hw;
    u.ckpt_elements += cin * hw;
    u.ckpt_working = std::max(u.ckpt_working, cin * hw + 5 * cout * hw);
    u.infer_elements = std::max(u.infer_elements, cin * hw + 2 * cout * hw);
    u.macs += 9 * cin * cout * hw + 9 * cout * cout * hw + (cin != cout ? cin * cout * hw : 0);
    // GroupNorm, conv, time-embedding projection, GroupNorm, conv, 1x1 shortcut when the
    // channels change (all with biases).
    u.params += 2 * cin + (9 * cin * cout + cout) + (temb * cout + cout) + 2 * cout +
                (9 * cout * cout + cout) + (cin != cout ? cin * cout + cout : 0);
  };
  // A Transformer2DModel: GroupNorm and proj in/out, then per layer self-attention, cross-attention
  // on the text context and a GEGLU feed-forward of 4C (counted like a gated transformer layer).
  auto transformer = [&](double c, double hw, double nlayers, double h) {
    const double saved_before = u.saved_elements, scores_before = u.score_elements;
    u.saved_elements += 3 * c * hw;
    u.macs += 2 * c * c * hw;
    u.params += 2 * c + 2 * (c * c + c); // GroupNorm, proj_in and proj_out
    // Per layer: three LayerNorms, self-attention (q, k, v, out + bias), cross-attention (q, k and
    // v from the context, out + bias), GEGLU (C -> 8C + bias, 4C -> C + bias).
    u.params += nlayers * (3 * 2 * c + (4 * c * c + c) + (2 * c * c + 2 * ctx * c + c) +
                           (8 * c * c + 8 * c) + (4 * c * c + c));
    u.infer_elements = std::max(u.infer_elements, 2 * c * hw + 8 * c * hw);
    u.infer_scores = std::max(u.infer_scores, h * hw * hw);
    // r x (in + out): self-attention q, k, v, out (c -> c); cross-attention q and out (c -> c),
    // k and v (ctx -> c). All linears add GEGLU (c -> 8c, 4c -> c) and proj_in/proj_out.
    const double qkvo = nlayers * (8 * c + 4 * c + 2 * (ctx + c));
    u.lora_qkvo_per_rank += qkvo;
    u.lora_all_per_rank += qkvo + nlayers * (9 * c + 5 * c) + 2 * 2 * c;
    for (int l = 0; l < static_cast<int>(nlayers); ++l) {
      // Self-attention: norm input, Q, K, V, kernel output, output-projection input (6); cross-
      // attention: norm input, Q, kernel output, output-projection input (4), K and V of the
      // context; GEGLU: norm input, input, the 8C projection, GELU(gate), product (18).
      u.saved_elements += hw * c * (6 + 4 + 18) + 2 * ctx_tokens * c;
      u.score_elements += h * hw * hw;
      u.macs += hw * (4 * c * c + 2 * c * c + 12 * c * c) + 2 * ctx_tokens * ctx * c +
                2 * hw * hw * c + 2 * hw * ctx_tokens * c;
    }
    u.ckpt_elements += c * hw;
    u.ckpt_working = std::max(u.ckpt_working, u.saved_elements - saved_before);
    u.ckpt_working_scores = std::max(u.ckpt_working_scores, u.score_elements - scores_before);
  };
  // Layers outside the checkpointed modules keep what they save either way.
  auto plain = [&](double elements) {
    u.saved_elements += elements;
    u.ckpt_elements += elements;
  };
  double hw = side * side;
  plain(static_cast<double>(in_ch) * hw + c0 * hw); // conv_in
  u.params += 9 * static_cast<double>(in_ch) * c0 + c0;
  u.params += (c0 * temb + temb) + (temb * temb + temb); // timestep embedding MLP
  u.macs += 9 * static_cast<double>(in_ch) * c0 * hw;
  std::vector<double> skips{c0};
  double cur = c0;
  for (std::size_t i = 0; i < nb; ++i) {
    const double c = static_cast<double>(channels[i]);
    for (int l = 0; l < static_cast<int>(layers); ++l) {
      resnet(cur, c, hw);
      cur = c;
      if (attn[i])
        transformer(c, hw, tlayers(i), heads(i, c));
      skips.push_back(c);
    }
    if (i + 1 < nb) {
      hw /= 4;
      plain(c * hw); // downsampling conv output
      u.macs += 9 * c * c * hw;
      u.params += 9 * c * c + c;
      skips.push_back(c);
    }
  }
  // Mid block: ResNet, attention, ResNet.
  resnet(cur, cur, hw);
  transformer(cur, hw, tlayers(nb - 1), heads(nb - 1, cur));
  resnet(cur, cur, hw);
  for (std::size_t j = 0; j < nb; ++j) {
    const std::size_t i = nb - 1 - j;
    const double c = static_cast<double>(channels[i]);
    for (int l = 0; l <= static_cast<int>(layers); ++l) {
      double skip = skips.empty() ? 0 : skips.back();
      if (!skips.empty())
        skips.pop_back();
      resnet(cur + skip, c, hw);
      cur = c;
      if (attn[i])
        transformer(c, hw, tlayers(i), heads(i, c));
    }
    if (j + 1 < nb) {
      hw *= 4;
      plain(2 * c * hw); // nearest upsampling output and its conv's output
      u.macs += 9 * c * c * hw;
      u.params += 9 * c * c + c;
    }
  }
  plain(3 * c0 * hw); // norm_out, SiLU, conv_out inputs
  u.macs += 9 * c0 * static_cast<double>(in_ch) * hw;
  u.params += 2 * c0 + 9 * c0 * static_cast<double>(in_ch) + static_cast<double>(in_ch);
  return u;
}

std::int64_t params_of(const kb::ModelArch &m) {
  auto p = kb::derive_params(m);
  if (p <= 0 && m.family == kb::ModelFamily::cnn)
    p = resnet_params(m);
  if (p <= 0 && m.family == kb::ModelFamily::unet)
    if (auto u = unet_cost(m, unet_default_image(m)))
      p = static_cast<std::int64_t>(u->params);
  return p;
}

// No real weight matrix has a side this long; larger values would overflow the shape arithmetic.
constexpr std::uint64_t kMaxDim = std::uint64_t{1} << 32;

Result<kb::ModelArch> arch_from_checkpoint(const Checkpoint &c, kb::ModelFamily family,
                                           const std::string &where) {
  kb::ModelArch m;
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
    m.family = kb::ModelFamily::moe_decoder;
  }
  m.source = "tensor shapes of " + where;
  return m;
}

Result<ModelInput> model_from_params(std::int64_t params, kb::ModelFamily family,
                                     const std::vector<kb::ModelArch> &catalog) {
  const kb::ModelArch *best = nullptr;
  double best_d = 0;
  for (const auto &m : catalog) {
    if (m.family != family)
      continue;
    auto p = params_of(m);
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
                                       best->name, params_of(*best), family_name(family)));
  return in;
}

} // namespace dlrig::fit

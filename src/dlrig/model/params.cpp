// Parameter counts derived from the architecture, module by module as the PyTorch implementations
// build them (transformers modeling_*.py; torchvision resnet.py and diffusers unet_2d_condition.py
// through the one walk, walk.cpp). docs/models.md writes out each family's formula.
#include "dlrig/model/model.hpp"
#include "dlrig/model/walk.hpp"

#include <fmt/format.h>

namespace dlrig::model {
namespace {

using I64 = std::int64_t;

I64 norm_params(const ModelArch &m, I64 width) {
  if (m.norm == "none")
    return 0;
  return m.norm == "layernorm" ? 2 * width : width;
}

// DeepSeek's multi-head latent attention (modeling_deepseek_v3.py DeepseekV3Attention): q_a_proj,
// its RMSNorm and q_b_proj (or one q_proj without q_lora_rank), kv_a_proj_with_mqa to the latent
// and the rotary key, the latent's RMSNorm, kv_b_proj to every head's key and value, o_proj.
I64 mla_params(const ModelArch &m) {
  const I64 h = m.hidden, q = m.heads * m.head_dim, nope = m.head_dim - m.qk_rope_dim;
  const I64 in_bias = m.attention_bias || m.qkv_bias ? 1 : 0;
  const I64 out_bias = m.attention_bias || m.out_bias ? 1 : 0;
  I64 p =
      m.q_lora_rank > 0 ? (h + in_bias) * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * q : h * q;
  p += (h + in_bias) * (m.kv_lora_rank + m.qk_rope_dim) + m.kv_lora_rank;
  p += m.kv_lora_rank * m.heads * (nope + m.v_head_dim);
  return p + m.heads * m.v_head_dim * h + out_bias * h;
}

// Attention projections of one layer: q (heads·d, twice that with Qwen3-Next's output gate), k
// and v (kv_heads·d each), o back to hidden.
I64 attention_params(const ModelArch &m, I64 kv_input) {
  if (m.kv_lora_rank > 0)
    return mla_params(m);
  I64 q = m.heads * m.head_dim;
  I64 q_out = m.attention_output_gate ? 2 * q : q;
  I64 kv = m.kv_heads * m.head_dim;
  I64 p = m.hidden * q_out + 2 * kv_input * kv + q * m.hidden;
  if (m.attention_bias || m.qkv_bias)
    p += q_out + (m.k_bias ? 2 : 1) * kv;
  if (m.attention_bias || m.out_bias)
    p += m.hidden;
  return p;
}

// A Mamba-2 mixer's widths (modeling_granitemoehybrid.py GraniteMoeHybridMambaLayer): the mixer's
// width (heads x head size), the convolved channels (the width, B and C: 2 x groups x state) and
// in_proj's output (the gate, the convolved channels and dt per head).
struct MambaWidths {
  I64 width, conv, in;
};
MambaWidths mamba_widths(const ModelArch &m) {
  const I64 width = m.mamba_heads * m.mamba_head_dim,
            conv = width + 2 * m.mamba_groups * m.mamba_state;
  return {width, conv, width + conv + m.mamba_heads};
}

// A Mamba-2 mixer: in_proj, the depthwise Conv1d over the convolved channels, dt_bias, A_log and
// D per head, the gated RMSNorm over the width, out_proj back to hidden.
I64 mamba_params(const ModelArch &m) {
  const I64 h = m.hidden;
  const auto [width, conv, in] = mamba_widths(m);
  return h * in + (m.mamba_proj_bias ? in + h : 0) + conv * m.linear_conv_kernel +
         (m.mamba_conv_bias ? conv : 0) + 3 * m.mamba_heads + width + width * h;
}

// One gated DeltaNet layer (modeling_qwen3_next.py Qwen3NextGatedDeltaNet): the input projections
// to q and k (key heads x key size each), v and the output gate z (value heads x value size each)
// and the per-value-head b and a; the depthwise Conv1d over q, k and v without bias; dt_bias and
// A_log per value head; the gated RMSNorm over a value head; out_proj back to hidden. A Mamba-2
// mixer or LFM2's short convolution in their place.
I64 linear_attention_params(const ModelArch &m) {
  if (m.mamba_heads > 0)
    return mamba_params(m);
  if (m.short_conv) { // LFM2 (modeling_lfm2.py Lfm2ShortConv): in_proj, conv, out_proj
    const I64 h = m.hidden;
    return 4 * h * h + h * m.linear_conv_kernel + (m.short_conv_bias ? 5 * h : 0);
  }
  const I64 h = m.hidden, key = m.linear_key_heads * m.linear_key_dim,
            value = m.linear_value_heads * m.linear_value_dim, conv = 2 * key + value;
  return h * (2 * key + 2 * value) + h * 2 * m.linear_value_heads + conv * m.linear_conv_kernel +
         2 * m.linear_value_heads + m.linear_value_dim + value * h;
}

// Norms on the queries and keys of one layer: Qwen3's RMSNorm(head_dim) pair, Phi's
// LayerNorm(head_dim) pair, StableLM's per-head LayerNorms without bias, OLMo-2's RMSNorms over
// the whole q and k projections (as many weights as the per-head ones).
I64 qk_norm_params(const ModelArch &m) {
  if (m.qk_norm == "head_rms")
    return 2 * m.head_dim;
  if (m.qk_norm == "head_ln")
    return 4 * m.head_dim;
  if (m.qk_norm == "per_head_ln" || m.qk_norm == "proj_rms")
    return (m.heads + m.kv_heads) * m.head_dim;
  return 0;
}

// Feed-forward of one layer (one expert for MoE) of the given width: gated = gate, up, down.
I64 mlp_params(const ModelArch &m, I64 width, bool routed = false) {
  I64 p = (m.gated_mlp ? 3 : 2) * m.hidden * width;
  if (m.mlp_bias && (!routed || m.routed_bias))
    p += (m.gated_mlp ? 2 : 1) * width + m.hidden;
  return p;
}

I64 embed_width(const ModelArch &m) {
  return m.embed_dim > 0 ? m.embed_dim : m.hidden;
}

// The output head the head class adds on top of the last hidden state (data/model_heads.csv).
I64 head_params(const ModelArch &m) {
  const I64 h = m.hidden, e = embed_width(m);
  I64 p = 0;
  if (m.lm_head && m.family != ModelFamily::encoder) {
    if (!m.tied_embeddings)
      p += m.vocab * e;
    if (m.lm_head_bias)
      p += m.vocab;
  }
  if (m.mlm_head) // dense h→E, LayerNorm(E), decoder tied to the embeddings, vocabulary bias
    p += h * e + e + norm_params(m, e) + m.vocab + (m.tied_embeddings ? 0 : m.vocab * e);
  if (m.pooler)
    p += h * h + h;
  if (m.cls_dense)
    p += h * h + h;
  if (m.num_labels > 0 && m.family != ModelFamily::cnn)
    p += h * m.num_labels + (m.classifier_bias ? m.num_labels : 0);
  return p;
}

I64 decoder_params(const ModelArch &m, I64 experts) {
  const I64 h = m.hidden, e = embed_width(m);
  I64 common = attention_params(m, h) + qk_norm_params(m) + m.norms_per_layer * norm_params(m, h) +
               (m.attention_sinks ? m.heads : 0) + m.act_params;
  I64 p = 0;
  // Gated DeltaNet layers in place of full attention (Qwen3-Next, Qwen3.5).
  p += m.linear_attention_layers * (linear_attention_params(m) - attention_params(m, h) -
                                    qk_norm_params(m) - (m.attention_sinks ? m.heads : 0));
  // Mllama's cross-attention layers: q and k RMSNorms (head_dim each) and two gates more.
  p += m.cross_attention_layers * (2 * m.head_dim + 2);
  if (m.family == ModelFamily::moe_decoder) {
    I64 sparse = h * m.experts + (m.router_bias ? m.experts : 0) + // router
                 experts * mlp_params(m, m.intermediate, true);
    // Qwen2-MoE's shared expert and its Linear(h, 1) gate (built even at width 0).
    if (m.shared_expert_intermediate > 0)
      sparse += mlp_params(m, m.shared_expert_intermediate);
    if (m.shared_expert_gate)
      sparse += h;
    I64 dense_width = m.dense_intermediate > 0 ? m.dense_intermediate : m.intermediate;
    p += (m.layers - m.dense_layers) * (common + sparse) +
         m.dense_layers * (common + mlp_params(m, dense_width));
  } else {
    p += m.layers * (common + mlp_params(m, m.intermediate));
  }
  p += (m.vocab + m.embed_extra_rows) * e;
  if (e != h) // OPT's project_in and project_out
    p += 2 * e * h;
  if (m.final_norm)
    p += norm_params(m, h);
  if (m.embed_norm)
    p += norm_params(m, h);
  if (m.learned_positions)
    p += (m.max_positions + m.position_offset) * h;
  return p + tower_params(m) + head_params(m); // an image-text model's vision tower, projector
}

// Encoders: BERT-style (token, position and token-type embeddings), ViT/CLIP vision (patch
// convolution, class token, positions), DeBERTa's relative embeddings; post- or pre-norm layers
// with the same parameters: attention, two norms, up and down projections; then the head.
I64 encoder_params(const ModelArch &m) {
  const I64 h = m.hidden, e = embed_width(m);
  I64 q = m.heads * m.head_dim;
  I64 layer = attention_params(m, h) + qk_norm_params(m) + 2 * norm_params(m, h) +
              mlp_params(m, m.intermediate) + m.position_projections * (h * q + q) +
              (m.layer_scale ? 2 * h : 0);
  I64 p = m.layers * layer + (m.mask_token ? h : 0) + 2 * m.gated_layers + m.tile_params;
  if (m.patch_size > 0) {
    I64 patches = (m.image_size / m.patch_size) * (m.image_size / m.patch_size);
    const I64 cls = m.class_token ? 1 : 0;
    p += m.channels * m.temporal_patch * m.patch_size * m.patch_size * h + // patch conv
         (m.patch_bias ? h : 0);
    p += cls * h;          // [CLS] token
    if (m.patch_positions) // a row per patch, or a table resampled to the grid (Qwen3-VL)
      p += (m.max_positions > 0 ? m.max_positions : patches + cls) * h;
  } else {
    p += m.vocab * e + m.type_vocab * e;
    if (m.learned_positions)
      p += (m.max_positions + m.position_offset) * e;
    if (e != h) // DeBERTa's embed_proj
      p += e * h;
  }
  if (m.embed_norm)
    p += norm_params(m, h);
  if (m.final_norm)
    p += m.final_layernorm ? 2 * h : norm_params(m, h);
  p += m.relative_rows * h + (m.relative_norm ? norm_params(m, h) : 0);
  if (m.conv_kernel > 0)
    p += h * (h / m.conv_groups) * m.conv_kernel + h + norm_params(m, h);
  if (m.map_head) // SigLIP: probe, nn.MultiheadAttention (in and out projections), LayerNorm, MLP
    p += h + (3 * h * h + 3 * h) + (h * h + h) + norm_params(m, h) + mlp_params(m, m.intermediate);
  for (const auto &t : m.towers) // CLIP: the text tower and both projections, logit_scale
    p += encoder_params(t) + t.hidden * m.projection_dim;
  if (!m.towers.empty())
    p += h * m.projection_dim + 1;
  return p + m.projector_params + head_params(m); // a vision tower's own merger (Qwen2.5-VL)
}

// Encoder-decoders: T5 (one shared embedding, relative attention bias in each stack's first
// layer, RMSNorm without biases), BART (learned positions with an offset, a LayerNorm on the
// embeddings), Whisper (a convolution stem over mel bins, separate position tables).
I64 encoder_decoder_params(const ModelArch &m) {
  const I64 h = m.hidden;
  I64 attn = attention_params(m, h);
  I64 ln = norm_params(m, h);
  I64 ff = mlp_params(m, m.intermediate);
  I64 ff_dec = mlp_params(m, m.decoder_intermediate > 0 ? m.decoder_intermediate : m.intermediate);
  I64 rel = m.relative_attention_buckets * m.heads;
  I64 stack_extra = rel + (m.final_norm ? ln : 0) + (m.embed_norm ? ln : 0);
  I64 encoder = m.layers * (attn + ff + 2 * ln) + stack_extra;
  I64 decoder = m.decoder_layers * (2 * attn + ff_dec + 3 * ln) + stack_extra;
  if (m.learned_positions)
    encoder += (m.max_positions + m.position_offset) * h;
  if (m.decoder_positions > 0)
    decoder += (m.decoder_positions + m.position_offset) * h;
  if (m.audio_mel_bins > 0) // conv1 (mel → h, kernel 3) and conv2 (h → h, kernel 3)
    encoder += m.audio_mel_bins * h * 3 + h + h * h * 3 + h;
  return m.vocab * h + encoder + decoder + head_params(m);
}

// Module names by model type, as the transformers implementations call them.
struct LinearNames {
  const char *q, *k, *v, *o, *gate, *up, *down;
};
LinearNames names_of(const ModelArch &m) {
  const std::string &type = m.hf_model_type;
  if (m.module_names.size() >= 7) // data/model_types.json "modules"
    return {m.module_names[0].c_str(), m.module_names[1].c_str(), m.module_names[2].c_str(),
            m.module_names[3].c_str(), m.module_names[4].c_str(), m.module_names[5].c_str(),
            m.module_names[6].c_str()};
  if (type == "bert" || type == "vit")
    return {"query",       "key", "value", "attention.output.dense", "", "intermediate.dense",
            "output.dense"};
  if (type == "t5")
    return {"q", "k", "v", "o", "wi_0", "wi_1", "wo"};
  if (type == "mixtral")
    return {"q_proj", "k_proj", "v_proj", "o_proj", "w1", "w3", "w2"};
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

void add_attention(std::vector<LinearShape> &out, const ModelArch &m, const LinearNames &n,
                   I64 count, const std::string &prefix) {
  I64 q = m.heads * m.head_dim;
  I64 kv = m.kv_heads * m.head_dim;
  bool in_bias = m.attention_bias || m.qkv_bias;
  bool out_bias = m.attention_bias || m.out_bias;
  if (m.kv_lora_rank > 0) { // DeepSeek's latent attention (mla_params)
    if (m.q_lora_rank > 0) {
      out.push_back({"q", "q_a_proj", m.hidden, m.q_lora_rank, count, in_bias});
      out.push_back({"q_b", "q_b_proj", m.q_lora_rank, q, count, false});
    } else {
      out.push_back({"q", "q_proj", m.hidden, q, count, false});
    }
    out.push_back(
        {"kv", "kv_a_proj_with_mqa", m.hidden, m.kv_lora_rank + m.qk_rope_dim, count, in_bias});
    out.push_back({"kv_b", "kv_b_proj", m.kv_lora_rank,
                   m.heads * (m.head_dim - m.qk_rope_dim + m.v_head_dim), count, false});
    out.push_back({"o", "o_proj", m.heads * m.v_head_dim, m.hidden, count, out_bias});
    return;
  }
  if (m.hf_model_type == "gpt2") {
    out.push_back({"qkv", "c_attn", m.hidden, q + 2 * kv, count, in_bias});
    out.push_back({"o", "c_proj", q, m.hidden, count, out_bias});
    return;
  }
  const bool fused_name = m.module_names.size() > 7 && !m.module_names[7].empty();
  if (m.fused_qkv || fused_name) {
    out.push_back(
        {"qkv", fused_name ? m.module_names[7] : "qkv_proj", m.hidden, q + 2 * kv, count, in_bias});
  } else {
    out.push_back(
        {prefix + "q", n.q, m.hidden, m.attention_output_gate ? 2 * q : q, count, in_bias});
    out.push_back({prefix + "k", n.k, m.hidden, kv, count, in_bias});
    out.push_back({prefix + "v", n.v, m.hidden, kv, count, in_bias});
  }
  out.push_back({prefix + "o", n.o, q, m.hidden, count, out_bias});
}

void add_mlp_linears(std::vector<LinearShape> &out, const ModelArch &m, const LinearNames &n,
                     I64 count) {
  if (m.hf_model_type == "gpt2") {
    out.push_back({"up", "c_fc", m.hidden, m.intermediate, count, m.mlp_bias});
    out.push_back({"down", "c_proj", m.intermediate, m.hidden, count, m.mlp_bias});
    return;
  }
  if (m.gated_mlp && m.fused_gate_up) {
    out.push_back({"gate_up", m.module_names.size() > 9 ? m.module_names[9] : "gate_up_proj",
                   m.hidden, 2 * m.intermediate, count, m.mlp_bias});
  } else if (m.gated_mlp) {
    out.push_back({"gate", n.gate, m.hidden, m.intermediate, count, m.mlp_bias});
    out.push_back({"up", n.up, m.hidden, m.intermediate, count, m.mlp_bias});
  } else {
    out.push_back(
        {"up", m.hf_model_type == "t5" ? "wi" : n.up, m.hidden, m.intermediate, count, m.mlp_bias});
  }
  out.push_back({"down", n.down, m.intermediate, m.hidden, count, m.mlp_bias});
}

// One MLP's linears; `routed`: they are an MoE layer's routed experts (biased only where
// routed_bias allows, as mlp_params counts them).
void add_mlp(std::vector<LinearShape> &out, const ModelArch &m, const LinearNames &n, I64 count,
             bool routed = false) {
  const std::size_t first = out.size();
  add_mlp_linears(out, m, n, count);
  for (std::size_t i = first; i < out.size() && routed; ++i) {
    out[i].routed = true;
    out[i].bias = out[i].bias && m.routed_bias;
  }
}

// A gated DeltaNet layer's, Mamba-2 mixer's or LFM2 short convolution's nn.Linear modules
// (linear_attention_params), `count` of them.
void add_linear_attention(std::vector<LinearShape> &out, const ModelArch &m, I64 count) {
  if (count <= 0)
    return;
  if (m.short_conv) { // LFM2's gated short convolution
    out.push_back({"conv_in", "in_proj", m.hidden, 3 * m.hidden, count, m.short_conv_bias});
    out.push_back({"conv_out", "out_proj", m.hidden, m.hidden, count, m.short_conv_bias});
    return;
  }
  if (m.mamba_heads > 0) { // Granite 4.0's Mamba-2 mixer (mamba_params)
    const auto w = mamba_widths(m);
    out.push_back({"mamba_in", "in_proj", m.hidden, w.in, count, m.mamba_proj_bias});
    out.push_back({"mamba_out", "out_proj", w.width, m.hidden, count, m.mamba_proj_bias});
    return;
  }
  const I64 h = m.hidden, key = m.linear_key_heads * m.linear_key_dim,
            value = m.linear_value_heads * m.linear_value_dim, vh = m.linear_value_heads;
  if (m.linear_split) { // Qwen3.5
    out.push_back({"lin_qkv", "in_proj_qkv", h, 2 * key + value, count, false});
    out.push_back({"lin_z", "in_proj_z", h, value, count, false});
    out.push_back({"lin_b", "in_proj_b", h, vh, count, false});
    out.push_back({"lin_a", "in_proj_a", h, vh, count, false});
  } else { // Qwen3-Next
    out.push_back({"lin_qkvz", "in_proj_qkvz", h, 2 * key + 2 * value, count, false});
    out.push_back({"lin_ba", "in_proj_ba", h, 2 * vh, count, false});
  }
  out.push_back({"lin_out", "out_proj", value, h, count, false});
}

} // namespace

std::vector<LinearShape> linear_layers(const ModelArch &m) {
  std::vector<LinearShape> out;
  LinearNames n = names_of(m);
  const std::int64_t full = m.layers - m.linear_attention_layers;
  switch (m.family) {
  case ModelFamily::decoder:
    add_attention(out, m, n, full, "");
    add_linear_attention(out, m, m.linear_attention_layers);
    add_mlp(out, m, n, m.layers);
    break;
  case ModelFamily::moe_decoder: {
    const std::int64_t sparse = m.layers - m.dense_layers;
    add_attention(out, m, n, full, "");
    add_linear_attention(out, m, m.linear_attention_layers);
    out.push_back({"router", "gate", m.hidden, m.experts, sparse, false});
    add_mlp(out, m, n, sparse * m.experts, true);
    if (m.shared_expert_intermediate > 0) {
      ModelArch shared = m;
      shared.intermediate = m.shared_expert_intermediate;
      add_mlp(out, shared, n, sparse);
    }
    if (m.shared_expert_gate) // Qwen2-MoE's Linear(h, 1) gating the shared expert
      out.push_back({"shared_gate", "shared_expert_gate", m.hidden, 1, sparse, false});
    if (m.dense_layers > 0) {
      ModelArch dense = m;
      dense.intermediate = m.dense_intermediate > 0 ? m.dense_intermediate : m.intermediate;
      add_mlp(out, dense, n, m.dense_layers);
    }
    break;
  }
  case ModelFamily::encoder:
    add_attention(out, m, n, m.layers, "");
    add_mlp(out, m, n, m.layers);
    for (const auto &t : m.towers) {
      auto more = linear_layers(t);
      out.insert(out.end(), more.begin(), more.end());
    }
    if (m.pooler)
      out.push_back({"pooler", "pooler.dense", m.hidden, m.hidden, 1, true});
    if (m.mlm_head) // BertPredictionHeadTransform.dense, RoBERTa's lm_head.dense, vocab_transform
      out.push_back({"mlm_dense", "dense", m.hidden, embed_width(m), 1, true});
    if (m.cls_dense)
      out.push_back({"cls_dense", "dense", m.hidden, m.hidden, 1, true});
    if (m.num_labels > 0)
      out.push_back({"classifier", "classifier", m.hidden, m.num_labels, 1, m.classifier_bias});
    return out;
  case ModelFamily::encoder_decoder:
    add_attention(out, m, n, m.layers + m.decoder_layers, "");
    add_attention(out, m, n, m.decoder_layers, "cross_");
    if (m.decoder_intermediate > 0 && m.decoder_intermediate != m.intermediate) {
      // BART and Whisper size the two stacks' feed-forwards apart (decoder_ffn_dim).
      add_mlp(out, m, n, m.layers);
      ModelArch dec = m;
      dec.intermediate = m.decoder_intermediate;
      add_mlp(out, dec, n, m.decoder_layers);
    } else {
      add_mlp(out, m, n, m.layers + m.decoder_layers);
    }
    break;
  case ModelFamily::cnn:
  case ModelFamily::unet:
    return out;
  }
  if (m.lm_head && !m.tied_embeddings)
    out.push_back({"lm_head", m.module_names.size() > 8 ? m.module_names[8] : "lm_head", m.hidden,
                   m.vocab, 1, m.lm_head_bias});
  if (m.cls_dense) // BART's and T5's classification head: dense, then out_proj
    out.push_back({"cls_dense", "dense", m.hidden, m.hidden, 1, true});
  if (m.num_labels > 0)
    out.push_back({"classifier", "score", m.hidden, m.num_labels, 1, m.classifier_bias});
  return out;
}

bool head_linear(std::string_view role) {
  return role == "lm_head" || role == "pooler" || role == "classifier" || role == "cls_dense" ||
         role == "mlm_dense";
}

std::int64_t derive_params(const ModelArch &m) {
  switch (m.family) {
  case ModelFamily::decoder:
    return decoder_params(m, 0);
  case ModelFamily::moe_decoder:
    return decoder_params(m, m.experts);
  case ModelFamily::encoder:
    return encoder_params(m);
  case ModelFamily::encoder_decoder:
    return encoder_decoder_params(m);
  case ModelFamily::cnn:
  case ModelFamily::unet:
    // The one walk (walk.cpp); its parameters do not depend on the image size.
    if (auto modules = walk(m, default_image_size(m)))
      return total_params(*modules);
    return 0;
  }
  return 0;
}

std::int64_t logits_width(const ModelArch &m) {
  if ((m.lm_head && m.family != ModelFamily::encoder) || m.mlm_head)
    return m.vocab;
  return m.num_labels;
}

std::int64_t active_params(const ModelArch &m) {
  if (m.family == ModelFamily::moe_decoder)
    return decoder_params(m, m.experts_per_token) - tower_params(m);
  return derive_params(m) - tower_params(m);
}

std::int64_t tower_params(const ModelArch &m) {
  if (m.family != ModelFamily::decoder && m.family != ModelFamily::moe_decoder)
    return 0;
  I64 p = m.projector_params;
  for (const auto &t : m.towers)
    p += encoder_params(t);
  return p;
}

} // namespace dlrig::model

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
  return m.norm == "layernorm" ? 2 * width : width;
}

// Attention projections of one layer: q (heads·d), k and v (kv_heads·d each), o back to hidden.
I64 attention_params(const ModelArch &m, I64 kv_input) {
  I64 q = m.heads * m.head_dim;
  I64 kv = m.kv_heads * m.head_dim;
  I64 p = m.hidden * q + 2 * kv_input * kv + q * m.hidden;
  if (m.attention_bias || m.qkv_bias)
    p += q + 2 * kv;
  if (m.attention_bias || m.out_bias)
    p += m.hidden;
  return p;
}

// Feed-forward of one layer (one expert for MoE): gated = gate, up, down; else up, down.
I64 mlp_params(const ModelArch &m) {
  I64 p = (m.gated_mlp ? 3 : 2) * m.hidden * m.intermediate;
  if (m.mlp_bias)
    p += (m.gated_mlp ? 2 : 1) * m.intermediate + m.hidden;
  return p;
}

I64 decoder_params(const ModelArch &m, I64 experts) {
  I64 layer = attention_params(m, m.hidden) + m.norms_per_layer * norm_params(m, m.hidden);
  if (m.family == ModelFamily::moe_decoder)
    layer += m.hidden * m.experts + experts * mlp_params(m); // router + experts
  else
    layer += mlp_params(m);
  I64 p = m.layers * layer + m.vocab * m.hidden + norm_params(m, m.hidden);
  if (m.learned_positions)
    p += m.max_positions * m.hidden;
  if (!m.tied_embeddings)
    p += m.vocab * m.hidden;
  return p;
}

// BERT (BertModel) and ViT (ViTModel / ViTForImageClassification): post- or pre-norm layers with
// the same parameters: attention, two LayerNorms, up and down projections.
I64 encoder_params(const ModelArch &m) {
  I64 layer = attention_params(m, m.hidden) + 2 * norm_params(m, m.hidden) + mlp_params(m);
  I64 p = m.layers * layer;
  if (m.hf_model_type == "vit") {
    I64 patches = (m.image_size / m.patch_size) * (m.image_size / m.patch_size);
    p += m.channels * m.patch_size * m.patch_size * m.hidden + m.hidden; // patch conv
    p += m.hidden;                                                       // [CLS] token
    p += (patches + 1) * m.hidden;                                       // positions
    p += norm_params(m, m.hidden);                                       // final LayerNorm
  } else {
    p += (m.vocab + m.max_positions + m.type_vocab) * m.hidden + norm_params(m, m.hidden);
  }
  if (m.pooler)
    p += m.hidden * m.hidden + m.hidden;
  if (m.num_labels > 0)
    p += m.hidden * m.num_labels + m.num_labels;
  return p;
}

// T5ForConditionalGeneration: one shared embedding, relative attention bias in each stack's first
// layer, T5LayerNorm (weight only), no biases anywhere.
I64 t5_params(const ModelArch &m) {
  I64 attn = attention_params(m, m.hidden);
  I64 ln = norm_params(m, m.hidden);
  I64 ff = mlp_params(m);
  I64 rel = m.relative_attention_buckets * m.heads;
  I64 encoder = m.layers * (attn + ff + 2 * ln) + rel + ln;
  I64 decoder = m.decoder_layers * (2 * attn + ff + 3 * ln) + rel + ln;
  I64 p = m.vocab * m.hidden + encoder + decoder;
  if (!m.tied_embeddings)
    p += m.vocab * m.hidden;
  return p;
}

// Module names by model type, as the transformers implementations call them.
struct LinearNames {
  const char *q, *k, *v, *o, *gate, *up, *down;
};
LinearNames names_of(const std::string &type) {
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
  if (m.hf_model_type == "gpt2") {
    out.push_back({"qkv", "c_attn", m.hidden, q + 2 * kv, count, in_bias});
    out.push_back({"o", "c_proj", q, m.hidden, count, out_bias});
    return;
  }
  if (m.fused_qkv) {
    out.push_back({"qkv", "qkv_proj", m.hidden, q + 2 * kv, count, in_bias});
  } else {
    out.push_back({prefix + "q", n.q, m.hidden, q, count, in_bias});
    out.push_back({prefix + "k", n.k, m.hidden, kv, count, in_bias});
    out.push_back({prefix + "v", n.v, m.hidden, kv, count, in_bias});
  }
  out.push_back({prefix + "o", n.o, q, m.hidden, count, out_bias});
}

void add_mlp(std::vector<LinearShape> &out, const ModelArch &m, const LinearNames &n, I64 count) {
  if (m.hf_model_type == "gpt2") {
    out.push_back({"up", "c_fc", m.hidden, m.intermediate, count, m.mlp_bias});
    out.push_back({"down", "c_proj", m.intermediate, m.hidden, count, m.mlp_bias});
    return;
  }
  if (m.gated_mlp && m.fused_qkv) { // Phi-3 fuses gate and up as it fuses q, k and v
    out.push_back({"gate_up", "gate_up_proj", m.hidden, 2 * m.intermediate, count, m.mlp_bias});
  } else if (m.gated_mlp) {
    out.push_back({"gate", n.gate, m.hidden, m.intermediate, count, m.mlp_bias});
    out.push_back({"up", n.up, m.hidden, m.intermediate, count, m.mlp_bias});
  } else {
    out.push_back(
        {"up", m.hf_model_type == "t5" ? "wi" : n.up, m.hidden, m.intermediate, count, m.mlp_bias});
  }
  out.push_back({"down", n.down, m.intermediate, m.hidden, count, m.mlp_bias});
}

} // namespace

std::vector<LinearShape> linear_layers(const ModelArch &m) {
  std::vector<LinearShape> out;
  LinearNames n = names_of(m.hf_model_type);
  switch (m.family) {
  case ModelFamily::decoder:
    add_attention(out, m, n, m.layers, "");
    add_mlp(out, m, n, m.layers);
    break;
  case ModelFamily::moe_decoder:
    add_attention(out, m, n, m.layers, "");
    out.push_back({"router", "gate", m.hidden, m.experts, m.layers, false});
    add_mlp(out, m, n, m.layers * m.experts);
    break;
  case ModelFamily::encoder:
    add_attention(out, m, n, m.layers, "");
    add_mlp(out, m, n, m.layers);
    if (m.pooler)
      out.push_back({"pooler", "pooler.dense", m.hidden, m.hidden, 1, true});
    if (m.num_labels > 0)
      out.push_back({"classifier", "classifier", m.hidden, m.num_labels, 1, true});
    return out;
  case ModelFamily::encoder_decoder:
    add_attention(out, m, n, m.layers + m.decoder_layers, "");
    add_attention(out, m, n, m.decoder_layers, "cross_");
    add_mlp(out, m, n, m.layers + m.decoder_layers);
    break;
  case ModelFamily::cnn:
  case ModelFamily::unet:
    return out;
  }
  if (!m.tied_embeddings)
    out.push_back({"lm_head", "lm_head", m.hidden, m.vocab, 1, false});
  return out;
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
    return t5_params(m);
  case ModelFamily::cnn:
  case ModelFamily::unet:
    // The one walk (walk.cpp); its parameters do not depend on the image size.
    if (auto modules = walk(m, default_image_size(m)))
      return total_params(*modules);
    return 0;
  }
  return 0;
}

std::int64_t active_params(const ModelArch &m) {
  if (m.family == ModelFamily::moe_decoder)
    return decoder_params(m, m.experts_per_token);
  return derive_params(m);
}

} // namespace dlrig::model

// Parameter counts and per-layer shapes derived from the architecture, module by module as the
// PyTorch implementations build them (transformers modeling_*.py, torchvision resnet.py, diffusers
// unet_2d_condition.py). docs/models.md writes out each family's formula.
#include "dlrig/kb/model.hpp"

#include <fmt/format.h>

#include <functional>

namespace dlrig::kb {
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

// One module the CNN/UNet walkers visit: its own parameters and its output shape.
struct Visit {
  std::string name;
  std::string kind;
  I64 params = 0;
  I64 channels = 0, height = 0, width = 0;
  I64 heads = 0, transformer_layers = 0;
};
using Visitor = std::function<void(const Visit &)>;

I64 conv_out(I64 side, I64 kernel, I64 stride, I64 pad) {
  return (side + 2 * pad - kernel) / stride + 1;
}

// torchvision ResNet, module by module; side is the input image side in pixels.
void walk_resnet(const ModelArch &m, I64 side, const Visitor &visit) {
  const CnnArch &c = m.cnn;
  I64 ch = c.stem_width;
  I64 s = conv_out(side, 7, 2, 3);
  visit({"conv1", "conv", m.channels * ch * 49, ch, s, s});
  visit({"bn1", "batchnorm", 2 * ch, ch, s, s});
  visit({"relu", "relu", 0, ch, s, s});
  s = conv_out(s, 3, 2, 1);
  visit({"maxpool", "maxpool", 0, ch, s, s});
  bool bottleneck = c.block == "bottleneck";
  I64 expansion = bottleneck ? 4 : 1;
  for (std::size_t i = 0; i < c.stage_blocks.size(); ++i) {
    I64 planes = c.stage_widths[i];
    I64 out = planes * expansion;
    for (I64 j = 0; j < c.stage_blocks[i]; ++j) {
      I64 stride = (i > 0 && j == 0) ? 2 : 1;
      std::string p = fmt::format("layer{}.{}.", i + 1, j);
      I64 in = ch;
      I64 in_side = s;
      if (bottleneck) {
        visit({p + "conv1", "conv", in * planes, planes, s, s});
        visit({p + "bn1", "batchnorm", 2 * planes, planes, s, s});
        visit({p + "relu1", "relu", 0, planes, s, s});
        s = conv_out(s, 3, stride, 1); // torchvision (v1.5) strides the 3×3 convolution
        visit({p + "conv2", "conv", planes * planes * 9, planes, s, s});
        visit({p + "bn2", "batchnorm", 2 * planes, planes, s, s});
        visit({p + "relu2", "relu", 0, planes, s, s});
        visit({p + "conv3", "conv", planes * out, out, s, s});
        visit({p + "bn3", "batchnorm", 2 * out, out, s, s});
      } else {
        s = conv_out(s, 3, stride, 1);
        visit({p + "conv1", "conv", in * planes * 9, planes, s, s});
        visit({p + "bn1", "batchnorm", 2 * planes, planes, s, s});
        visit({p + "relu1", "relu", 0, planes, s, s});
        visit({p + "conv2", "conv", planes * planes * 9, planes, s, s});
        visit({p + "bn2", "batchnorm", 2 * planes, planes, s, s});
      }
      if (stride != 1 || in != out) {
        I64 ds = conv_out(in_side, 1, stride, 0);
        visit({p + "downsample.0", "conv", in * out, out, ds, ds});
        visit({p + "downsample.1", "batchnorm", 2 * out, out, ds, ds});
      }
      visit({p + "add", "add", 0, out, s, s});
      visit({p + "relu", "relu", 0, out, s, s});
      ch = out;
    }
  }
  visit({"avgpool", "avgpool", 0, ch, 1, 1});
  if (c.num_classes > 0)
    visit({"fc", "linear", ch * c.num_classes + c.num_classes, c.num_classes, 1, 1});
}

// diffusers ResnetBlock2D: GroupNorm, 3×3 conv, time projection, GroupNorm, 3×3 conv, and a 1×1
// shortcut when the channel count changes.
I64 unet_resnet_params(I64 in, I64 out, I64 temb) {
  I64 p = 2 * in + in * out * 9 + out + temb * out + out + 2 * out + out * out * 9 + out;
  if (in != out)
    p += in * out + out;
  return p;
}

// diffusers Transformer2DModel over `ch` channels (inner width = ch): GroupNorm, proj_in, `layers`
// BasicTransformerBlocks (self-attention, cross-attention, GEGLU feed-forward of 4×, three
// LayerNorms), proj_out. Linear or 1×1-conv projections have the same count.
I64 unet_transformer_params(I64 ch, I64 layers, I64 cross) {
  I64 d = ch;
  I64 block = 3 * 2 * d                       // norm1..norm3
              + 4 * d * d + d                 // attn1: q, k, v, out (+ out bias)
              + 2 * d * d + 2 * cross * d + d // attn2: q, out from d; k, v from the text width
              + d * 8 * d + 8 * d             // GEGLU projection to 2 × 4d
              + 4 * d * d + d;                // back to d
  return 2 * ch + 2 * (ch * d + d) + layers * block;
}

void walk_unet(const ModelArch &m, I64 side, const Visitor &visit) {
  const UNetArch &u = m.unet;
  const auto &boc = u.block_out_channels;
  const std::size_t n = boc.size();
  const I64 t = u.time_embed_dim;
  I64 s = side;
  visit({"conv_in", "conv", u.in_channels * boc[0] * 9 + boc[0], boc[0], s, s});
  visit({"time_embedding", "linear", boc[0] * t + t + t * t + t, t, 1, 1});
  if (u.addition_embed_type == "text_time")
    visit({"add_embedding", "linear", u.projection_class_embeddings_input_dim * t + t + t * t + t,
           t, 1, 1});

  auto transformer = [&](const std::string &name, I64 ch, I64 layers, I64 heads) {
    visit({name, "transformer", unet_transformer_params(ch, layers, u.cross_attention_dim), ch, s,
           s, heads, layers});
  };

  std::vector<I64> skips{boc[0]}; // channels of each saved residual, consumed by the up blocks
  I64 out = boc[0];
  for (std::size_t i = 0; i < n; ++i) {
    I64 in = out;
    out = boc[i];
    bool attn = u.down_block_types[i] == "CrossAttnDownBlock2D";
    for (I64 j = 0; j < u.layers_per_block; ++j) {
      std::string p = fmt::format("down_blocks.{}.", i);
      visit({fmt::format("{}resnets.{}", p, j), "resnet",
             unet_resnet_params(j == 0 ? in : out, out, t), out, s, s});
      if (attn)
        transformer(fmt::format("{}attentions.{}", p, j), out, u.transformer_layers[i],
                    u.attention_heads[i]);
      skips.push_back(out);
    }
    if (i != n - 1) {
      s = conv_out(s, 3, 2, 1);
      visit({fmt::format("down_blocks.{}.downsamplers.0", i), "downsample", out * out * 9 + out,
             out, s, s});
      skips.push_back(out);
    }
  }

  I64 last = boc[n - 1];
  visit({"mid_block.resnets.0", "resnet", unet_resnet_params(last, last, t), last, s, s});
  transformer("mid_block.attentions.0", last, u.transformer_layers[n - 1],
              u.attention_heads[n - 1]);
  visit({"mid_block.resnets.1", "resnet", unet_resnet_params(last, last, t), last, s, s});

  out = last;
  for (std::size_t i = 0; i < n; ++i) {
    I64 prev = out;
    out = boc[n - 1 - i];
    bool attn = u.up_block_types[i] == "CrossAttnUpBlock2D";
    for (I64 j = 0; j <= u.layers_per_block; ++j) {
      I64 skip = skips.back();
      skips.pop_back();
      std::string p = fmt::format("up_blocks.{}.", i);
      visit({fmt::format("{}resnets.{}", p, j), "resnet",
             unet_resnet_params((j == 0 ? prev : out) + skip, out, t), out, s, s});
      if (attn)
        transformer(fmt::format("{}attentions.{}", p, j), out, u.up_transformer_layers[i],
                    u.attention_heads[n - 1 - i]);
    }
    if (i != n - 1) {
      s *= 2;
      visit({fmt::format("up_blocks.{}.upsamplers.0", i), "upsample", out * out * 9 + out, out, s,
             s});
    }
  }
  visit({"conv_norm_out", "norm", 2 * boc[0], boc[0], s, s});
  visit({"conv_out", "conv", boc[0] * u.out_channels * 9 + u.out_channels, u.out_channels, s, s});
}

I64 walked_params(const ModelArch &m) {
  I64 total = 0;
  auto add = [&](const Visit &v) { total += v.params; };
  if (m.family == ModelFamily::cnn)
    walk_resnet(m, 224, add);
  else
    walk_unet(m, 64, add);
  return total;
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
    return walked_params(m);
  }
  return 0;
}

std::int64_t active_params(const ModelArch &m) {
  if (m.family == ModelFamily::moe_decoder)
    return decoder_params(m, m.experts_per_token);
  return derive_params(m);
}

Result<std::vector<LayerShape>> layer_shapes(const ModelArch &m, std::int64_t image_size) {
  std::vector<LayerShape> out;
  auto keep = [&](const Visit &v) {
    out.push_back({v.name, v.kind, v.channels, v.height, v.width, v.heads, v.transformer_layers});
  };
  if (image_size > 65536)
    return make_error(fmt::format("{}: image size {} px is larger than dlrig models (65536)",
                                  m.name, image_size));
  if (m.family == ModelFamily::cnn) {
    // The stem and four stride-2 stages need at least 32 px to leave a 1×1 map.
    if (image_size < 32)
      return make_error(fmt::format("{}: image size {} px is too small for a ResNet (at least 32)",
                                    m.name, image_size));
    walk_resnet(m, image_size, keep);
    return out;
  }
  if (m.family == ModelFamily::unet) {
    I64 factor = m.unet.vae_scale_factor;
    I64 downs = static_cast<I64>(m.unet.block_out_channels.size()) - 1;
    I64 multiple = factor << downs; // the latent must halve evenly at each down block
    if (image_size <= 0 || image_size % multiple != 0)
      return make_error(fmt::format(
          "{}: image size {} px must be a positive multiple of {} (the VAE's factor {} times "
          "2^{} down blocks)",
          m.name, image_size, multiple, factor, downs));
    walk_unet(m, image_size / factor, keep);
    return out;
  }
  return make_error(fmt::format("{}: a {} model has no per-layer image shapes; its activations "
                                "follow from the sequence length",
                                m.name, to_string(m.family)));
}

} // namespace dlrig::kb

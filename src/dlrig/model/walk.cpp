// The per-module walk of torchvision's ResNet and diffusers' UNet2DConditionModel. Each record
// carries its parameters (module by module as resnet.py and unet_2d_condition.py build them), its
// shapes, what autograd keeps for backward and its forward multiply-accumulates.
#include "dlrig/model/walk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>

namespace dlrig::model {
namespace {

using I64 = std::int64_t;

I64 conv_out(I64 side, I64 kernel, I64 stride, I64 pad) {
  return (side + 2 * pad - kernel) / stride + 1;
}

// torchvision ResNet; side is the input image side in pixels. Each BatchNorm keeps its input and
// each ReLU its output for backward; a convolution's input is the previous module's output (kept
// there); the max-pool keeps its output and its int64 indices.
std::vector<Module> walk_resnet(const ModelArch &m, I64 side) {
  std::vector<Module> out;
  out.reserve(256); // ResNet-152 has 210 modules: no reallocation (fit and pick walk it often)
  const CnnArch &c = m.cnn;
  const I64 image_channels = m.channels > 0 ? m.channels : 3;
  Shape x{image_channels, side, side};
  int block = -1;
  auto conv = [&](std::string name, I64 out_ch, I64 kernel, I64 stride, const Shape &in) {
    I64 s = conv_out(in.height, kernel, stride, kernel / 2);
    Module r{std::move(name), "conv", in.channels * out_ch * kernel * kernel, in, {out_ch, s, s}};
    r.kernel = kernel;
    r.stride = stride;
    r.macs = static_cast<double>(r.params) * static_cast<double>(s * s);
    r.block = block;
    const Shape output = r.output;
    out.push_back(std::move(r));
    return output;
  };
  auto elementwise = [&](std::string name, std::string kind, const Shape &s) {
    Module r{std::move(name), std::move(kind), 0, s, s};
    if (r.kind == "batchnorm") {
      r.params = 2 * s.channels;
      r.saved = static_cast<double>(s.elements()); // its input
    } else if (r.kind == "relu") {
      r.saved = static_cast<double>(s.elements()); // its output
    }
    r.block = block;
    out.push_back(std::move(r));
    return s;
  };
  Shape y = conv("conv1", c.stem_width, 7, 2, x);
  elementwise("bn1", "batchnorm", y);
  elementwise("relu", "relu", y);
  I64 ps = conv_out(y.height, 3, 2, 1);
  Module pool{"maxpool", "maxpool", 0, y, {y.channels, ps, ps}};
  pool.saved = static_cast<double>(pool.output.elements());
  pool.saved_int64 = pool.saved;
  out.push_back(pool);
  x = pool.output;

  const bool bottleneck = c.block == "bottleneck";
  const I64 expansion = bottleneck ? 4 : 1;
  for (std::size_t i = 0; i < c.stage_blocks.size(); ++i) {
    const I64 planes = c.stage_widths[i];
    const I64 width = planes * expansion;
    for (I64 j = 0; j < c.stage_blocks[i]; ++j) {
      ++block;
      const I64 stride = (i > 0 && j == 0) ? 2 : 1;
      const std::string p = fmt::format("layer{}.{}.", i + 1, j);
      const Shape in = x;
      Shape h = in;
      if (bottleneck) {
        // torchvision (v1.5) strides the 3×3 convolution.
        h = elementwise(p + "relu1", "relu",
                        elementwise(p + "bn1", "batchnorm", conv(p + "conv1", planes, 1, 1, h)));
        h = elementwise(
            p + "relu2", "relu",
            elementwise(p + "bn2", "batchnorm", conv(p + "conv2", planes, 3, stride, h)));
        h = elementwise(p + "bn3", "batchnorm", conv(p + "conv3", width, 1, 1, h));
      } else {
        h = elementwise(
            p + "relu1", "relu",
            elementwise(p + "bn1", "batchnorm", conv(p + "conv1", planes, 3, stride, h)));
        h = elementwise(p + "bn2", "batchnorm", conv(p + "conv2", planes, 3, 1, h));
      }
      if (stride != 1 || in.channels != width)
        elementwise(p + "downsample.1", "batchnorm",
                    conv(p + "downsample.0", width, 1, stride, in));
      elementwise(p + "add", "add", h);
      x = elementwise(p + "relu", "relu", h);
    }
  }
  block = -1;
  Module avg{"avgpool", "avgpool", 0, x, {x.channels, 1, 1}};
  out.push_back(avg);
  if (c.num_classes > 0) {
    Module fc{"fc",
              "linear",
              x.channels * c.num_classes + c.num_classes,
              avg.output,
              {c.num_classes, 1, 1}};
    fc.macs = static_cast<double>(x.channels * c.num_classes);
    out.push_back(fc);
  }
  return out;
}

// diffusers ResnetBlock2D: GroupNorm, SiLU, 3×3 conv, time projection, GroupNorm, SiLU, 3×3 conv,
// and a 1×1 shortcut when the channel count changes. Keeps its input and five tensors of its
// output's size (norm and activation inputs, conv inputs).
Module unet_resnet(std::string name, I64 in, I64 out, I64 temb, I64 s) {
  const double hw = static_cast<double>(s * s);
  const double ci = static_cast<double>(in), co = static_cast<double>(out);
  Module r{std::move(name), "resnet", 0, {in, s, s}, {out, s, s}};
  r.params = 2 * in + in * out * 9 + out + temb * out + out + 2 * out + out * out * 9 + out;
  if (in != out)
    r.params += in * out + out;
  r.saved = ci * hw + 5 * co * hw;
  r.working = ci * hw + 2 * co * hw;
  r.macs = 9 * ci * co * hw + 9 * co * co * hw + (in != out ? ci * co * hw : 0) +
           static_cast<double>(temb * out);
  r.checkpointed = true;
  return r;
}

// diffusers Transformer2DModel over `ch` channels (inner width = ch): GroupNorm, proj_in, `layers`
// BasicTransformerBlocks (self-attention, cross-attention on the text context, GEGLU feed-forward
// of 4×, three LayerNorms), proj_out. Linear or 1×1-conv projections have the same count.
Module unet_transformer(std::string name, I64 ch, I64 layers, I64 heads, I64 cross, I64 s) {
  const I64 d = ch;
  const I64 block = 3 * 2 * d                       // norm1..norm3
                    + 4 * d * d + d                 // attn1: q, k, v, out (+ out bias)
                    + 2 * d * d + 2 * cross * d + d // attn2: q, out from d; k, v from the text
                    + d * 8 * d + 8 * d             // GEGLU projection to 2 × 4d
                    + 4 * d * d + d;                // back to d
  Module r{std::move(name), "transformer", 0, {ch, s, s}, {ch, s, s}};
  r.params = 2 * ch + 2 * (ch * d + d) + layers * block;
  r.heads = heads;
  r.transformer_layers = layers;
  const double hw = static_cast<double>(s * s), c = static_cast<double>(ch);
  const double ctx = static_cast<double>(cross), tokens = kUnetContextTokens;
  const double n = static_cast<double>(layers);
  // GroupNorm input, proj_in and proj_out inputs; per layer: self-attention (norm input, Q, K, V,
  // kernel output, output-projection input: 6), cross-attention (norm input, Q, kernel output,
  // output-projection input: 4, and K and V of the context), GEGLU (norm input, input, the 8C
  // projection, GELU(gate), product: 18).
  r.saved = 3 * c * hw + n * (hw * c * (6 + 4 + 18) + 2 * tokens * c);
  r.scores = n * static_cast<double>(heads) * hw * hw;
  r.working = 2 * c * hw + 8 * c * hw;
  r.macs = 2 * c * c * hw + n * (hw * (4 * c * c + 2 * c * c + 12 * c * c) + 2 * tokens * ctx * c +
                                 2 * hw * hw * c + 2 * hw * tokens * c);
  // r · (in + out): self-attention q, k, v, out (c → c); cross-attention q and out (c → c), k and
  // v (ctx → c). All linears add GEGLU (c → 8c, 4c → c) and proj_in/proj_out.
  r.lora_qkvo = n * (8 * c + 4 * c + 2 * (ctx + c));
  r.lora_all = r.lora_qkvo + n * (9 * c + 5 * c) + 2 * 2 * c;
  r.checkpointed = true;
  return r;
}

// Layers outside the resnets and transformers: they keep `saved` elements and hold their input
// and output while they run.
Module unet_plain(std::string name, std::string kind, I64 params, Shape in, Shape out, double saved,
                  double macs) {
  Module r{std::move(name), std::move(kind), params, in, out};
  r.saved = saved;
  r.working = static_cast<double>(in.elements() + out.elements());
  r.macs = macs;
  return r;
}

std::vector<Module> walk_unet(const ModelArch &m, I64 s) {
  std::vector<Module> out;
  const UNetArch &u = m.unet;
  const auto &boc = u.block_out_channels;
  const std::size_t n = boc.size();
  const I64 t = u.time_embed_dim;
  const I64 c0 = boc[0];
  auto hw = [&] { return static_cast<double>(s * s); };
  // conv_in keeps its input; its output is counted here too (diffusers' first resnet reads it).
  out.push_back(unet_plain("conv_in", "conv", u.in_channels * c0 * 9 + c0, {u.in_channels, s, s},
                           {c0, s, s}, static_cast<double>(u.in_channels + c0) * hw(),
                           9.0 * static_cast<double>(u.in_channels * c0) * hw()));
  out.back().kernel = 3;
  // TimestepEmbedding: linear_1 (c0 → t), SiLU, linear_2 (t → t); each keeps its input.
  out.push_back(unet_plain("time_embedding", "linear", c0 * t + t + t * t + t, {c0, 1, 1},
                           {t, 1, 1}, static_cast<double>(c0 + 2 * t),
                           static_cast<double>(c0 * t + t * t)));
  if (u.addition_embed_type == "text_time") {
    const I64 a = u.projection_class_embeddings_input_dim;
    out.push_back(unet_plain("add_embedding", "linear", a * t + t + t * t + t, {a, 1, 1}, {t, 1, 1},
                             static_cast<double>(a + 2 * t), static_cast<double>(a * t + t * t)));
  }

  std::vector<I64> skips{c0}; // channels of each saved residual, consumed by the up blocks
  I64 ch = c0;
  for (std::size_t i = 0; i < n; ++i) {
    const I64 in = ch;
    ch = boc[i];
    const bool attn = u.down_block_types[i] == "CrossAttnDownBlock2D";
    for (I64 j = 0; j < u.layers_per_block; ++j) {
      const std::string p = fmt::format("down_blocks.{}.", i);
      out.push_back(unet_resnet(fmt::format("{}resnets.{}", p, j), j == 0 ? in : ch, ch, t, s));
      if (attn)
        out.push_back(unet_transformer(fmt::format("{}attentions.{}", p, j), ch,
                                       u.transformer_layers[i], u.attention_heads[i],
                                       u.cross_attention_dim, s));
      skips.push_back(ch);
    }
    if (i != n - 1) {
      const I64 from = s;
      s = conv_out(s, 3, 2, 1);
      const double c = static_cast<double>(ch);
      out.push_back(unet_plain(fmt::format("down_blocks.{}.downsamplers.0", i), "downsample",
                               ch * ch * 9 + ch, {ch, from, from}, {ch, s, s}, c * hw(),
                               9 * c * c * hw()));
      out.back().kernel = 3;
      out.back().stride = 2;
      skips.push_back(ch);
    }
  }

  const I64 last = boc[n - 1];
  out.push_back(unet_resnet("mid_block.resnets.0", last, last, t, s));
  out.push_back(unet_transformer("mid_block.attentions.0", last, u.transformer_layers[n - 1],
                                 u.attention_heads[n - 1], u.cross_attention_dim, s));
  out.push_back(unet_resnet("mid_block.resnets.1", last, last, t, s));

  ch = last;
  for (std::size_t i = 0; i < n; ++i) {
    const I64 prev = ch;
    ch = boc[n - 1 - i];
    const bool attn = u.up_block_types[i] == "CrossAttnUpBlock2D";
    for (I64 j = 0; j <= u.layers_per_block; ++j) {
      const I64 skip = skips.back();
      skips.pop_back();
      const std::string p = fmt::format("up_blocks.{}.", i);
      out.push_back(
          unet_resnet(fmt::format("{}resnets.{}", p, j), (j == 0 ? prev : ch) + skip, ch, t, s));
      if (attn)
        out.push_back(unet_transformer(fmt::format("{}attentions.{}", p, j), ch,
                                       u.up_transformer_layers[i], u.attention_heads[n - 1 - i],
                                       u.cross_attention_dim, s));
    }
    if (i != n - 1) {
      const I64 from = s;
      s *= 2;
      const double c = static_cast<double>(ch);
      // Nearest upsampling's output and its conv's output.
      out.push_back(unet_plain(fmt::format("up_blocks.{}.upsamplers.0", i), "upsample",
                               ch * ch * 9 + ch, {ch, from, from}, {ch, s, s}, 2 * c * hw(),
                               9 * c * c * hw()));
      out.back().kernel = 3;
    }
  }
  const double c = static_cast<double>(c0);
  // GroupNorm and SiLU keep their inputs; conv_out its input.
  out.push_back(
      unet_plain("conv_norm_out", "norm", 2 * c0, {c0, s, s}, {c0, s, s}, 2 * c * hw(), 0));
  out.push_back(unet_plain("conv_out", "conv", c0 * u.out_channels * 9 + u.out_channels, {c0, s, s},
                           {u.out_channels, s, s}, c * hw(),
                           9 * c * static_cast<double>(u.out_channels) * hw()));
  out.back().kernel = 3;
  return out;
}

} // namespace

std::int64_t default_image_size(const ModelArch &m) {
  if (m.family == ModelFamily::cnn)
    return m.image_size > 0 ? m.image_size : 224;
  if (m.family == ModelFamily::unet)
    return m.unet.sample_size * m.unet.vae_scale_factor;
  return 0;
}

std::int64_t total_params(const std::vector<Module> &modules) {
  std::int64_t p = 0;
  for (const auto &r : modules)
    p += r.params;
  return p;
}

namespace {

Result<std::vector<Module>> walk_uncached(const ModelArch &m, std::int64_t image_size) {
  if (m.family != ModelFamily::cnn && m.family != ModelFamily::unet)
    return make_error(fmt::format("{}: a {} model has no per-layer image walk; its activations "
                                  "follow from the sequence length",
                                  m.name, to_string(m.family)));
  if (image_size > 65536)
    return make_error(fmt::format("{}: image size {} px is larger than dlrig models (65536)",
                                  m.name, image_size));
  if (m.family == ModelFamily::cnn) {
    const CnnArch &c = m.cnn;
    if (c.stage_blocks.empty() || c.stage_blocks.size() != c.stage_widths.size())
      return make_error(fmt::format("{}: the ResNet's stages are not known (give torchvision's "
                                    "block and layers, or the transformers ResNetConfig)",
                                    m.name));
    // The stem and four stride-2 stages need at least 32 px to leave a 1×1 map.
    if (image_size < 32)
      return make_error(fmt::format("{}: image size {} px is too small for a ResNet (at least 32)",
                                    m.name, image_size));
    return walk_resnet(m, image_size);
  }
  const UNetArch &u = m.unet;
  const std::size_t n = u.block_out_channels.size();
  if (n == 0 || u.down_block_types.size() != n || u.up_block_types.size() != n ||
      u.attention_heads.size() != n || u.transformer_layers.size() != n ||
      u.up_transformer_layers.size() != n || u.vae_scale_factor <= 0)
    return make_error(fmt::format("{}: the UNet's blocks are not known (give the diffusers "
                                  "unet/config.json)",
                                  m.name));
  const I64 factor = u.vae_scale_factor;
  const I64 downs = static_cast<I64>(n) - 1;
  const I64 multiple = factor << downs; // the latent must halve evenly at each down block
  if (image_size <= 0 || image_size % multiple != 0)
    return make_error(fmt::format(
        "{}: image size {} px must be a positive multiple of {} (the VAE's factor {} times "
        "2^{} down blocks)",
        m.name, image_size, multiple, factor, downs));
  return walk_unet(m, image_size / factor);
}

// Everything a walk depends on (the family, the image channels, the CNN's or the UNet's whole
// architecture, the image side), as text: two architectures with the same key walk the same.
std::string walk_key(const ModelArch &m, std::int64_t image_size) {
  const CnnArch &c = m.cnn;
  const UNetArch &u = m.unet;
  std::string key = fmt::format("{}|{}|{}|", static_cast<int>(m.family), m.channels, image_size);
  if (m.family == ModelFamily::cnn)
    return key + fmt::format("{}|{}|{}|{}|{}", c.block, fmt::join(c.stage_blocks, ","),
                             fmt::join(c.stage_widths, ","), c.stem_width, c.num_classes);
  return key +
         fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", u.in_channels,
                     u.out_channels, fmt::join(u.block_out_channels, ","),
                     fmt::join(u.down_block_types, ","), fmt::join(u.up_block_types, ","),
                     u.layers_per_block, fmt::join(u.attention_heads, ","),
                     fmt::join(u.transformer_layers, ","), fmt::join(u.up_transformer_layers, ","),
                     u.cross_attention_dim, u.time_embed_dim, u.norm_num_groups,
                     u.use_linear_projection, u.addition_embed_type, u.addition_time_embed_dim,
                     u.projection_class_embeddings_input_dim, u.sample_size, u.vae_scale_factor);
}

} // namespace

Result<std::shared_ptr<const std::vector<Module>>> walk_shared(const ModelArch &m,
                                                               std::int64_t image_size) {
  if (m.family != ModelFamily::cnn && m.family != ModelFamily::unet) {
    auto r = walk_uncached(m, image_size); // the error, without building a key
    return r.error();
  }
  // The last few walks, by key. fit's memory and time models walk a model several times per
  // estimate and pick estimates one model for every GPU x count: callgrind put the repeated walks
  // at 38 % of a ResNet-50 pick's instructions (docs/pick.md).
  struct Entry {
    std::string key;
    std::shared_ptr<const std::vector<Module>> modules;
  };
  static std::mutex mutex;
  static std::vector<Entry> recent; // newest last, at most kKept
  constexpr std::size_t kKept = 8;
  auto key = walk_key(m, image_size);
  {
    std::lock_guard lock(mutex);
    for (const auto &e : recent)
      if (e.key == key)
        return e.modules;
  }
  auto walked = walk_uncached(m, image_size);
  if (!walked)
    return walked.error();
  auto modules = std::make_shared<const std::vector<Module>>(std::move(*walked));
  std::lock_guard lock(mutex);
  if (recent.size() == kKept)
    recent.erase(recent.begin());
  recent.push_back({std::move(key), modules});
  return modules;
}

Result<std::vector<Module>> walk(const ModelArch &m, std::int64_t image_size) {
  auto modules = walk_shared(m, image_size);
  if (!modules)
    return modules.error();
  return **modules;
}

} // namespace dlrig::model

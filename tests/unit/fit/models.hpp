#pragma once
// Models and GPUs built by hand for the estimator's tests, with the hyperparameters their
// config.json files state and their published parameter counts (data/models.json names the source
// of each; the catalog derives the same counts; these tests do not depend on it).
#include "dlrig/fit/memory.hpp"
#include "dlrig/model/model.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace dlrig::test {

using Model = fit::ModelInput;

inline Model make(model::ModelArch a, std::int64_t params) {
  Model m;
  m.arch = std::move(a);
  m.params = params;
  m.origin = "test";
  return m;
}

// A Llama-style decoder: SwiGLU, RMSNorm, untied, vocabulary 32000; parameters by memory.md §2.1.
inline Model llama(std::int64_t layers, std::int64_t h, std::int64_t heads, std::int64_t kv,
                   std::int64_t inter, std::int64_t vocab = 32000, bool tied = false) {
  model::ModelArch a;
  a.name = "llama-test";
  a.family = model::ModelFamily::decoder;
  a.hidden = h;
  a.layers = layers;
  a.heads = heads;
  a.kv_heads = kv;
  a.head_dim = h / heads;
  a.intermediate = inter;
  a.vocab = vocab;
  a.max_positions = 4096;
  a.tied_embeddings = tied;
  a.gated_mlp = true;
  a.norm = "rmsnorm";
  const std::int64_t d = h / heads;
  const std::int64_t per_layer =
      h * heads * d + 2 * h * kv * d + heads * d * h + 3 * h * inter + 2 * h;
  return make(a, layers * per_layer + vocab * h * (tied ? 1 : 2) + h);
}

inline Model llama3_8b() {
  auto m = llama(32, 4096, 32, 8, 14336, 128256);
  m.arch.name = "llama-3-8b";
  m.arch.max_positions = 8192;
  EXPECT_EQ(m.params, 8'030'261'248); // the published exact count
  return m;
}

inline Model gemma_2b() {
  model::ModelArch a = llama(18, 2048, 8, 1, 16384, 256000, true).arch;
  a.name = "gemma-1.1-2b";
  a.head_dim = 256;
  const std::int64_t per_layer = 2048 * 2048 * 2 + 2 * 2048 * 256 + 3 * 2048 * 16384 + 2 * 2048;
  return make(a, 18 * per_layer + 256000 * 2048 + 2048);
}

inline Model gpt2() {
  model::ModelArch a;
  a.name = "gpt2";
  a.family = model::ModelFamily::decoder;
  a.hidden = 768;
  a.layers = 12;
  a.heads = 12;
  a.intermediate = 3072;
  a.vocab = 50257;
  a.max_positions = 1024;
  a.learned_positions = true;
  a.norm = "layernorm";
  a.extra = Json{{"resid_pdrop", 0.1}, {"embd_pdrop", 0.1}, {"attn_pdrop", 0.1}};
  return make(a, 124'439'808);
}

inline Model gpt3_175b() {
  model::ModelArch a = gpt2().arch;
  a.name = "gpt-3-175b";
  a.hidden = 12288;
  a.layers = 96;
  a.heads = 96;
  a.intermediate = 4 * 12288;
  a.max_positions = 2048;
  return make(a, 174'604'259'328);
}

inline Model bert_base_cased() {
  model::ModelArch a;
  a.name = "bert-base-cased";
  a.family = model::ModelFamily::encoder;
  a.hidden = 768;
  a.layers = 12;
  a.heads = 12;
  a.intermediate = 3072;
  a.vocab = 28996;
  a.max_positions = 512;
  a.type_vocab = 2;
  a.learned_positions = true;
  a.norm = "layernorm";
  a.extra = Json{{"hidden_dropout_prob", 0.1}, {"attention_probs_dropout_prob", 0.1}};
  return make(a, 108'310'272);
}

// torchvision's ResNets as the catalog's torchvision rows state them (block and layers per stage).
inline Model resnet(const char *name) {
  const bool r50 = std::string_view(name) == "resnet50";
  Json cfg{{"model_type", "resnet"},
           {"block", r50 ? "bottleneck" : "basic"},
           {"layers", r50 ? std::vector<int>{3, 4, 6, 3} : std::vector<int>{2, 2, 2, 2}}};
  auto a = model::model_from_config(cfg, name);
  EXPECT_TRUE(a.ok()) << a.error().message;
  return make(a.value(), model::derive_params(a.value()));
}

// Stable Diffusion 1.5's UNet as its diffusers unet/config.json states it, with its published
// parameter count (memory.md §2.2, diffusers' num_parameters example).
inline Model sd15_unet() {
  Json cfg{
      {"_class_name", "UNet2DConditionModel"},
      {"block_out_channels", {320, 640, 1280, 1280}},
      {"layers_per_block", 2},
      {"down_block_types",
       {"CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"}},
      {"up_block_types",
       {"UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"}},
      {"attention_head_dim", 8},
      {"cross_attention_dim", 768},
      {"in_channels", 4},
      {"out_channels", 4},
      {"sample_size", 64}};
  auto a = model::model_from_config(cfg, "sd-1.5-unet");
  EXPECT_TRUE(a.ok()) << a.error().message;
  return make(a.value(), 859'520'964);
}

// A 7B-shaped decoder holding `params` parameters (for model-state tests that only need Psi).
inline Model plain_decoder(std::int64_t params) {
  auto m = llama(32, 4096, 32, 32, 11008);
  m.params = params;
  return m;
}

// GPUs with hand-set figures (A100 80GB-like, RTX 4090-like), for tests only.
inline fit::GpuTarget gpu_80gb() {
  fit::GpuTarget g;
  g.name = "test 80GB";
  g.memory_bytes = 80'000'000'000;
  g.compute_capability = "8.0";
  g.fp32_flops = 19.5e12;
  g.tf32_flops = 156e12;
  g.fp16_flops = 312e12;
  g.bf16_flops = 312e12;
  g.memory_bandwidth_bytes_per_s = 2.039e12;
  g.origin = "test";
  return g;
}

inline fit::GpuTarget gpu_24gb() {
  fit::GpuTarget g;
  g.name = "test 24GB";
  g.memory_bytes = 25'757'220'864; // 24 GiB
  g.compute_capability = "8.9";
  g.fp32_flops = 82.6e12;
  g.fp16_flops = 165.2e12;
  g.bf16_flops = 165.2e12;
  g.memory_bandwidth_bytes_per_s = 1.008e12;
  g.origin = "test";
  return g;
}

// A model from config.json text, served: `seq` prompt tokens, then `max_tokens` more.
struct Served {
  Model model;
  fit::Run run;
};
inline Served served(const char *config, std::int64_t seq, std::int64_t max_tokens) {
  auto arch = model::model_from_config_text(config, "config.json");
  if (!arch)
    throw std::runtime_error(arch.error().message);
  Served s{make(*arch, model::derive_params(*arch)), {}};
  s.run.mode = fit::Mode::infer;
  s.run.seq = seq;
  s.run.max_tokens = max_tokens;
  return s;
}

// Whether one of the estimate's notes contains `text`.
inline bool says(const fit::MemoryEstimate &e, std::string_view text) {
  return std::any_of(e.notes.begin(), e.notes.end(),
                     [&](const std::string &n) { return n.find(text) != std::string::npos; });
}

} // namespace dlrig::test

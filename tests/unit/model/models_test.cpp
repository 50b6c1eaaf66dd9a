#include "dlrig/core/exit_code.hpp"
#include "dlrig/model/model.hpp"
#include "unit/model/parse.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <set>
#include <string>

namespace dlrig::model {

// Names the catalog model in test output instead of dumping its bytes.
void PrintTo(const ModelArch &m, std::ostream *os) {
  *os << m.name;
}

namespace {

const std::vector<ModelArch> &catalog() {
  static const std::vector<ModelArch> models = load_model_catalog();
  return models;
}

const ModelArch &model(const std::string &name) {
  for (const auto &m : catalog())
    if (m.name == name)
      return m;
  throw std::runtime_error("no catalog model " + name);
}

using test::error_of;
using test::parse;

// "175B" → the interval of counts that round to it at the precision written.
struct Rounded {
  double value, half_step;
};
Rounded rounded(const std::string &text) {
  double unit = text.back() == 'B' ? 1e9 : 1e6;
  std::string digits = text.substr(0, text.size() - 1);
  auto dot = digits.find('.');
  int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
  return {std::stod(digits) * unit, 0.5 * unit * std::pow(10.0, -decimals)};
}

// ---- The catalog --------------------------------------------------------------------------------

TEST(ModelCatalog, HoldsTheModelsTheIssueNames) {
  const std::vector<std::string> required{
      "resnet-18",    "resnet-50",     "vit-b-16",     "bert-base-uncased", "bert-large-uncased",
      "t5-base",      "gpt2",          "gpt2-medium",  "gpt2-large",        "gpt2-xl",
      "llama-2-7b",   "llama-2-13b",   "llama-2-70b",  "llama-3-8b",        "llama-3-70b",
      "llama-3.1-8b", "llama-3.1-70b", "llama-3.2-1b", "llama-3.2-3b",      "mistral-7b",
      "mixtral-8x7b", "qwen2.5-0.5b",  "qwen2.5-1.5b", "qwen2.5-3b",        "qwen2.5-7b",
      "qwen2.5-14b",  "qwen2.5-32b",   "qwen2.5-72b",  "gemma-2-2b",        "gemma-2-9b",
      "gemma-2-27b",  "phi-3-mini",    "phi-3-medium", "sd-1.5-unet",       "sdxl-unet",
      "gpt-3-175b"};
  EXPECT_GE(catalog().size(), 35u);
  for (const auto &name : required)
    EXPECT_NO_THROW(model(name)) << name;
}

TEST(ModelCatalog, EveryRowHasASourceAndAPublishedFigure) {
  for (const auto &m : catalog()) {
    EXPECT_NE(m.source.find("count"), std::string::npos) << m.name << ": source names no count";
    EXPECT_FALSE(m.display_name.empty()) << m.name;
    if (!m.published_params) {
      EXPECT_FALSE(m.published_rounded.empty()) << m.name;
      // A row without an exact count must say why in its source.
      EXPECT_TRUE(m.source.find("no exact count") != std::string::npos ||
                  m.source.find("no config.json and no exact count") != std::string::npos)
          << m.name;
    }
  }
}

class CatalogModel : public ::testing::TestWithParam<ModelArch> {};

TEST_P(CatalogModel, DerivedCountEqualsThePublishedCount) {
  const ModelArch &m = GetParam();
  std::int64_t derived = derive_params(m);
  if (m.published_params) {
    EXPECT_EQ(derived, *m.published_params);
  } else {
    Rounded r = rounded(m.published_rounded);
    EXPECT_LE(std::abs(static_cast<double>(derived) - r.value), r.half_step)
        << derived << " does not round to " << m.published_rounded;
  }
}

TEST_P(CatalogModel, HyperparametersAreInRange) {
  const ModelArch &m = GetParam();
  switch (m.family) {
  case ModelFamily::decoder:
  case ModelFamily::moe_decoder:
  case ModelFamily::encoder:
  case ModelFamily::encoder_decoder:
    EXPECT_GE(m.hidden, 256);
    EXPECT_LE(m.hidden, 32768);
    EXPECT_GE(m.layers, 2);
    EXPECT_LE(m.layers, 200);
    EXPECT_GE(m.heads, 4);
    EXPECT_LE(m.heads, 256);
    EXPECT_GE(m.kv_heads, 1);
    EXPECT_EQ(m.heads % m.kv_heads, 0);
    EXPECT_TRUE(m.head_dim == 64 || m.head_dim == 80 || m.head_dim == 96 || m.head_dim == 128 ||
                m.head_dim == 256)
        << m.head_dim;
    EXPECT_GE(m.intermediate, m.hidden);
    EXPECT_LE(m.intermediate, 8 * m.hidden);
    if (m.hf_model_type != "vit") {
      EXPECT_GE(m.vocab, 20000);
      EXPECT_LE(m.vocab, 300000);
    }
    if (m.family == ModelFamily::moe_decoder) {
      EXPECT_GE(m.experts, 2);
      EXPECT_LE(m.experts, 256);
      EXPECT_GE(m.experts_per_token, 1);
      EXPECT_LE(m.experts_per_token, m.experts);
    }
    if (m.learned_positions) {
      EXPECT_GE(m.max_positions, 512);
      EXPECT_LE(m.max_positions, 8192);
    }
    EXPECT_GE(m.sliding_window, 0);
    break;
  case ModelFamily::cnn:
    EXPECT_EQ(m.cnn.stage_blocks.size(), 4u);
    for (auto b : m.cnn.stage_blocks) {
      EXPECT_GE(b, 1);
      EXPECT_LE(b, 64);
    }
    for (auto w : m.cnn.stage_widths) {
      EXPECT_GE(w, 16);
      EXPECT_LE(w, 2048);
    }
    EXPECT_EQ(m.cnn.num_classes, 1000);
    break;
  case ModelFamily::unet:
    EXPECT_GE(m.unet.block_out_channels.size(), 2u);
    EXPECT_LE(m.unet.block_out_channels.size(), 6u);
    for (auto c : m.unet.block_out_channels) {
      EXPECT_GE(c, 32);
      EXPECT_LE(c, 4096);
    }
    EXPECT_GE(m.unet.cross_attention_dim, 256);
    EXPECT_LE(m.unet.cross_attention_dim, 4096);
    for (auto t : m.unet.transformer_layers) {
      EXPECT_GE(t, 1);
      EXPECT_LE(t, 20);
    }
    EXPECT_EQ(m.unet.time_embed_dim, 4 * m.unet.block_out_channels[0]);
    break;
  }
  std::int64_t derived = derive_params(m);
  EXPECT_GE(derived, 1'000'000);
  EXPECT_LE(derived, 1'000'000'000'000);
  EXPECT_GE(active_params(m), 1'000'000);
  EXPECT_LE(active_params(m), derived);
}

std::string param_name(const ::testing::TestParamInfo<ModelArch> &info) {
  std::string s = info.param.name;
  std::replace_if(
      s.begin(), s.end(), [](char c) { return !std::isalnum(c); }, '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(Catalog, CatalogModel, ::testing::ValuesIn(catalog()), param_name);

TEST(ModelCatalog, NamesAreUnique) {
  std::set<std::string> names;
  for (const auto &m : catalog())
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
}

TEST(ModelCatalog, KeepsWhatTheEstimatorNeeds) {
  const ModelArch &l = model("llama-3.1-8b");
  EXPECT_EQ(l.family, ModelFamily::decoder);
  EXPECT_EQ(l.heads, 32);
  EXPECT_EQ(l.kv_heads, 8);
  EXPECT_EQ(l.head_dim, 128);
  EXPECT_EQ(l.intermediate, 14336);
  EXPECT_EQ(l.vocab, 128256);
  EXPECT_FALSE(l.tied_embeddings);
  EXPECT_EQ(l.max_positions, 131072);

  const ModelArch &mx = model("mixtral-8x7b");
  EXPECT_EQ(mx.family, ModelFamily::moe_decoder);
  EXPECT_EQ(mx.experts, 8);
  EXPECT_EQ(mx.experts_per_token, 2);
  // Mistral AI's announcement: "12.9B active parameters per token".
  EXPECT_NEAR(static_cast<double>(active_params(mx)), 12.9e9, 0.05e9);

  EXPECT_TRUE(model("qwen2.5-0.5b").tied_embeddings);
  EXPECT_TRUE(model("qwen2.5-0.5b").qkv_bias);
  EXPECT_EQ(model("qwen2.5-0.5b").sliding_window, 0); // use_sliding_window: false
  EXPECT_EQ(model("mistral-7b").sliding_window, 4096);
  EXPECT_TRUE(model("gemma-2-9b").tied_embeddings); // Gemma2Config's default
  EXPECT_EQ(model("gemma-2-9b").norms_per_layer, 4);
  EXPECT_EQ(model("gemma-2-9b").head_dim, 256);
  EXPECT_TRUE(model("phi-3-mini").fused_qkv);
  EXPECT_EQ(model("t5-base").decoder_layers, 12);
  EXPECT_EQ(model("bert-base-uncased").type_vocab, 2);
  EXPECT_TRUE(model("bert-base-uncased").pooler);
  EXPECT_EQ(model("vit-b-16").num_labels, 1000);
  EXPECT_FALSE(model("vit-b-16").pooler);
  EXPECT_EQ(model("resnet-50").cnn.block, "bottleneck");
  EXPECT_EQ(model("sdxl-unet").unet.attention_heads, (std::vector<std::int64_t>{5, 10, 20}));
  EXPECT_EQ(model("sdxl-unet").unet.up_transformer_layers, (std::vector<std::int64_t>{10, 2, 1}));
}

TEST(ModelCatalog, JsonCarriesTheDerivedCount) {
  Json j = to_json(model("mixtral-8x7b"));
  EXPECT_EQ(j.at("params"), 46'702'792'704LL);
  EXPECT_EQ(j.at("active_params"), active_params(model("mixtral-8x7b")));
  EXPECT_EQ(j.at("family"), "moe_decoder");
  EXPECT_EQ(j.at("hyperparameters").at("kv_heads"), 8);
  EXPECT_EQ(j.at("config").at("rope_theta"), 1000000.0);
  Json g = to_json(model("gpt-3-175b"));
  EXPECT_TRUE(g.at("published_params").is_null());
  EXPECT_EQ(g.at("published_rounded"), "175B");
  EXPECT_EQ(to_json(model("resnet-50")).at("hyperparameters").at("block"), "bottleneck");
}

// ---- Derivation beyond the catalog --------------------------------------------------------------

TEST(DeriveParams, FollowsTheLlamaFormulaOfMemoryMd) {
  // The Llama formula's worked example (docs/models.md): per layer 202,383,360; × 32; + 2 × 32000 ×
  // 4096; + 4096.
  ModelArch m = model("llama-2-7b");
  EXPECT_EQ(derive_params(m), 202'383'360LL * 32 + 2LL * 32000 * 4096 + 4096);
  m.tied_embeddings = true;
  EXPECT_EQ(derive_params(m), 202'383'360LL * 32 + 32000LL * 4096 + 4096);
}

TEST(DeriveParams, GptTwoFormula) {
  // P = V·h + n_ctx·h + L·(12h² + 13h) + 2h (memory.md §2.1).
  const ModelArch &m = model("gpt-3-175b");
  std::int64_t h = 12288;
  EXPECT_EQ(derive_params(m), 50257 * h + 2048 * h + 96 * (12 * h * h + 13 * h) + 2 * h);
  EXPECT_EQ(derive_params(m), 174'604'259'328LL); // memory.md §2.2, derived there too
}

TEST(DeriveParams, BertWithoutPoolerAndStarCoderWithMultiQuery) {
  ModelArch bert = model("bert-large-uncased");
  bert.pooler = false;
  EXPECT_EQ(derive_params(bert), 334'092'288); // memory.md §2.2: without pooler
  // bigcode/octocoder: a GPT-2-style decoder with one KV head (memory.md §2.2, 15,517,456,384).
  ModelArch sc = model("gpt2");
  sc.hidden = 6144;
  sc.layers = 40;
  sc.heads = 48;
  sc.kv_heads = 1;
  sc.head_dim = 128;
  sc.intermediate = 24576;
  sc.vocab = 49152;
  sc.max_positions = 8192;
  EXPECT_EQ(derive_params(sc), 15'517'456'384LL);
}

TEST(DeriveParams, TFiveLargeAndThreeB) {
  // memory.md §2.2: t5-large 737,668,096 and t5-3b 2,851,598,336, derived there.
  ModelArch t5 = model("t5-large");
  EXPECT_EQ(derive_params(t5), 737'668'096);
  t5.hidden = 1024;
  t5.heads = 32;
  t5.kv_heads = 32;
  t5.head_dim = 128;
  t5.intermediate = 16384;
  EXPECT_EQ(derive_params(t5), 2'851'598'336LL);
}

// ---- Linear layers (LoRA, QLoRA, tensor parallelism)
// ---------------------------------------------

std::int64_t lora_params(const ModelArch &m, std::int64_t r, std::set<std::string> modules) {
  std::int64_t total = 0;
  for (const auto &l : linear_layers(m))
    if (modules.count(l.module))
      total += l.count * r * (l.in + l.out);
  return total;
}

TEST(LinearLayers, GiveThePeftTrainableCounts) {
  // PEFT print_trainable_parameters for Llama-2-7b, r = 8 on q_proj and v_proj: "trainable params:
  // 4,194,304 || all params: 6,742,609,920" (the all-params figure is 6,738,415,616 + 4,194,304).
  EXPECT_EQ(lora_params(model("llama-2-7b"), 8, {"q_proj", "v_proj"}), 4'194'304);
  // Llama-3.2-3B, r = 32 on q_proj and v_proj → 9,175,040: PEFT's num_trainable_params in
  // https://github.com/huggingface/peft/tree/HEAD/method_comparison/MetaMathQA/results.
  EXPECT_EQ(lora_params(model("llama-3.2-3b"), 32, {"q_proj", "v_proj"}), 9'175'040);
}

TEST(LinearLayers, AreEverythingButEmbeddingsAndNorms) {
  auto linear_total = [](const ModelArch &m) {
    std::int64_t t = 0;
    for (const auto &l : linear_layers(m))
      t += l.params();
    return t;
  };
  const ModelArch &llama = model("llama-2-7b");
  EXPECT_EQ(derive_params(llama) - linear_total(llama), 32000LL * 4096 + (2 * 32 + 1) * 4096);
  const ModelArch &gpt2 = model("gpt2");
  EXPECT_EQ(derive_params(gpt2) - linear_total(gpt2),
            (50257 + 1024) * 768 + (2 * 12 + 1) * 2 * 768);
  const ModelArch &bert = model("bert-base-uncased");
  EXPECT_EQ(derive_params(bert) - linear_total(bert),
            (30522 + 512 + 2) * 768 + 2 * 768 + 12 * 2 * 2 * 768);
  const ModelArch &mx = model("mixtral-8x7b");
  EXPECT_EQ(derive_params(mx) - linear_total(mx), 32000LL * 4096 + (2 * 32 + 1) * 4096);
  const ModelArch &phi = model("phi-3-mini");
  EXPECT_EQ(linear_layers(phi).front().module, "qkv_proj");
  EXPECT_EQ(derive_params(phi) - linear_total(phi), 32064LL * 3072 + (2 * 32 + 1) * 3072);
  const ModelArch &t5 = model("t5-base");
  EXPECT_EQ(derive_params(t5) - linear_total(t5),
            32128LL * 768 + 2 * 32 * 12 + (12 * 2 + 12 * 3 + 2) * 768);
  for (const auto &m : catalog())
    if (m.family == ModelFamily::cnn || m.family == ModelFamily::unet)
      EXPECT_TRUE(linear_layers(m).empty()) << m.name;
    else
      EXPECT_LT(linear_total(m), derive_params(m)) << m.name;
}

// ---- config.json parsing ------------------------------------------------------------------------

TEST(ModelFromConfig, ReadsALlamaConfigJson) {
  ModelArch m = parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size": 128256})");
  EXPECT_EQ(m.hf_model_type, "llama");
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(derive_params(m), 8'030'261'248LL);
  EXPECT_EQ(m.extra.at("torch_dtype"), "bfloat16");
}

TEST(ModelFromConfig, LlamaWithoutKvHeadsIsMultiHead) {
  ModelArch m = parse(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
    "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 32000})");
  EXPECT_EQ(m.kv_heads, 32);
  EXPECT_FALSE(m.tied_embeddings); // LlamaConfig's default
  EXPECT_EQ(derive_params(m), 6'738'415'616LL);
}

TEST(ModelFromConfig, ReadsAGptTwoConfigJson) {
  ModelArch m = parse(R"({
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
    "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768,
    "n_head": 12, "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1,
    "summary_activation": null, "summary_first_dropout": 0.1, "summary_proj_to_labels": true,
    "summary_type": "cls_index", "summary_use_proj": true,
    "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
    "vocab_size": 50257})");
  EXPECT_EQ(m.intermediate, 3072);
  EXPECT_TRUE(m.learned_positions);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_EQ(derive_params(m), 124'439'808);
}

TEST(ModelFromConfig, ReadsABertConfigJson) {
  ModelArch m = parse(R"({
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
    "gradient_checkpointing": false, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
    "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0,
    "position_embedding_type": "absolute", "transformers_version": "4.6.0.dev0",
    "type_vocab_size": 2, "use_cache": true, "vocab_size": 28996})");
  EXPECT_EQ(m.family, ModelFamily::encoder);
  // bert-base-cased as BertForMaskedLM (its architectures): BertModel's 108,310,272 less the
  // pooler, plus the MLM head (dense h×h + h, LayerNorm 2h, the vocabulary bias; the decoder is
  // tied). transformers builds 108,340,804 (perf/model_params.py).
  EXPECT_EQ(derive_params(m),
            108'310'272 - (768 * 768 + 768) + (768 * 768 + 768 + 2 * 768 + 28996));
  EXPECT_EQ(derive_params(m), 108'340'804);
}

TEST(ModelFromConfig, ReadsATFiveConfigJson) {
  ModelArch m = parse(R"({
    "architectures": ["T5ForConditionalGeneration"], "d_ff": 3072, "d_kv": 64, "d_model": 768,
    "decoder_start_token_id": 0, "dropout_rate": 0.1, "eos_token_id": 1,
    "initializer_factor": 1.0, "is_encoder_decoder": true, "layer_norm_epsilon": 1e-06,
    "model_type": "t5", "n_positions": 512, "num_heads": 12, "num_layers": 12,
    "output_past": true, "pad_token_id": 0, "relative_attention_num_buckets": 32,
    "vocab_size": 32128})");
  EXPECT_EQ(m.family, ModelFamily::encoder_decoder);
  EXPECT_EQ(m.decoder_layers, 12);
  EXPECT_FALSE(m.gated_mlp);
  EXPECT_EQ(derive_params(m), 222'903'552);
}

TEST(ModelFromConfig, TFiveVersionOnePointOneIsGatedAndUntied) {
  // google/t5-v1_1-base: gated-gelu, untied head; 247,577,856 = the T5 formula with wi_0 and wi_1
  // and a separate lm_head (derived here from the same formula).
  ModelArch m = parse(R"({"model_type": "t5", "d_ff": 2048, "d_kv": 64, "d_model": 768,
    "num_heads": 12, "num_layers": 12, "vocab_size": 32128, "feed_forward_proj": "gated-gelu",
    "tie_word_embeddings": false})");
  EXPECT_TRUE(m.gated_mlp);
  std::int64_t d = 768, ff = 2048, v = 32128;
  std::int64_t enc = 12 * (4 * d * d + 3 * d * ff + 2 * d) + 32 * 12 + d;
  std::int64_t dec = 12 * (8 * d * d + 3 * d * ff + 3 * d) + 32 * 12 + d;
  EXPECT_EQ(derive_params(m), 2 * v * d + enc + dec);
}

TEST(ModelFromConfig, ReadsAMixtralConfigJson) {
  ModelArch m = parse(R"({
    "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
    "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": false,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
    "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.36.0.dev0", "use_cache": true, "vocab_size": 32000})");
  EXPECT_EQ(m.family, ModelFamily::moe_decoder);
  EXPECT_EQ(m.sliding_window, 0);
  EXPECT_EQ(derive_params(m), 46'702'792'704LL);
}

TEST(ModelFromConfig, ReadsADiffusersUnetConfigJson) {
  ModelArch m = parse(R"({
    "_class_name": "UNet2DConditionModel", "_diffusers_version": "0.6.0", "act_fn": "silu",
    "attention_head_dim": 8, "block_out_channels": [320, 640, 1280, 1280],
    "center_input_sample": false, "cross_attention_dim": 768,
    "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                         "DownBlock2D"],
    "downsample_padding": 1, "flip_sin_to_cos": true, "freq_shift": 0, "in_channels": 4,
    "layers_per_block": 2, "mid_block_scale_factor": 1, "norm_eps": 1e-05, "norm_num_groups": 32,
    "out_channels": 4, "sample_size": 64,
    "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D",
                       "CrossAttnUpBlock2D"]})");
  EXPECT_EQ(m.family, ModelFamily::unet);
  EXPECT_EQ(m.hf_model_type, "unet");
  EXPECT_EQ(derive_params(m), 859'520'964);
  // Stable Diffusion 2.x: the same UNet with a 1024-wide text encoder, linear projections and
  // head counts [5, 10, 20, 20] (the catalog's sd-2.1-unet, published 865,910,724).
  Json cfg = m.extra;
  cfg["cross_attention_dim"] = 1024;
  cfg["use_linear_projection"] = true;
  cfg["attention_head_dim"] = {5, 10, 20, 20};
  auto sd2 = model_from_config(cfg, "sd2");
  ASSERT_TRUE(sd2.ok()) << sd2.error().message;
  EXPECT_EQ(derive_params(*sd2), derive_params(model("sd-2.1-unet")));
}

TEST(ModelFromConfig, ReadsTransformersResNetAndViTConfigs) {
  // microsoft/resnet-50 (transformers ResNetConfig): the same network as torchvision's resnet50.
  ModelArch r = parse(R"({"model_type": "resnet", "architectures": ["ResNetForImageClassification"],
    "depths": [3, 4, 6, 3], "downsample_in_first_stage": false, "embedding_size": 64,
    "hidden_act": "relu", "hidden_sizes": [256, 512, 1024, 2048], "layer_type": "bottleneck",
    "num_channels": 3, "num_labels": 1000})");
  EXPECT_EQ(derive_params(r), 25'557'032);
  // torchvision's class names for the block, default widths and 1000 classes.
  EXPECT_EQ(derive_params(parse(R"({"model_type": "resnet", "block": "Bottleneck",
    "layers": [3, 4, 6, 3]})")),
            25'557'032);
  EXPECT_EQ(derive_params(parse(R"({"model_type": "resnet", "block": "BasicBlock",
    "layers": [2, 2, 2, 2]})")),
            11'689'512);
  EXPECT_NE(error_of(R"({"model_type": "resnet", "block": "Wide", "layers": [2, 2, 2, 2]})")
                .find("'block' = \"Wide\" must be BasicBlock or Bottleneck"),
            std::string::npos);
  ModelArch v = parse(R"({"model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "image_size": 224, "patch_size": 16,
    "id2label": {"0": "a", "1": "b"}})");
  EXPECT_EQ(v.num_labels, 2);
  // ViTModel (no labels): pooler instead of the classifier.
  ModelArch base = parse(R"({"model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "image_size": 224, "patch_size": 16})");
  EXPECT_TRUE(base.pooler);
  EXPECT_EQ(derive_params(base), 86'567'656 - (768 * 1000 + 1000) + (768 * 768 + 768));
}

// ---- Errors -------------------------------------------------------------------------------------

TEST(ModelFromConfig, MissingFieldIsNamed) {
  std::string e = error_of(R"({"model_type": "llama", "hidden_size": 4096,
    "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 32000})");
  EXPECT_NE(e.find("config.json"), std::string::npos) << e;
  EXPECT_NE(e.find("'intermediate_size'"), std::string::npos) << e;
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
}

TEST(ModelFromConfig, WrongTypeIsNamed) {
  std::string e = error_of(R"({"model_type": "gpt2", "n_embd": "768", "n_layer": 12,
    "n_head": 12, "n_positions": 1024, "vocab_size": 50257})");
  EXPECT_NE(e.find("'n_embd'"), std::string::npos) << e;
  EXPECT_NE(e.find("integer"), std::string::npos) << e;
  EXPECT_NE(e.find("\"768\""), std::string::npos) << e;
  e = error_of(R"({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 0,
    "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
    "max_position_embeddings": 512, "type_vocab_size": 2})");
  EXPECT_NE(e.find("'num_hidden_layers' must be at least 1"), std::string::npos) << e;
  e = error_of(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
    "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 32000,
    "tie_word_embeddings": "no"})");
  EXPECT_NE(e.find("'tie_word_embeddings' must be true or false"), std::string::npos) << e;
}

// quantization_config as transformers' quantizers (and AutoAWQ, compressed-tensors) save it.
TEST(ModelFromConfig, ReadsHowAQuantisedCheckpointStoresItsWeights) {
  auto with = [](const std::string &quant) {
    return R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
      "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 32000,
      "quantization_config": )" +
           quant + "}";
  };
  EXPECT_FALSE(parse(with("null")).stored_quant);
  auto q = *parse(with(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
    "zero_point": true, "version": "gemm"})"))
                .stored_quant;
  EXPECT_EQ(describe(q), "AWQ 4-bit, groups of 128");
  q = *parse(with(R"({"quant_method": "awq", "w_bit": 4, "q_group_size": 64,
    "version": "GEMM"})"))
           .stored_quant;
  EXPECT_EQ(q.bits, 4);
  EXPECT_EQ(q.group_size, 64);
  q = *parse(with(R"({"quant_method": "gptq", "bits": 8, "group_size": -1})")).stored_quant;
  EXPECT_EQ(describe(q), "GPTQ 8-bit");
  q = *parse(with(R"({"load_in_8bit": true, "llm_int8_threshold": 6.0})")).stored_quant;
  EXPECT_EQ(describe(q), "bitsandbytes 8-bit");
  q = *parse(with(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
    "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true})"))
           .stored_quant;
  EXPECT_EQ(describe(q), "bitsandbytes 4-bit (double quantisation)");
  q = *parse(with(R"({"quant_method": "fp8", "activation_scheme": "dynamic",
    "weight_block_size": [128, 128]})"))
           .stored_quant;
  EXPECT_EQ(describe(q), "FP8");
  EXPECT_EQ(q.bits, 8);
  q = *parse(with(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4,
    "type": "int", "symmetric": true, "strategy": "group", "group_size": 128}}},
    "ignore": ["lm_head"]})"))
           .stored_quant;
  EXPECT_EQ(describe(q), "compressed-tensors 4-bit, groups of 128");
  q = *parse(with(R"({"quant_method": "hqq", "nbits": 4})")).stored_quant;
  EXPECT_EQ(q.bits, 0); // kept, size unknown: fit then needs the checkpoint's header
  EXPECT_EQ(describe(q), "hqq");

  EXPECT_NE(error_of(with(R"("4bit")"))
                .find("'quantization_config' must be an object, got the "
                      "string"),
            std::string::npos)
      << error_of(with(R"("4bit")"));
  for (const auto &[quant, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"quant_method": "gptq", "group_size": 128})",
            "'quantization_config.bits' is missing"},
           {R"({"quant_method": "awq", "bits": 4, "group_size": 0})",
            "'quantization_config.group_size' must be -1 or a group size"},
           {R"({"quant_method": 4})", "'quantization_config.quant_method' must be a string"},
           {R"({"load_in_4bit": true, "load_in_8bit": true})",
            "'quantization_config.load_in_4bit' or 'load_in_8bit' must be true (and not both)"},
           {R"({"bits": 4})", "'quantization_config.quant_method' is missing"},
           {R"({"quant_method": "compressed-tensors", "config_groups": {
              "a": {"weights": {"num_bits": 4}}, "b": {"weights": {"num_bits": 8}}}})",
            "'quantization_config.config_groups.b.weights.num_bits' = 8 differs"}}) {
    EXPECT_NE(error_of(with(quant)).find(says), std::string::npos)
        << quant << ": " << error_of(with(quant));
  }
}

TEST(ModelFromConfig, InconsistentShapesAreNamed) {
  std::string e = error_of(R"({"model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 5, "vocab_size": 32000})");
  EXPECT_NE(e.find("'num_key_value_heads' = 5 must divide num_attention_heads = 32"),
            std::string::npos)
      << e;
  e = error_of(R"({"model_type": "gpt2", "n_embd": 770, "n_layer": 12, "n_head": 12,
    "n_positions": 1024, "vocab_size": 50257})");
  EXPECT_NE(e.find("'n_head'"), std::string::npos) << e;
  e = error_of(R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "vocab_size": 32000, "num_local_experts": 2, "num_experts_per_tok": 4})");
  EXPECT_NE(e.find("'num_experts_per_tok' = 4 exceeds"), std::string::npos) << e;
}

TEST(ModelFromConfig, AbsurdSizesAreRejectedBeforeTheyOverflow) {
  std::string e = error_of(R"({"model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 9223372036854775807,
    "num_experts_per_tok": 2})");
  EXPECT_NE(e.find("'num_local_experts' must be at most 1024"), std::string::npos) << e;
  e = error_of(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
    "n_positions": 1024, "vocab_size": 18446744073709551615})");
  EXPECT_NE(e.find("'vocab_size' must be at most"), std::string::npos) << e;
  e = error_of(R"({"model_type": "resnet", "block": "BasicBlock",
    "layers": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1], "widths": [64]})");
  EXPECT_NE(e.find("'layers' has 17 entries"), std::string::npos) << e;
  // The largest config the limits allow still derives a count without overflow.
  ModelArch big = parse(R"({"model_type": "mixtral", "hidden_size": 1048576,
    "intermediate_size": 1048576, "num_attention_heads": 1024, "num_hidden_layers": 1024,
    "num_key_value_heads": 1024, "vocab_size": 16777216, "num_local_experts": 1024,
    "num_experts_per_tok": 1024})");
  EXPECT_GT(derive_params(big), 0);
}

TEST(ModelFromConfig, UnknownModelsAndBadJsonAreNamed) {
  EXPECT_NE(error_of(R"({"model_type": "mamba"})").find("'model_type' = \"mamba\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 4096})").find("'model_type' is missing"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"_class_name": "AutoencoderKL"})").find("AutoencoderKL"),
            std::string::npos);
  EXPECT_NE(error_of(R"([1, 2])").find("JSON object"), std::string::npos);
  std::string e = error_of(R"({"model_type": "llama", )");
  EXPECT_NE(e.find("config.json: not valid JSON at byte"), std::string::npos) << e;
}

TEST(ModelFromConfig, UnetOptionsItCannotCountAreRejected) {
  Json cfg = model("sdxl-unet").extra;
  cfg["class_embed_type"] = "projection";
  auto r = model_from_config(cfg, "unet");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'class_embed_type'"), std::string::npos) << r.error().message;
  cfg = model("sdxl-unet").extra;
  cfg["down_block_types"] = {"DownBlock2D", "SimpleCrossAttnDownBlock2D", "DownBlock2D"};
  r = model_from_config(cfg, "unet");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("SimpleCrossAttnDownBlock2D"), std::string::npos);
  cfg = model("sdxl-unet").extra;
  cfg["transformer_layers_per_block"] = {1, 2};
  r = model_from_config(cfg, "unet");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("one per block (3)"), std::string::npos) << r.error().message;
}

// ---- The catalog loader's errors ----------------------------------------------------------------

std::string catalog_error(const std::string &text) {
  try {
    parse_model_catalog(text, "models.json");
  } catch (const Failure &f) {
    EXPECT_EQ(f.code(), ExitCode::internal);
    return f.what();
  }
  return "(no error)";
}

const char *good_row = R"({"name": "tiny", "display_name": "Tiny", "family": "decoder",
  "model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128,
  "vocab_size": 1000, "published_params": 1, "source": "config: test"})";

TEST(ModelCatalogLoader, ParsesAGoodRow) {
  auto models = parse_model_catalog(std::string(R"({"models": [)") + good_row + "]}", "m.json");
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "tiny");
  EXPECT_EQ(models[0].published_params, 1);
  EXPECT_FALSE(models[0].extra.contains("published_params")); // catalog keys are not config
}

TEST(ModelCatalogLoader, ABadRowNamesTheModelAndTheField) {
  auto with = [](const std::string &from, const std::string &to) {
    std::string row = good_row;
    row.replace(row.find(from), from.size(), to);
    return std::string(R"({"models": [)") + row + "]}";
  };
  std::string e = catalog_error(with(R"("n_layer": 2,)", ""));
  EXPECT_NE(e.find("models.json: model tiny: config field 'n_layer' is missing"), std::string::npos)
      << e;
  e = catalog_error(with(R"("family": "decoder")", R"("family": "encoder")"));
  EXPECT_NE(e.find("'tiny': field 'family'"), std::string::npos) << e;
  e = catalog_error(with(R"("published_params": 1)", R"("published_params": null)"));
  EXPECT_NE(e.find("'published_rounded'"), std::string::npos) << e;
  e = catalog_error(with(R"("published_params": 1)", R"("published_params": "1")"));
  EXPECT_NE(e.find("'published_params' must be a positive integer or null"), std::string::npos)
      << e;
  e = catalog_error(with(R"("source": "config: test")", R"("source": "")"));
  EXPECT_NE(e.find("'source'"), std::string::npos) << e;
  e = catalog_error(with(R"("name": "tiny")", R"("name": "Tiny Model")"));
  EXPECT_NE(e.find("field 'name'"), std::string::npos) << e;
  e = catalog_error(std::string(R"({"models": [)") + good_row + "," + good_row + "]}");
  EXPECT_NE(e.find("repeats"), std::string::npos) << e;
  EXPECT_NE(catalog_error("{").find("models.json: not valid JSON"), std::string::npos);
  EXPECT_NE(catalog_error("[]").find("\"models\" list"), std::string::npos);
}

// A config whose architectures list holds something other than class names says what it holds.
TEST(ModelConfigErrors, ArchitecturesOfNumbersAreNamedAsSuch) {
  auto cfg = Json::parse(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
    "architectures": [5]})");
  auto r = model_from_config(cfg, "tiny");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "tiny: config field 'architectures' must be a list of class names, "
                               "got a list whose first item is 5");
  cfg["architectures"] = "LlamaForCausalLM";
  r = model_from_config(cfg, "tiny");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("got the string \"LlamaForCausalLM\""), std::string::npos)
      << r.error().message;
}

} // namespace
} // namespace dlrig::model

// What bitsandbytes quantises (--quant, --qlora): nn.Linear weights but the head, and from
// transformers 5.0.0 not the routed experts and routers most MoE types build as parameters
// (data/model_types.json "moe_linears"; perf/quant_params.py compares the count with transformers'
// own replacement, and --load with a real 4-bit load on the CPU); and what PEFT adapts on them.
#include "dlrig/core/embedded.hpp"
#include "dlrig/core/json.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/ops.hpp"
#include "unit/fit/models.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlrig::fit {
namespace {

// Mixtral 8x7B's config.json shape.
constexpr const char *kMixtral = R"({"model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2,
    "vocab_size": 32000})";
constexpr std::int64_t kAttention = 32LL * (4096 * 4096 * 2 + 4096 * 1024 * 2);
constexpr std::int64_t kExperts = 32LL * 8 * 3 * 4096 * 14336;
constexpr std::int64_t kRouters = 32LL * 8 * 4096;

TEST(MoeLinears, ReleasesFromTheTable) {
  auto both = [](model::MoeLinears m) { return std::pair{m.experts, m.router}; };
  using P = std::pair<bool, bool>;
  EXPECT_EQ(both(model::moe_linears("mixtral", "4.57.1")), P(true, true));
  EXPECT_EQ(both(model::moe_linears("mixtral", "5.0.0")), P(false, false));
  EXPECT_EQ(both(model::moe_linears("mixtral", "")), P(false, false)); // the newest
  EXPECT_EQ(both(model::moe_linears("deepseek_v3", "4.57.1")), P(true, false));
  // DeepSeek-V2's router: a parameter, an nn.Linear gate from 5.0.0, a parameter again in 5.13.0.
  EXPECT_EQ(both(model::moe_linears("deepseek_v2", "4.57.1")), P(true, false));
  EXPECT_EQ(both(model::moe_linears("deepseek_v2", "5.12.0")), P(false, true));
  EXPECT_EQ(both(model::moe_linears("deepseek_v2", "5.13.0")), P(false, false));
  EXPECT_EQ(both(model::moe_linears("granitemoe", "5.12.0")), P(false, true));
  EXPECT_EQ(both(model::moe_linears("gpt_oss", "4.55.0")), P(false, false));
  EXPECT_EQ(both(model::moe_linears("llama", "")), P(true, true)); // not listed
}

// Every table type whose default config builds an MoE says how its experts and router are built.
TEST(MoeLinears, EveryMoeTypeIsListed) {
  const Json table = Json::parse(*embedded_file("model_types.json"));
  const Json &listed = table.at("moe_linears").at("types");
  int moe = 0;
  for (const auto &type : model::known_model_types()) {
    // A small shape for the built-in readers (which need one); table types read their defaults.
    auto arch = model::model_from_config(Json{{"model_type", type},
                                              {"num_local_experts", 8},
                                              {"num_experts_per_tok", 2},
                                              {"hidden_size", 64},
                                              {"intermediate_size", 64},
                                              {"num_hidden_layers", 2},
                                              {"num_attention_heads", 4},
                                              {"num_key_value_heads", 2},
                                              {"vocab_size", 128}},
                                         type);
    if (arch && arch->family == model::ModelFamily::moe_decoder) {
      ++moe;
      EXPECT_TRUE(listed.contains(type)) << type;
    }
  }
  EXPECT_GE(moe, 8);
  for (const auto &[type, v] : listed.items())
    for (const char *part : {"experts", "router"})
      for (const auto &range : v.at(part)) {
        ASSERT_EQ(range.size(), 2u) << type;
        for (const auto &end : range)
          EXPECT_TRUE(end.is_null() || end.is_string()) << type;
      }
}

TEST(BnbLinears, MixtralExpertsStay16BitFromTransformers5) {
  auto arch = model::model_from_config_text(kMixtral, "config.json");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  for (const char *v : {"", "5.0.0", "5.25.0"}) {
    auto b = bnb_linears(*arch, v);
    EXPECT_EQ(b.params, kAttention) << v;
    EXPECT_EQ(b.moe_kept, kExperts + kRouters) << v;
  }
  auto old = bnb_linears(*arch, "4.57.1");
  EXPECT_EQ(old.params, kAttention + kExperts + kRouters);
  EXPECT_EQ(old.moe_kept, 0);
}

// bitsandbytes' Linear4bit/Linear8bitLt keep the bias 16-bit; the output head is not converted.
TEST(BnbLinears, WeightsOnlyNotBiasesNorHead) {
  auto arch = model::model_from_config_text(
      R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "vocab_size": 128, "tie_word_embeddings": false})",
      "config.json");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  const std::int64_t per_layer = 64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 128;
  EXPECT_EQ(bnb_linears(*arch, "").params, 2 * per_layer);
  EXPECT_GT(model::derive_params(*arch), 2 * per_layer + 2 * 128 * 64); // biases, norms, embeddings
}

model::ModelArch arch_of(const std::string &text) {
  auto arch = model::model_from_config_text(text, "config.json");
  EXPECT_TRUE(arch.ok()) << arch.error().message;
  return arch ? *arch : model::ModelArch{};
}

// From 5.5.0 replace_with_bnb_linear converts modules whose type is exactly nn.Linear: Falcon's
// FalconLinear subclasses are all left 16-bit (perf/quant_params.py: 0 of falcon-7b's weights).
TEST(BnbLinears, FalconLinearsAreSubclassesLeftAloneFrom55) {
  auto falcon = arch_of(R"({"model_type": "falcon", "hidden_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 2, "vocab_size": 128})");
  EXPECT_EQ(bnb_linears(falcon, "").params, 0);
  EXPECT_EQ(bnb_linears(falcon, "5.5.0").params, 0);
  EXPECT_GT(bnb_linears(falcon, "5.4.0").params, 0);
}

// T5's _keep_in_fp32_modules = ["wo"]: the quantizer does not convert it, in any release.
TEST(BnbLinears, T5KeepsWo) {
  auto t5 = arch_of(R"({"model_type": "t5", "d_model": 64, "d_ff": 128, "d_kv": 16,
      "num_heads": 4, "num_layers": 2, "vocab_size": 128})");
  const std::int64_t attention = 4 * 64 * 64, wi = 64 * 128;
  for (const char *v : {"", "4.57.1"})
    EXPECT_EQ(bnb_linears(t5, v).params, 2 * (attention + wi) + 2 * (2 * attention + wi)) << v;
}

// The model's last parameter names the module kept besides the output head; from 5.0.0 only
// ".weight" is stripped from it, so BERT's biased classifier is converted (4.57 kept it).
TEST(BnbLinears, BiasedClassifierIsConvertedFrom5) {
  auto bert = arch_of(R"({"model_type": "bert", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
      "max_position_embeddings": 64, "type_vocab_size": 2,
      "architectures": ["BertForSequenceClassification"], "num_labels": 3})");
  EXPECT_EQ(bnb_linears(bert, "").params - bnb_linears(bert, "4.57.1").params, 64 * 3);
  auto llama = arch_of(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
      "architectures": ["LlamaForSequenceClassification"], "num_labels": 3})");
  EXPECT_EQ(bnb_linears(llama, "").params, bnb_linears(llama, "4.57.1").params); // score: no bias
}

// Heads' nn.Linear layers: the masked-LM transform and a classification head's dense layer are in
// the layer list (and converted); projections outside it are counted for bitsandbytes only.
TEST(BnbLinears, HeadsAndProjectionsOutsideTheBlocks) {
  const std::string bert = R"({"model_type": "bert", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 128, "max_position_embeddings": 64, "type_vocab_size": 2)";
  auto mlm = arch_of(bert + R"(, "architectures": ["BertForMaskedLM"]})");
  auto base = arch_of(bert + R"(, "architectures": ["BertModel"]})");
  // BertModel's pooler is its last module, biased: converted from 5.0.0.
  EXPECT_EQ(bnb_linears(mlm, "").params, bnb_linears(base, "").params);
  EXPECT_EQ(bnb_linears(base, "").params - bnb_linears(base, "4.57.1").params, 64 * 64);
  const auto linears = model::linear_layers(mlm);
  ASSERT_FALSE(linears.empty());
  EXPECT_EQ(linears.back().role, "mlm_dense");
  // OPT with word_embed_proj_dim: project_in and project_out.
  auto opt = arch_of(R"({"model_type": "opt", "hidden_size": 64, "ffn_dim": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
      "max_position_embeddings": 64, "word_embed_proj_dim": 32})");
  auto opt_same = opt;
  opt_same.embed_dim = 0;
  EXPECT_EQ(bnb_linears(opt, "").params - bnb_linears(opt_same, "").params, 2 * 32 * 64);
  // SigLIP's pooling head: fc1 and fc2, and its attention's out_proj (an nn.Linear subclass)
  // until 5.5.0 converted only exact nn.Linear types.
  auto siglip = arch_of(R"({"model_type": "siglip_vision_model", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "image_size": 32, "patch_size": 16})");
  ASSERT_TRUE(siglip.map_head);
  EXPECT_EQ(bnb_linears(siglip, "5.4.0").params - bnb_linears(siglip, "5.5.0").params, 64 * 64);
  EXPECT_EQ(bnb_linears(siglip, "5.5.0").params, 2 * (4 * 64 * 64 + 2 * 64 * 128) + 2 * 64 * 128);
}

// BART and Whisper size the decoder's feed-forward apart (decoder_ffn_dim).
TEST(LinearLayers, EncoderDecoderFeedForwardsPerStack) {
  auto bart = arch_of(R"({"model_type": "bart", "d_model": 64, "encoder_ffn_dim": 128,
      "decoder_ffn_dim": 32, "encoder_layers": 2, "decoder_layers": 3,
      "encoder_attention_heads": 4, "decoder_attention_heads": 4, "vocab_size": 128})");
  std::int64_t down = 0;
  for (const auto &l : model::linear_layers(bart))
    if (l.role == "down")
      down += l.count * l.in * l.out;
  EXPECT_EQ(down, 2 * 128 * 64 + 3 * 32 * 64);
}

TEST(QuantServing, MixtralInt4OnTransformers5HoldsItsExpertsAt16Bits) {
  auto [model, run] = test::served(kMixtral, 2048, 0);
  run.quant = Quant::int4;
  const double P = static_cast<double>(model.params);
  auto e = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_NEAR(static_cast<double>(e.weights), kAttention * 4.5 / 8 + (P - kAttention) * 2, 1);
  EXPECT_TRUE(test::says(e, "transformers (version not known, --transformers VERSION; taken as "
                            "the newest) builds config.json's routed experts and routers as "
                            "parameters, so their 45,098,205,184 weights stay 16-bit"));
  run.transformers_version = "4.57.1";
  auto old = estimate_memory(model, run, test::gpu_80gb());
  const double q = kAttention + kExperts + kRouters;
  EXPECT_NEAR(static_cast<double>(old.weights), q * 4.5 / 8 + (P - q) * 2, 1);
  EXPECT_FALSE(test::says(old, "bitsandbytes replaces nn.Linear modules only"));
}

TEST(QuantServing, QloraBaseOfMixtralKeepsItsExperts16Bit) {
  auto [model, run] = test::served(kMixtral, 512, 0);
  run.mode = Mode::train;
  run.max_tokens = 0;
  run.qlora = true;
  run.lora_rank = 8;
  auto e = estimate_memory(model, run, test::gpu_80gb());
  run.transformers_version = "4.57.1";
  auto old = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_NEAR(static_cast<double>(e.weights) - static_cast<double>(old.weights),
              (kExperts + kRouters) * (2 - 4.127 / 8), 1e3);
}

// PEFT's all-linear LoRA (0.21.2, measured on transformers 5.25.0 by perf/lora_params.py):
// Mixtral's fused experts and router are still adapted, as target_parameters (the router at r,
// gate_up_proj at 2r, down_proj at r): 179,832,832 at r 8; transformers 4.57's nn.Linear experts
// take r on each of w1, w3, w2 and the gate. Qwen2-MoE's fused experts and router get none.
TEST(QuantServing, LoraAllLinearOnFusedExpertsFollowsPeft) {
  auto [model, run] = test::served(kMixtral, 512, 0);
  run.mode = Mode::train;
  run.max_tokens = 0;
  run.lora_rank = 8;
  run.lora_targets = LoraTargets::all_linear;
  EXPECT_DOUBLE_EQ(adapter_params(model, run), 179832832);
  run.transformers_version = "4.57.1";
  const double attention = 32.0 * 8 * (2 * (4096 + 4096) + 2 * (4096 + 1024));
  EXPECT_DOUBLE_EQ(adapter_params(model, run),
                   attention + 32.0 * 8 * (4096 + 8) + 32.0 * 8 * 8 * 3 * (4096 + 14336));
  auto [qwen, qrun] = test::served(R"({"model_type": "qwen2_moe"})", 512, 0);
  qrun.mode = Mode::train;
  qrun.max_tokens = 0;
  qrun.lora_rank = 8;
  qrun.lora_targets = LoraTargets::all_linear;
  const double with_experts = [&] {
    fit::Run r = qrun;
    r.transformers_version = "4.57.1";
    return adapter_params(qwen, r);
  }();
  // 24 layers x 60 experts x 3 linears x r (2048 + 1408), and the router r (2048 + 60).
  EXPECT_DOUBLE_EQ(with_experts - adapter_params(qwen, qrun),
                   24.0 * 8 * (60 * 3 * (2048 + 1408) + (2048 + 60)));
}

// The adapters of PEFT's all-linear LoRA at rank 8 (no task type), as a served model trains them.
double all_linear_adapters(const char *config) {
  auto [model, run] = test::served(config, 512, 0);
  run.mode = Mode::train;
  run.max_tokens = 0;
  run.lora_rank = 8;
  run.lora_targets = LoraTargets::all_linear;
  return adapter_params(model, run);
}

// GLM-4.5's and MiniMax-M2's MoE layers on transformers 5 (perf/quant_params.py and
// perf/lora_params.py on 5.25.0 and PEFT 0.21.2, meta device): bitsandbytes converts attention,
// GLM's shared experts and dense layer; PEFT's all-linear adapts attention, the fused experts and
// the router (target_parameters).
TEST(QuantServing, FusedExpertTypesFollowTransformersAndPeft) {
  EXPECT_EQ(bnb_linears(arch_of(R"({"model_type": "glm4_moe"})"), "5.25.0").params, 2559049728);
  EXPECT_EQ(bnb_linears(arch_of(R"({"model_type": "minimax_m2"})"), "5.25.0").params, 2730491904);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "glm4_moe"})"), 901399040);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "minimax_m2"})"), 2160242688);
  // ERNIE 4.5's too, with its shared experts and dense first layer converted and not adapted.
  EXPECT_EQ(bnb_linears(arch_of(R"({"model_type": "ernie4_5_moe"})"), "5.25.0").params, 1171783680);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "ernie4_5_moe"})"), 216573440);
  // GLM-4.7-Flash's too, beside DeepSeek's latent-attention projections.
  EXPECT_EQ(bnb_linears(arch_of(R"({"model_type": "glm4_moe_lite"})"), "5.25.0").params,
            1519648768);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "glm4_moe_lite"})"), 336876032);
}

// Hunyuan's MoE: routed experts fused from 5.0.0 (kept 16-bit, adapted as target_parameters), the
// router gate.wg an nn.Linear in every release (converted and adapted), the shared MLP converted
// and not adapted (perf/quant_params.py and perf/lora_params.py on 5.25.0).
TEST(QuantServing, HunyuanMoeFollowsTransformersAndPeft) {
  const char *a13b_shape = R"({"model_type": "hunyuan_v1_moe", "head_dim": 128, "num_experts": 64,
      "moe_topk": 8, "num_key_value_heads": 8, "intermediate_size": 3072})";
  EXPECT_EQ(bnb_linears(arch_of(a13b_shape), "5.25.0").params, 2558525440);
  EXPECT_EQ(
      bnb_linears(arch_of(R"({"model_type": "hunyuan_v1_moe", "head_dim": 128})"), "5.25.0").params,
      6476136448);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "hunyuan_v1_moe", "head_dim": 128})"),
                   26673408);
}

// dots.llm1: routed experts fused from 5.0.0 and a parameter router (kept 16-bit; PEFT's
// all-linear adapts both as target_parameters), the shared experts and the dense first layer
// converted (perf/quant_params.py and perf/lora_params.py on 5.25.0).
TEST(QuantServing, DotsLlm1FollowsTransformersAndPeft) {
  const char *dots = R"({"model_type": "dots1", "hidden_size": 4096, "n_routed_experts": 128,
      "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1})";
  EXPECT_EQ(bnb_linears(arch_of(dots), "5.25.0").params, 6406012928);
  EXPECT_DOUBLE_EQ(all_linear_adapters(dots), 1225618432);
}

// The model's last parameter stays 16-bit (transformers' get_keys_to_not_convert, every release):
// a tied OLMo 1 has no final-norm weight, so its last layer's down_proj is that parameter.
TEST(BnbLinears, TiedOlmoKeepsItsLastDownProjection) {
  const char *olmo_1b = R"({"model_type": "olmo", "hidden_size": 2048, "intermediate_size": 8192,
      "num_hidden_layers": 16, "num_attention_heads": 16, "tie_word_embeddings": true})";
  const std::int64_t per_layer = 4LL * 2048 * 2048 + 3LL * 2048 * 8192;
  for (const char *v : {"4.57.1", "5.25.0"})
    EXPECT_EQ(bnb_linears(arch_of(olmo_1b), v).params, 16 * per_layer - 2048LL * 8192) << v;
  // Untied, the head is the last parameter: every layer's linears are converted.
  EXPECT_EQ(bnb_linears(arch_of(R"({"model_type": "olmo"})"), "5.25.0").params, 6476005376);
  // OPT without norm weights ends on fc2's bias: from 5.0.0 that names no module (".bias" is not
  // removed), so fc2 is converted everywhere; 4.57.1 removed ".bias" and kept the last fc2.
  auto opt = arch_of(R"({"model_type": "opt", "layer_norm_elementwise_affine": false})");
  EXPECT_EQ(bnb_linears(opt, "5.25.0").params, 84934656);
  EXPECT_EQ(bnb_linears(opt, "4.57.1").params, 84934656 - 768LL * 3072);
}

// Phi-3.5-MoE's router is a subclass of nn.Linear from transformers 5.0.0 (PhimoeTopKRouter):
// PEFT's all-linear adapts it (32 layers x r (4096 + 16) beside attention), bitsandbytes converted
// it while it took any nn.Linear instance and keeps it from 5.5.0 (perf/quant_params.py and
// perf/lora_params.py on 5.25.0).
TEST(QuantServing, RoutersThatSubclassLinearFollowTransformersAndPeft) {
  const auto phimoe = arch_of(R"({"model_type": "phimoe"})");
  const std::int64_t router = 32LL * 16 * 4096;
  EXPECT_EQ(bnb_linears(phimoe, "5.25.0").params, 1342177280);
  EXPECT_EQ(bnb_linears(phimoe, "5.4.0").params, 1342177280 + router);
  EXPECT_EQ(bnb_linears(phimoe, "4.57.1").params,
            1342177280 + router + 32LL * 16 * 3 * 4096 * 6400); // its w1, w3, w2 experts
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "phimoe"})"), 7868416);
  // Llama 4's Llama4Router (from 4.54.0) too; its vision tower's patch embedding is an nn.Linear,
  // which PEFT and bitsandbytes take, as they take the vision adapter and projector linears.
  const auto llama4 = arch_of(R"({"model_type": "llama4"})");
  EXPECT_EQ(bnb_linears(llama4, "5.25.0").params, 9513657344);
  EXPECT_EQ(bnb_linears(llama4, "5.4.0").params, 9513657344 + 48LL * 16 * 5120);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "llama4"})"), 35299936);
}

// PEFT's all-linear (PEFT 0.21.2, meta device, perf/lora_params.py) on an image-text model: the
// vision tower's linears, SigLIP's pooling head and the projector's linears too.
TEST(QuantServing, LoraAllLinearOutsideTheBlocksFollowsPeft) {
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "mistral3"})"), 50896896);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "gemma3"})"), 11784192);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "qwen2_5_vl"})"), 116524032);
  // LLaVA: CLIP's q/k/v/out_proj and fc1/fc2, the projector's linear_1 and linear_2.
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "llava"})"), 23633920);
  EXPECT_EQ(bnb_linears(arch_of(R"({"model_type": "llava"})"), "5.25.0").params, 6798966784);
  // Linears outside the blocks: CLIP's visual and text projections, OPT's project_in and
  // project_out, DeBERTa's embed_proj and unshared position projections.
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "clip"})"), 2230272);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "opt", "word_embed_proj_dim": 256})"),
                   1343488);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "deberta-v2", "embedding_size": 512})"),
                   5324800);
  EXPECT_DOUBLE_EQ(all_linear_adapters(R"({"model_type": "deberta-v2", "relative_attention": true,
      "share_att_key": false, "pos_att_type": ["c2p", "p2c"]})"),
                   6488064);
}

// Decoding reads each weight once: the experts at 2 bytes when they stay 16-bit, 0.5 when
// bitsandbytes packs them; the output head is 16-bit under every quantiser.
TEST(QuantServing, DecodeReadsTheWeightsAsStored) {
  auto [model, run] = test::served(kMixtral, 128, 16);
  run.quant = Quant::int4;
  auto bytes = [&](const std::string &version, const std::string &name) {
    fit::Run r = run;
    r.transformers_version = version;
    double sum = 0;
    for (const auto &op : decode_ops(model, r, 128))
      if (op.name.find(name) != std::string::npos)
        sum += op.bytes;
    return sum;
  };
  const double experts_new = bytes("5.25.0", "linear w1");
  const double experts_old = bytes("4.57.1", "linear w1");
  ASSERT_GT(experts_old, 0);
  EXPECT_NEAR(experts_new / experts_old, 4, 0.05);
  EXPECT_NEAR(bytes("5.25.0", "linear q_proj") / bytes("4.57.1", "linear q_proj"), 1, 1e-9);
  EXPECT_NEAR(bytes("", "lm_head"), 32000.0 * 4096 * 2, 32000.0 * 4096 * 0.01);
}

// PEFT's default targets for Phi are q_proj, v_proj, fc1 and fc2 (phi-2 at r 8: 9,175,040, as
// PEFT 0.21.2 counts): the default qv takes them, and says so.
TEST(ResolveRun, LoraDefaultIsPeftsPerType) {
  auto phi = test::make(arch_of(R"({"model_type": "phi", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 128})"),
                        0);
  phi.params = model::derive_params(phi.arch);
  fit::Run run;
  run.seq = 64;
  run.lora_rank = 8;
  std::vector<std::string> said;
  auto r = resolve_run(phi, run, &said);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->lora_targets, LoraTargets::custom);
  EXPECT_EQ(r->lora_modules, (std::vector<std::string>{"q", "v", "up", "down"}));
  EXPECT_NE(said.back().find("PEFT's default for phi"), std::string::npos) << said.back();
  EXPECT_DOUBLE_EQ(adapter_params(phi, *r), 2.0 * 8 * (2 * (64 + 64) + (64 + 128) + (128 + 64)));
  auto llama = test::llama(2, 64, 4, 4, 128);
  llama.arch.hf_model_type = "llama";
  EXPECT_EQ(resolve_run(llama, run, nullptr)->lora_targets, LoraTargets::qv);
}

TEST(ResolveRun, QuantIsForTransformers) {
  fit::Run run;
  run.mode = Mode::infer;
  run.quant = Quant::int8;
  auto r = resolve_run(test::resnet("resnet50"), run, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--quant is modelled for transformers only"), std::string::npos)
      << r.error().message;
}

} // namespace
} // namespace dlrig::fit

// The table-driven model types (data/model_types.json) and head classes (data/model_heads.csv):
// dlrig's count equals sum(p.numel()) of the model transformers builds from the same config.
// Expected counts: perf/model_params.py, which builds each class on the meta device (transformers
// 5.23.0, torch 2.15.0; granite, smollm3, gemma3_text, cohere, arcee, olmo2, gpt_oss, olmoe,
// granitemoe, exaone4, ernie4_5 and seed_oss with transformers 5.25.0; docs/models.md has its
// table). CI has no torch: the numbers are here.
#include "dlrig/model/model.hpp"
#include "unit/model/parse.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace dlrig::model {
namespace {

using test::error_of;
using test::linears_by_role;
using test::parse;
using test::refused;

std::string fixture(const std::string &name) {
  std::string path = std::string(DLRIG_TEST_DATA) + "/models/" + name + ".json";
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Case {
  const char *name;
  std::int64_t params; // transformers' sum(p.numel()), perf/model_params.py
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << c.name;
}

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
  std::string s = info.param.name;
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return s;
}

// Published config.json files of well-known checkpoints (tests/data/models/, each with the
// class its `architectures` names).
const Case kFixtures[] = {
    {"qwen3-0.6b", 596049920},
    {"qwen3-8b", 8190735360},
    {"qwen1.5-moe-a2.7b", 14315784192},
    {"gemma-2b", 2506172416},
    {"phi-2", 2779683840},
    {"pythia-160m", 162322944},
    {"gpt-j-6b", 6050882784},
    {"opt-1.3b", 1315758080},
    {"opt-350m", 331196416},
    {"bloom-560m", 559214592},
    {"falcon-7b", 6921720704},
    {"falcon-40b", 41303293952},
    {"stablelm-2-1_6b", 1644515328},
    {"starcoderbase-1b", 1137207296},
    {"bert-base-uncased", 109514298},
    {"roberta-base", 124697433},
    {"distilbert-base-uncased", 66985530},
    {"distilbert-sst2", 66955010},
    {"deberta-v3-base", 183831552},
    {"deberta-v2-xlarge", 884593152},
    // transformers 5 ties mT5's lm_head whatever the config says and builds 172,119,424; the
    // config (tie_word_embeddings: false) and the checkpoint have a separate lm_head, as
    // transformers 4.x builds: + 250112 x 512 (docs/models.md).
    {"mt5-small", 172119424 + 250112LL * 512},
    {"bart-base", 139420416},
    {"clip-vit-base-patch32", 151277313},
    {"whisper-small", 241734912},
    {"vit-base-patch16-224-in21k", 86389248},
    {"vit-classifier-without-labels", 85800194},
    {"llama-3.2-1b-seqcls", 1235820544},
    // Its text_config gives a LlamaConfig only the vocabulary and context: the class defaults
    // fill the rest (published: 7.06B).
    {"llava-1.5-7b-hf", 7063427072},
};

class PublishedConfig : public ::testing::TestWithParam<Case> {};

TEST_P(PublishedConfig, CountEqualsTransformers) {
  const Case &c = GetParam();
  ModelArch m = parse(fixture(c.name), c.name);
  EXPECT_EQ(derive_params(m), c.params) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Models, PublishedConfig, ::testing::ValuesIn(kFixtures), case_name);

// transformers' config classes at their defaults: a config.json holding only model_type must give
// the class's model (dlrig knows each class default save_pretrained leaves out).
const Case kDefaults[] = {
    {"qwen3", 12049461248},
    {"qwen3_moe", 15350731776},
    {"qwen2_moe", 14315784192},
    {"gemma", 8537680896},
    {"phi", 1418270720},
    {"gpt_neox", 20554567680},
    {"gptj", 6050882784},
    {"opt", 125239296},
    {"bloom", 16156544},
    {"falcon", 6921720704},
    {"stablelm", 2795443200},
    {"gpt_bigcode", 111446784},
    {"roberta", 124644864},
    {"xlm-roberta", 109482240},
    {"distilbert", 66362880},
    {"deberta-v2", 877507584},
    {"mt5", 172119424 + 250112LL * 512},
    {"bart", 406291456},
    {"mbart", 406295552},
    {"whisper", 37760640},
    {"clip", 151277313},
    {"granite", 6738415616},
    {"smollm3", 3075098624},
    {"gemma3_text", 2628658432},
    {"cohere", 34980831232},
    {"arcee", 4022766080},
    {"olmo2", 6888624128},
    {"gpt_oss", 116829156672},
    {"olmoe", 13361612800},
    {"granitemoe", 37039116288},
    {"exaone4", 9429069824},
    {"ernie4_5", 360748032},
    {"seed_oss", 28921040896},
    {"siglip_vision_model", 92884224},
    {"gemma3", 2723312896},
    {"deepseek_v3", 671026404352}, // DeepSeek-V3's published 671B
    {"olmo3", 6888624128},
    {"cohere2", 34980831232},
    {"glm4", 9400279040},
    {"glm4_moe", 103481200640}, // head_dim 4096 // 96 = 42, as Glm4MoeAttention takes it
    {"pixtral", 403489792},
    {"mistral3", 23340272640},   // sub_configs_defaults' Mistral Small 3.1 shapes, tied head
    {"qwen2_5_vl", 75789228800}, // the class defaults: a 72B-wide text model
    {"qwen3_vl", 12616410352},
    {"qwen3_vl_moe", 14052070640},
    {"minimax_m2", 228689748992},     // MiniMax-M2's published 230B
    {"phimoe", 41872793600},          // Phi-3.5-MoE's published 41.9B
    {"ernie4_5_moe", 21825437888},    // ERNIE-4.5-21B-A3B's published 21B
    {"starcoder2", 3030371328},       // StarCoder2-3B's published 3B
    {"llava", 7062902784},            // CLIP ViT-L/14 at 336 px and a LlamaConfig()
    {"llava_next", 7062906880},       // and the image_newline
    {"llava_onevision", 12469102112}, // SigLIP at 384 px (27 patches a side) and a Qwen2Config()
    {"llama4_text", 107769861120},
    {"llama4", 108225039360},       // Llama 4 Scout's shape (published 109B)
    {"paligemma", 2910390528},      // PaliGemma 3B at 224 px
    {"glm4_moe_lite", 29943390976}, // GLM-4.7-Flash's published 30B
    {"ministral3", 8489553920},
    {"glm", 9399951360}, // THUDM/glm-4-9b-chat-hf's shape
    {"olmo", 6888095744},
    {"helium", 2172643840},  // kyutai/helium-1-preview-2b's shape
    {"smolvlm", 6909685760}, // the class defaults: a LlamaConfig() text model
    {"idefics3", 6909685760},
    {"qwen2_vl", 73381962752},   // the class defaults: a 72B-wide text model
    {"qwen3_next", 79674391296}, // Qwen3-Next-80B-A3B's shape
    {"qwen3_5_text", 8953803264},
    {"qwen3_5_moe_text", 34660610688}, // Qwen3.5-35B-A3B's text model
    {"qwen3_5", 9407453936},
    {"qwen3_5_moe", 35114261360},
    {"internvl", 11765025792}, // InternViT-300M at 448 px and a Qwen2Config(), tied
    {"camembert", 109482240},
    {"granitemoeshared", 37039116288}, // no shared MLP: shared_intermediate_size 0
    {"mllama", 10642941475},           // Llama 3.2 11B Vision at 448 px
    {"mllama_text_model", 9775192080},
    {"mllama_vision_model", 836288019},
    {"granitemoehybrid", 38601064448}, // every layer a Mamba-2 mixer by default
    {"lfm2", 2705497600},              // every layer attention by default
    {"apertus", 6979596352},
    {"vaultgemma", 2614222080}, // Gemma 2's defaults less 26 x 2 norms of 2304
    {"data2vec-text", 109482240},
    {"flex_olmo", 33270665216}, // FlexOlmo-7x7B-1T's shape
};

class DefaultConfig : public ::testing::TestWithParam<Case> {};

TEST_P(DefaultConfig, CountEqualsTransformers) {
  const Case &c = GetParam();
  ModelArch m = parse(std::string(R"({"model_type": ")") + c.name + "\"}");
  EXPECT_EQ(derive_params(m), c.params) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Types, DefaultConfig, ::testing::ValuesIn(kDefaults), case_name);

// SmolVLM-256M's shape: a SigLIP-B/16 tower at 512 px, a 4x4 pixel shuffle, SmolLM2-135M's text
// model.
constexpr const char *kSmolVlm256m = R"({"model_type": "smolvlm", "scale_factor": 4,
    "vision_config": {"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
                      "image_size": 512, "patch_size": 16},
    "text_config": {"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
                    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                    "head_dim": 64, "vocab_size": 49280, "max_position_embeddings": 8192}})";

constexpr const char *kGemma3_4b = R"({"model_type": "gemma3",
    "architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256},
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                      "num_attention_heads": 16, "image_size": 896, "patch_size": 14,
                      "vision_use_head": false}})";

// Qwen2.5-VL-7B's config.json as published: the text model's fields at the top level.
constexpr const char *kQwen25Vl7b = R"({"model_type": "qwen2_5_vl",
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": false,
    "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420,
                      "num_heads": 16, "out_hidden_size": 3584, "patch_size": 14,
                      "spatial_merge_size": 2, "temporal_patch_size": 2}})";

// Qwen2-VL-7B-Instruct's config.json shape: flat text fields, the vision tower's embed_dim 1280
// (mlp_ratio 4) and its merger's output hidden_size.
constexpr const char *kQwen2Vl7b = R"({"model_type": "qwen2_vl",
    "architectures": ["Qwen2VLForConditionalGeneration"], "hidden_size": 3584,
    "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": false,
    "vision_config": {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16,
                      "in_chans": 3, "hidden_size": 3584, "patch_size": 14,
                      "spatial_merge_size": 2, "temporal_patch_size": 2}})";

// Structural variants: a default config with the knobs and heads set (perf/model_params.py's
// VARIANTS, on the class defaults).
const Case kVariants[] = {
    {R"({"model_type": "qwen3", "head_dim": 64, "num_key_value_heads": 4})", 10505953280},
    {R"({"model_type": "qwen3", "architectures": ["Qwen3ForSequenceClassification"],
         "num_labels": 5})",
     11427151872},
    {R"({"model_type": "qwen3", "architectures": ["Qwen3ForTokenClassification"]})", 11427139586},
    {R"({"model_type": "qwen2_moe", "mlp_only_layers": [1]})", 13796614144},
    {R"({"model_type": "qwen2_moe", "decoder_sparse_step": 3})", 6009063424},
    {R"({"model_type": "qwen2_moe", "shared_expert_intermediate_size": 0})", 13485312000},
    {R"({"model_type": "phi", "qk_layernorm": true})", 1418276864},
    {R"({"model_type": "granite", "attention_bias": true, "mlp_bias": true})", 6739775488},
    {R"({"model_type": "smollm3", "tie_word_embeddings": false})", 3337766912},
    {R"({"model_type": "gemma3_text", "tie_word_embeddings": false})", 3232785664},
    {R"({"model_type": "cohere", "num_key_value_heads": 8, "use_qk_norm": true})", 30283579392},
    {R"({"model_type": "arcee", "num_key_value_heads": 8})", 3708193280},
    {R"({"model_type": "olmo2", "num_key_value_heads": 8})", 6083219456},
    // gpt-oss-20b's shape: 24 layers, 32 experts (sinks, router and expert biases).
    {R"({"model_type": "gpt_oss", "num_local_experts": 32, "num_hidden_layers": 24})", 20914757184},
    {R"({"model_type": "gpt_oss", "attention_bias": false})", 116828868672},
    {R"({"model_type": "olmo3", "num_key_value_heads": 8})", 6083219456},
    {R"({"model_type": "cohere2", "tie_word_embeddings": false})", 37077983232},
    {R"({"model_type": "cohere2", "attention_bias": true})", 34982141952},
    {R"({"model_type": "ministral", "head_dim": 64})", 6570643456},
    // Ministral 8B's shape (published: 8.02B parameters).
    {R"({"model_type": "ministral", "head_dim": 128, "intermediate_size": 12288,
        "num_hidden_layers": 36, "vocab_size": 131072})",
     8019808256},
    // DeepSeek's latent attention: without q_lora_rank one q_proj; biases on q_a, kv_a and o.
    {R"({"model_type": "deepseek_v3", "q_lora_rank": null})", 678797831680},
    {R"({"model_type": "deepseek_v3", "attention_bias": true})", 671026970432},
    {R"({"model_type": "deepseek_v3", "first_k_dense_replace": 0, "n_shared_experts": 2})",
     706484263936},
    // Kimi K2's shape: 384 experts, 64 heads, one dense layer (published: 1T parameters).
    {R"({"model_type": "deepseek_v3", "n_routed_experts": 384, "num_attention_heads": 64,
        "first_k_dense_replace": 1, "vocab_size": 163840})",
     1026408209408},
    // DeepSeek-V2: mlp_bias on the dense and shared MLPs, never on the routed experts.
    {R"({"model_type": "deepseek_v2", "num_experts_per_tok": 6})", 38612307968},
    {R"({"model_type": "deepseek_v2", "num_experts_per_tok": 6, "q_lora_rank": null,
        "mlp_bias": true})",
     38914559872},
    {R"({"model_type": "deepseek_v2", "num_experts_per_tok": 6, "attention_bias": true,
        "first_k_dense_replace": 2})",
     36600338432},
    // DeepSeek-V2-Lite's shape (published: 15.7B parameters).
    {R"({"model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
        "num_attention_heads": 16, "q_lora_rank": null, "moe_intermediate_size": 1408,
        "intermediate_size": 10944, "n_routed_experts": 64, "n_shared_experts": 2,
        "num_experts_per_tok": 6, "first_k_dense_replace": 1})",
     15706484224},
    // GLM-4: four RMSNorms per layer, one gate_up_proj; q/k/v biases with attention_bias.
    {R"({"model_type": "glm4", "attention_bias": false})", 9400094720},
    {R"({"model_type": "glm4", "tie_word_embeddings": true})", 8779522048},
    {R"({"model_type": "glm4", "architectures": ["Glm4ForSequenceClassification"],
         "num_labels": 3})",
     8779534336},
    {R"({"model_type": "glm4_moe", "use_qk_norm": true})", 103481204504},
    {R"({"model_type": "glm4_moe", "attention_bias": true})", 103481417024},
    {R"({"model_type": "glm4_moe", "first_k_dense_replace": 0, "n_shared_experts": 2})",
     106375008256},
    // GLM-4.5-Air's shape (published: 106B parameters, no multi-token-prediction layer built).
    {R"({"model_type": "glm4_moe", "head_dim": 128, "attention_bias": true})", 106852245504},
    // Mistral 3: the projector's bias, several vision feature layers, another text type.
    {R"({"model_type": "mistral3", "tie_word_embeddings": false})", 24011361280},
    {R"({"model_type": "mistral3", "multimodal_projector_bias": true})", 23340282880},
    {R"({"model_type": "mistral3", "vision_feature_layer": [-1, -2], "spatial_merge_size": 1})",
     23342369792},
    {R"({"model_type": "mistral3", "text_config": {"model_type": "qwen3", "hidden_size": 1024,
        "intermediate_size": 3072, "num_hidden_layers": 4, "num_attention_heads": 16,
        "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936}})",
     628105216},
    // Qwen2.5-VL: a text_config's tie, the merger and Conv3d shapes, and the hub's flat configs
    // (published: 8.29B and 3.75B parameters).
    {R"({"model_type": "qwen2_5_vl", "text_config": {"tie_word_embeddings": true}})", 74543520512},
    {R"({"model_type": "qwen2_5_vl", "vision_config": {"spatial_merge_size": 1,
        "temporal_patch_size": 1}})",
     75555899648},
    {kQwen25Vl7b, 8292166656},
    {R"({"model_type": "qwen2_5_vl", "hidden_size": 2048, "intermediate_size": 11008,
        "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2,
        "vocab_size": 151936, "tie_word_embeddings": true,
        "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420,
                          "num_heads": 16, "out_hidden_size": 2048}})",
     3754622976},
    // Qwen3-VL: a learned position table, deepstack mergers; the 8B and 30B-A3B shapes
    // (published: 8.77B and 31.1B parameters).
    {R"({"model_type": "qwen3_vl", "text_config": {"attention_bias": true}})", 12616934640},
    {R"({"model_type": "qwen3_vl", "vision_config": {"deepstack_visual_indexes": [5],
        "spatial_merge_size": 1, "num_position_embeddings": 1024}})",
     12474803952},
    {R"({"model_type": "qwen3_vl", "text_config": {"hidden_size": 4096, "intermediate_size": 12288,
        "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128}, "vision_config": {"out_hidden_size": 4096}})",
     8767123696},
    {R"({"model_type": "qwen3_vl_moe", "text_config": {"hidden_size": 2048,
        "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 48,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "num_experts": 128, "num_experts_per_tok": 8, "tie_word_embeddings": false},
        "vision_config": {"out_hidden_size": 2048}})",
     31070754032},
    // The experts under either name transformers' attribute_map gives them (a config saved by
    // transformers 5 writes the attribute, the hub's the alias; the alias wins when both are).
    {R"({"model_type": "qwen3_moe", "num_local_experts": 64})", 8099828736},
    {R"({"model_type": "olmoe", "num_local_experts": 8, "num_experts_per_tok": 2})", 2085488640},
    {R"({"model_type": "glm4_moe", "num_local_experts": 64})", 53641072640},
    {R"({"model_type": "minimax_m2", "num_local_experts": 32})", 32051667968},
    {R"({"model_type": "minimax_m2", "tie_word_embeddings": true})", 228075152384},
    // ERNIE 4.5: experts from moe_layer_start_index to moe_layer_end_index, every
    // moe_layer_interval-th layer, under either expert-count name; ERNIE-4.5-300B-A47B's shape.
    {R"({"model_type": "ernie4_5_moe", "moe_layer_end_index": 20})", 17034919680},
    {R"({"model_type": "ernie4_5_moe", "moe_layer_interval": 2})", 12928761216},
    {R"({"model_type": "ernie4_5_moe", "num_experts": 8})", 3985287896},
    {R"({"model_type": "ernie4_5_moe", "use_bias": true})", 21825975488},
    {R"({"model_type": "ernie4_5_moe", "hidden_size": 8192, "num_hidden_layers": 54,
        "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672,
        "moe_intermediate_size": 3584, "moe_num_experts": 64, "moe_k": 8,
        "moe_num_shared_experts": 0, "moe_layer_start_index": 3, "moe_layer_end_index": 53,
        "tie_word_embeddings": false})",
     299484163264},
    // LLaVA: the projector's input widens with each vision_feature_layer; a text_config tie;
    // LLaVA-NeXT on Mistral-7B and LLaVA-OneVision 0.5B with partial text_configs (published
    // 7.57B and 0.9B).
    {R"({"model_type": "llava", "vision_feature_layer": [-2, -5, -8]})", 7071291392},
    {R"({"model_type": "llava", "text_config": {"model_type": "llama", "tie_word_embeddings":
        true}})",
     6931830784},
    {R"({"model_type": "llava_next", "text_config": {"model_type": "mistral",
        "intermediate_size": 14336, "max_position_embeddings": 32768, "num_key_value_heads": 8,
        "sliding_window": null, "vocab_size": 32064}})",
     7566747648},
    {R"({"model_type": "llava_onevision", "text_config": {"model_type": "qwen2",
        "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
        "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 152000,
        "tie_word_embeddings": true}})",
     893675552},
    // Llama 4: moe_layers lists the MoE layers; Maverick's text model (128 experts in every
    // other layer, published 400B); the vision tower's output width and image size.
    {R"({"model_type": "llama4_text", "moe_layers": [0, 5, 9]})", 22831518720},
    {R"({"model_type": "llama4_text", "interleave_moe_layer_step": 2, "num_local_experts": 128})",
     400711848960},
    {R"({"model_type": "llama4", "vision_config": {"vision_output_dim": 4096}})", 108206689280},
    {R"({"model_type": "llama4", "vision_config": {"image_size": 336,
        "projector_input_dim": 2048}})",
     108213160960},
    // PaliGemma 2 3B: a Gemma 2 text_config without head_dim (Gemma2Config's 256 fills it), the
    // projection to 2304 (published 3B).
    {R"({"model_type": "paligemma", "projection_dim": 2304, "text_config": {"model_type":
        "gemma2", "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
        "num_attention_heads": 8, "num_key_value_heads": 4, "query_pre_attn_scalar": 256,
        "sliding_window": 4096, "vocab_size": 257216}, "vision_config": {"hidden_size": 1152,
        "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
        "patch_size": 14, "image_size": 224, "vision_use_head": false}})",
     3032242416},
    {R"({"model_type": "paligemma", "tie_word_embeddings": false})", 3437037824},
    // GLM-4.7-Flash: mlp_layer_types names the MoE layers; without q_lora_rank a q_proj.
    {R"({"model_type": "glm4_moe_lite", "mlp_layer_types": ["dense", "dense", "dense", "sparse",
        "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
        "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
        "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
        "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse",
        "sparse", "sparse", "sparse", "sparse", "sparse", "sparse", "sparse"]})",
     28842124032},
    {R"({"model_type": "glm4_moe_lite", "q_lora_rank": null})", 30177449472},
    // Ministral 3: a ministral3 text model behind Mistral 3's Pixtral and projector.
    {R"({"model_type": "mistral3", "text_config": {"model_type": "ministral3", "hidden_size":
        3072, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
        "tie_word_embeddings": true}})",
     3849090048},
    {R"({"model_type": "phimoe", "lm_head_bias": true})", 41872825664},
    {R"({"model_type": "phimoe", "num_local_experts": 4})", 11672231936},
    {kSmolVlm256m, 256484928},
    {kQwen2Vl7b, 8291375616}, // Qwen2-VL-7B's published 8.29B
    // InternVL3-1B's shape: InternViT-300M and a Qwen2.5-0.5B text model.
    {R"({"model_type": "internvl", "text_config": {"model_type": "qwen2", "hidden_size": 896,
        "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
        "num_key_value_heads": 2, "vocab_size": 151674, "tie_word_embeddings": true}})",
     802219392},
    // InternViT-6B's options: qk norms, RMSNorm layers, a final LayerNorm, q/k/v biases.
    {R"({"model_type": "internvl", "vision_config": {"use_qk_norm": true, "norm_type": "rms_norm",
        "use_mean_pooling": false, "attention_bias": true}})",
     11765101568},
    {R"({"model_type": "internvl", "vision_config": {"use_mask_token": true,
        "use_absolute_position_embeddings": false, "image_size": [224, 224],
        "patch_size": [16, 16]}})",
     11764161536},
    {R"({"model_type": "internvl", "downsample_ratio": 0.25})", 11815382016},
    {R"({"model_type": "qwen3_next", "full_attention_interval": 2})", 79596931584},
    {R"({"model_type": "qwen3_next", "mlp_only_layers": [0, 5]})", 76513979136},
    {R"({"model_type": "qwen3_next", "attention_bias": true})", 79674526464},
    {R"({"model_type": "qwen3_next", "num_hidden_layers": 4, "layer_types": ["linear_attention",
        "full_attention", "linear_attention", "linear_attention"]})",
     7210003520},
    {R"({"model_type": "qwen3_next", "linear_conv_kernel_dim": 8, "linear_key_head_dim": 64})",
     79523986176},
    {R"({"model_type": "qwen3_5_text", "linear_value_head_dim": 64})", 8349625344},
    {R"({"model_type": "qwen3_5_moe_text", "num_experts": 64, "num_experts_per_tok": 4})",
     10485691008},

    {R"({"model_type": "idefics3", "tie_word_embeddings": true})", 6778613760},
    // Nemotron-Mini-4B's shape: LayerNorm1P with bias, relu2 between up_proj and down_proj.
    {R"({"model_type": "nemotron", "hidden_size": 3072, "num_attention_heads": 24,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9216})",
     4190509056},
    {R"({"model_type": "nemotron", "num_key_value_heads": 8, "attention_bias": true,
        "mlp_bias": true})",
     15630217216},
    // dots.llm1's shape (published 142B): one dense layer, 128 experts and 2 shared ones.
    {R"({"model_type": "dots1", "hidden_size": 4096, "n_routed_experts": 128,
        "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1})",
     142774373888},
    {R"({"model_type": "glm", "attention_bias": false})", 9399767040},
    {R"({"model_type": "olmo", "attention_bias": true})", 6888620032},
    // OLMo-1B's shape: weightless LayerNorms, a tied head.
    {R"({"model_type": "olmo", "hidden_size": 2048, "intermediate_size": 8192,
        "num_hidden_layers": 16, "num_attention_heads": 16, "tie_word_embeddings": true})",
     1176764416},
    {R"({"model_type": "helium", "attention_bias": true, "mlp_bias": true})", 2173227520},
    {R"({"model_type": "hunyuan_v1_dense", "head_dim": 128})", 8859684864},
    {R"({"model_type": "hunyuan_v1_dense", "head_dim": 128, "attention_bias": true})", 8860209152},
    {R"({"model_type": "hunyuan_v1_moe", "head_dim": 128, "num_experts": 16, "moe_topk": 2})",
     78118129664},
    // Hunyuan-A13B's shape with the 7B's vocabulary: 64 experts of 3072 and a shared MLP.
    {R"({"model_type": "hunyuan_v1_moe", "head_dim": 128, "num_experts": 64, "moe_topk": 8,
        "num_key_value_heads": 8, "intermediate_size": 3072})",
     82251616256},
    {R"({"model_type": "starcoder2", "use_bias": false})", 3029710848},
    {R"({"model_type": "starcoder2", "hidden_size": 6144, "num_hidden_layers": 40,
        "num_attention_heads": 48, "num_key_value_heads": 4, "intermediate_size": 24576})",
     15655899136}, // StarCoder2-15B
    {R"({"model_type": "olmoe", "num_key_value_heads": 8})", 13294487552},
    {R"({"model_type": "granitemoe", "num_key_value_heads": 8, "attention_bias": true})",
     36234137600},
    {R"({"model_type": "exaone4", "num_key_value_heads": 8})", 8623763456},
    {R"({"model_type": "ernie4_5", "use_bias": true})", 360941568},
    {R"({"model_type": "seed_oss", "attention_out_bias": true, "mlp_bias": true})", 28925104128},
    {R"({"model_type": "siglip_vision_model", "vision_use_head": false})", 85797120},
    {R"({"model_type": "siglip_vision_model", "image_size": 896, "patch_size": 14})", 95741184},
    // Gemma 3 4B's shape: a 34-layer text model, SigLIP So400m/14 at 896 px without its head.
    {kGemma3_4b, 4300079472},
    {R"({"model_type": "stablelm", "use_qkv_bias": true})", 2795688960},
    {R"({"model_type": "opt", "word_embed_proj_dim": 256})", 99893248},
    {R"({"model_type": "opt", "layer_norm_elementwise_affine": false})", 125200896},
    {R"({"model_type": "opt", "enable_bias": false})", 125156352},
    {R"({"model_type": "falcon", "multi_query": false})", 8224576384},
    {R"({"model_type": "falcon", "parallel_attn": false})", 6922011520},
    {R"({"model_type": "falcon", "new_decoder_architecture": true, "num_kv_heads": 71})",
     8224867200},
    {R"({"model_type": "gpt_bigcode", "multi_query": false})", 124439808},
    {R"({"model_type": "roberta", "architectures": ["RobertaForSequenceClassification"],
         "num_labels": 3})",
     124647171},
    {R"({"model_type": "roberta", "architectures": ["RobertaForMultipleChoice"]})", 124645633},
    {R"({"model_type": "roberta", "architectures": ["RobertaForCausalLM"]})", 124696665},
    {R"({"model_type": "distilbert", "architectures": ["DistilBertForMultipleChoice"]})", 66954241},
    {R"({"model_type": "deberta-v2", "relative_attention": true, "share_att_key": false,
         "pos_att_type": ["c2p", "p2c"]})",
     992400384},
    {R"({"model_type": "deberta-v2", "relative_attention": true, "max_relative_positions": 128,
         "pos_att_type": "c2p"})",
     934560768},
    {R"({"model_type": "deberta-v2", "embedding_size": 512})", 746595328},
    {R"({"model_type": "deberta-v2", "conv_kernel_size": 3, "conv_groups": 2,
         "relative_attention": true, "norm_rel_ebd": "layer_norm"})",
     882627072},
    {R"({"model_type": "deberta-v2", "architectures": ["DebertaV2ForMaskedLM"]})", 879999588},
    {R"({"model_type": "bart", "decoder_ffn_dim": 1000, "decoder_layers": 3})", 236090296},
    {R"({"model_type": "bart", "architectures": ["BartForSequenceClassification"],
         "num_labels": 3})",
     407344131},
    // Question answering on an encoder-decoder: the base model + qa_outputs Linear(d_model, 2).
    {R"({"model_type": "bart", "architectures": ["BartForQuestionAnswering"]})",
     406291456 + 1024 * 2 + 2},
    // BART's QA class sets config.num_labels = 2 whatever the config says (BartConfig's default,
    // three labels, is what facebook/bart-large's config.json carries): transformers 5.17.0 built
    // 406,293,506.
    {R"({"model_type": "bart", "architectures": ["BartForQuestionAnswering"], "num_labels": 3})",
     406293506},
    {R"({"model_type": "mbart", "architectures": ["MBartForQuestionAnswering"],
         "id2label": {"0": "a", "1": "b", "2": "c"}})",
     406295552 + 1024 * 2 + 2},
    {R"({"model_type": "mt5", "architectures": ["MT5ForQuestionAnswering"], "num_labels": 3})",
     172119424 + 512 * 3 + 3},
    {R"({"model_type": "mt5", "architectures": ["MT5ForQuestionAnswering"]})",
     172119424 + 512 * 2 + 2},
    // almanach/camembert-large's shape and CamemBERT's vocabulary
    {R"({"model_type": "camembert", "hidden_size": 1024, "num_hidden_layers": 24,
         "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 32005})",
     336660480},
    {R"({"model_type": "camembert", "architectures": ["CamembertForMaskedLM"]})", 109514298},
    {R"({"model_type": "flex_olmo", "num_hidden_layers": 16, "hidden_size": 2048,
         "intermediate_size": 1024, "num_experts": 8, "num_experts_per_tok": 2})",
     1485178880},
    {R"({"model_type": "flex_olmo", "num_key_value_heads": 8, "attention_bias": true})",
     32465588224},
    {R"({"model_type": "data2vec-text", "architectures":
         ["Data2VecTextForSequenceClassification"], "num_labels": 3})",
     109484547},
    {R"({"model_type": "data2vec-text", "architectures": ["Data2VecTextForMaskedLM"]})", 109514298},
    {R"({"model_type": "vaultgemma", "hidden_size": 1152, "intermediate_size": 6912,
         "num_attention_heads": 4, "num_key_value_heads": 4, "attn_logit_softcapping": null})",
     1038741120},
    {R"({"model_type": "granitemoeshared", "shared_intermediate_size": 1024})", 37441769472},
    {R"({"model_type": "granitemoeshared", "shared_intermediate_size": 512,
         "attention_bias": true})",
     37240967168},
    // A 27-layer SigLIP tower at 364 px and Command R7B's shape behind Aya Vision's projector.
    {R"({"model_type": "aya_vision", "alignment_intermediate_size": 28672,
         "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "patch_size": 14,
                           "image_size": 364, "num_hidden_layers": 27,
                           "num_attention_heads": 16, "vision_use_head": false},
         "text_config": {"model_type": "cohere2", "hidden_size": 4096,
                         "intermediate_size": 14336, "num_hidden_layers": 32,
                         "num_attention_heads": 32, "num_key_value_heads": 8,
                         "vocab_size": 256000, "sliding_window": 4096}})",
     8631842032},
    // A vision_config given replaces the class's init values: SigLIP's own defaults (768 wide,
    // the attention-pooling head).
    {R"({"model_type": "aya_vision", "downsample_factor": 1,
         "vision_config": {"num_attention_heads": 16}})",
     35113579264},
    // Llama 3.2 90B Vision's text model (100 layers, every fifth from 3 a cross-attention layer)
    // behind the 560 px tower.
    {R"({"model_type": "mllama", "vision_config": {"image_size": 560},
         "text_config": {"hidden_size": 8192, "intermediate_size": 28672,
                         "num_hidden_layers": 100, "num_attention_heads": 64,
                         "cross_attention_layers": [3, 8, 13, 18, 23, 28, 33, 38, 43, 48, 53,
                                                    58, 63, 68, 73, 78, 83, 88, 93, 98]}})",
     88593355323},
    // Repeated and out-of-range indices build nothing more.
    {R"({"model_type": "mllama_text_model", "cross_attention_layers": [1, 2, 2, 60]})", 9775190532},
    {R"({"model_type": "mllama_text_model", "cross_attention_layers": []})", 9775190016},
    {R"({"model_type": "mllama_vision_model", "max_num_tiles": 2,
         "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]})",
     799480339},
    {R"({"model_type": "mllama_vision_model", "num_global_layers": 4,
         "vision_output_dim": 3840})",
     757598731},
    // Granite 4.0 hybrids: 4 attention layers of 40, 72 experts; dense (no experts); biases and
    // groups; transformers 5's own layer names.
    {R"({"model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40,
         "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72,
         "num_experts_per_tok": 10, "intermediate_size": 768, "shared_intermediate_size": 8192,
         "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_d_state": 128, "vocab_size": 100352,
         "layer_types": ["mamba", "mamba", "mamba", "mamba", "mamba", "attention", "mamba",
                         "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba",
                         "attention", "mamba", "mamba", "mamba", "mamba", "mamba", "mamba",
                         "mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba",
                         "mamba", "mamba", "mamba", "mamba", "mamba", "mamba", "attention",
                         "mamba", "mamba", "mamba", "mamba"],
         "tie_word_embeddings": true})",
     35478895104},
    {R"({"model_type": "granitemoehybrid", "num_local_experts": 0,
         "shared_intermediate_size": 8192})",
     6790414336},
    {R"({"model_type": "granitemoehybrid", "mamba_proj_bias": true, "mamba_conv_bias": false,
         "mamba_n_groups": 8, "num_hidden_layers": 4,
         "layer_types": ["mamba", "attention", "mamba", "attention"]})",
     5011477504},
    {R"({"model_type": "granitemoehybrid", "num_hidden_layers": 3, "attention_bias": true,
         "layer_types": ["linear_attention", "full_attention", "linear_attention"]})",
     3820209920},
    // LFM2-1.2B's shape in the hub's names (block_ff_dim, tie_embedding)
    {R"({"model_type": "lfm2", "full_attn_idxs": [2, 5, 8, 10, 12, 14], "block_ff_dim": 12288,
         "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
         "num_key_value_heads": 8, "tie_embedding": true})",
     1170340608},
    {R"({"model_type": "lfm2", "layer_types": ["conv", "full_attention", "conv"],
         "num_hidden_layers": 3, "conv_bias": true})",
     425387680},
    {R"({"model_type": "lfm2", "block_auto_adjust_ff_dim": false})", 3712130560},
    {R"({"model_type": "lfm2", "block_ffn_dim_multiplier": 1.5, "block_multiple_of": 1000})",
     3887111680},
    {R"({"model_type": "lfm2", "tie_embedding": false})", 2873269760},
    // Apertus-70B's shape; without xIELU no alpha_p/alpha_n.
    {R"({"model_type": "apertus", "hidden_size": 8192, "intermediate_size": 43008,
         "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8})",
     70599864480},
    {R"({"model_type": "apertus", "hidden_act": "gelu"})", 6979596288},
    {R"({"model_type": "apertus", "attention_bias": true})", 6980120640},
    {R"({"model_type": "apertus", "tie_word_embeddings": true})", 6442725440},
    {R"({"model_type": "whisper", "num_mel_bins": 128})", 37815936},
    {R"({"model_type": "whisper", "architectures": ["WhisperModel"]})", 37760640},
    {R"({"model_type": "clip", "projection_dim": 256,
         "text_config": {"hidden_size": 256, "num_attention_heads": 4},
         "vision_config": {"patch_size": 16, "image_size": 336}})",
     114699265},
};

class VariantConfig : public ::testing::TestWithParam<Case> {};

TEST_P(VariantConfig, CountEqualsTransformers) {
  const Case &c = GetParam();
  EXPECT_EQ(derive_params(parse(c.name)), c.params) << c.name;
}

std::string variant_name(const ::testing::TestParamInfo<Case> &info) {
  return "v" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Knobs, VariantConfig, ::testing::ValuesIn(kVariants), variant_name);

// ---- Structure knobs: each changes the count the way the transformers module does ------------

TEST(ModelTypes, QkNormsAddTheirWeights) {
  // Qwen3: RMSNorm(head_dim) on q and k in each layer.
  auto q3 = parse(fixture("qwen3-0.6b"));
  EXPECT_EQ(q3.qk_norm, "head_rms");
  // Phi with qk_layernorm: LayerNorm(head_dim) with bias on q and k.
  auto phi = parse(R"({"model_type": "phi"})");
  auto phi_qk = parse(R"({"model_type": "phi", "qk_layernorm": true})");
  EXPECT_EQ(derive_params(phi_qk) - derive_params(phi), 24 * 4 * (2048 / 32));
  // StableLM per-head LayerNorms without bias: heads·d for q, kv_heads·d for k.
  auto lm = parse(R"({"model_type": "stablelm"})");
  auto lm_qk = parse(R"({"model_type": "stablelm", "qk_layernorm": true})");
  EXPECT_EQ(derive_params(lm_qk) - derive_params(lm), 32 * (32 + 32) * 80);
}

TEST(ModelTypes, ParallelAttentionDropsTheSecondNorm) {
  auto serial = parse(R"({"model_type": "stablelm"})");
  auto parallel = parse(R"({"model_type": "stablelm", "use_parallel_residual": true})");
  EXPECT_EQ(derive_params(serial) - derive_params(parallel), 32 * 2 * 2560);
  EXPECT_EQ(parallel.norms_per_layer, 1);
}

TEST(ModelTypes, FalconArchitecturesAndMultiQuery) {
  auto f7 = parse(fixture("falcon-7b"));
  EXPECT_EQ(f7.kv_heads, 1); // multi_query
  EXPECT_EQ(f7.norms_per_layer, 1);
  auto f40 = parse(fixture("falcon-40b"));
  EXPECT_EQ(f40.kv_heads, 8);        // new_decoder_architecture: num_kv_heads
  EXPECT_EQ(f40.norms_per_layer, 2); // ln_attn and ln_mlp
}

TEST(ModelTypes, OptProjectionsAndRemovedFinalNorm) {
  auto opt = parse(fixture("opt-350m"));
  EXPECT_EQ(opt.embed_dim, 512);
  EXPECT_FALSE(opt.final_norm); // do_layer_norm_before = false
  auto removed = parse(R"({"model_type": "opt", "_remove_final_layer_norm": true})");
  EXPECT_EQ(derive_params(parse(R"({"model_type": "opt"})")) - derive_params(removed), 2 * 768);
}

TEST(ModelTypes, MoeSharedExpertsAndDenseLayers) {
  auto moe = parse(R"({"model_type": "qwen2_moe"})");
  EXPECT_EQ(moe.family, ModelFamily::moe_decoder);
  EXPECT_EQ(moe.dense_layers, 0);
  auto mixed = parse(R"({"model_type": "qwen2_moe", "mlp_only_layers": [0, 1]})");
  EXPECT_EQ(mixed.dense_layers, 2);
  auto step = parse(R"({"model_type": "qwen2_moe", "decoder_sparse_step": 2})");
  EXPECT_EQ(step.dense_layers, 12);
  // A dense layer holds one MLP of intermediate_size instead of router + 60 experts + shared.
  const std::int64_t h = 2048, expert = 3 * h * 1408, shared = 3 * h * 5632;
  EXPECT_EQ(derive_params(moe) - derive_params(mixed),
            2 * (h * 60 + 60 * expert + shared + h - 3 * h * 5632));
  EXPECT_LT(active_params(moe), derive_params(moe));
}

// DeepSeek's latent attention as linears (PEFT's module names, FLOPs): the query's bottleneck,
// the shared latent with the rotary key, every head's key and value from it, and the output from
// the 128-wide value heads; the routed experts apart from the shared expert and dense layers.
TEST(ModelTypes, LatentAttentionAndDeepSeekExperts) {
  auto m = parse(R"({"model_type": "deepseek_v3"})");
  EXPECT_EQ(m.head_dim, 192);
  EXPECT_EQ(m.dense_layers, 3);
  EXPECT_EQ(m.shared_expert_intermediate, 2048);
  std::map<std::string, LinearShape> by_module;
  std::int64_t routed = 0, unrouted_mlp = 0;
  for (const auto &l : linear_layers(m)) {
    by_module.try_emplace(l.module, l);
    if (l.role == "down")
      (l.routed ? routed : unrouted_mlp) += l.count;
  }
  auto shape = [&](const char *module) {
    return fmt::format("{} x {}", by_module.at(module).in, by_module.at(module).out);
  };
  EXPECT_EQ(shape("q_a_proj"), "7168 x 1536");
  EXPECT_EQ(shape("q_b_proj"), "1536 x 24576");         // 128 heads x 192
  EXPECT_EQ(shape("kv_a_proj_with_mqa"), "7168 x 576"); // the 512-wide latent, a 64-wide key
  EXPECT_EQ(shape("kv_b_proj"), "512 x 32768");         // 128 heads x (128 + 128)
  EXPECT_EQ(shape("o_proj"), "16384 x 7168");           // 128 heads x 128
  EXPECT_EQ(routed, 58 * 256);
  EXPECT_EQ(unrouted_mlp, 58 + 3); // a shared expert in each MoE layer, three dense layers
  auto lite = parse(R"({"model_type": "deepseek_v2", "q_lora_rank": null,
                        "num_experts_per_tok": 6})");
  EXPECT_EQ(lite.q_lora_rank, 0);
  EXPECT_EQ(error_of(R"({"model_type": "deepseek_v2"})"),
            "config.json: config field 'num_experts_per_tok' is missing; a deepseek_v2 "
            "config.json has it (copy it from the model's config.json)");
  EXPECT_EQ(error_of(R"({"model_type": "deepseek_v3", "qk_rope_head_dim": 128,
                         "qk_nope_head_dim": 0})"),
            "config.json: config field 'qk_nope_head_dim' must be at least 1, got 0");
}

// ERNIE 4.5's MoE layers run from moe_layer_start_index to moe_layer_end_index (-1: the last);
// a smaller end index is refused naming the field.
TEST(ModelTypes, ErnieMoeLayerRange) {
  EXPECT_EQ(parse(R"({"model_type": "ernie4_5_moe"})").dense_layers, 1);
  EXPECT_EQ(parse(R"({"model_type": "ernie4_5_moe", "moe_layer_end_index": 20})").dense_layers,
            1 + 7);
  EXPECT_EQ(parse(R"({"model_type": "ernie4_5_moe", "moe_layer_start_index": 0,
                      "moe_layer_interval": 2})")
                .dense_layers,
            14);
  EXPECT_EQ(error_of(R"({"model_type": "ernie4_5_moe", "moe_layer_end_index": -2})"),
            "config.json: config field 'moe_layer_end_index' must be at least -1, got -2");
}

// Lists of MoE or dense layers: null is as absent (transformers' classes take it so), anything
// but a list of integers is refused naming the field.
TEST(ModelTypes, MoeLayerListsAreNamedWhenMalformed) {
  EXPECT_EQ(derive_params(parse(R"({"model_type": "qwen3_moe", "mlp_only_layers": null})")),
            15350731776);
  EXPECT_EQ(parse(R"({"model_type": "llama4_text", "moe_layers": null,
                      "interleave_moe_layer_step": 2})")
                .dense_layers,
            24);
  EXPECT_EQ(error_of(R"({"model_type": "qwen3_moe", "mlp_only_layers": "0,3"})"),
            "config.json: config field 'mlp_only_layers' must be a list of layer indices, got the "
            "string \"0,3\"");
  EXPECT_EQ(error_of(R"({"model_type": "llama4_text", "moe_layers": [0, "x"]})"),
            "config.json: config field 'moe_layers' must be a list of layer indices, found the "
            "string \"x\"");
}

// GLM-4.7-Flash's mlp_layer_types must give "sparse" or "dense" for every layer.
TEST(ModelTypes, GlmLiteMlpLayerTypes) {
  EXPECT_EQ(parse(R"({"model_type": "glm4_moe_lite"})").dense_layers, 1);
  EXPECT_EQ(error_of(R"({"model_type": "glm4_moe_lite", "mlp_layer_types": ["dense"]})"),
            "config.json: config field 'mlp_layer_types' must be a list of 47 entries, \"sparse\" "
            "or \"dense\", one per layer");
  EXPECT_EQ(error_of(R"({"model_type": "glm4_moe_lite", "num_hidden_layers": 2,
                         "mlp_layer_types": ["dense", "moe"]})"),
            "config.json: config field 'mlp_layer_types' entry \"moe\" is not \"sparse\" or "
            "\"dense\"");
}

// GLM-4 fuses gate and up (not q, k, v); GLM-4.5's class divides hidden by heads as Python's //
// when the config gives no head_dim, and a config whose heads exceed hidden is refused.
TEST(ModelTypes, GlmFusedGateUpAndFloorHeadDim) {
  std::vector<std::string> modules;
  for (const auto &l : linear_layers(parse(R"({"model_type": "glm4"})")))
    modules.push_back(l.module);
  EXPECT_EQ(fmt::format("{}", fmt::join(modules, " ")),
            "q_proj k_proj v_proj o_proj gate_up_proj down_proj lm_head");
  EXPECT_EQ(parse(R"({"model_type": "glm4_moe"})").head_dim, 42);
  EXPECT_EQ(parse(R"({"model_type": "glm4_moe", "head_dim": 128})").head_dim, 128);
  EXPECT_EQ(error_of(R"({"model_type": "glm4_moe", "hidden_size": 64})"),
            "config.json: config field 'num_attention_heads' = 96 exceeds hidden_size = 64; give "
            "head_dim explicitly");
}

// An image-text model counts its vision tower and projector, which its text tokens do not pass:
// they are no active parameters (FLOPs) and are said apart.
TEST(ModelTypes, AnImageTextModelCarriesItsVisionTowerApart) {
  ModelArch m = parse(kGemma3_4b);
  EXPECT_EQ(m.family, ModelFamily::decoder);
  EXPECT_EQ(m.hidden, 2560);
  ASSERT_EQ(m.towers.size(), 1u);
  EXPECT_EQ(m.towers[0].hf_model_type, "siglip_vision_model");
  const std::int64_t projector = 1152LL * 2560 + 1152;
  EXPECT_EQ(tower_params(m), derive_params(m.towers[0]) + projector);
  EXPECT_EQ(active_params(m), derive_params(m) - tower_params(m));
  ModelArch text = parse(R"({"model_type": "gemma3_text", "hidden_size": 2560,
      "intermediate_size": 10240, "num_hidden_layers": 34, "num_attention_heads": 8,
      "num_key_value_heads": 4, "head_dim": 256})");
  EXPECT_EQ(derive_params(m), derive_params(text) + tower_params(m));
  EXPECT_EQ(tower_params(text), 0);
}

// Mistral 3's and Qwen2.5-VL's projectors are nn.Linear modules (bitsandbytes converts them,
// PEFT's all-linear adapts them); Qwen2.5-VL's is its vision tower's patch merger, counted once.
TEST(ModelTypes, ImageTextProjectorsAreLinears) {
  ModelArch mistral = parse(R"({"model_type": "mistral3"})");
  ASSERT_EQ(mistral.towers.size(), 1u);
  EXPECT_EQ(mistral.towers[0].hf_model_type, "pixtral");
  using Shape = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(mistral.projector_linears,
            (std::vector<Shape>{{4 * 1024, 1024}, {1024, 5120}, {5120, 5120}}));
  EXPECT_EQ(mistral.projector_params, 1024 + 4 * 1024 * 1024 + 1024 * 5120 + 5120 * 5120);
  ModelArch qwen = parse(kQwen25Vl7b);
  EXPECT_EQ(qwen.hidden, 3584); // the top level's text fields
  EXPECT_EQ(qwen.towers[0].projector_params, 0);
  EXPECT_EQ(qwen.projector_linears, (std::vector<Shape>{{5120, 5120}, {5120, 3584}}));
  EXPECT_EQ(qwen.towers[0].temporal_patch, 2);
  // Qwen2-VL: the tower's own merger, ln_q a LayerNorm over embed_dim, no deepstack.
  ModelArch qwen2 = parse(kQwen2Vl7b);
  EXPECT_EQ(qwen2.hidden, 3584);
  EXPECT_EQ(qwen2.towers[0].hidden, 1280);
  EXPECT_EQ(qwen2.towers[0].intermediate, 5120);
  EXPECT_EQ(qwen2.projector_linears, (std::vector<Shape>{{5120, 5120}, {5120, 3584}}));
  EXPECT_EQ(qwen2.projector_params, 2 * 1280 + 5120 * 5120 + 5120 + 5120 * 3584 + 3584);
  // SmolVLM: proj takes scale_factor^2 vision features folded by the pixel shuffle.
  ModelArch smol = parse(kSmolVlm256m);
  EXPECT_EQ(smol.towers[0].hf_model_type, "smolvlm_vision");
  EXPECT_EQ(smol.towers[0].image_size / smol.towers[0].patch_size, 32);
  EXPECT_EQ(smol.projector_linears, (std::vector<Shape>{{16 * 768, 576}}));
  EXPECT_EQ(smol.projector_params, 16 * 768 * 576);
  EXPECT_TRUE(refused(R"({"model_type": "smolvlm", "scale_factor": 0})", "'scale_factor'"));
  EXPECT_EQ(error_of(R"({"model_type": "mistral3", "text_config": {"model_type": "mistral3"}})"),
            "config.json: config field 'text_config.model_type' = \"mistral3\" is a two-tower "
            "model; give the text model's own type");
  EXPECT_EQ(
      error_of(R"({"model_type": "mistral3", "vision_feature_layer": [1, 2, 3, 4, 5, 6, 7,
                         8, 9, 10, 11, 12, 13, 14, 15, 16, 17]})"),
      "config.json: config field 'vision_feature_layer' must have at most 16 entries, got 17");
  EXPECT_TRUE(refused(R"({"model_type": "mistral3", "text_config": {"model_type": "mamba"}})",
                      "config.json.text_config: config field 'model_type' = \"mamba\""));
}

// Hunyuan's config classes default head_dim to None, from which transformers builds nothing: a
// config.json must give it; per-layer expert lists (num_experts, moe_topk) are not read.
TEST(ModelTypes, HunyuanWantsItsHeadDim) {
  std::string e = error_of(R"({"model_type": "hunyuan_v1_dense"})");
  EXPECT_NE(e.find("'head_dim' is missing"), std::string::npos) << e;
  e = error_of(R"({"model_type": "hunyuan_v1_moe", "head_dim": null})");
  EXPECT_NE(e.find("'head_dim' is missing"), std::string::npos) << e;
  e = error_of(R"({"model_type": "hunyuan_v1_moe", "head_dim": 128, "moe_topk": [8, 8]})");
  EXPECT_NE(e.find("'moe_topk' must be an integer"), std::string::npos) << e;
  ModelArch m = parse(R"({"model_type": "hunyuan_v1_moe", "head_dim": 128, "num_experts": 4})");
  EXPECT_EQ(m.shared_expert_intermediate, m.intermediate); // shared_mlp in every layer
  EXPECT_EQ(m.qk_norm, "head_rms");
}

// Nemotron's and dots1's config classes leave num_key_value_heads, or the expert counts, None,
// from which transformers builds nothing: a config.json gives them.
TEST(ModelTypes, NemotronAndDotsWantTheirCounts) {
  std::string e = error_of(R"({"model_type": "nemotron"})");
  EXPECT_NE(e.find("'num_key_value_heads' is missing"), std::string::npos) << e;
  e = error_of(R"({"model_type": "dots1", "n_shared_experts": 2, "num_experts_per_tok": 6})");
  EXPECT_NE(e.find("'n_routed_experts' is missing"), std::string::npos) << e;
  e = error_of(R"({"model_type": "dots1", "n_routed_experts": 8, "num_experts_per_tok": 2})");
  EXPECT_NE(e.find("'n_shared_experts' is missing"), std::string::npos) << e;
  ModelArch m = parse(R"({"model_type": "nemotron", "num_key_value_heads": 8})");
  EXPECT_EQ(m.norm, "layernorm");
  EXPECT_FALSE(m.gated_mlp);
  EXPECT_EQ(m.head_dim, 6144 / 48);
}

// Qwen3-Next and Qwen3.5: gated DeltaNet layers where layer_types says linear_attention, else all
// but every full_attention_interval-th; their linears (in_proj_qkvz and in_proj_ba, or Qwen3.5's
// four) in place of attention's, whose q_proj carries the output gate.
TEST(ModelTypes, GatedDeltaNetLayers) {
  ModelArch next = parse(R"({"model_type": "qwen3_next"})");
  EXPECT_EQ(next.linear_attention_layers, 36);
  EXPECT_TRUE(next.attention_output_gate);
  ModelArch every2 = parse(R"({"model_type": "qwen3_next", "full_attention_interval": 2})");
  EXPECT_EQ(every2.linear_attention_layers, 24);
  ModelArch listed = parse(R"({"model_type": "qwen3_5_text", "num_hidden_layers": 3,
      "layer_types": ["full_attention", "linear_attention", "full_attention"]})");
  EXPECT_EQ(listed.linear_attention_layers, 1);
  EXPECT_EQ(listed.sliding_layers, 0);
  auto by_role = linears_by_role(listed);
  EXPECT_EQ(by_role["q"].out, 2 * 16 * 256); // the output gate
  EXPECT_EQ(by_role["q"].count, 2);
  EXPECT_EQ(by_role["lin_qkv"].out, 2 * 16 * 128 + 32 * 128);
  EXPECT_EQ(by_role["lin_z"].out, 32 * 128);
  EXPECT_EQ(by_role["lin_b"].out, 32);
  EXPECT_EQ(by_role["lin_out"].in, 32 * 128);
  EXPECT_EQ(by_role["lin_out"].count, 1);
  for (const auto &l : linear_layers(next))
    EXPECT_NE(l.role, "lin_qkv") << "Qwen3-Next fuses q, k, v and z";
  // linear_attention is a layer kind only of these types; other entries stay refused.
  EXPECT_TRUE(refused(R"({"model_type": "qwen3", "num_hidden_layers": 2,
                         "layer_types": ["linear_attention", "full_attention"]})",
                      "entry \"linear_attention\" is not"));
  EXPECT_TRUE(refused(R"({"model_type": "qwen3_next", "num_hidden_layers": 2,
                         "layer_types": ["mamba", "full_attention"]})",
                      "entry \"mamba\" is not full_attention, sliding_attention, "
                      "linear_attention"));
  EXPECT_TRUE(refused(R"({"model_type": "qwen3_next", "layer_types": "linear"})",
                      "'layer_types' must be a list"));
}

// Granite 4.0's Mamba-2 mixers: where layer_types says mamba (or linear_attention), every layer
// without it; mamba_d_head "auto" is the mixer's width over its heads; in_proj and out_proj in
// place of attention's linears.
TEST(ModelTypes, GraniteHybridMambaLayers) {
  ModelArch all = parse(R"({"model_type": "granitemoehybrid"})");
  EXPECT_EQ(all.linear_attention_layers, 32);
  EXPECT_EQ(all.mamba_head_dim, 2 * 4096 / 128);
  ModelArch some = parse(R"({"model_type": "granitemoehybrid", "num_hidden_layers": 3,
      "mamba_d_head": "auto", "layer_types": ["mamba", "attention", "mamba"]})");
  EXPECT_EQ(some.linear_attention_layers, 2);
  auto by_role = linears_by_role(some);
  EXPECT_EQ(by_role["q"].count, 1);
  EXPECT_EQ(by_role["mamba_in"].module, "in_proj");
  EXPECT_EQ(by_role["mamba_in"].out, 8192 + (8192 + 2 * 256) + 128);
  EXPECT_EQ(by_role["mamba_out"].in, 8192);
  EXPECT_EQ(by_role["mamba_out"].count, 2);
  EXPECT_EQ(by_role["gate_up"].module, "input_linear"); // the shared MLP
  // No experts: a dense decoder whose MLP is the shared one.
  ModelArch dense = parse(R"({"model_type": "granitemoehybrid", "num_local_experts": 0})");
  EXPECT_EQ(dense.family, ModelFamily::decoder);
  EXPECT_EQ(dense.intermediate, 1024);
  // transformers writes Mamba-2's time_step_limit as [0.0, Infinity] (Python's json.dumps).
  EXPECT_EQ(parse(R"({"model_type": "granitemoehybrid", "time_step_limit": [0.0, Infinity]})")
                .linear_attention_layers,
            32);
  EXPECT_TRUE(refused(R"({"model_type": "granitemoehybrid", "mamba_d_head": 48})",
                      "'mamba_d_head' = 48 x 128 heads must be mamba_expand x hidden_size = 8192"));
  EXPECT_TRUE(refused(R"({"model_type": "granitemoehybrid", "mamba_n_heads": 100})",
                      "'mamba_n_heads' = 100 must divide mamba_expand x hidden_size = 8192"));
  EXPECT_TRUE(refused(R"({"model_type": "granitemoehybrid", "num_hidden_layers": 2,
                         "layer_types": ["ssm", "attention"]})",
                      "entry \"ssm\" is not full_attention, sliding_attention, linear_attention, "
                      "mamba, attention"));
}

// LFM2: gated short convolutions where layer_types says conv, else outside full_attn_idxs (all
// attention without either); the MLP is 2/3 of block_ff_dim, scaled and rounded up.
TEST(ModelTypes, Lfm2ConvolutionsAndFeedForward) {
  ModelArch plain = parse(R"({"model_type": "lfm2"})");
  EXPECT_EQ(plain.linear_attention_layers, 0);
  EXPECT_EQ(plain.intermediate, 8192); // int(2 x 12288 / 3), a multiple of 256
  ModelArch small = parse(R"({"model_type": "lfm2", "num_hidden_layers": 16,
                              "full_attn_idxs": [2, 5, 8, 10, 12, 14, 99]})");
  EXPECT_EQ(small.linear_attention_layers, 10);
  EXPECT_TRUE(small.short_conv);
  auto by_role = linears_by_role(small);
  EXPECT_EQ(by_role["conv_in"].out, 3 * 2560);
  EXPECT_EQ(by_role["conv_in"].count, 10);
  EXPECT_EQ(by_role["q"].count, 6);
  EXPECT_EQ(by_role["gate"].module, "w1");
  EXPECT_EQ(parse(R"({"model_type": "lfm2", "block_ff_dim": 1000,
                      "block_ffn_dim_multiplier": 1.3})")
                .intermediate,
            1024); // int(1.3 x 666) = 865, up to 1024
  EXPECT_TRUE(refused(R"({"model_type": "lfm2", "block_ffn_dim_multiplier": null})",
                      "'block_ffn_dim_multiplier' must be a number above 0"));
  EXPECT_TRUE(refused(R"({"model_type": "lfm2", "num_hidden_layers": 2,
                         "layer_types": ["mamba", "conv"]})",
                      "entry \"mamba\" is not full_attention, sliding_attention, conv"));
}

// InternVL's sides come as [side, side] and its projector takes int(1 / downsample_ratio)^2
// features; anything else is refused naming the field.
TEST(ModelTypes, InternVlSidesAndDownsampleRatio) {
  ModelArch m = parse(R"({"model_type": "internvl"})");
  ASSERT_EQ(m.towers.size(), 1u);
  EXPECT_EQ(m.towers[0].image_size, 448);
  EXPECT_EQ(m.towers[0].patch_size, 14);
  using Shape = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(m.projector_linears, (std::vector<Shape>{{4 * 1024, 4096}, {4096, 4096}}));
  EXPECT_TRUE(refused(R"({"model_type": "internvl", "vision_config": {"image_size": [448, 224]}})",
                      "'image_size' must be a side or [side, side]"));
  EXPECT_TRUE(refused(R"({"model_type": "internvl", "downsample_ratio": 0.3})",
                      "'downsample_ratio' must be 1/n"));
  EXPECT_TRUE(refused(R"({"model_type": "internvl", "downsample_ratio": "half"})",
                      "'downsample_ratio' must be an integer"));
}

// Llama 3.2 Vision: the text model's cross-attention layers are counted apart (a text-only batch
// skips them), its embedding has 8 rows more than its head, and the vision model's global layers
// follow its local ones.
TEST(ModelTypes, MllamaCrossAttentionAndTiles) {
  ModelArch m = parse(R"({"model_type": "mllama"})");
  EXPECT_EQ(m.layers, 40);
  EXPECT_EQ(m.cross_attention_layers, 8);
  EXPECT_EQ(m.embed_extra_rows, 8);
  EXPECT_FALSE(m.tied_embeddings);
  ASSERT_EQ(m.towers.size(), 1u);
  const ModelArch &v = m.towers[0];
  EXPECT_EQ(v.layers, 32 + 8);
  EXPECT_EQ(v.gated_layers, 8);
  // 9 aspect-ratio rows x 4 tiles x (32 x 32 + 1) patches x 1280, two tile tables and 3 gates.
  EXPECT_EQ(v.tile_params, 9 * 4 * 1025 * 1280 + 2 * (9 * 4 * 1280 + 1) + 1);
  using Shape = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(m.projector_linears, (std::vector<Shape>{{7680, 4096}}));
  EXPECT_EQ(parse(R"({"model_type": "mllama_text_model",
                      "cross_attention_layers": null})")
                .cross_attention_layers,
            8);
  // Bounded knobs whose product would overflow the count are refused, naming a field.
  EXPECT_TRUE(refused(R"({"model_type": "mllama_vision_model", "image_size": 65536,
                          "patch_size": 1, "max_num_tiles": 1024})",
                      "'max_num_tiles' = 1024 tiles of 4294967297 patches each"));
  EXPECT_TRUE(refused(R"({"model_type": "granitemoehybrid", "mamba_expand": 1000})",
                      "'mamba_expand' must be at most 16"));
  EXPECT_TRUE(refused(R"({"model_type": "qwen3_next", "linear_value_head_dim": 1048576})",
                      "'linear_value_head_dim' must be at most 16384"));
  EXPECT_TRUE(refused(R"({"model_type": "mllama_text_model", "cross_attention_layers": 3})",
                      "'cross_attention_layers' must be a list of layer indices"));
  EXPECT_TRUE(refused(R"({"model_type": "mllama_text_model",
                          "cross_attention_layers": [3, "eight"]})",
                      "'cross_attention_layers' must be a list of layer indices"));
}

// Aya Vision's projector: a LayerNorm over 2 x 2 pixel-shuffled SigLIP features, linear_1 to
// alignment_intermediate_size (the text hidden without it), a SwiGLU halving it, linear_2.
TEST(ModelTypes, AyaVisionSwiGluProjector) {
  // A vision_config given takes SigLIP's own defaults (768 wide) for what it leaves out.
  ModelArch m = parse(R"({"model_type": "aya_vision", "alignment_intermediate_size": 28672,
                          "vision_config": {"num_attention_heads": 16}})");
  using Shape = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(m.projector_linears, (std::vector<Shape>{{4 * 768, 28672}, {14336, 8192}}));
  EXPECT_EQ(m.projector_params, 4 * 768 * 28672 + 14336 * 8192 + 28672 + 8192 + 2 * 4 * 768);
  ModelArch plain = parse(R"({"model_type": "aya_vision",
                              "vision_config": {"num_attention_heads": 16}})");
  EXPECT_EQ(plain.projector_linears, (std::vector<Shape>{{4 * 768, 8192}, {4096, 8192}}));
  // The class defaults give the tower 14 heads of 1152, which transformers refuses too.
  EXPECT_TRUE(refused(R"({"model_type": "aya_vision"})", "num_attention_heads"));
  EXPECT_TRUE(refused(R"({"model_type": "aya_vision", "alignment_intermediate_size": 1001,
                          "vision_config": {"num_attention_heads": 16}})",
                      "'alignment_intermediate_size' = 1001 must be even"));
}

// OLMo 1's LayerNorms have no weight or bias: the same layers as OLMo-2 without any norm weight.
TEST(ModelTypes, OlmoNormsHaveNoParameters) {
  ModelArch m = parse(R"({"model_type": "olmo"})");
  EXPECT_EQ(m.norm, "none");
  ModelArch two = parse(R"({"model_type": "olmo2"})");
  const std::int64_t norms = 2 * 32 * 4096 + 4096; // two per layer and the final one
  const std::int64_t qk = 32 * 2 * 4096;           // OLMo-2's q_norm and k_norm
  EXPECT_EQ(derive_params(two) - derive_params(m), norms + qk);
}

// Gemma 2 and VaultGemma softcap the attention logits unless the config holds null (the class
// default is 50.0); eager attention then keeps tanh's output (fit's memory model).
TEST(ModelTypes, AttentionSoftcappingUnlessNull) {
  EXPECT_TRUE(parse(R"({"model_type": "vaultgemma"})").attn_softcap);
  EXPECT_TRUE(
      parse(R"({"model_type": "vaultgemma", "attn_logit_softcapping": 30.0})").attn_softcap);
  EXPECT_FALSE(
      parse(R"({"model_type": "vaultgemma", "attn_logit_softcapping": null})").attn_softcap);
  EXPECT_FALSE(parse(R"({"model_type": "gemma"})").attn_softcap);
  const char *gemma2 = R"({"model_type": "gemma2", "hidden_size": 2304, "intermediate_size": 9216,
      "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
      "head_dim": 256, "vocab_size": 256000)";
  EXPECT_TRUE(parse(std::string(gemma2) + "}").attn_softcap);
  EXPECT_FALSE(parse(std::string(gemma2) + R"(, "attn_logit_softcapping": null})").attn_softcap);
  EXPECT_TRUE(refused(std::string(gemma2) + R"(, "attn_logit_softcapping": true})",
                      "'attn_logit_softcapping' must be a number or null"));
  // final_logit_softcapping: Gemma 2 and VaultGemma 30.0 by default, Gemma 3 null.
  EXPECT_TRUE(parse(std::string(gemma2) + "}").final_softcap);
  EXPECT_FALSE(parse(std::string(gemma2) + R"(, "final_logit_softcapping": null})").final_softcap);
  EXPECT_TRUE(parse(R"({"model_type": "vaultgemma"})").final_softcap);
  EXPECT_FALSE(parse(R"({"model_type": "gemma3_text"})").final_softcap);
  EXPECT_TRUE(
      parse(R"({"model_type": "gemma3_text", "final_logit_softcapping": 30.0})").final_softcap);
  EXPECT_TRUE(parse(R"({"model_type": "gemma3", "text_config": {"final_logit_softcapping": 30.0}})")
                  .final_softcap);
  EXPECT_TRUE(refused(R"({"model_type": "gemma3_text", "final_logit_softcapping": "30"})",
                      "'final_logit_softcapping' must be a number or null"));
  // Two RMSNorms per layer where Gemma 2 has four.
  EXPECT_EQ(derive_params(parse(std::string(gemma2) + "}")) -
                derive_params(parse(R"({"model_type": "vaultgemma"})")),
            26 * 2 * 2304);
}

TEST(ModelTypes, ErrorsNameTheConfigField) {
  EXPECT_TRUE(refused(R"({"model_type": "qwen3", "hidden_size": "big"})", "'hidden_size'"));
  EXPECT_TRUE(refused(R"({"model_type": "phi", "num_attention_heads": 7, "hidden_size": 100})",
                      "num_attention_heads"));
  EXPECT_TRUE(refused(R"({"model_type": "gemma", "num_key_value_heads": 5})", "must divide"));
  EXPECT_TRUE(refused(R"({"model_type": "opt", "num_hidden_layers": 100000})", "at most"));
  EXPECT_TRUE(refused(R"({"model_type": "vaultgemma", "attn_logit_softcapping": "50"})",
                      "'attn_logit_softcapping' must be a number or null"));
  // An unknown model_type lists the types dlrig knows.
  std::string e = error_of(R"({"model_type": "mamba"})");
  EXPECT_NE(e.find("qwen3"), std::string::npos) << e;
  EXPECT_NE(e.find("whisper"), std::string::npos) << e;
}

// ---- Heads: architectures decides the count and the logits --------------------------------------

TEST(ModelHeads, MaskedLmHasNoPoolerAndVocabularyLogits) {
  auto mlm = parse(fixture("bert-base-uncased"));
  EXPECT_EQ(mlm.head_class, "BertForMaskedLM");
  EXPECT_FALSE(mlm.pooler);
  EXPECT_TRUE(mlm.mlm_head);
  EXPECT_EQ(logits_width(mlm), 30522);
  // The same config without architectures is BertModel: a pooler and no logits.
  auto base = parse(R"({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
    "max_position_embeddings": 512, "type_vocab_size": 2})");
  EXPECT_TRUE(base.pooler);
  EXPECT_EQ(logits_width(base), 0);
  EXPECT_EQ(derive_params(base), 109482240);
}

TEST(ModelHeads, ClassifiersTakeTheirLabels) {
  auto sst2 = parse(fixture("distilbert-sst2"));
  EXPECT_EQ(sst2.num_labels, 2);
  EXPECT_EQ(logits_width(sst2), 2);
  // ViTForImageClassification without id2label: PretrainedConfig's 2 labels, not ViTModel.
  auto vit = parse(fixture("vit-classifier-without-labels"));
  EXPECT_FALSE(vit.pooler);
  EXPECT_EQ(vit.num_labels, 2);
  auto seq = parse(fixture("llama-3.2-1b-seqcls"));
  EXPECT_FALSE(seq.lm_head);
  EXPECT_EQ(seq.num_labels, 3);
  EXPECT_EQ(logits_width(seq), 3);
}

TEST(ModelHeads, DecoderBaseModelHasNoHead) {
  auto lm = parse(fixture("qwen3-8b"));
  std::string text = fixture("qwen3-8b");
  auto pos = text.find("Qwen3ForCausalLM");
  text.replace(pos, std::string("Qwen3ForCausalLM").size(), "Qwen3Model");
  auto base = parse(text);
  EXPECT_EQ(derive_params(lm) - derive_params(base), 151936 * 4096);
  EXPECT_EQ(logits_width(base), 0);
  EXPECT_EQ(logits_width(lm), 151936);
}

TEST(ModelHeads, AnUnknownHeadIsNamed) {
  std::string e = error_of(R"({"model_type": "gpt2", "architectures": ["GPT2DoubleHeadsModel"],
    "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "vocab_size": 50257})");
  EXPECT_NE(e.find("GPT2DoubleHeadsModel"), std::string::npos) << e;
  EXPECT_NE(e.find("ForCausalLM"), std::string::npos) << e;
  EXPECT_TRUE(refused(R"({"model_type": "qwen3", "architectures": "Qwen3ForCausalLM"})",
                      "'architectures'"));
}

TEST(ModelHeads, LinearLayersFollowTheHead) {
  auto seq = parse(fixture("llama-3.2-1b-seqcls"));
  bool score = false, lm = false;
  for (const auto &l : linear_layers(seq)) {
    score |= l.role == "classifier" && l.out == 3 && !l.bias;
    lm |= l.role == "lm_head";
  }
  EXPECT_TRUE(score);
  EXPECT_FALSE(lm);
  // Fused projections keep their module names (PEFT target_modules).
  auto neox = parse(fixture("pythia-160m"));
  bool fused = false;
  for (const auto &l : linear_layers(neox))
    fused |= l.role == "qkv" && l.module == "query_key_value" && l.out == 3 * 768;
  EXPECT_TRUE(fused);
  // GraniteMoeShared's shared MLP: one input_linear of gate and up, then output_linear.
  auto granite = parse(R"({"model_type": "granitemoeshared", "shared_intermediate_size": 1024})");
  bool gate_up = false, down = false;
  for (const auto &l : linear_layers(granite)) {
    gate_up |= !l.routed && l.role == "gate_up" && l.module == "input_linear" && l.out == 2048 &&
               l.count == 32;
    down |= !l.routed && l.role == "down" && l.module == "output_linear" && l.in == 1024;
  }
  EXPECT_TRUE(gate_up);
  EXPECT_TRUE(down);
}

} // namespace
} // namespace dlrig::model

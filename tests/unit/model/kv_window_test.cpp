// The sliding-window layers of a decoder's KV cache (data/model_types.json "kv_window"): which
// layers slide and over how many tokens, as transformers' own get_layer_types_and_kwargs derives
// them from the same config (transformers 5.25.0; perf/kv_cache.py measures the cache these
// configs keep, on the CPU).
#include "dlrig/model/model.hpp"
#include "unit/model/parse.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dlrig::model {
namespace {

using test::error_of;
using test::parse;

// A small config of one type: 64 wide, 16-wide heads; the layer count of the type's config class
// (the built-in readers need it given) unless `more` gives one.
std::string tiny(const std::string &type, const std::string &more = "") {
  static const std::map<std::string, int> layers{{"llama", 32}, {"mistral", 32}, {"mixtral", 32},
                                                 {"phi3", 32},  {"gemma2", 26},  {"qwen2", 32}};
  std::string text = R"({"model_type": ")" + type +
                     R"(", "hidden_size": 64, "intermediate_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128)";
  if (layers.contains(type) && more.find("num_hidden_layers") == std::string::npos)
    text += ", \"num_hidden_layers\": " + std::to_string(layers.at(type));
  return text + (more.empty() ? "" : ", " + more) + "}";
}

struct Window {
  std::int64_t sliding_layers, sliding_window;
};
Window window_of(const std::string &text) {
  ModelArch m = parse(text);
  return {m.sliding_layers, m.sliding_window};
}

#define EXPECT_WINDOW(text, layers, window)                                                        \
  do {                                                                                             \
    Window w_ = window_of(text);                                                                   \
    EXPECT_EQ(w_.sliding_layers, layers) << text;                                                  \
    EXPECT_EQ(w_.sliding_window, window) << text;                                                  \
  } while (0)

TEST(KvWindow, EachTypeSlidesTheLayersTransformersSlides) {
  // Counts of "sliding_attention" in transformers' layer types for the same configs.
  EXPECT_WINDOW(tiny("llama"), 0, 0);
  EXPECT_WINDOW(tiny("mistral"), 32, 4096); // MistralConfig's default window
  EXPECT_WINDOW(tiny("mistral", R"("sliding_window": null)"), 0, 0);
  EXPECT_WINDOW(tiny("mistral", R"("sliding_window": 16)"), 32, 16);
  EXPECT_WINDOW(tiny("mixtral", R"("num_local_experts": 4, "num_experts_per_tok": 2)"), 0, 0);
  EXPECT_WINDOW(tiny("phi3"), 0, 0);
  EXPECT_WINDOW(tiny("phi3", R"("sliding_window": 2047)"), 32, 2047);
  EXPECT_WINDOW(tiny("gemma2"), 13, 4096); // every other layer of 26
  EXPECT_WINDOW(tiny("gemma3_text", R"("sliding_window": 512)"), 22, 512); // 5 of every 6
  EXPECT_WINDOW(tiny("gemma3_text", R"("sliding_window_pattern": 4)"), 20, 4096);
  EXPECT_WINDOW(tiny("gpt_oss", R"("num_local_experts": 4)"), 18, 128);
  EXPECT_WINDOW(tiny("exaone4"), 24, 4096); // 3 of every 4 of 32
  EXPECT_WINDOW(tiny("exaone4", R"("sliding_window": null)"), 0, 0);
  EXPECT_WINDOW(tiny("olmo3"), 24, 4096);     // 3 of every 4 of 32
  EXPECT_WINDOW(tiny("ministral"), 32, 4096); // every layer
  EXPECT_WINDOW(tiny("cohere2", R"("sliding_window_pattern": 2)"), 20, 4096);
  // dots1: the layers from max_window_layers on slide whenever sliding_window is not null; the
  // class defaults (62 of 62) slide none.
  const std::string dots = R"("n_routed_experts": 4, "n_shared_experts": 1,
                              "num_experts_per_tok": 2, "num_hidden_layers": 3)";
  EXPECT_WINDOW(tiny("dots1", dots), 0, 0);
  EXPECT_WINDOW(tiny("dots1", dots + R"(, "max_window_layers": 1, "sliding_window": 16)"), 2, 16);
  EXPECT_WINDOW(tiny("dots1", dots + R"(, "max_window_layers": 1, "sliding_window": null)"), 0, 0);
}

TEST(KvWindow, QwenSlidesOnlyWithUseSlidingWindow) {
  EXPECT_WINDOW(tiny("qwen2", R"("sliding_window": 131072)"), 0, 0);
  // Layers from max_window_layers (28 by default) on: 4 of 32.
  EXPECT_WINDOW(tiny("qwen2", R"("use_sliding_window": true, "sliding_window": 16)"), 4, 16);
  EXPECT_WINDOW(tiny("qwen3", R"("use_sliding_window": true, "max_window_layers": 20)"), 12, 4096);
  // Qwen2-MoE: the even layers below max_window_layers (28): 12 of 24.
  EXPECT_WINDOW(tiny("qwen2_moe", R"("use_sliding_window": true, "num_experts": 4,
                                    "moe_intermediate_size": 32, "sliding_window": 16)"),
                12, 16);
  EXPECT_WINDOW(tiny("qwen3_moe", R"("use_sliding_window": true, "num_experts": 4,
                                    "num_experts_per_tok": 2, "moe_intermediate_size": 32)"),
                24, 4096);
  EXPECT_WINDOW(tiny("qwen3_moe", R"("num_experts": 4, "num_experts_per_tok": 2,
                                    "moe_intermediate_size": 32, "sliding_window": 16)"),
                0, 0);
}

// Qwen2-VL's text model slides as Qwen2.5-VL's, from max_window_layers (80 by default), only with
// use_sliding_window; its hub configs are flat.
TEST(KvWindow, Qwen2VlReadsItsFlatTextFields) {
  EXPECT_WINDOW(tiny("qwen2_vl", R"("num_hidden_layers": 3, "sliding_window": 16)"), 0, 0);
  EXPECT_WINDOW(tiny("qwen2_vl", R"("num_hidden_layers": 3, "sliding_window": 16,
                                   "use_sliding_window": true, "max_window_layers": 1)"),
                2, 16);
}

TEST(KvWindow, SmolLm3SlidesItsLayersWithoutRope) {
  EXPECT_WINDOW(tiny("smollm3", R"("sliding_window": 16)"), 0, 0);
  // Every fourth layer has no RoPE (no_rope_layer_interval): 9 of 36.
  EXPECT_WINDOW(tiny("smollm3", R"("use_sliding_window": true, "sliding_window": 16)"), 9, 16);
  EXPECT_WINDOW(tiny("smollm3", R"("use_sliding_window": true, "sliding_window": 16,
                                  "num_hidden_layers": 4, "no_rope_layers": [1, 0, 0, 1])"),
                2, 16);
}

TEST(KvWindow, Llama4ChunkedLayersKeepTheChunk) {
  // Chunked attention where no_rope_layers holds 1: 3 of every 4 layers (36 of 48); the cache
  // keeps attention_chunk_size tokens there (perf/kv_cache.py).
  const std::string moe = R"("num_local_experts": 4, "intermediate_size_mlp": 64)";
  EXPECT_WINDOW(tiny("llama4_text", moe), 36, 8192);
  EXPECT_EQ(parse(tiny("llama4_text", moe)).chunked_layers, 36);
  EXPECT_EQ(parse(tiny("llama4_text", moe + R"(, "num_hidden_layers": 2, "attention_chunk_size":
      16, "layer_types": ["chunked_attention", "full_attention"])"))
                .chunked_layers,
            1);
  EXPECT_EQ(parse(tiny("gemma2")).chunked_layers, 0);
  EXPECT_WINDOW(tiny("llama4_text", moe + R"(, "attention_chunk_size": null)"), 0, 0);
  EXPECT_WINDOW(tiny("llama4_text", moe + R"(, "num_hidden_layers": 4, "attention_chunk_size": 16,
                                          "no_rope_layers": [1, 0, 0, 1])"),
                2, 16);
  // An empty no_rope_layers is as absent (Llama4TextConfig derives it).
  EXPECT_WINDOW(tiny("llama4_text", moe + R"(, "no_rope_layers": [])"), 36, 8192);
  // Saved with layer_types, any type: chunked_attention layers keep attention_chunk_size.
  EXPECT_WINDOW(tiny("llama", R"("num_hidden_layers": 2, "attention_chunk_size": 32,
      "layer_types": ["chunked_attention", "full_attention"])"),
                1, 32);
  EXPECT_EQ(error_of(tiny("llama", R"("num_hidden_layers": 1,
                                      "layer_types": ["chunked_attention"])")),
            "config.json: config field 'attention_chunk_size' is missing or null but layer_types "
            "has 1 chunked_attention layers; give the chunk size");
  EXPECT_EQ(error_of(tiny("llama", R"("num_hidden_layers": 2, "attention_chunk_size": 32,
      "sliding_window": 16, "layer_types": ["chunked_attention", "sliding_attention"])")),
            "config.json: config field 'attention_chunk_size' = 32 differs from sliding_window = "
            "16; dlrig sizes one window");
}

TEST(KvWindow, LayerTypesDecideForEveryType) {
  // transformers' cache reads layer_types (and a sliding_window) whatever the model type.
  EXPECT_WINDOW(tiny("llama", R"("num_hidden_layers": 3, "sliding_window": 9,
      "layer_types": ["full_attention", "sliding_attention", "sliding_attention"])"),
                2, 9);
  EXPECT_WINDOW(tiny("llama", R"("sliding_window": 9)"), 32, 9);
  EXPECT_WINDOW(tiny("gemma3_text", R"("num_hidden_layers": 2,
      "layer_types": ["full_attention", "full_attention"])"),
                0, 0);
}

TEST(KvWindow, AnImageTextModelReadsItsTextConfig) {
  ModelArch m = parse(R"({"model_type": "gemma3", "text_config": {"hidden_size": 64,
      "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
      "vocab_size": 128, "sliding_window": 16}, "vision_config": {"hidden_size": 32,
      "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
      "image_size": 56, "patch_size": 14}})");
  EXPECT_EQ(m.sliding_layers, 22);
  EXPECT_EQ(m.sliding_window, 16);
}

TEST(KvWindow, BadLayerTypesAndWindowsAreNamed) {
  EXPECT_EQ(error_of(tiny("llama", R"("num_hidden_layers": 2, "layer_types": ["full_attention"])")),
            "config.json: config field 'layer_types' has 1 entries; the model has 2 layers");
  EXPECT_EQ(
      error_of(tiny("llama", R"("num_hidden_layers": 1, "layer_types": ["linear_attention"])")),
      "config.json: config field 'layer_types' entry \"linear_attention\" is not "
      "full_attention, sliding_attention or chunked_attention, the layers dlrig sizes");
  EXPECT_EQ(error_of(tiny("llama", R"("num_hidden_layers": 1, "layer_types": "sliding")")),
            "config.json: config field 'layer_types' must be a list of strings, got the string "
            "\"sliding\"");
  EXPECT_EQ(error_of(tiny("mistral", R"("num_hidden_layers": 1, "sliding_window": null,
                                        "layer_types": ["sliding_attention"])")),
            "config.json: config field 'sliding_window' is null but layer_types has 1 "
            "sliding_attention layers; give the window");
  EXPECT_EQ(error_of(tiny("gemma3_text", R"("sliding_window": "4096")")),
            "config.json: config field 'sliding_window' must be an integer, got the string "
            "\"4096\"");
  EXPECT_EQ(error_of(tiny("gemma3_text", R"("sliding_window_pattern": 0)")),
            "config.json: config field 'sliding_window_pattern' must be at least 1, got 0");
  EXPECT_EQ(error_of(tiny("smollm3", R"("use_sliding_window": true, "sliding_window": 16,
                                        "no_rope_layers": [1, 0])")),
            "config.json: config field 'no_rope_layers' must be a list of 36 integers, one per "
            "layer");
}

TEST(KvWindow, CatalogModels) {
  auto find = [](const char *name) {
    for (const auto &m : load_model_catalog())
      if (m.name == name)
        return m;
    throw std::runtime_error(std::string("no catalog model ") + name);
  };
  EXPECT_EQ(find("mistral-7b").sliding_layers, 32);
  EXPECT_EQ(find("mistral-7b").sliding_window, 4096);
  EXPECT_EQ(find("gemma-2-9b").sliding_layers, 21); // 42 layers, every other one
  EXPECT_EQ(find("llama-3.1-8b").sliding_layers, 0);
}

} // namespace
} // namespace dlrig::model

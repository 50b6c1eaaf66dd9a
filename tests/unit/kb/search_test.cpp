#include "dlrig/kb/report.hpp"
#include "dlrig/kb/search.hpp"

#include <gtest/gtest.h>

namespace dlrig::kb {
namespace {

TEST(KbSearch, EditDistance) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("4090", "4090"), 0u);
  EXPECT_EQ(edit_distance("4009", "4090"), 1u); // a swap of neighbours is one typo
}

TEST(KbSearch, NearestNamesPreferTheClosestStretch) {
  std::vector<std::string> names = {"GeForce RTX 4090", "NVIDIA H100 SXM5", "GeForce RTX 3060 12GB",
                                    "NVIDIA L4"};
  auto n = nearest_names(names, "rtx 4009", 2);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0], "GeForce RTX 4090");
  EXPECT_EQ(nearest_names(names, "h10", 1), std::vector<std::string>{"NVIDIA H100 SXM5"});
}

TEST(KbSearch, ParseSizeGb) {
  EXPECT_DOUBLE_EQ(*parse_size_gb("24GB"), 24);
  EXPECT_DOUBLE_EQ(*parse_size_gb(" 24 gb "), 24);
  EXPECT_DOUBLE_EQ(*parse_size_gb("80"), 80);
  // A GPU vendor's "24 GB" is 24 GiB (memory_bytes = memory_gb x 2^30): 24GiB selects it too.
  EXPECT_DOUBLE_EQ(*parse_size_gb("24GiB"), 24);
  EXPECT_DOUBLE_EQ(*parse_size_gb("80 gib"), 80);
  EXPECT_FALSE(parse_size_gb("lots"));
  EXPECT_FALSE(parse_size_gb("GB"));
  EXPECT_FALSE(parse_size_gb("-3GB"));
  EXPECT_FALSE(parse_size_gb("24TB"));
  EXPECT_FALSE(parse_size_gb("nanGB")); // strtod's words for numbers that are none
  EXPECT_FALSE(parse_size_gb("inf"));
  EXPECT_FALSE(parse_size_gb("1e400GB"));
}

TEST(KbSearch, UsageErrors) {
  const auto &kb = builtin();
  EXPECT_FALSE(kb_search(kb, {"dogs", "", std::nullopt, ""}));
  EXPECT_FALSE(kb_search(kb, {"gpus", "", std::nullopt, "colour"}));
  EXPECT_FALSE(kb_search(kb, {"cuda", "", 24.0, ""}));
  EXPECT_FALSE(kb_search(kb, {"torch", "", std::nullopt, "bf16"}));
}

TEST(KbSearch, GpuListFiltersAndSorts) {
  auto v = kb_search(builtin(), {"gpus", "nvidia", 80.0, "fp32"});
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_GT(v->matches, 3u);
  auto json = kb_json(*v);
  const auto &items = json["items"];
  for (std::size_t i = 1; i < items.size(); ++i)
    if (!items[i]["fp32_flops"].is_null()) {
      EXPECT_LE(items[i]["fp32_flops"].get<double>(), items[i - 1]["fp32_flops"].get<double>());
    }
  for (const auto &g : items) {
    EXPECT_EQ(g["vendor"], "NVIDIA");
    EXPECT_GE(g["memory_gb"].get<double>(), 80);
  }
  EXPECT_EQ(v->gpus.size(), v->matches);
  auto tables = kb_tables(*v);
  EXPECT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].rows.size(), v->matches);
}

TEST(KbSearch, NoMatchGivesSuggestions) {
  auto v = kb_search(builtin(), {"gpus", "radeon 7900 xtz", std::nullopt, ""});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->matches, 0u);
  ASSERT_FALSE(v->suggestions.empty());
  EXPECT_EQ(v->suggestions[0], "AMD Radeon RX 7900 XTX");
  EXPECT_EQ(kb_json(*v)["suggestions"][0], "AMD Radeon RX 7900 XTX");
}

TEST(KbSearch, ModelsCarryDerivedParams) {
  KnowledgeBase kb;
  ModelArch m;
  m.name = "tiny-llama-test";
  m.family = ModelFamily::decoder;
  m.hidden = 64;
  m.layers = 2;
  m.heads = 4;
  m.kv_heads = 2;
  m.intermediate = 128;
  m.vocab = 100;
  kb.models.push_back(m);
  auto v = kb_search(kb, {"models", "llama", std::nullopt, ""});
  ASSERT_TRUE(v);
  ASSERT_EQ(v->matches, 1u);
  auto json = kb_json(*v);
  const auto &item = json["items"][0];
  ASSERT_TRUE(item.contains("params"));
  auto derived = derive_params(m);
  if (derived > 0) {
    EXPECT_EQ(item["params"].get<std::int64_t>(), derived);
  } else {
    EXPECT_TRUE(item["params"].is_null()); // no derivation yet: unknown, never 0
  }
  EXPECT_EQ(kb_tables(*v)[0].rows[0][4], "4/2"); // heads/kv heads
  auto none = kb_search(kb, {"models", "bert", std::nullopt, ""});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->matches, 0u);
  EXPECT_EQ(none->suggestions, std::vector<std::string>{"tiny-llama-test"});
}

TEST(KbSearch, TorchFilterByVersionAndVariant) {
  auto v = kb_search(builtin(), {"torch", "2.1", std::nullopt, ""});
  ASSERT_TRUE(v);
  const auto v_json = kb_json(*v);
  for (const auto &item : v_json["items"])
    EXPECT_EQ(item["version"].get<std::string>().rfind("2.1.", 0), 0u) << item["version"];
  auto one = kb_search(builtin(), {"torch", "2.2.0", std::nullopt, ""});
  ASSERT_TRUE(one);
  EXPECT_GE(one->matches, 3u);
  const auto one_json = kb_json(*one);
  for (const auto &item : one_json["items"])
    EXPECT_EQ(item["version"], "2.2.0"); // that patch release, not 2.2.1 or 2.2.2
  auto cu = kb_search(builtin(), {"torch", "cu118", std::nullopt, ""});
  ASSERT_TRUE(cu);
  EXPECT_GE(cu->matches, 5u);
  const auto cu_json = kb_json(*cu);
  for (const auto &item : cu_json["items"])
    EXPECT_EQ(item["cuda"], "11.8");
}

// What users type: nvcc's targets for a capability, a wheel tag for a CUDA version, the product's
// own name before a version, and a Hugging Face id for a model.
TEST(KbSearch, TheFormsUsersWriteFindTheirRows) {
  const auto &kb = builtin();
  for (const char *target : {"sm_90", "sm90", "SM_90", "compute_90", "sm_90a", "9.0"}) {
    auto v = kb_search(kb, {"archs", target, std::nullopt, ""});
    ASSERT_TRUE(v) << target;
    ASSERT_EQ(v->archs.size(), 1u) << target;
    EXPECT_EQ(v->archs[0]->name, "Hopper") << target;
  }
  auto sm120 = kb_search(kb, {"archs", "sm_120", std::nullopt, ""});
  ASSERT_TRUE(sm120);
  ASSERT_EQ(sm120->archs.size(), 1u);
  EXPECT_EQ(sm120->archs[0]->compute_capability, "12.0");

  for (const char *cuda : {"cu121", "CUDA 12.1", "12.1", "12.1.x", "12.1.*"}) {
    auto v = kb_search(kb, {"cuda", cuda, std::nullopt, ""});
    ASSERT_TRUE(v) << cuda;
    ASSERT_FALSE(v->cuda.empty()) << cuda;
    for (const auto *c : v->cuda)
      EXPECT_EQ(c->cuda, "12.1") << cuda;
  }

  auto plain = kb_search(kb, {"torch", "2.4", std::nullopt, ""});
  ASSERT_TRUE(plain);
  ASSERT_GT(plain->matches, 0u);
  for (const char *torch : {"torch 2.4", "PyTorch 2.4", "torch==2.4", "2.4.x", "torch 2.4.*"}) {
    auto v = kb_search(kb, {"torch", torch, std::nullopt, ""});
    ASSERT_TRUE(v) << torch;
    EXPECT_EQ(v->matches, plain->matches) << torch;
    EXPECT_EQ(v->torch_install, plain->torch_install) << torch;
    for (const auto &m : v->torch)
      EXPECT_EQ(m.release->version.rfind("2.4.", 0), 0u) << torch << ": " << m.release->version;
  }

  // A series: CUDA 12.x is every 12 release; torch 2 (2.x, 2.*) every 2 release, and no 1.x.
  for (const char *series : {"12", "12.x", "12.X", "CUDA 12.*"}) {
    auto v = kb_search(kb, {"cuda", series, std::nullopt, ""});
    ASSERT_TRUE(v) << series;
    ASSERT_GT(v->cuda.size(), 5u) << series;
    for (const auto *c : v->cuda)
      EXPECT_EQ(c->cuda.rfind("12.", 0), 0u) << series << ": " << c->cuda;
  }
  std::size_t twos = 0;
  for (const char *series : {"2", "2.x", "torch 2.*"}) {
    auto v = kb_search(kb, {"torch", series, std::nullopt, ""});
    ASSERT_TRUE(v) << series;
    ASSERT_GT(v->matches, 0u) << series;
    if (twos) {
      EXPECT_EQ(v->matches, twos) << series;
    }
    twos = v->matches;
    for (const auto &m : v->torch)
      EXPECT_EQ(m.release->version.rfind("2.", 0), 0u) << series << ": " << m.release->version;
  }

  auto hub = kb_search(kb, {"models", "meta-llama/Llama-3.1-8B", std::nullopt, ""});
  ASSERT_TRUE(hub);
  ASSERT_EQ(hub->models.size(), 1u);
  EXPECT_EQ(hub->models[0]->name, "llama-3.1-8b");
  auto unknown = kb_search(kb, {"models", "nobody/no-such-model", std::nullopt, ""});
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->matches, 0u);
}

} // namespace
} // namespace dlrig::kb

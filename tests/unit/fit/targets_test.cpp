#include "dlrig/fit/targets.hpp"

#include <gtest/gtest.h>

namespace dlrig::fit {
namespace {

using Kind = TargetError::Kind;

TEST(Targets, ACatalogNameGivesThatGpu) {
  const auto &kb = kb::builtin();
  auto t = catalog_gpu(kb, "NVIDIA A100 80GB SXM4");
  ASSERT_TRUE(t.ok()) << t.error->message();
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].name, "NVIDIA A100 80GB SXM4");
}

TEST(Targets, AnAmbiguousNameListsEveryMatch) {
  // "P100" names two catalog GPUs (PCIe and SXM2) and no family default.
  auto t = catalog_gpu(kb::builtin(), "p100");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.error->kind, Kind::ambiguous);
  EXPECT_GE(t.error->candidates.size(), 2u);
  const auto m = t.error->message();
  EXPECT_EQ(m.rfind("--gpu \"p100\": several GPUs match in the catalog: ", 0), 0u) << m;
  EXPECT_NE(m.find(t.error->candidates[0]), std::string::npos);
  EXPECT_NE(m.find("(see `dlrig kb gpus`)"), std::string::npos);
}

// A bare family name the guides use means the family's most common variant
// (data/gpu_families.csv, each with its reason and source), said with the other matches.
TEST(Targets, ABareFamilyNameTakesItsMostCommonVariant) {
  const auto &kb = kb::builtin();
  const std::pair<const char *, const char *> cases[] = {
      {"V100", "Tesla V100 SXM2 16GB"},
      {"A100", "NVIDIA A100 40GB SXM4"},
      {"A100 80GB", "NVIDIA A100 80GB SXM4"}, // the SXM4 of the two 80 GB cards
      {"h100", "NVIDIA H100 SXM5"},
      {"V100 32GB", "Tesla V100 SXM2 32GB"}, // the default's form factor among the 32 GB ones
  };
  for (auto [query, expected] : cases) {
    auto t = catalog_gpu(kb, query);
    ASSERT_TRUE(t.ok()) << query << ": " << t.error->message();
    ASSERT_EQ(t.gpus.size(), 1u);
    EXPECT_EQ(t.gpus[0].name, expected) << query;
    ASSERT_TRUE(t.chosen) << query;
    EXPECT_EQ(t.chosen->gpu, expected);
    EXPECT_FALSE(t.chosen->others.empty()) << query;
    EXPECT_NE(t.chosen->message().find("the others: "), std::string::npos);
    EXPECT_FALSE(t.chosen->reason.empty());
  }
  // Names the guides use that are unique already stay as they are, with nothing assumed.
  for (const char *query : {"4090", "3090", "T4", "A10", "H200"}) {
    auto t = catalog_gpu(kb, query);
    ASSERT_TRUE(t.ok()) << query << ": " << t.error->message();
    EXPECT_FALSE(t.chosen) << query;
  }
  // Every family row names a catalog GPU, with a reason and a source.
  ASSERT_FALSE(kb.gpu_families.empty());
  for (const auto &f : kb.gpu_families) {
    EXPECT_NE(kb.find_gpu(f.gpu), nullptr) << f.family;
    EXPECT_NE(f.source.find("https://"), std::string::npos) << f.family;
  }
}

TEST(Targets, AnUnknownNameListsTheNearest) {
  auto t = catalog_gpu(kb::builtin(), "RTX 4090 Tii");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error->kind, Kind::no_such_gpu);
  ASSERT_FALSE(t.error->candidates.empty());
  EXPECT_NE(t.error->message().find(t.error->candidates[0]), std::string::npos);
  EXPECT_EQ(
      t.error->message().rfind("--gpu \"RTX 4090 Tii\": no such GPU in the catalog; nearest: ", 0),
      0u)
      << t.error->message();
}

TEST(Targets, AllCatalogGpusOrAnError) {
  const auto &kb = kb::builtin();
  auto t = all_catalog_gpus(kb);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.gpus.size(), kb.gpus.size());
  kb::KnowledgeBase empty;
  auto none = all_catalog_gpus(empty);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error->kind, Kind::empty_catalog);
  EXPECT_EQ(none.error->message(), "--all-gpus: the knowledge base of this build has no GPUs");
}

Gpu nvidia(const std::string &bdf, const std::string &name, std::uint64_t memory) {
  Gpu g;
  g.bdf = bdf;
  g.name = name;
  g.nvml = NvmlGpu{};
  g.nvml->name = name;
  g.nvml->memory_total_bytes = memory;
  return g;
}

TEST(Targets, MachineGpusAreOnePerKind) {
  Snapshot snap;
  snap.gpus.push_back(nvidia("0000:01:00.0", "NVIDIA GeForce RTX 4090", 25'757'220'864));
  snap.gpus.push_back(nvidia("0000:02:00.0", "NVIDIA GeForce RTX 4090", 25'757'220'864));
  snap.gpus.push_back(nvidia("0000:03:00.0", "NVIDIA GeForce RTX 3090", 25'769'803'776));
  auto t = machine_gpus(snap, kb::builtin());
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].name, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(t.gpus[0].origin, "this machine (0000:01:00.0)");
  EXPECT_EQ(t.gpus[1].name, "NVIDIA GeForce RTX 3090");
  auto none = machine_gpus(Snapshot{}, kb::builtin());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error->kind, Kind::no_local_gpu);
  EXPECT_NE(none.error->message().find("give --gpu NAME"), std::string::npos);
}

} // namespace
} // namespace dlrig::fit

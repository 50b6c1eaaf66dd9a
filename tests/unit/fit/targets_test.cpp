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
  auto t = catalog_gpu(kb::builtin(), "h100");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.error->kind, Kind::ambiguous);
  EXPECT_GE(t.error->candidates.size(), 2u);
  const auto m = t.error->message();
  EXPECT_EQ(m.rfind("--gpu \"h100\": several GPUs match in the catalog: ", 0), 0u) << m;
  EXPECT_NE(m.find(t.error->candidates[0]), std::string::npos);
  EXPECT_NE(m.find("(see `dlrig kb gpus`)"), std::string::npos);
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

// `dlrig kb` through the real binary: topics, filters, JSON, exit codes.
#include "support/cli.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace dlrig::test {
namespace {

bool has(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

TEST(KbCli, EveryTopicListsSomething) {
  for (const char *topic : {"gpus", "archs", "cuda", "torch", "links", "cloud"}) {
    auto r = run_dlrig({"kb", topic});
    EXPECT_EQ(r.exit_code, 0) << topic << ": " << r.err;
    EXPECT_GT(r.out.size(), 200u) << topic;
  }
}

TEST(KbCli, GpusMinMemoryAndSort) {
  auto r = run_dlrig({"kb", "gpus", "--min-memory", "24GB", "--sort", "bf16", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  const auto &items = j["items"];
  ASSERT_GT(items.size(), 10u);
  double last = 1e30;
  bool unknown_seen = false;
  for (const auto &g : items) {
    EXPECT_GE(g["memory_gb"].get<double>(), 24) << g["name"];
    if (g["bf16_flops"].is_null()) {
      unknown_seen = true;
      continue;
    }
    EXPECT_FALSE(unknown_seen) << "unknown bf16 must sort last";
    EXPECT_LE(g["bf16_flops"].get<double>(), last) << g["name"];
    last = g["bf16_flops"].get<double>();
  }
  // The RTX 3080 (10 GB) is below the bar; the 4090 (24 GB) is not.
  EXPECT_FALSE(has(r.out, "RTX 3080"));
  EXPECT_TRUE(has(r.out, "GeForce RTX 4090"));
}

TEST(KbCli, OneGpuShowsSourcesOfEachFigure) {
  auto r = run_dlrig({"kb", "gpus", "RTX", "4090"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "10de:2684"));
  EXPECT_TRUE(has(r.out, "165.2 TFLOPS"));
  EXPECT_TRUE(has(r.out, "Sources"));
  EXPECT_TRUE(has(r.out, "Ada GPU architecture whitepaper"));
  EXPECT_TRUE(has(r.out, "pci.ids"));
}

TEST(KbCli, AFilterMatchingSeveralGpusLists) {
  auto r = run_dlrig({"kb", "gpus", "h100", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["items"].size(), 3u); // PCIe, SXM5, NVL
}

TEST(KbCli, NoMatchExitsOneAndSuggests) {
  auto r = run_dlrig({"kb", "gpus", "rtx", "4009"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(has(r.err, "nothing matches 'rtx 4009'")) << r.err;
  EXPECT_TRUE(has(r.err, "GeForce RTX 4090")) << r.err;

  auto j = run_dlrig({"kb", "torch", "9.9", "--json"});
  EXPECT_EQ(j.exit_code, 1);
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_TRUE(doc["items"].empty());
  EXPECT_FALSE(doc["suggestions"].empty());
}

// What the user typed comes back on stderr with its control characters escaped, as stdout's
// tables do: a query pasted with an escape sequence does not clear the terminal.
TEST(KbCli, NoMatchMessageEscapesControlCharacters) {
  auto r = run_dlrig({"kb", "gpus", "x\x1b[2J"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_TRUE(has(r.err, "nothing matches 'x\\x1b[2J'")) << r.err;
}

// The forms users paste find their rows (exit 0), not "nothing matches" (exit 1).
TEST(KbCli, TargetsWheelTagsProductNamesAndHubIds) {
  auto arch = run_dlrig({"kb", "archs", "sm_90"});
  ASSERT_EQ(arch.exit_code, 0) << arch.err;
  EXPECT_TRUE(has(arch.out, "Hopper")) << arch.out;
  auto cuda = run_dlrig({"kb", "cuda", "cu121"});
  ASSERT_EQ(cuda.exit_code, 0) << cuda.err;
  EXPECT_TRUE(has(cuda.out, "12.1.0")) << cuda.out;
  auto torch = run_dlrig({"kb", "torch", "torch 2.4"});
  ASSERT_EQ(torch.exit_code, 0) << torch.err;
  EXPECT_TRUE(has(torch.out, "2.4.0")) << torch.out;
  auto model = run_dlrig({"kb", "models", "meta-llama/Llama-3.1-8B", "--json"});
  ASSERT_EQ(model.exit_code, 0) << model.err;
  auto j = nlohmann::json::parse(model.out);
  ASSERT_EQ(j["items"].size(), 1u);
  EXPECT_EQ(j["items"][0]["name"], "llama-3.1-8b");
}

TEST(KbCli, UsageErrors) {
  EXPECT_EQ(run_dlrig({"kb"}).exit_code, 64);
  EXPECT_EQ(run_dlrig({"kb", "dogs"}).exit_code, 64);
  EXPECT_EQ(run_dlrig({"kb", "gpus", "--sort", "colour"}).exit_code, 64);
  auto mem = run_dlrig({"kb", "gpus", "--min-memory", "lots"});
  EXPECT_EQ(mem.exit_code, 64);
  EXPECT_TRUE(has(mem.err, "--min-memory")) << mem.err;
  auto wrong_topic = run_dlrig({"kb", "cuda", "--min-memory", "24GB"});
  EXPECT_EQ(wrong_topic.exit_code, 64);
}

TEST(KbCli, TorchReleaseShowsPipCommands) {
  auto r = run_dlrig({"kb", "torch", "2.5.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "pip install torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1 "
                         "--index-url https://download.pytorch.org/whl/cu124"));
  auto one = run_dlrig({"kb", "torch", "2.8+cu128", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto j = nlohmann::json::parse(one.out);
  ASSERT_EQ(j["items"].size(), 1u);
  EXPECT_EQ(j["items"][0]["cudnn"], "9.10.2.21");
  EXPECT_EQ(j["items"][0]["pypi_default"], true);
}

TEST(KbCli, CudaForADriver) {
  auto r = run_dlrig({"kb", "cuda", "550.54.14", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["items"][0]["max_cuda"], "12.4");
  // A driver older than every row: both answers unknown, no "CUDA .x" with the major missing.
  auto old = run_dlrig({"kb", "cuda", "300.10"});
  ASSERT_EQ(old.exit_code, 0) << old.err;
  EXPECT_FALSE(has(old.out, "CUDA .x")) << old.out;
  EXPECT_FALSE(has(old.out, "none")) << old.out;
  // Not a driver version: looked up as a CUDA version, which it is not either.
  for (const char *odd : {"535..", "535.54.03.1", "5350"}) {
    auto no = run_dlrig({"kb", "cuda", odd});
    EXPECT_EQ(no.exit_code, 1) << odd << ": " << no.out;
    EXPECT_FALSE(has(no.out, "Driver ")) << odd << ": " << no.out;
  }
  // A driver series as people write it (535.x, the R535 branch) is that branch.
  auto branch = run_dlrig({"kb", "cuda", "535"}), series = run_dlrig({"kb", "cuda", "535.x"});
  EXPECT_EQ(series.exit_code, 0) << series.err;
  EXPECT_TRUE(has(series.out, "Driver 535")) << series.out;
  EXPECT_EQ(series.out, branch.out);
  auto table = run_dlrig({"kb", "cuda", "12.4"});
  EXPECT_TRUE(has(table.out, "550.54.14"));
  EXPECT_TRUE(has(table.out, "550.54.15"));
  EXPECT_FALSE(has(table.out, "555.42.02"));
}

TEST(KbCli, ArchsLinksCloudFilters) {
  auto a = run_dlrig({"kb", "archs", "8.9"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_TRUE(has(a.out, "Ada Lovelace"));
  auto l = run_dlrig({"kb", "links", "thunderbolt", "--json"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(nlohmann::json::parse(l.out)["items"].size(), 3u);
  auto c = run_dlrig({"kb", "cloud", "h100", "--markdown"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_TRUE(has(c.out, "| p5.48xlarge |"));
  EXPECT_TRUE(has(c.out, "ND96isr_H100_v5"));
  EXPECT_FALSE(has(c.out, "p4d.24xlarge"));
}

TEST(KbCli, ModelsListCarriesDerivedParams) {
  auto r = run_dlrig({"kb", "models", "llama", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["items"].size(), 3u);
  bool seen = false;
  for (const auto &m : j["items"]) {
    EXPECT_NE(m["name"].get<std::string>().find("llama"), std::string::npos);
    ASSERT_TRUE(m["params"].is_number_integer()) << m["name"];
    EXPECT_GT(m["params"].get<std::int64_t>(), 0) << m["name"];
    if (m["name"] == "llama-2-7b") {
      seen = true;
      EXPECT_EQ(m["params"].get<std::int64_t>(), 6738415616); // memory.md §2, exact
    }
  }
  EXPECT_TRUE(seen);
  auto table = run_dlrig({"kb", "models", "llama-2-70b"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(has(table.out, "64/8")) << table.out; // heads / KV heads (GQA)
}

} // namespace
} // namespace dlrig::test

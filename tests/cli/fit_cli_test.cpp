// `dlrig fit` end to end: the real binary on checkpoints and snapshots written by the tests, the
// guides' examples on the catalog, usage errors (64) and bad files (65).
#include "dlrig/core/json.hpp"
#include "dlrig/kb/kb.hpp"
#include "support/cli.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace dlrig::test {
namespace {

namespace fs = std::filesystem;

std::string le64(std::uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// Writes a safetensors file whose data part is sparse (no disk blocks): the header is real.
void write_safetensors(
    const fs::path &p,
    const std::vector<std::pair<std::string, std::vector<std::uint64_t>>> &tensors) {
  Json h = Json::object();
  std::uint64_t at = 0;
  for (const auto &[name, shape] : tensors) {
    std::uint64_t n = 2;
    for (auto d : shape)
      n *= d;
    h[name] = {{"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {at, at + n}}};
    at += n;
  }
  auto text = h.dump();
  {
    std::ofstream out(p, std::ios::binary);
    out << le64(text.size()) << text;
  }
  fs::resize_file(p, 8 + text.size() + at);
}

// A Llama-2-7B config.json (transformers' LlamaConfig as meta-llama/Llama-2-7b-hf publishes it),
// with `quant` as its quantization_config when it is not null.
Json llama2_7b_config(const Json &quant) {
  Json c = {{"model_type", "llama"},
            {"architectures", {"LlamaForCausalLM"}},
            {"hidden_size", 4096},
            {"intermediate_size", 11008},
            {"num_hidden_layers", 32},
            {"num_attention_heads", 32},
            {"num_key_value_heads", 32},
            {"vocab_size", 32000},
            {"max_position_embeddings", 4096},
            {"tie_word_embeddings", false},
            {"torch_dtype", "float16"}};
  if (!quant.is_null())
    c["quantization_config"] = quant;
  return c;
}

// TheBloke/Llama-2-7B-GPTQ's layout: every nn.Linear but lm_head as AutoGPTQ's QuantLinear
// stores it (auto_gptq/nn_modules/qlinear/qlinear_cuda.py: qweight int32 [in / 8, out], qzeros
// int32 [in / 128, out / 8], scales fp16 [in / 128, out], g_idx int32 [in]), the rest fp16.
// `config` (when not null) as its config.json.
fs::path llama2_7b_gptq_folder(const std::string &folder, const Json &config) {
  auto dir = scratch(folder);
  fs::create_directories(dir);
  Json h = Json::object();
  std::uint64_t at = 0;
  auto add = [&](const std::string &name, const char *dtype, std::vector<std::uint64_t> shape) {
    std::uint64_t n = std::string(dtype) == "I32" ? 4 : 2;
    for (auto d : shape)
      n *= d;
    h[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {at, at + n}}};
    at += n;
  };
  // AutoAWQ's WQLinear_GEMM (awq/modules/linear/gemm.py) packs along out instead: qweight int32
  // [in, out / 8], qzeros int32 [in / 128, out / 8], scales fp16 [in / 128, out], no g_idx.
  const bool awq = config.is_object() && config.contains("quantization_config") &&
                   config["quantization_config"]["quant_method"] == "awq";
  auto linear = [&](const std::string &p, std::uint64_t in, std::uint64_t out) {
    add(p + ".qweight", "I32",
        awq ? std::vector<std::uint64_t>{in, out / 8} : std::vector<std::uint64_t>{in / 8, out});
    add(p + ".qzeros", "I32", {in / 128, out / 8});
    add(p + ".scales", "F16", {in / 128, out});
    if (!awq)
      add(p + ".g_idx", "I32", {in});
  };
  add("model.embed_tokens.weight", "F16", {32000, 4096});
  for (int l = 0; l < 32; ++l) {
    auto p = "model.layers." + std::to_string(l) + ".";
    for (const char *m : {"q_proj", "k_proj", "v_proj", "o_proj"})
      linear(p + "self_attn." + m, 4096, 4096);
    linear(p + "mlp.gate_proj", 4096, 11008);
    linear(p + "mlp.up_proj", 4096, 11008);
    linear(p + "mlp.down_proj", 11008, 4096);
    add(p + "input_layernorm.weight", "F16", {4096});
    add(p + "post_attention_layernorm.weight", "F16", {4096});
  }
  add("model.norm.weight", "F16", {4096});
  add("lm_head.weight", "F16", {32000, 4096});
  auto text = h.dump();
  {
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    out << le64(text.size()) << text;
  }
  fs::resize_file(dir / "model.safetensors", 8 + text.size() + at);
  if (!config.is_null())
    std::ofstream(dir / "config.json") << config.dump(1);
  return dir;
}

// A Llama-3-8B-shaped sharded checkpoint (two shards and an index), no config.json.
fs::path llama3_8b_folder() {
  auto dir = scratch("llama3-8b");
  if (fs::exists(dir / "model.safetensors.index.json"))
    return dir;
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> a, b;
  Json map = Json::object();
  a.push_back({"model.embed_tokens.weight", {128256, 4096}});
  for (int l = 0; l < 32; ++l) {
    auto &shard = l < 16 ? a : b;
    auto p = "model.layers." + std::to_string(l) + ".";
    shard.push_back({p + "self_attn.q_proj.weight", {4096, 4096}});
    shard.push_back({p + "self_attn.k_proj.weight", {1024, 4096}});
    shard.push_back({p + "self_attn.v_proj.weight", {1024, 4096}});
    shard.push_back({p + "self_attn.o_proj.weight", {4096, 4096}});
    shard.push_back({p + "mlp.gate_proj.weight", {14336, 4096}});
    shard.push_back({p + "mlp.up_proj.weight", {14336, 4096}});
    shard.push_back({p + "mlp.down_proj.weight", {4096, 14336}});
    shard.push_back({p + "input_layernorm.weight", {4096}});
    shard.push_back({p + "post_attention_layernorm.weight", {4096}});
  }
  b.push_back({"model.norm.weight", {4096}});
  b.push_back({"lm_head.weight", {128256, 4096}});
  for (const auto &[n, s] : a)
    map[n] = "model-00001-of-00002.safetensors";
  for (const auto &[n, s] : b)
    map[n] = "model-00002-of-00002.safetensors";
  write_safetensors(dir / "model-00001-of-00002.safetensors", a);
  write_safetensors(dir / "model-00002-of-00002.safetensors", b);
  std::ofstream(dir / "model.safetensors.index.json") << Json{{"weight_map", map}}.dump(1);
  return dir;
}

// A saved snapshot of a machine with one 24 GiB NVIDIA GPU and an AVX2 CPU.
std::string snapshot_24gb() {
  auto p = scratch("snapshot.json");
  Json snap = {
      {"schema_version", 1},
      {"host",
       {{"cpu",
         {{"model", "Test CPU"}, {"cores", 16}, {"max_hz", 4.0e9}, {"isa", {"avx2", "fma"}}}}}},
      {"gpus",
       {{{"bdf", "0000:01:00.0"},
         {"vendor", "NVIDIA"},
         {"nvml",
          {{"index", 0},
           {"name", "Test GPU 24GB"},
           {"memory_total_bytes", 25757220864ull},
           {"compute_capability", "8.9"}}}}}}};
  std::ofstream(p) << snap.dump();
  return p.string();
}

bool catalog_landed() {
  const auto &kb = kb::builtin();
  return !kb.gpus.empty() && !kb.models.empty();
}

TEST(FitCli, ShardedCheckpointOnTheSnapshotsGpu) {
  auto r = run_dlrig({"fit", llama3_8b_folder().string(), "--from", snapshot_24gb(), "--lora", "16",
                      "--seq", "512", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_EQ(j["model"]["params"], 8'030'261'248ll) << "the header's exact count";
  ASSERT_EQ(j["gpus"].size(), 1u);
  const auto &g = j["gpus"][0];
  EXPECT_EQ(g["name"], "Test GPU 24GB");
  EXPECT_EQ(g["memory_bytes"], 25757220864ull);
  std::uint64_t sum = 0;
  for (const char *k : {"weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"})
    sum += g["breakdown"][k].get<std::uint64_t>();
  EXPECT_EQ(sum, g["total_bytes"].get<std::uint64_t>());
  // A frozen bf16 base of 8.03B parameters is 16.06 GB.
  EXPECT_GT(g["breakdown"]["weights"].get<double>(), 16.0e9);
  EXPECT_LT(g["breakdown"]["weights"].get<double>(), 16.2e9);
  EXPECT_EQ(g["verdict"], r.exit_code == 0 ? "fits" : "does-not-fit");
  EXPECT_EQ(g["headroom_bytes"].get<std::int64_t>(),
            25757220864ll - g["total_bytes"].get<std::int64_t>());
  // The snapshot's CPU (16 AVX2 cores at 4 GHz) gives the CPU comparison.
  EXPECT_GT(j["cpu"]["seconds_per_step"].get<double>(), 0) << j["cpu"].dump();
  EXPECT_DOUBLE_EQ(j["cpu"]["peak_flops"].get<double>(), 16 * 4.0e9 * 32);
}

TEST(FitCli, FullFineTuneDoesNotFitAndSaysWhatWould) {
  auto r = run_dlrig({"fit", llama3_8b_folder().string(), "--from", snapshot_24gb(), "--seq",
                      "1024", "--batch", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("does not fit: short by"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--lora 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total as nvidia-smi shows it"), std::string::npos);
  EXPECT_NE(r.out.find("The same on this machine's CPU"), std::string::npos);
}

TEST(FitCli, MaxBatch) {
  auto r = run_dlrig({"fit", llama3_8b_folder().string(), "--from", snapshot_24gb(), "--qlora",
                      "--seq", "512", "--max-batch", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto j = Json::parse(r.out);
  auto b = j["gpus"][0]["max_batch"].get<std::int64_t>();
  EXPECT_GT(b, 1);
  // One more than the maximum does not fit; the maximum does.
  auto over = run_dlrig({"fit", llama3_8b_folder().string(), "--from", snapshot_24gb(), "--qlora",
                         "--seq", "512", "--batch", std::to_string(b + 1)});
  EXPECT_EQ(over.exit_code, 1);
  auto at = run_dlrig({"fit", llama3_8b_folder().string(), "--from", snapshot_24gb(), "--qlora",
                       "--seq", "512", "--batch", std::to_string(b)});
  EXPECT_EQ(at.exit_code, 0);
}

TEST(FitCli, ServingWithKvCache) {
  auto r =
      run_dlrig({"fit", llama3_8b_folder().string(), "--from", snapshot_24gb(), "--mode", "infer",
                 "--seq", "1000", "--max-tokens", "24", "--concurrency", "4", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  auto j = Json::parse(r.out);
  // 131,072 bytes per token x 1024 tokens x 4 requests.
  EXPECT_EQ(j["gpus"][0]["breakdown"]["kv_cache"], 131072ull * 1024 * 4);
}

// Serving over the host link: the weights cross it once (load_s = the weights / the link's rate),
// then only the token ids of each decode step.
TEST(FitCli, ServingChargesTheWeightsLoadOverTheHostLink) {
  auto r = run_dlrig({"fit", "llama-3-8b", "--gpu", "GeForce RTX 4090", "--mode", "infer",
                      "--max-tokens", "64", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const auto g = Json::parse(r.out)["gpus"][0];
  const auto &t = g["time"];
  ASSERT_TRUE(t["load_s"].is_number()) << t.dump();
  const double rate = t["host_link_bytes_per_s"].get<double>();
  EXPECT_NEAR(t["load_s"].get<double>(), g["breakdown"]["weights"].get<double>() / rate, 1e-6);
  EXPECT_NEAR(t["host_link_s_per_step"].get<double>(), 16 / rate, 1e-15);
  r = run_dlrig({"fit", "llama-3-8b", "--gpu", "GeForce RTX 4090", "--mode", "infer"});
  EXPECT_NE(r.out.find("model load"), std::string::npos) << r.out;
}

// A checkpoint stored quantised (config.json's quantization_config) is sized as stored: the
// parameter count from the config (the header counts packed int32 words), the served or frozen
// weights as the header's bytes, or without the header as the method packs them; it cannot be
// trained but through adapters, nor quantised again.
TEST(FitCli, AQuantisedCheckpointIsSizedAsStored) {
  const Json gptq_config = {{"quant_method", "gptq"},
                            {"bits", 4},
                            {"group_size", 128},
                            {"desc_act", false},
                            {"sym", true}};
  const auto gptq = llama2_7b_gptq_folder("llama2-7b-gptq", llama2_7b_config(gptq_config));
  auto serve = [](const fs::path &model, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"fit",    model.string(), "--gpu", "GeForce RTX 4090",
                                     "--mode", "infer",        "--json"};
    args.insert(args.end(), more.begin(), more.end());
    return run_dlrig(args);
  };
  auto r = serve(gptq);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_EQ(j["model"]["params"], 6738415616); // Llama-2-7B, not the header's element count
  EXPECT_EQ(j["model"]["stored_quantization"]["method"], "gptq");
  EXPECT_EQ(j["model"]["stored_quantization"]["bits"], 4);
  EXPECT_EQ(j["model"]["stored_quantization"]["group_size"], 128);
  const double header = j["model"]["checkpoint"]["weight_bytes"].get<double>();
  EXPECT_NEAR(header, 3.89e9, 0.01e9); // 4.16 bits per linear weight, embeddings and head fp16
  EXPECT_EQ(j["gpus"][0]["breakdown"]["weights"].get<double>(), header);

  // The config alone: the method's packing, to the byte of the header.
  auto config_only = scratch("llama2-7b-gptq-config");
  fs::create_directories(config_only);
  fs::copy_file(gptq / "config.json", config_only / "config.json",
                fs::copy_options::overwrite_existing);
  r = serve(config_only);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  j = Json::parse(r.out);
  const double packed = j["gpus"][0]["breakdown"]["weights"].get<double>();
  EXPECT_EQ(packed, header);
  // AWQ's layout, the same to the byte.
  const auto awq = llama2_7b_gptq_folder("llama2-7b-awq", llama2_7b_config({{"quant_method", "awq"},
                                                                            {"bits", 4},
                                                                            {"group_size", 128},
                                                                            {"zero_point", true},
                                                                            {"version", "gemm"}}));
  r = serve(awq);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const double awq_header = Json::parse(r.out)["model"]["checkpoint"]["weight_bytes"].get<double>();
  fs::remove(awq / "model.safetensors");
  r = serve(awq);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_EQ(Json::parse(r.out)["gpus"][0]["breakdown"]["weights"].get<double>(), awq_header);
  EXPECT_LT(awq_header, header); // no g_idx
  r = run_dlrig({"pick", config_only.string(), "--mode", "infer", "--tokens-per-s", "20"});
  EXPECT_NE(r.out.find("stored GPTQ 4-bit, groups of 128"), std::string::npos) << r.out;
  // The same model unquantised serves 13.5 GB of fp16 weights; bitsandbytes' stored 4-bit is
  // what --quant int4 quantises at load.
  auto plain = scratch("llama2-7b-config");
  fs::create_directories(plain);
  std::ofstream(plain / "config.json") << llama2_7b_config(nullptr).dump();
  r = serve(plain);
  EXPECT_NEAR(Json::parse(r.out)["gpus"][0]["breakdown"]["weights"].get<double>(), 6738415616.0 * 2,
              1e6);
  const double int4 =
      Json::parse(serve(plain, {"--quant", "int4"}).out)["gpus"][0]["breakdown"]["weights"]
          .get<double>();
  auto bnb = scratch("llama2-7b-bnb4");
  fs::create_directories(bnb);
  std::ofstream(bnb / "config.json")
      << llama2_7b_config({{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}}).dump();
  r = serve(bnb);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_NEAR(Json::parse(r.out)["gpus"][0]["breakdown"]["weights"].get<double>(), int4,
              1e-3 * int4); // --quant int4 also packs the norms
  r = run_dlrig({"fit", bnb.string(), "--gpu", "GeForce RTX 4090", "--mode", "infer"});
  EXPECT_NE(r.out.find("stored bitsandbytes 4-bit"), std::string::npos) << r.out;

  // Training: adapters only, on the stored weights; no second quantisation.
  r = run_dlrig({"fit", gptq.string(), "--gpu", "GeForce RTX 4090"});
  EXPECT_EQ(r.exit_code, 64) << r.out;
  EXPECT_NE(r.err.find("give --lora R"), std::string::npos) << r.err;
  r = run_dlrig({"fit", gptq.string(), "--gpu", "GeForce RTX 4090", "--lora", "16", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_LT(Json::parse(r.out)["gpus"][0]["breakdown"]["weights"].get<double>(), header * 1.05);
  for (const auto &more : std::vector<std::vector<std::string>>{
           {"--qlora", "--lora", "16"}, {"--mode", "infer", "--quant", "int8"}}) {
    std::vector<std::string> args = {"fit", gptq.string(), "--gpu", "GeForce RTX 4090"};
    args.insert(args.end(), more.begin(), more.end());
    r = run_dlrig(args);
    EXPECT_EQ(r.exit_code, 64) << more[0] << ": " << r.out;
    EXPECT_NE(r.err.find("stored quantised (GPTQ 4-bit, groups of 128)"), std::string::npos)
        << r.err;
  }

  // Packed tensors without a quantization_config: without a config.json the header cannot give
  // the count (65); under a config.json without one, AutoGPTQ's quantize_config.json beside it
  // says how (older GPTQ repositories), else the header's bytes are the weights.
  const auto bare = llama2_7b_gptq_folder("llama2-7b-gptq-bare", nullptr);
  r = serve(bare);
  EXPECT_EQ(r.exit_code, 65) << r.out;
  EXPECT_NE(r.err.find(".qweight\" is stored quantised"), std::string::npos) << r.err;
  std::ofstream(bare / "config.json") << llama2_7b_config(nullptr).dump();
  r = serve(bare);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  j = Json::parse(r.out);
  EXPECT_EQ(j["model"]["params"], 6738415616);
  EXPECT_EQ(j["model"]["stored_quantization"]["method"], "packed tensors (qweight)");
  EXPECT_EQ(j["gpus"][0]["breakdown"]["weights"].get<double>(), header);
  Json autogptq = gptq_config;
  autogptq.erase("quant_method");
  std::ofstream(bare / "quantize_config.json") << autogptq.dump();
  r = serve(bare);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_EQ(Json::parse(r.out)["model"]["stored_quantization"]["method"], "gptq");

  // A method dlrig cannot size needs the header; a wrong width is named at its key.
  auto other = scratch("llama2-7b-hqq");
  fs::create_directories(other);
  for (const auto &[quant, code, says] : std::vector<std::tuple<Json, int, std::string>>{
           {{{"quant_method", "hqq"}, {"nbits", 4}},
            64,
            "give the folder with its .safetensors checkpoint"},
           {{{"quant_method", "gptq"}, {"bits", 5}},
            65,
            "'quantization_config.bits' must be 2, 3, 4 or 8, got 5"}}) {
    std::ofstream(other / "config.json") << llama2_7b_config(quant).dump();
    r = serve(other);
    EXPECT_EQ(r.exit_code, code) << r.out;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

// --json lists every op of the training step with its kind and kernels; on one GPU with no
// communication the ops' seconds add up to the step.
TEST(FitCli, JsonListsEveryOpOfTheStep) {
  auto r =
      run_dlrig({"fit", "llama-3-8b", "--gpu", "H100 SXM", "--precision", "bf16-amp", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const Json j = Json::parse(r.out);
  const auto &t = j["gpus"][0]["time"];
  ASSERT_TRUE(t["ops"].is_array() && !t["ops"].empty()) << t.dump();
  double sum = 0, kernels = 0;
  for (const auto &o : t["ops"]) {
    EXPECT_TRUE(o["kind"] == "gemm" || o["kind"] == "attention" || o["kind"] == "memory") << o;
    sum += o["seconds"].get<double>();
    kernels += o["kernels"].get<double>();
  }
  EXPECT_GT(kernels, 0);
  EXPECT_NEAR(sum, t["seconds_per_step"].get<double>(), 1e-3 * sum);
  EXPECT_EQ(t["slowest_ops"].size(), 8u);
}

// A flag that would be dropped is refused: the job's size given twice, a training job's size
// for serving, epochs without a size, an empty GPU name (fit and pick share these).
TEST(FitCli, FlagsThatWouldBeIgnoredAreUsageErrors) {
  auto snap = snapshot_24gb();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--dataset-tokens", "1e8", "--samples", "1000"}, "both size the epoch"},
      {{"--mode", "infer", "--dataset-tokens", "1e8"}, "size a training job"},
      {{"--mode", "infer", "--epochs", "2"}, "size a training job"},
      {{"--epochs", "3"}, "--epochs needs the epoch's size"},
  };
  for (const char *cmd : {"fit", "pick"})
    for (const auto &c : cases) {
      std::vector<std::string> args = {cmd, "llama-3-8b", "--from", snap};
      args.insert(args.end(), c.args.begin(), c.args.end());
      auto r = run_dlrig(args);
      EXPECT_EQ(r.exit_code, 64) << cmd << " " << c.says << ": " << r.err;
      EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    }
  auto r = run_dlrig({"fit", "llama-3-8b", "--gpu", " "});
  EXPECT_EQ(r.exit_code, 64) << r.out;
  EXPECT_NE(r.err.find("--gpu: empty"), std::string::npos) << r.err;
}

TEST(FitCli, ImpossibleRunsAreUsageErrors) {
  auto dir = llama3_8b_folder().string();
  auto snap = snapshot_24gb();
  auto r = run_dlrig({"fit", dir, "--from", snap, "--tp", "3", "--gpus", "3"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--tp 3"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--gpus", "6", "--tp", "4"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("not a multiple"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--precision", "fp64"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--precision"), std::string::npos) << r.err;
  r = run_dlrig({"fit", "--params", "lots", "--family", "decoder", "--from", snap});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--params"), std::string::npos) << r.err;
  r = run_dlrig({"fit", "--from", snap});
  EXPECT_EQ(r.exit_code, 64);
  r = run_dlrig({"fit", "no-such-model-anywhere", "--from", snap});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("no-such-model-anywhere"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--gpu", "No Such GPU 9000", "--from", snap});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("nearest"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--lora", "8", "--lora-targets", "most"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("accepted: qv, all-linear"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--gpu", "p100", "--from", snap});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("Tesla P100 PCIe 16GB, Tesla P100 SXM2 16GB"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--optimizer-impl", "fused", "--strategy", "zero2",
                 "--gpus", "2"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--optimizer-impl"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--optimizer-in-backward", "--grad-accum", "4"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--grad-accum 1"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--torch", "two"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--torch"), std::string::npos) << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--transformers", "four"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--transformers \"four\": expected a transformers version"),
            std::string::npos)
      << r.err;
  r = run_dlrig({"fit", dir, "--from", snap, "--offload", "params"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("--offload params"), std::string::npos) << r.err;
}

// The first note of the first GPU that starts with `prefix`, or "".
std::string note_of(const Json &j, const std::string &prefix) {
  for (const auto &n : j["gpus"][0]["notes"])
    if (n.get<std::string>().starts_with(prefix))
      return n.get<std::string>();
  return "";
}

// transformers' release comes from the Python environment whose torch fit sizes for (the
// sw-venv-torch251 machine's venv has transformers 4.46.3, before the grouped K/V path), else
// from --transformers; --torch names another stack, whose transformers is then unknown.
TEST(FitCli, TransformersFromTheEnvironmentOrTheFlag) {
  const std::vector<std::string> env = {"PATH=/home/user/venv/bin:/usr/bin:/bin",
                                        "VIRTUAL_ENV=/home/user/venv", "HOME=/home/user"};
  const std::vector<std::string> base = {
      "fit",   "llama-3-8b", "--no-nvml", "--sysroot", fixture("sw-venv-torch251"),
      "--seq", "1024",       "--lora",    "16",        "--json"};
  auto run = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_dlrig(args, env);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return Json::parse(r.out);
  };
  const std::string sdpa = "SDPA with grouped K/V";
  const Json machine = run({});
  EXPECT_EQ(machine["run"]["torch"], "2.5.1");
  EXPECT_EQ(machine["run"]["transformers"], "4.46.3");
  EXPECT_NE(note_of(machine, sdpa)
                .find("counted repeated to the 32 query heads: transformers "
                      "4.46.3 repeats them"),
            std::string::npos)
      << machine["gpus"][0]["notes"].dump();

  const Json newer = run({"--transformers", "5.17.0"});
  EXPECT_EQ(newer["run"]["transformers"], "5.17.0");
  EXPECT_NE(note_of(newer, sdpa).find("at their 8 heads"), std::string::npos)
      << newer["gpus"][0]["notes"].dump();
  // K and V at 8 of 32 heads (LoRA: the peak is in forward/backward): 32 layers x 2 x (4096 -
  // 1024) x 1024 tokens x 2 bytes fewer.
  EXPECT_EQ(newer["gpus"][0]["peak_phase"], "forward/backward");
  EXPECT_NEAR(machine["gpus"][0]["breakdown"]["activations"].get<double>() -
                  newer["gpus"][0]["breakdown"]["activations"].get<double>(),
              32.0 * 2 * 3072 * 1024 * 2, 64);

  const Json other = run({"--torch", "2.6.0"});
  EXPECT_TRUE(other["run"]["transformers"].is_null());
  EXPECT_NE(note_of(other, sdpa).find("transformers' version is not known"), std::string::npos)
      << other["gpus"][0]["notes"].dump();
}

// mT5 saved untied (tie_word_embeddings false, as google/mt5-small): transformers 4.x builds a
// separate lm_head, transformers 5 ties it whatever the config says (MT5Config since 5.0.0;
// measured with transformers 5.17.0 on the meta device: 172,119,424). Unknown: the config's count,
// saying so.
TEST(FitCli, MT5sHeadIsTiedFromTransformers5) {
  const auto snap = snapshot_24gb();
  auto params = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"fit", fixture("models/mt5-small.json"), "--from", snap,
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_dlrig(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out);
  };
  const Json v5 = params({"--transformers", "5.17.0"}), v4 = params({"--transformers", "4.57.1"}),
             unknown = params({"--torch", "2.6.0"});
  EXPECT_EQ(v5["model"]["params"], 172119424);
  EXPECT_EQ(v4["model"]["params"], 172119424 + 250112LL * 512);
  EXPECT_EQ(unknown["model"]["params"], 172119424 + 250112LL * 512);
  EXPECT_NE(v5["model"]["assumptions"].dump().find("172,119,424 parameters, not 300,176,768"),
            std::string::npos)
      << v5["model"].dump();
  EXPECT_EQ(v4["model"]["assumptions"].dump().find("lm_head"), std::string::npos);
  EXPECT_NE(unknown["model"]["assumptions"].dump().find("transformers 5.0.0 and later tie it"),
            std::string::npos)
      << unknown["model"].dump();
  // Fewer weights, less memory: the 128 M-parameter head's weights, gradients and AdamW states.
  EXPECT_LT(v5["gpus"][0]["breakdown"]["weights"].get<double>(),
            v4["gpus"][0]["breakdown"]["weights"].get<double>());
}

// What --quant quantises, in the JSON: Mixtral 8x7B's attention only with transformers 5 (its
// experts and routers are fused parameters), every block linear with 4.57; --quant is refused for
// a CNN (exit 64).
TEST(FitCli, QuantisedParamsFollowTheTransformersRelease) {
  auto serve = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "fit",   "mistralai/Mixtral-8x7B-v0.1", "--mode", "infer", "--gpu", "GeForce RTX 4090",
        "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_dlrig(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return Json::parse(r.out);
  };
  const Json v5 = serve({"--quant", "int4", "--transformers", "5.25.0"});
  const Json v4 = serve({"--quant", "int4", "--transformers", "4.57.1"});
  EXPECT_EQ(v5["model"]["quantized_params"], 1342177280);
  EXPECT_EQ(v4["model"]["quantized_params"], 1342177280LL + 45098205184LL);
  EXPECT_TRUE(serve({})["model"]["quantized_params"].is_null());
  EXPECT_GT(v5["gpus"][0]["breakdown"]["weights"].get<double>(),
            3 * v4["gpus"][0]["breakdown"]["weights"].get<double>());
  auto cnn = run_dlrig({"fit", "resnet-50", "--mode", "infer", "--quant", "int4"});
  EXPECT_EQ(cnn.exit_code, 64);
  EXPECT_NE(cnn.err.find("--quant is modelled for transformers only"), std::string::npos)
      << cnn.err;
}

// The trainable adapters in the JSON: Llama-3-8B's every linear but the head at rank 16 (PEFT's
// print_trainable_parameters for all-linear), null without --lora.
TEST(FitCli, AdapterParamsInTheJson) {
  auto adapters = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"fit", "llama-3-8b", "--gpu", "GeForce RTX 4090", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_dlrig(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return Json::parse(r.out)["model"]["adapter_params"];
  };
  EXPECT_EQ(adapters({"--lora", "16", "--lora-targets", "all-linear"}), 41943040);
  EXPECT_EQ(adapters({"--lora", "16"}), 6815744); // q_proj and v_proj
  EXPECT_TRUE(adapters({}).is_null());
}

TEST(FitCli, BadFilesAreBadInput) {
  auto dir = scratch("bad");
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto snap = snapshot_24gb();
  auto hostile = (dir / "hostile.safetensors").string();
  std::ofstream(hostile, std::ios::binary) << le64(std::uint64_t{1} << 60) << "{}";
  auto r = run_dlrig({"fit", hostile, "--from", snap});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find(hostile), std::string::npos) << r.err;

  r = run_dlrig({"fit", "/nonexistent/model.safetensors", "--from", snap});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("/nonexistent/model.safetensors"), std::string::npos) << r.err;

  auto cfg = (dir / "config.json").string();
  std::ofstream(cfg) << "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": }";
  r = run_dlrig({"fit", cfg, "--from", snap});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find(cfg), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 3"), std::string::npos) << r.err;

  auto shard_dir = dir / "sharded";
  fs::create_directories(shard_dir);
  std::ofstream(shard_dir / "model.safetensors.index.json")
      << R"({"weight_map":{"a.weight":"missing.safetensors"}})";
  r = run_dlrig({"fit", shard_dir.string(), "--from", snap});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("missing.safetensors"), std::string::npos) << r.err;
  // Binary model files that are no config.json are named as what they are, not as bad JSON.
  for (const auto &[file, bytes, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"model.gguf", std::string("GGUF\x03\0\0\0", 8), "a GGUF file (llama.cpp)"},
           {"pytorch_model.bin", "PK\x03\x04rest", "a PyTorch checkpoint"},
           {"old.pt", "\x80\x02}q", "a PyTorch checkpoint"}}) {
    std::ofstream(dir / file, std::ios::binary) << bytes;
    r = run_dlrig({"fit", (dir / file).string(), "--from", snap});
    EXPECT_EQ(r.exit_code, 65) << file;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("JSON"), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

// A checkpoint whose tensor names dlrig does not know (no embedding, no numbered layers) and no
// config.json: the header's exact count and bytes, serving weights, and what needs the config.
TEST(FitCli, UnrecognisedTensorNamesGiveTheHeadersCountAndWeights) {
  auto dir = scratch("unknown-names");
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto file = dir / "model.safetensors";
  write_safetensors(file, {{"trunk.stem.kernel", {64, 3, 7, 7}},
                           {"trunk.mixer_a.w", {512, 2048}},
                           {"trunk.mixer_b.w", {2048, 512}},
                           {"readout.w", {1000, 512}}});
  const std::uint64_t params = 64 * 3 * 7 * 7 + 2 * 512 * 2048 + 1000 * 512;
  auto r = run_dlrig({"fit", file.string(), "--gpu", "NVIDIA H100 SXM5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_EQ(j["model"]["params"].get<std::uint64_t>(), params);
  EXPECT_EQ(j["model"]["params_by_dtype"]["BF16"].get<std::uint64_t>(), params);
  EXPECT_EQ(j["weights"]["stored_bytes"].get<std::uint64_t>(), 2 * params);
  EXPECT_EQ(j["weights"]["bytes_int8"].get<std::uint64_t>(), params);
  EXPECT_TRUE(j["activations_bytes"].is_null());
  EXPECT_TRUE(j["kv_cache_bytes"].is_null());
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["weights_fit"], true);
  auto t = run_dlrig({"fit", file.string()});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("config.json"), std::string::npos) << t.out;
  fs::remove_all(dir);
}

// Qwen3-Next's gated DeltaNet layers: the config's count is exact (transformers 5.25.0 builds
// 79,674,391,296), their activations and recurrent state are not modelled, so fit reports the
// weights alone and says what it leaves out; pick refuses, naming why.
TEST(FitCli, GatedDeltaNetModelsGetTheirWeightsAndWhatIsNotModelled) {
  auto dir = scratch("qwen3-next");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "qwen3_next"})";
  auto r = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_EQ(j["model"]["params"].get<std::uint64_t>(), 79674391296u);
  EXPECT_TRUE(j["weights"]["stored_bytes"].is_null());
  EXPECT_EQ(j["weights"]["bytes_16bit"].get<std::uint64_t>(), 2 * 79674391296u);
  EXPECT_EQ(j["weights"]["fit_basis"], "16-bit");
  EXPECT_EQ(j["gpus"][0]["weights_fit"], false); // 159 GB against 80 GiB
  EXPECT_TRUE(j["activations_bytes"].is_null());
  EXPECT_TRUE(j["kv_cache_bytes"].is_null());
  ASSERT_FALSE(j["needs_config"].empty());
  EXPECT_NE(j["needs_config"][0].get<std::string>().find("36 gated DeltaNet"), std::string::npos);
  auto t = run_dlrig({"fit", dir.string(), "--mode", "infer", "--gpu", "GeForce RTX 4090"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("not modelled yet"), std::string::npos) << t.out;
  auto p = run_dlrig({"pick", dir.string(), "--mode", "infer", "--tokens-per-s", "20"});
  EXPECT_EQ(p.exit_code, 64) << p.out;
  EXPECT_NE(p.err.find("gated DeltaNet"), std::string::npos) << p.err;
  // PEFT's all-linear LoRA adapts its fused experts and router as target_parameters (PEFT 0.21.2
  // counted 1,721,616,768 at r 8, perf/lora_params.py); bitsandbytes leaves them 16-bit, so
  // --quant int4 quantises 1,690,927,104 weights (transformers 5.25.0, perf/quant_params.py).
  auto l = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--lora", "8",
                      "--lora-targets", "all-linear", "--json"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(Json::parse(l.out)["model"]["adapter_params"].get<std::uint64_t>(), 1721616768u);
  auto q = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--mode", "infer",
                      "--quant", "int4", "--json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(Json::parse(q.out)["model"]["quantized_params"].get<std::uint64_t>(), 1690927104u);
  fs::remove_all(dir);
}

// Granite 4.0's Mamba-2 layers and LFM2's short convolutions are reported as such: weights alone,
// what is left out named.
TEST(FitCli, MambaHybridsGetTheirWeightsAndWhatIsNotModelled) {
  auto dir = scratch("granite-hybrid");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "granitemoehybrid",
      "num_hidden_layers": 4, "layer_types": ["mamba", "attention", "mamba", "mamba"]})";
  auto r = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_TRUE(j["activations_bytes"].is_null());
  EXPECT_TRUE(j["kv_cache_bytes"].is_null());
  ASSERT_FALSE(j["needs_config"].empty());
  EXPECT_NE(j["needs_config"][0].get<std::string>().find("3 Mamba-2 (state-space) layers of 4"),
            std::string::npos);
  auto p = run_dlrig({"pick", dir.string(), "--mode", "infer", "--tokens-per-s", "20"});
  EXPECT_EQ(p.exit_code, 64) << p.out;
  EXPECT_NE(p.err.find("Mamba-2"), std::string::npos) << p.err;
  // The shapes are exact, so bitsandbytes' and PEFT's counts are too: the class defaults give
  // 3,707,764,736 Linear4bit weights (transformers 5.25.0's quantizer, perf/quant_params.py) and
  // 11,436,032 all-linear adapter parameters at r 8 (PEFT 0.21.2, perf/lora_params.py); the GPUs
  // are judged on the weights as --quant leaves them.
  std::ofstream(dir / "config.json") << R"({"model_type": "granitemoehybrid"})";
  auto q = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--mode", "infer",
                      "--quant", "int4", "--json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  auto qj = Json::parse(q.out);
  const std::uint64_t params = 38601064448u, quantized = 3707764736u;
  EXPECT_EQ(qj["model"]["quantized_params"].get<std::uint64_t>(), quantized);
  EXPECT_EQ(qj["weights"]["bytes_quantized"].get<std::uint64_t>(),
            static_cast<std::uint64_t>(std::llround(quantized * 4.5 / 8)) +
                2 * (params - quantized));
  EXPECT_EQ(qj["weights"]["fit_basis"], "int4 (bitsandbytes)");
  EXPECT_TRUE(qj["model"]["adapter_params"].is_null());
  auto lo = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--lora", "8",
                       "--lora-targets", "all-linear", "--json"});
  ASSERT_EQ(lo.exit_code, 0) << lo.err;
  EXPECT_EQ(Json::parse(lo.out)["model"]["adapter_params"].get<std::uint64_t>(), 11436032u);
  // LFM2 with convolution layers: the same report; with attention alone it is sized in full.
  std::ofstream(dir / "config.json") << R"({"model_type": "lfm2", "num_hidden_layers": 16,
      "full_attn_idxs": [2, 5, 8, 10, 12, 14]})";
  auto l = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--json"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  auto lj = Json::parse(l.out);
  EXPECT_TRUE(lj["activations_bytes"].is_null());
  EXPECT_NE(lj["needs_config"][0].get<std::string>().find("10 gated short-convolution layers"),
            std::string::npos);
  std::ofstream(dir / "config.json") << R"({"model_type": "lfm2", "num_hidden_layers": 16})";
  auto a =
      run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--mode", "infer", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto aj = Json::parse(a.out);
  EXPECT_FALSE(aj.contains("needs_config"));
  EXPECT_GT(aj["gpus"][0]["breakdown"]["kv_cache"].get<std::uint64_t>(), 0u);
  fs::remove_all(dir);
}

// architectures decides the head: BertForMaskedLM trains with vocabulary logits, BertModel none.
TEST(FitCli, MaskedLmHeadAddsItsLogits) {
  auto dir = scratch("heads");
  fs::remove_all(dir);
  fs::create_directories(dir / "mlm");
  fs::create_directories(dir / "base");
  std::ifstream in(std::string(DLRIG_TEST_DATA) + "/models/bert-base-uncased.json");
  Json mlm = Json::parse(in);
  Json base = mlm;
  base.erase("architectures");
  std::ofstream(dir / "mlm" / "config.json") << mlm.dump();
  std::ofstream(dir / "base" / "config.json") << base.dump();
  auto est = [&](const char *which) {
    auto r = run_dlrig({"fit", (dir / which / "config.json").string(), "--gpu", "NVIDIA H100 SXM5",
                        "--seq", "512", "--batch", "8", "--json"});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return Json::parse(r.out);
  };
  auto a = est("mlm"), b = est("base");
  EXPECT_EQ(a["model"]["params"], 109514298);
  EXPECT_EQ(b["model"]["params"], 109482240);
  auto acts = [](const Json &j) { return j["gpus"][0]["breakdown"]["activations"].get<double>(); };
  // At least the logits of 8 × 512 tokens × 30522 words at 2 bytes.
  EXPECT_GT(acts(a) - acts(b), 2.0 * 8 * 512 * 30522);
  fs::remove_all(dir);
}

// A config.json of a model type read through data/model_types.json.
TEST(FitCli, TableModelTypesAreCounted) {
  auto r = run_dlrig({"fit", std::string(DLRIG_TEST_DATA) + "/models/qwen3-0.6b.json", "--gpu",
                      "NVIDIA H100 SXM5", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_EQ(Json::parse(r.out)["model"]["params"], 596049920);
}

// The guides' examples (reference: ../shared/guides): they need the knowledge base's catalog.
class FitGuides : public ::testing::Test {
protected:
  void SetUp() override {
    if (!catalog_landed())
      GTEST_SKIP() << "the knowledge base's GPU and model catalog is not in this build yet";
  }
  static std::string snap() { return snapshot_24gb(); }
};

TEST_F(FitGuides, ResNet50OnRtx3060) {
  auto r = run_dlrig({"fit", "resnet-50", "--gpu", "GeForce RTX 3060 12GB", "--batch", "64",
                      "--precision", "fp16-amp", "--from", snap(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(Json::parse(r.out)["gpus"][0]["verdict"], "fits");
}

TEST_F(FitGuides, BertBaseFineTuning) {
  // The guide: "BERT-base needs 12 GB for full fine-tuning".
  auto r = run_dlrig({"fit", "bert-base-uncased", "--gpu", "GeForce RTX 3060 12GB", "--seq", "512",
                      "--batch", "8", "--precision", "fp16-amp", "--from", snap(), "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  auto total = Json::parse(r.out)["gpus"][0]["total_bytes"].get<double>();
  EXPECT_GT(total, 3e9); // the guide's 12 GB is a rule of thumb for larger batches
  EXPECT_LT(total, 16e9);
}

TEST_F(FitGuides, Llama3_8bLoraOnRtx4090) {
  auto r = run_dlrig({"fit", "llama-3-8b", "--gpu", "GeForce RTX 4090", "--lora", "16", "--seq",
                      "512", "--from", snap(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
}

TEST_F(FitGuides, Gpt3_175bOnA100sNeedsManyOfThem) {
  auto one = run_dlrig(
      {"fit", "gpt-3-175b", "--gpu", "NVIDIA A100 80GB SXM4", "--seq", "2048", "--from", snap()});
  EXPECT_EQ(one.exit_code, 1) << one.err;
  auto many = run_dlrig({"fit",
                         "gpt-3-175b",
                         "--gpu",
                         "NVIDIA A100 80GB SXM4",
                         "--seq",
                         "2048",
                         "--gpus",
                         "8",
                         "--nodes",
                         "16",
                         "--tp",
                         "8",
                         "--pp",
                         "8",
                         "--checkpointing",
                         "full",
                         "--grad-accum",
                         "16",
                         "--strategy",
                         "zero1",
                         "--from",
                         snap()});
  EXPECT_EQ(many.exit_code, 0) << many.err << many.out;
}

// Gemma 3 4B as its config.json describes it (model_type gemma3: a text_config and a SigLIP
// vision_config): the whole model is held, its FLOPs are the language model's, and it says so.
TEST_F(FitGuides, AnImageTextModelIsSizedWithItsVisionTowerHeld) {
  auto dir = scratch("gemma3");
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << Json{
      {"model_type", "gemma3"},
      {"architectures", {"Gemma3ForConditionalGeneration"}},
      {"text_config",
       {{"hidden_size", 2560},
        {"intermediate_size", 10240},
        {"num_hidden_layers", 34},
        {"num_attention_heads", 8},
        {"num_key_value_heads", 4},
        {"head_dim", 256}}},
      {"vision_config",
       {{"hidden_size", 1152},
        {"intermediate_size", 4304},
        {"num_hidden_layers", 27},
        {"num_attention_heads", 16},
        {"image_size", 896},
        {"patch_size", 14},
        {"vision_use_head", false}}}}.dump();
  auto full = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--seq", "1024",
                         "--from", snap(), "--json"});
  ASSERT_TRUE(full.exit_code == 0 || full.exit_code == 1) << full.err;
  auto j = Json::parse(full.out);
  EXPECT_EQ(j["model"]["params"], 4'300'079'472ll); // transformers 5.25.0, perf/model_params.py
  bool said = false;
  for (const auto &a : j["assumptions"])
    said = said || a.get<std::string>().find("image-text model") != std::string::npos;
  EXPECT_TRUE(said) << j["assumptions"].dump();
  // The step's FLOPs are the language model's: the same as its text_config alone.
  auto text_dir = scratch("gemma3-text");
  fs::create_directories(text_dir);
  std::ofstream(text_dir / "config.json") << Json{
      {"model_type", "gemma3_text"},
      {"hidden_size", 2560},
      {"intermediate_size", 10240},
      {"num_hidden_layers", 34},
      {"num_attention_heads", 8},
      {"num_key_value_heads", 4},
      {"head_dim", 256}}.dump();
  auto text = run_dlrig({"fit", text_dir.string(), "--gpu", "NVIDIA H100 SXM5", "--seq", "1024",
                         "--from", snap(), "--json"});
  ASSERT_TRUE(text.exit_code == 0 || text.exit_code == 1) << text.err;
  auto t = Json::parse(text.out);
  EXPECT_EQ(j["gpus"][0]["time"]["flops_per_step"], t["gpus"][0]["time"]["flops_per_step"]);
  EXPECT_GT(j["gpus"][0]["breakdown"]["weights"].get<double>(),
            t["gpus"][0]["breakdown"]["weights"].get<double>());
}

// Gemma 2 has no SDPA path from transformers 5.21.0 (_supports_sdpa = False): fit runs eager as
// from_pretrained does, keeps the s^2 scores (8 heads x 4096^2 x 8 B, 1 GiB, in each of the 26
// layers), says so, and refuses --attention sdpa as transformers does.
TEST_F(FitGuides, Gemma2RunsEagerAttentionAsTransformersDoes) {
  auto fit_json = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"fit",   "gemma-2-2b", "--gpu",          "NVIDIA H100 SXM5",
                                     "--seq", "4096",       "--transformers", "5.25.0",
                                     "--json"};
    args.insert(args.end(), more.begin(), more.end());
    return run_dlrig(args);
  };
  auto eager = fit_json({});
  ASSERT_TRUE(eager.exit_code == 0 || eager.exit_code == 1) << eager.err;
  auto e = Json::parse(eager.out);
  EXPECT_EQ(e["run"]["attention"], "eager");
  bool said = false;
  for (const auto &a : e["assumptions"])
    said =
        said || a.get<std::string>().find("attention: eager, which transformers 5.25.0 runs "
                                          "for gemma2 when none is asked for") != std::string::npos;
  EXPECT_TRUE(said) << e["assumptions"].dump();
  auto flash = fit_json({"--attention", "flash"});
  ASSERT_TRUE(flash.exit_code == 0 || flash.exit_code == 1) << flash.err;
  auto f = Json::parse(flash.out);
  EXPECT_EQ(f["run"]["attention"], "flash");
  EXPECT_GE(e["gpus"][0]["breakdown"]["activations"].get<double>() -
                f["gpus"][0]["breakdown"]["activations"].get<double>(),
            26.0 * (1 << 30));
  auto sdpa = fit_json({"--attention", "sdpa"});
  EXPECT_EQ(sdpa.exit_code, 64);
  EXPECT_NE(sdpa.err.find("transformers 5.25.0 refuses SDPA for gemma2"), std::string::npos)
      << sdpa.err;
  auto older = run_dlrig({"fit", "gemma-2-2b", "--gpu", "NVIDIA H100 SXM5", "--seq", "4096",
                          "--transformers", "5.20.0", "--json"});
  ASSERT_TRUE(older.exit_code == 0 || older.exit_code == 1) << older.err;
  EXPECT_EQ(Json::parse(older.out)["run"]["attention"], "sdpa");
}

TEST_F(FitGuides, ConfigJsonAndParamsFamily) {
  auto dir = scratch("config");
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << Json{
      {"model_type", "llama"},       {"hidden_size", 4096},
      {"num_hidden_layers", 32},     {"num_attention_heads", 32},
      {"num_key_value_heads", 8},    {"intermediate_size", 14336},
      {"vocab_size", 128256},        {"max_position_embeddings", 8192},
      {"tie_word_embeddings", false}}.dump();
  auto r = run_dlrig({"fit", dir.string(), "--gpu", "NVIDIA H100 SXM5", "--seq", "1024", "--lora",
                      "16", "--from", snap(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["model"]["params"], 8'030'261'248ll);
  auto p = run_dlrig({"fit", "--params", "7B", "--family", "decoder", "--gpu", "NVIDIA H100 SXM5",
                      "--seq", "1024", "--from", snap(), "--json"});
  ASSERT_TRUE(p.exit_code == 0 || p.exit_code == 1) << p.err;
  auto j = Json::parse(p.out);
  EXPECT_EQ(j["model"]["params"], 7'000'000'000ll);
  EXPECT_FALSE(j["assumptions"].empty() && j["model"]["origin"].get<std::string>().empty());
  // Counts as people write them: digit groups, a space, a word; a comma that is no digit group
  // ("7,5B", a decimal comma) is refused rather than read as 75B.
  for (const auto &[given, count] :
       std::vector<std::pair<std::string, long long>>{{"7 B", 7'000'000'000},
                                                      {"7,000,000,000", 7'000'000'000},
                                                      {"7_000_000_000", 7'000'000'000},
                                                      {"7bn", 7'000'000'000},
                                                      {"7 billion", 7'000'000'000},
                                                      {"0.5 million", 500'000},
                                                      {"1,000B", 1'000'000'000'000}}) {
    p = run_dlrig(
        {"fit", "--params", given, "--family", "decoder", "--gpu", "NVIDIA H100 SXM5", "--json"});
    ASSERT_TRUE(p.exit_code == 0 || p.exit_code == 1) << given << ": " << p.err;
    EXPECT_EQ(Json::parse(p.out)["model"]["params"], count) << given;
  }
  for (const char *bad : {"7,5B", "7,50B", ",7B", "7B,", "b", "7 fortnights"}) {
    p = run_dlrig({"fit", "--params", bad, "--family", "decoder", "--gpu", "NVIDIA H100 SXM5"});
    EXPECT_EQ(p.exit_code, 64) << bad;
    EXPECT_NE(p.err.find("expected a positive count"), std::string::npos) << bad << ": " << p.err;
  }
}

TEST_F(FitGuides, CatalogResnetAndUnetMatchTheirPublishedCounts) {
  // The estimator's own layer walks agree with the catalog's derived counts.
  auto r =
      run_dlrig({"fit", "resnet-50", "--gpu", "NVIDIA A100 80GB SXM4", "--from", snap(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["model"]["params"], 25'557'032);
  auto u = run_dlrig({"fit", "sd-1.5-unet", "--gpu", "NVIDIA A100 80GB SXM4", "--batch", "8",
                      "--from", snap(), "--json"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  auto j = Json::parse(u.out);
  EXPECT_EQ(j["model"]["params"], 859'520'964);
  EXPECT_EQ(j["run"]["image_size"], 512);
  EXPECT_GT(j["gpus"][0]["breakdown"]["activations"].get<double>(), 1e9);
}

TEST_F(FitGuides, AllGpusTable) {
  auto r = run_dlrig({"fit", "llama-3-70b", "--mode", "infer", "--seq", "4096", "--all-gpus",
                      "--max-batch", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_EQ(j["gpus"].size(), kb::builtin().gpus.size());
}

// A machine without a GPU: the breakdown anyway, sized against the catalog, and which GPUs it fits.
TEST_F(FitGuides, NoGpuHerePrintsTheBreakdownAndTheGpusItFits) {
  auto p = scratch("snapshot-no-gpu.json");
  Json snap = {
      {"schema_version", 1},
      {"host",
       {{"cpu",
         {{"model", "Test CPU"}, {"cores", 8}, {"max_hz", 3.0e9}, {"isa", {"avx2", "fma"}}}}}},
      {"gpus", Json::array()}};
  std::ofstream(p) << snap.dump();
  auto r = run_dlrig({"fit", "llama-3-8b", "--lora", "16", "--seq", "512", "--from", p.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("total as nvidia-smi shows it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPUs it fits (this machine has no GPU"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("give --gpu NAME"), std::string::npos) << r.err;
  auto j = run_dlrig(
      {"fit", "llama-3-8b", "--lora", "16", "--seq", "512", "--from", p.string(), "--json"});
  auto doc = Json::parse(j.out);
  EXPECT_TRUE(doc["no_local_gpu"].get<bool>());
  EXPECT_EQ(doc["gpus"].size(), kb::builtin().gpus.size());
  // Too big for every catalog GPU: exit 1, still the breakdown.
  auto big = run_dlrig({"fit", "llama-3-70b", "--seq", "8192", "--from", p.string()});
  EXPECT_EQ(big.exit_code, 1) << big.err;
  EXPECT_NE(big.out.find("none of the"), std::string::npos) << big.out;
}

// "--gpu V100" takes the family's most common variant and says so, with the others.
TEST_F(FitGuides, BareFamilyNameIsTakenAndSaid) {
  auto r = run_dlrig({"fit", "bert-base-uncased", "--gpu", "V100", "--seq", "128", "--json"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  auto j = Json::parse(r.out);
  EXPECT_EQ(j["gpus"][0]["name"], "Tesla V100 SXM2 16GB");
  bool said = false;
  for (const auto &a : j["assumptions"])
    said = said || a.get<std::string>().find("Tesla V100 PCIe 16GB") != std::string::npos;
  EXPECT_TRUE(said) << j["assumptions"].dump();
}

} // namespace
} // namespace dlrig::test

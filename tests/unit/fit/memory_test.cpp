// Validation of the memory model against published outputs: the ZeRO paper
// (https://arxiv.org/abs/1910.02054), DeepSpeed's estimators
// (https://deepspeed.readthedocs.io/en/latest/memory.html), accelerate, Korthikanti et al.
// (https://arxiv.org/abs/2205.05198), the KV-cache figures, and the measured per-layer activation
// coefficients; docs/fit.md names the source of each.
#include "dlrig/fit/memory.hpp"
#include "dlrig/kb/kb.hpp"
#include "unit/fit/models.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dlrig::fit {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

// ZeRO paper Table 1 (GB = 1e9 B per device): {Psi, DP, P_os, P_os+g, P_os+g+p}.
struct ZeroRow {
  double psi;
  double dp;
  double os, osg, osgp;
};
const ZeroRow kZeroTable1[] = {
    {7.5e9, 1, 120, 120, 120},      {7.5e9, 4, 52.5, 41.3, 30},     {7.5e9, 16, 35.6, 21.6, 7.5},
    {7.5e9, 64, 31.4, 16.6, 1.88},  {7.5e9, 256, 30.4, 15.4, 0.47}, {7.5e9, 1024, 30.1, 15.1, 0.12},
    {128e9, 1, 2048, 2048, 2048},   {128e9, 4, 896, 704, 512},      {128e9, 16, 608, 368, 128},
    {128e9, 64, 536, 284, 32},      {128e9, 256, 518, 263, 8},      {128e9, 1024, 513, 257, 2},
    {1e12, 1, 16000, 16000, 16000}, {1e12, 4, 7000, 5500, 4000},    {1e12, 16, 4750, 2875, 1000},
    {1e12, 64, 4187, 2218, 250},    {1e12, 256, 4046, 2054, 62.5},  {1e12, 1024, 4011, 2013, 15.6},
};

// The paper prints 3 significant figures, rounding small values and truncating large ones
// (4187.5 -> 4187): the printed value is within one unit of its last digit below the exact one.
void expect_printed(double exact_gb, double printed) {
  double unit = printed >= 100 ? 1 : printed >= 10 ? 0.1 : printed >= 1 ? 0.01 : 0.01;
  if (std::floor(printed) == printed && printed < 100 && printed >= 10)
    unit = 1; // "30", "32"
  EXPECT_LE(std::fabs(exact_gb - printed), unit) << exact_gb << " printed as " << printed;
}

TEST(ZeroPaper, Table1EveryEntry) {
  for (const auto &r : kZeroTable1) {
    expect_printed(zero_model_states(r.psi, 1, r.dp) / 1e9, r.os);
    expect_printed(zero_model_states(r.psi, 2, r.dp) / 1e9, r.osg);
    expect_printed(zero_model_states(r.psi, 3, r.dp) / 1e9, r.osgp);
  }
}

TEST(ZeroPaper, Figure1SevenPointFiveBOn64Gpus) {
  auto gb = [](double v) { return fmt::format("{:.1f}", v / 1e9); };
  EXPECT_EQ(gb(zero_model_states(7.5e9, 0, 64)), "120.0");
  EXPECT_EQ(gb(zero_model_states(7.5e9, 1, 64)), "31.4");
  EXPECT_EQ(gb(zero_model_states(7.5e9, 2, 64)), "16.6");
  EXPECT_EQ(gb(zero_model_states(7.5e9, 3, 64)), "1.9");
}

TEST(ZeroPaper, TheEstimatorsModelStatesAreThePapersForStage1AndDdp) {
  // The full estimate's weights + gradients + optimizer (without the step's temporaries) for
  // mixed-precision Adam under ZeRO-1 on 64 GPUs: the paper's 2 + 2 + 12/N.
  auto model = test::plain_decoder(7'500'000'000);
  fit::Run run;
  run.precision = Precision::fp16_amp;
  run.optimizer = Optimizer::adam;
  run.strategy = Strategy::zero1;
  run.gpus = 8;
  run.nodes = 8;
  run.seq = 1;
  auto e = estimate_memory(model, run, test::gpu_80gb());
  double states = static_cast<double>(e.weights + e.gradients + e.optimizer);
  if (e.peak_phase == "optimizer step")
    states -= 4.0 * 7.5e9 / 64; // the fp32 gradient partition of the step
  EXPECT_EQ(fmt::format("{:.1f}", states / 1e9), "31.4");
}

// DeepSpeed's documented t5-3b outputs (memory.md §1.2; printed "GB" are GiB): 2851e6 params,
// 32e6 largest layer, one node of 8 GPUs.
TEST(DeepSpeed, T5_3bEstimatorRows) {
  const double psi = 2851e6, ll = 32e6;
  auto gib = [](double v) { return fmt::format("{:.2f}", v / kGiB); };
  auto z2_off = deepspeed_model_states(psi, ll, 2, 8, 8, Offload::optimizer);
  EXPECT_EQ(gib(z2_off.gpu()), "5.31");
  EXPECT_EQ(gib(z2_off.host), "127.45");
  // Current code (DeepSpeed#5099): 2Psi + 18Psi/N = 11.28 (the docs still print the old 15.93).
  auto z2 = deepspeed_model_states(psi, ll, 2, 8, 8, Offload::none);
  EXPECT_EQ(gib(z2.gpu()), "11.28");
  auto z3_both = deepspeed_model_states(psi, ll, 3, 8, 8, Offload::params);
  EXPECT_EQ(gib(z3_both.gpu()), "0.12");
  EXPECT_EQ(gib(z3_both.host), "127.45");
  auto z3_opt = deepspeed_model_states(psi, ll, 3, 8, 8, Offload::optimizer);
  EXPECT_EQ(gib(z3_opt.gpu()), "0.78");
  EXPECT_EQ(gib(z3_opt.host), "127.45");
  auto z3 = deepspeed_model_states(psi, ll, 3, 8, 8, Offload::none);
  EXPECT_EQ(gib(z3.gpu()), "6.09");
  EXPECT_EQ(gib(z3.host), "127.45");
}

TEST(DeepSpeed, T5LargeOnFourGpus) {
  // t5-large: 737.67M params, largest layer 32.90M; ZeRO-3 per GPU in MiB: 3291 without
  // offload, 125 with both offloaded, 477 with the optimizer offloaded.
  const double psi = 737.67e6, ll = 32.90e6;
  auto mib = [](const ModelStates &s) { return s.gpu() / kMiB; };
  EXPECT_NEAR(mib(deepspeed_model_states(psi, ll, 3, 4, 4, Offload::none)), 3291, 1);
  EXPECT_NEAR(mib(deepspeed_model_states(psi, ll, 3, 4, 4, Offload::params)), 125, 1);
  EXPECT_NEAR(mib(deepspeed_model_states(psi, ll, 3, 4, 4, Offload::optimizer)), 477, 1);
}

// accelerate estimate-memory, bert-base-cased (memory.md §1.1): total 433,249,280 B in fp32
// (108,310,272 params + 8,192 B of int64 buffers), 206.59 "MB" (MiB) in fp16, and "Training
// using Adam" in fp32 = 4x the fp32 size = 1.61 "GB" (GiB).
TEST(Accelerate, BertBaseCasedRows) {
  auto model = test::bert_base_cased();
  fit::Run run;
  run.mode = Mode::infer;
  run.precision = Precision::fp32;
  run.seq = 1;
  auto gpu = test::gpu_80gb();
  EXPECT_EQ(estimate_memory(model, run, gpu).weights, 433'249'280u);
  EXPECT_EQ(fmt::format("{:.2f}", estimate_memory(model, run, gpu).weights / kMiB), "413.18");
  run.precision = Precision::bf16;
  EXPECT_EQ(fmt::format("{:.2f}", estimate_memory(model, run, gpu).weights / kMiB), "206.59");
  fit::Run train;
  train.precision = Precision::fp32;
  train.optimizer = Optimizer::adam;
  train.seq = 1;
  auto e = estimate_memory(model, train, gpu);
  // fp32 Adam: weights 4 + gradients 4 + m and v 8 bytes per parameter.
  double states = static_cast<double>(e.weights + e.gradients + e.optimizer);
  if (e.peak_phase == "optimizer step")
    states -= 4.0 * static_cast<double>(model.params); // foreach Adam's temporary
  EXPECT_EQ(fmt::format("{:.2f}", states / kGiB), "1.61");
}

// accelerate's convert_bytes (memory.md §1.1): divide by 1024 until below 1024, Python's
// round(x, 2), labelled bytes/KB/MB/GB/TB.
std::string accelerate_text(double bytes) {
  const char *units[] = {"bytes", "KB", "MB", "GB", "TB"};
  for (const char *u : units) {
    if (bytes < 1024) {
      auto text = fmt::format("{}", std::round(bytes * 100) / 100);
      if (text.find('.') == std::string::npos)
        text += ".0";
      return text + " " + u;
    }
    bytes /= 1024;
  }
  return "";
}

// Every row of accelerate's docs table and the byte constants of its tests/test_cli.py.
TEST(Accelerate, EstimateMemoryRowsForBertBaseCasedAndResnet50) {
  auto bert = accelerate_rows(test::bert_base_cased());
  ASSERT_EQ(bert.size(), 4u);
  EXPECT_EQ(bert[0].total, 433'249'280);
  EXPECT_EQ(bert[0].largest_layer, 90'669'056);
  const char *docs[][3] = {{"float32", "413.18 MB", "1.61 GB"},
                           {"float16", "206.59 MB", "826.36 MB"},
                           {"int8", "103.29 MB", "413.18 MB"},
                           {"int4", "51.65 MB", "206.59 MB"}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(bert[i].dtype, docs[i][0]);
    EXPECT_EQ(accelerate_text(bert[i].total), docs[i][1]);
    EXPECT_EQ(accelerate_text(bert[i].training_docs), docs[i][2]);
  }
  // accelerate's code since #2581 prints the largest component: the same for float32 and
  // float16, "N/A" for int8 and int4.
  EXPECT_EQ(accelerate_text(*bert[0].training), "1.61 GB");
  EXPECT_EQ(accelerate_text(*bert[1].training), "826.36 MB");
  EXPECT_FALSE(bert[2].training);
  EXPECT_FALSE(bert[3].training);
  // The docs table's largest layer (84.95 MB) is the word-embedding table alone, V x h x 4.
  EXPECT_EQ(accelerate_text(28996.0 * 768 * 4), "84.95 MB");

  auto resnet = accelerate_rows(test::resnet("resnet50"));
  ASSERT_EQ(resnet.size(), 4u);
  EXPECT_EQ(resnet[0].total, 102'441'032);
  EXPECT_EQ(resnet[0].largest_layer, 9'437'184);
  EXPECT_EQ(accelerate_text(resnet[0].largest_layer), "9.0 MB");
  EXPECT_EQ(accelerate_text(resnet[0].total), "97.7 MB");
  EXPECT_EQ(accelerate_text(resnet[0].training_docs), "390.78 MB");
  EXPECT_EQ(accelerate_text(resnet[1].largest_layer), "4.5 MB");
  EXPECT_EQ(accelerate_text(resnet[1].total), "48.85 MB");
  EXPECT_EQ(accelerate_text(resnet[1].training_docs), "195.39 MB");

  EXPECT_TRUE(accelerate_rows(test::sd15_unet()).empty());
}

TEST(Korthikanti, Table2Formulas) {
  // GPT-3 175B: s 2048, h 12288, a 96: 5as/h = 80 against the 34 of the rest.
  const double s = 2048, b = 1, h = 12288, a = 96;
  EXPECT_DOUBLE_EQ(5 * a * s / h, 80);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(KorthikantiCase::none, s, b, h, a, 1), s * b * h * 114);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(KorthikantiCase::tensor_parallel, s, b, h, a, 8),
                   s * b * h * (10 + 3 + 10));
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(KorthikantiCase::tp_selective, s, b, h, a, 8),
                   s * b * h * 13);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(KorthikantiCase::tp_sp_selective, s, b, h, a, 8),
                   34 * s * b * h / 8);
  EXPECT_DOUBLE_EQ(korthikanti_layer_bytes(KorthikantiCase::full, s, b, h, a, 8), 2 * s * b * h);
}

TEST(Korthikanti, GeneralLayerReducesToThePaperForGptLayers) {
  // A GPT layer (LayerNorm, GeLU MLP of 4h, dropout, multi-head, eager attention) with 16-bit
  // activations is exactly the paper's count, with and without tensor parallelism.
  const Dims d = dims_of(test::gpt3_175b().arch);
  ASSERT_TRUE(d.dropout);
  for (double s : {512.0, 2048.0})
    for (int t : {1, 2, 8}) {
      double ours = transformer_layer_activation_bytes(d, s, 4, 2, t, Attention::eager, true);
      double paper = korthikanti_layer_bytes(
          t == 1 ? KorthikantiCase::none : KorthikantiCase::tensor_parallel, s, 4, 12288, 96, t);
      EXPECT_DOUBLE_EQ(ours, paper) << "s=" << s << " t=" << t;
    }
  // Flash attention keeps no s^2 scores: the paper's selective-recompute count plus the
  // kernel's saved output (2sbh).
  double flash = transformer_layer_activation_bytes(d, 2048, 1, 2, 1, Attention::flash, true);
  EXPECT_DOUBLE_EQ(flash,
                   korthikanti_layer_bytes(KorthikantiCase::tp_selective, 2048, 1, 12288, 96, 1) +
                       2 * 2048 * 12288);
}

TEST(Korthikanti, FullCheckpointingKeepsLayerInputs) {
  auto model = test::gpt3_175b();
  fit::Run run;
  run.seq = 2048;
  run.checkpointing = Checkpointing::full;
  run.gpus = 64;
  run.tp = 8;
  run.pp = 8;
  run.grad_accum = 8;
  run.strategy = Strategy::ddp;
  run.attention = Attention::eager;
  run.optimizer = Optimizer::sgd;  // no step temporaries: the peak is forward/backward
  run.precision = Precision::bf16; // Megatron runs a 16-bit model, without autocast
  auto full = estimate_memory(model, run, test::gpu_80gb());
  // 96 layers / 8 stages x 8 micro-batches in flight x 2sbh, plus one layer's working set.
  const double sbh = 2048.0 * 12288;
  const double layer =
      korthikanti_layer_bytes(KorthikantiCase::tensor_parallel, 2048, 1, 12288, 96, 8);
  const double expected = 12 * 8 * 2 * sbh + layer + 8 * 2048 + 2048 * 12288;
  EXPECT_NEAR(static_cast<double>(full.activations), expected, 2);
}

// KV cache bytes per token at 16-bit (memory.md §1.6).
TEST(KvCache, BytesPerTokenTable) {
  EXPECT_EQ(kv_bytes_per_token(dims_of(test::gpt2().arch), 2), 36'864u);
  EXPECT_EQ(kv_bytes_per_token(dims_of(test::llama(32, 4096, 32, 32, 11008).arch), 2), 524'288u);
  EXPECT_EQ(kv_bytes_per_token(dims_of(test::llama(40, 5120, 40, 40, 13824).arch), 2), 819'200u);
  EXPECT_EQ(kv_bytes_per_token(dims_of(test::llama(80, 8192, 64, 8, 28672).arch), 2), 327'680u);
  EXPECT_EQ(kv_bytes_per_token(dims_of(test::llama3_8b().arch), 2), 131'072u);
  EXPECT_EQ(kv_bytes_per_token(dims_of(test::llama(28, 3584, 28, 4, 18944).arch), 2), 57'344u);
  EXPECT_EQ(kv_bytes_per_token(dims_of(test::llama(40, 6144, 48, 1, 24576).arch), 2), 20'480u);
}

TEST(KvCache, VllmAndMlEngineeringExamples) {
  // vLLM: OPT-13B 800 KB per token, ~1.6 GB for a 2048-token request.
  auto opt13 = dims_of(test::llama(40, 5120, 40, 40, 13824).arch);
  EXPECT_EQ(kv_bytes_per_token(opt13, 2), 800u * 1024);
  EXPECT_NEAR(kv_bytes_per_token(opt13, 2) * 2048.0 / 1e9, 1.6, 0.1);
  // ml-engineering: Llama-3.1-8B, batch 128 x 1024 tokens ~ 17.2 GB.
  auto model = test::llama3_8b();
  fit::Run run;
  run.mode = Mode::infer;
  run.batch = 128;
  run.seq = 1000;
  run.max_tokens = 24;
  auto e = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(fmt::format("{:.1f}", static_cast<double>(e.kv_cache) / 1e9), "17.2");
}

// Sliding-window layers: the cache's peak in token slots as transformers 5.25.0 keeps it, measured
// by perf/kv_cache.py on small models (the storage of every cached key and value after prefill and
// after each decoding step; docs/fit.md has the table).
TEST(KvCache, SlidingLayersKeepTheirWindowAfterPrefill) {
  Dims d;
  d.layers = 26; // Gemma 3: 22 of 26 layers slide, window 16
  d.sliding_layers = 22;
  d.sliding_window = 16;
  EXPECT_EQ(kv_cache_layer_tokens(d, 40, 8, true), 1040); // right after prefill: 26 x 40
  EXPECT_EQ(kv_cache_layer_tokens(d, 8, 24, true), 480);  // 4 x 32 + 22 x 16
  EXPECT_EQ(kv_cache_layer_tokens(d, 8, 24, false), 832); // before 4.56.0: every token
  d.layers = 36;                                          // gpt-oss: 18 of 36
  d.sliding_layers = 18;
  EXPECT_EQ(kv_cache_layer_tokens(d, 8, 24, true), 864);
  d.layers = 32; // Qwen2 with use_sliding_window: 4 of 32
  d.sliding_layers = 4;
  EXPECT_EQ(kv_cache_layer_tokens(d, 8, 24, true), 960);
  EXPECT_EQ(kv_cache_layer_tokens(d, 40, 8, true), 1408); // 28 x 48 + 4 x 16 > 32 x 40

  EXPECT_TRUE(kv_windows_apply(d, ""));
  EXPECT_TRUE(kv_windows_apply(d, "4.56.0"));
  EXPECT_TRUE(kv_windows_apply(d, "5.25.0"));
  EXPECT_FALSE(kv_windows_apply(d, "4.55.4"));
  d.sliding_layers = 0;
  EXPECT_FALSE(kv_windows_apply(d, ""));
}

// End to end from a config.json: Gemma 3 1B's shape generating 30,000 tokens holds its full cache
// in 4 of 26 layers only; with transformers 4.55 every layer keeps every token.
TEST(KvCache, ServingGemma3CountsItsSlidingLayers) {
  auto [model, run] = test::served(R"({"model_type": "gemma3_text",
      "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
      "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
      "vocab_size": 262144, "sliding_window": 512, "max_position_embeddings": 32768})",
                                   2000, 30000);
  const double slot = 2.0 * 256 * 2; // K and V, one 256-wide head, bf16
  auto e = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(static_cast<double>(e.kv_cache), slot * (4 * 32000 + 22 * 512));
  EXPECT_TRUE(test::says(e, "22 of 26 layers keep a sliding window of 512 tokens"));
  run.transformers_version = "4.55.0";
  auto old = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(static_cast<double>(old.kv_cache), slot * 26 * 32000);
}

// Llama 4's chunked-attention layers keep the last attention_chunk_size tokens as a sliding layer
// does; the note names them for what they are.
TEST(KvCache, Llama4ChunkedLayersAreNamedInTheNote) {
  auto [model, run] = test::served(R"({"model_type": "llama4_text", "hidden_size": 64,
      "intermediate_size": 64, "intermediate_size_mlp": 64, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128, "num_local_experts": 4,
      "num_hidden_layers": 4, "attention_chunk_size": 16})",
                                   8, 40);
  auto e = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_TRUE(test::says(e, "3 of 4 layers attend within chunks of 16 tokens")) << e.notes[0];
  EXPECT_FALSE(test::says(e, "keep a sliding window of"));
  // 8 + 40 tokens in the full layer, the last 16 in each chunked one.
  EXPECT_EQ(static_cast<double>(e.kv_cache), 2.0 * 2 * 16 * 2 * (48 + 3 * 16));
}

// DeepSeek-V3 serving: transformers from 5.15.0 caches the 576-value latent per token and layer
// (perf/kv_cache.py measured it on 5.25.0) and expands one layer's context per step; 5.14 cached
// every head's key (192) and value (128).
TEST(KvCache, DeepSeekCachesItsLatentFrom515) {
  auto [model, run] = test::served(R"({"model_type": "deepseek_v3"})", 4096, 1024);
  run.transformers_version = "5.15.0";
  auto e = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(e.kv_cache, 61ull * 5120 * 576 * 2);
  EXPECT_TRUE(test::says(e, "caches its 576-value latent"));
  run.transformers_version = "5.14.0";
  auto old = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(old.kv_cache, 61ull * 5120 * 128 * (192 + 128) * 2);
  // The latent's expansion: one layer's context of kv_b_proj output and keys, 16-bit.
  EXPECT_NEAR(static_cast<double>(e.activations) - static_cast<double>(old.activations),
              128.0 * (128 + 128 + 192) * 5120 * 2, 1);
}

// Measured activation memory per HF decoder layer with SDPA, in bytes per b*s*h (memory.md
// §1.10): the general count lands within 10% for the Llama-style layers.
TEST(Activations, HfDecoderLayersWithinTenPercentOfMeasured) {
  struct Case {
    test::Model m;
    double measured;
  };
  const Case cases[] = {{test::llama3_8b(), 56},
                        {test::llama(32, 4096, 32, 8, 14336), 56}, // Mistral-7B
                        {test::llama(32, 960, 15, 5, 2560), 48},   // SmolLM2-360M
                        {test::gemma_2b(), 96}};
  for (const auto &c : cases) {
    const Dims d = dims_of(c.m.arch);
    double per = transformer_layer_activation_bytes(d, 4096, 1, 2, 1, Attention::sdpa, true) /
                 (4096.0 * static_cast<double>(d.hidden));
    EXPECT_NEAR(per, c.measured, 0.10 * c.measured) << c.m.arch.name;
  }
}

TEST(Estimate, LevelsAddUp) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 2048;
  run.gpus = 8;
  run.strategy = Strategy::fsdp;
  auto e = estimate_memory(model, run, test::gpu_80gb());
  std::uint64_t sum = e.weights + e.gradients + e.optimizer + e.activations + e.kv_cache;
  std::uint64_t alloc_overhead = 0, reserved_overhead = 0, device_overhead = 0;
  for (const auto &o : e.overhead_parts)
    (o.level == Level::allocated  ? alloc_overhead
     : o.level == Level::reserved ? reserved_overhead
                                  : device_overhead) += o.bytes;
  EXPECT_EQ(e.allocated, sum + alloc_overhead);
  EXPECT_EQ(e.reserved, e.allocated + reserved_overhead);
  EXPECT_EQ(e.device, e.reserved + device_overhead);
  EXPECT_EQ(e.overhead, alloc_overhead + reserved_overhead + device_overhead);
  EXPECT_GT(device_overhead, 1'000'000'000u) << "context + NCCL on 8 GPUs";
}

TEST(Estimate, ShardingShrinksStatesAndOffloadMovesThemToTheHost) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 1024;
  run.gpus = 8;
  auto gpu = test::gpu_80gb();
  std::uint64_t prev = UINT64_MAX;
  for (Strategy s : {Strategy::ddp, Strategy::zero1, Strategy::zero2, Strategy::zero3}) {
    run.strategy = s;
    auto e = estimate_memory(model, run, gpu);
    std::uint64_t states = e.weights + e.gradients + e.optimizer;
    EXPECT_LT(states, prev) << name(s);
    prev = states;
  }
  run.offload = Offload::params;
  auto off = estimate_memory(model, run, gpu);
  EXPECT_EQ(off.gradients, 0u);
  EXPECT_GT(off.host_bytes, 8'000'000'000u);
}

// At the start of backward every activation is alive but, with zero_grad(set_to_none=True), no
// gradient exists yet; accumulating micro-batches hold every gradient through it.
TEST(Estimate, GradientsAtTheBackwardPeak) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 4096;
  run.batch = 8;
  run.precision = Precision::bf16_amp;
  auto one = estimate_memory(model, run, test::gpu_80gb());
  ASSERT_EQ(one.peak_phase, "forward/backward");
  EXPECT_EQ(one.gradients, 0u);
  run.grad_accum = 4;
  auto acc = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(acc.gradients, static_cast<std::uint64_t>(4.0 * static_cast<double>(model.params)));
  EXPECT_EQ(acc.allocated - one.allocated, acc.gradients);
}

// A causal LM's loss holds 14 B per logit at the start of backward in 16-bit (16 in fp32):
// measured 13.99 / 15.95 with transformers' ForCausalLMLoss (docs/fit-accuracy.md).
TEST(Estimate, LossPeakPerLogit) {
  auto small = test::llama3_8b();
  auto big = small;
  big.arch.vocab += 1000;
  fit::Run run;
  run.seq = 4096;
  run.batch = 8;
  for (auto [precision, bytes] : {std::pair{Precision::bf16_amp, 14.0}, {Precision::fp32, 16.0}}) {
    run.precision = precision;
    auto a = estimate_memory(small, run, test::gpu_80gb());
    auto b = estimate_memory(big, run, test::gpu_80gb());
    ASSERT_EQ(a.peak_phase, "forward/backward");
    EXPECT_DOUBLE_EQ(static_cast<double>(b.activations - a.activations), bytes * 8 * 4096 * 1000);
  }
  // torchtune's chunked loss: the 16-bit logits and the fp32 rest for one of its 8 chunks.
  run.precision = Precision::bf16_amp;
  run.loss = Loss::chunked;
  EXPECT_DOUBLE_EQ(static_cast<double>(estimate_memory(big, run, test::gpu_80gb()).activations -
                                       estimate_memory(small, run, test::gpu_80gb()).activations),
                   (2 + 12.0 / 8) * 8 * 4096 * 1000);
}

// A ResNet's backward peak comes early in the walk down from the classifier: some gradients
// exist, not all; fewer bytes than every gradient beside every activation.
TEST(Estimate, CnnBackwardWalk) {
  auto model = test::resnet("resnet50");
  fit::Run run;
  run.precision = Precision::fp32;
  run.image_size = 224;
  run.batch = 8;
  auto e = estimate_memory(model, run, test::gpu_80gb());
  ASSERT_EQ(e.peak_phase, "forward/backward");
  const double all_grads = 4.0 * static_cast<double>(model.params);
  EXPECT_GT(static_cast<double>(e.gradients), 0);
  EXPECT_LT(static_cast<double>(e.gradients), all_grads);
  run.grad_accum = 2;
  auto acc = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_DOUBLE_EQ(static_cast<double>(acc.gradients), all_grads);
  EXPECT_GT(acc.activations, e.activations);
}

// transformers' gelu_new is a Python tanh formula whose autograd graph keeps three more tensors
// of the MLP's width than a fused GeLU (counted with saved-tensor hooks on a GPT2Block).
TEST(Estimate, GeluNewKeepsThreeMoreMlpTensors) {
  model::ModelArch a;
  a.family = model::ModelFamily::decoder;
  a.hidden = 768;
  a.layers = 12;
  a.heads = 12;
  a.intermediate = 3072;
  a.vocab = 50257;
  a.norm = "layernorm";
  a.extra = Json{{"activation_function", "gelu"}};
  auto fused = dims_of(a);
  a.extra["activation_function"] = "gelu_new";
  auto python = dims_of(a);
  EXPECT_EQ(python.act_extra, 3);
  const double s = 256, b = 2;
  EXPECT_DOUBLE_EQ(transformer_layer_activation_bytes(python, s, b, 4, 1, Attention::sdpa, true) -
                       transformer_layer_activation_bytes(fused, s, b, 4, 1, Attention::sdpa, true),
                   3 * 4 * s * b * 3072);
}

// What dims_of reads from the config for the autocast terms: gelu_new's fp32 tensors (its
// torch.pow), quick_gelu's saved sigmoid, and how many linears read each block's input.
TEST(Dims, ActivationsAndProjectionsFromTheConfig) {
  auto g = test::gpt2().arch;
  g.hf_model_type = "gpt2"; // one fused c_attn, one c_fc
  g.extra["activation_function"] = "gelu_new";
  auto d = dims_of(g);
  EXPECT_EQ(d.act_extra, 3);
  EXPECT_EQ(d.act_fp32, 3);
  EXPECT_FALSE(d.act_sigmoid);
  EXPECT_EQ(d.qkv_linears, 1);
  EXPECT_EQ(d.up_linears, 1);
  g.extra["activation_function"] = "gelu_fast"; // no pow: stays 16-bit
  d = dims_of(g);
  EXPECT_EQ(d.act_extra, 3);
  EXPECT_EQ(d.act_fp32, 0);
  g.extra["activation_function"] = "quick_gelu";
  d = dims_of(g);
  EXPECT_EQ(d.act_extra, 0);
  EXPECT_TRUE(d.act_sigmoid);
  const auto llama = dims_of(test::llama3_8b().arch);
  EXPECT_EQ(llama.qkv_linears, 3);
  EXPECT_EQ(llama.up_linears, 2);
  const auto bert = dims_of(test::bert_base_cased().arch);
  EXPECT_EQ(bert.qkv_linears, 3);
  EXPECT_EQ(bert.up_linears, 1);
}

namespace {
// Training activations at the forward/backward peak (SGD, so that the peak is there).
double train_activations(const test::Model &m, Precision p, std::int64_t batch, std::int64_t seq) {
  fit::Run run;
  run.seq = seq;
  run.batch = batch;
  run.precision = p;
  run.optimizer = Optimizer::sgd;
  run.attention = Attention::sdpa;
  auto e = estimate_memory(m, run, test::gpu_80gb());
  EXPECT_EQ(e.peak_phase, "forward/backward") << m.arch.name;
  return static_cast<double>(e.activations);
}
} // namespace

// Under CUDA autocast torch.pow runs in fp32, so transformers' gelu_new (a Python formula with
// pow(x, 3)) saves pow's fp32 input copy, tanh's fp32 output and the fp32 1 + tanh: 3 tensors of
// the MLP's width at 4 bytes instead of 2 (saved tensors of GPT2LMHeadModel under bf16 autocast
// on an H200, docs/fit-accuracy.md "GPU results"). gelu_fast has no pow; without autocast
// nothing changes.
TEST(Autocast, GeluNewSavesFp32Tensors) {
  auto fast = test::gpt2();
  fast.arch.hf_model_type = "gpt2";
  fast.arch.extra["activation_function"] = "gelu_fast";
  auto gelu_new = fast;
  gelu_new.arch.extra["activation_function"] = "gelu_new";
  const double s = 1024, b = 16;
  EXPECT_DOUBLE_EQ(train_activations(gelu_new, Precision::bf16_amp, 16, 1024) -
                       train_activations(fast, Precision::bf16_amp, 16, 1024),
                   12 * 3 * (4 - 2) * s * b * 3072);
  EXPECT_DOUBLE_EQ(train_activations(gelu_new, Precision::bf16, 16, 1024),
                   train_activations(fast, Precision::bf16, 16, 1024));
}

// Under autocast over fp32 weights the residual stream is fp32 and every norm returns fp32, so
// each nn.Linear reading it saves its own 16-bit cast (autocast caches casts of weights only):
// separate q, k, v projections keep 3 copies and gate and up 2, a fused qkv_proj and gate_up_proj
// one each; HF RMSNorm saves its fp32 input and fp32 output (8 bytes). Pure 16-bit training
// shares one input. With SDPA on a current torch (an unknown one is), separate projections'
// o_proj also reads the kernel's saved output, where a fused qkv keeps its own input (2 bytes of
// sbh; docs/fit.md "SDPA's saved tensors").
TEST(Autocast, EachProjectionCastsItsOwnInput) {
  const auto separate = test::llama3_8b();
  auto fused = separate;
  fused.arch.fused_qkv = fused.arch.fused_gate_up = true; // Phi-3: qkv_proj, gate_up_proj
  const double s = 1024, b = 8, h = 4096;
  EXPECT_DOUBLE_EQ(train_activations(separate, Precision::bf16_amp, 8, 1024) -
                       train_activations(fused, Precision::bf16_amp, 8, 1024),
                   32 * ((2 + 1) * 2 - 2) * s * b * h);
  EXPECT_DOUBLE_EQ(train_activations(separate, Precision::bf16, 8, 1024) -
                       train_activations(fused, Precision::bf16, 8, 1024),
                   -32 * 2 * s * b * h);
  auto layernorm = separate;
  layernorm.arch.norm = "layernorm"; // autocast's layer_norm saves only its fp32 input
  EXPECT_DOUBLE_EQ(train_activations(separate, Precision::bf16_amp, 8, 1024) -
                       train_activations(layernorm, Precision::bf16_amp, 8, 1024),
                   32 * 2 * (8 - 4) * s * b * h);
}

// LoRA's trainable parameters, r x (in + out) per adapted linear: Llama-3-8B at rank 16 has
// 6,815,744 on q and v (PEFT's default) and 41,943,040 on every linear but lm_head (derived from
// the shapes: q 4096x4096, k and v 4096x1024, o 4096x4096, gate/up 4096x14336, down 14336x4096).
TEST(Estimate, LoraTargets) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 512;
  run.lora_rank = 16;
  run.optimizer = Optimizer::adamw; // 8 B of states per trainable parameter
  auto qv = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(qv.optimizer, 8u * 6'815'744);
  run.lora_targets = LoraTargets::all_linear;
  auto all = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(all.optimizer, 8u * 41'943'040);
}

TEST(Estimate, QloraBaseIsAboutHalfAByteAParameter) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 512;
  run.qlora = true;
  run.lora_rank = 16;
  run.grad_accum = 2; // the adapters' gradients are held across micro-batches
  auto e = estimate_memory(model, run, test::gpu_80gb());
  // 4.127 bits for the linear weights, 16-bit embeddings and head (2 x 128256 x 4096 x 2 B).
  const double embed = 2.0 * 128256 * 4096;
  const double linear = 8'030'261'248.0 - embed;
  const double adapters = 32.0 * 16 * (2 * 4096 + 4096 + 1024);
  EXPECT_NEAR(static_cast<double>(e.weights), linear * 4.127 / 8 + embed * 2 + adapters * 4, 1e6);
  EXPECT_EQ(e.gradients, static_cast<std::uint64_t>(adapters * 4));
}

// The catalog's BERT, T5 and GPT-2 rows carry their configs' dropout keys (each row's source is
// its config.json): hidden_dropout_prob / attention_probs_dropout_prob 0.1 (BERT), dropout_rate
// 0.1 (T5), resid_pdrop / embd_pdrop / attn_pdrop 0.1 (GPT-2); ViT's are 0.0, Llama has none.
TEST(Dropout, CatalogRowsCarryTheirConfigsDropout) {
  const auto &kb = kb::builtin();
  for (const char *name :
       {"bert-base-uncased", "bert-large-uncased", "t5-base", "gpt2", "gpt2-xl"}) {
    const auto *m = kb.find_model(name);
    ASSERT_NE(m, nullptr) << name;
    const Dims d = dims_of(*m);
    EXPECT_TRUE(d.dropout && d.attn_dropout && d.embed_dropout) << name;
  }
  EXPECT_TRUE(dims_of(*kb.find_model("t5-base")).act_dropout);
  EXPECT_FALSE(dims_of(*kb.find_model("gpt2")).act_dropout);
  for (const char *name : {"vit-b-16", "llama-3-8b"}) {
    const Dims d = dims_of(*kb.find_model(name));
    EXPECT_FALSE(d.dropout || d.attn_dropout || d.embed_dropout || d.act_dropout) << name;
  }
}

// Masks are 1 byte per element and exist only in training: two per layer after the attention
// and MLP outputs; with eager attention one per score element (and the dropout's output, which
// the matmul with V saves); SDPA regenerates its mask in backward.
TEST(Dropout, MasksPerElementOnlyInTraining) {
  auto with = test::bert_base_cased();
  auto without = with;
  without.arch.extra = Json::object();
  const Dims dw = dims_of(with.arch), dn = dims_of(without.arch);
  const double s = 128, b = 4, sbh = s * b * 768, scores = 12 * s * s * b;
  for (double ab : {2.0, 4.0}) {
    EXPECT_DOUBLE_EQ(transformer_layer_activation_bytes(dw, s, b, ab, 1, Attention::sdpa, true) -
                         transformer_layer_activation_bytes(dn, s, b, ab, 1, Attention::sdpa, true),
                     2 * sbh);
    EXPECT_DOUBLE_EQ(
        transformer_layer_activation_bytes(dw, s, b, ab, 1, Attention::eager, true) -
            transformer_layer_activation_bytes(dn, s, b, ab, 1, Attention::eager, true),
        2 * sbh + (1 + ab) * scores);
    EXPECT_DOUBLE_EQ(transformer_layer_activation_bytes(dw, s, b, ab, 1, Attention::eager, false),
                     transformer_layer_activation_bytes(dn, s, b, ab, 1, Attention::eager, false));
  }
  // Attention dropout alone (Llama's attention_dropout): the score mask, no hidden masks.
  auto attn_only = without;
  attn_only.arch.extra = Json{{"attention_dropout", 0.1}};
  const Dims da = dims_of(attn_only.arch);
  EXPECT_DOUBLE_EQ(transformer_layer_activation_bytes(da, s, b, 2, 1, Attention::eager, true) -
                       transformer_layer_activation_bytes(dn, s, b, 2, 1, Attention::eager, true),
                   3 * scores);
  EXPECT_DOUBLE_EQ(transformer_layer_activation_bytes(da, s, b, 2, 1, Attention::sdpa, true),
                   transformer_layer_activation_bytes(dn, s, b, 2, 1, Attention::sdpa, true));
  // T5's dropout_rate also drops inside the MLP: a mask and the dropout's output of I per token.
  auto t5 = without;
  t5.arch.extra = Json{{"dropout_rate", 0.1}};
  const Dims dt = dims_of(t5.arch);
  EXPECT_DOUBLE_EQ(transformer_layer_activation_bytes(dt, s, b, 2, 1, Attention::sdpa, true) -
                       transformer_layer_activation_bytes(dn, s, b, 2, 1, Attention::sdpa, true),
                   2 * sbh + 3 * s * b * 3072);
}

// The whole estimate: a GPT-2 fine-tune with its catalog dropouts keeps the embedding mask, two
// masks per layer and, with eager attention, 3 bytes per score element more than without.
TEST(Dropout, CatalogGpt2EstimateCountsEveryMask) {
  const auto *m = kb::builtin().find_model("gpt2");
  ASSERT_NE(m, nullptr);
  ModelInput with;
  with.arch = *m;
  with.params = model::derive_params(*m);
  ModelInput without = with;
  without.arch.extra.erase("resid_pdrop");
  without.arch.extra.erase("embd_pdrop");
  without.arch.extra.erase("attn_pdrop");
  fit::Run run;
  run.seq = 256;
  run.batch = 2;
  run.precision = Precision::bf16;
  run.attention = Attention::eager;
  run.optimizer = Optimizer::sgd;
  auto a = estimate_memory(with, run, test::gpu_80gb());
  auto b = estimate_memory(without, run, test::gpu_80gb());
  const double sb = 256.0 * 2, sbh = sb * 768;
  EXPECT_DOUBLE_EQ(static_cast<double>(a.activations - b.activations),
                   sbh + 12 * (2 * sbh + 3 * 12 * 256.0 * sb));
}

// OLMo 1's OlmoLayerNorm runs F.layer_norm without weights on an fp32 copy of its input, which
// it saves (4 B per element, measured with saved-tensor hooks on transformers 5.25.0), whatever is
// trained and under autocast or not.
// Apertus's xIELU in transformers' Python form keeps alpha_p * x, expm1's result, expm1 - x and a
// 1-byte condition beside what a fused GELU keeps: 2 + 2 + 2 + 1 bytes per element of the MLP's
// width in 16 bits, alpha_p * x fp32 (4) over fp32 weights under autocast. Measured with
// saved-tensor hooks (transformers 5.25.0, torch 2.15.0, CPU; perf/fit_saved_tensors.py on a
// 2-layer Apertus of 256 x 384, batch 2 x 64): xielu minus gelu 884,768 bytes under bf16 autocast
// (9 x 98,304 elements, and 32 for the one-element alphas) and 1,277,984 in fp32 (13 x 98,304).
TEST(Activations, XieluPythonFormKeepsThreeTensorsAndAMask) {
  auto xielu = model::model_from_config_text(R"({"model_type": "apertus", "hidden_size": 256,
      "intermediate_size": 384, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 128})",
                                             "config.json");
  auto gelu = model::model_from_config_text(R"({"model_type": "apertus", "hidden_size": 256,
      "intermediate_size": 384, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 128, "hidden_act": "gelu"})",
                                            "config.json");
  ASSERT_TRUE(xielu.ok() && gelu.ok());
  EXPECT_EQ(model::derive_params(*xielu) - model::derive_params(*gelu), 2 * 2);
  const Dims dx = dims_of(*xielu), dg = dims_of(*gelu);
  EXPECT_TRUE(dx.act_mask);
  EXPECT_FALSE(dg.act_mask);
  const double s = 64, b = 2, sbi = s * b * 384;
  // 16-bit weights (no fp32 stream): three 16-bit tensors and the mask.
  EXPECT_DOUBLE_EQ(
      transformer_layer_activation_bytes(dx, s, b, 2, 1, Attention::sdpa, true, true) -
          transformer_layer_activation_bytes(dg, s, b, 2, 1, Attention::sdpa, true, true),
      (3 * 2 + 1) * sbi);
  EXPECT_DOUBLE_EQ(
      transformer_layer_activation_bytes(dx, s, b, 4, 1, Attention::sdpa, true, false) -
          transformer_layer_activation_bytes(dg, s, b, 4, 1, Attention::sdpa, true, false),
      (3 * 4 + 1) * sbi);
  // Full bf16-amp training over fp32 weights: alpha_p * x is fp32, as measured (9 B).
  fit::Run run;
  run.precision = Precision::bf16_amp;
  run.seq = 1024;
  run.batch = 8;
  auto ex =
      estimate_memory(test::make(*xielu, model::derive_params(*xielu)), run, test::gpu_80gb());
  auto eg = estimate_memory(test::make(*gelu, model::derive_params(*gelu)), run, test::gpu_80gb());
  ASSERT_EQ(ex.peak_phase, eg.peak_phase);
  ASSERT_NE(ex.peak_phase, "optimizer step");
  EXPECT_EQ(ex.activations - eg.activations, 9u * 1024 * 8 * 384 * 2);
}

TEST(Activations, OlmoWeightlessNormSavesItsFp32Input) {
  auto arch = model::model_from_config_text(R"({"model_type": "olmo"})", "config.json");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  const Dims olmo = dims_of(*arch);
  ASSERT_TRUE(olmo.weightless_fp32_norm);
  Dims plain = olmo; // the same layer with a 16-bit LayerNorm
  plain.weightless_fp32_norm = false;
  const double s = 512, b = 2, sbh = s * b * 4096;
  for (bool autocast : {false, true}) {
    const double diff =
        transformer_layer_activation_bytes(olmo, s, b, 2, 1, Attention::sdpa, true, autocast) -
        transformer_layer_activation_bytes(plain, s, b, 2, 1, Attention::sdpa, true, autocast);
    EXPECT_DOUBLE_EQ(diff, autocast ? 0 : 2 * (4 - 2) * sbh) << autocast;
  }
}

// PyTorch's CUDA autocast runs layer_norm and softmax in fp32 (its list of "ops that can autocast
// to float32"): LayerNorm saves an fp32 input (4 B instead of 2), and eager attention's fp32
// softmax output is saved beside the 16-bit copy the matmul with V makes (6 B per score, 7 with
// attention dropout, instead of 2 and 5). RMSNorm (already fp32 inside) does not change.
TEST(Autocast, LayerNormAndSoftmaxStayFp32) {
  const Dims bert = dims_of(test::bert_base_cased().arch);
  auto plain = test::bert_base_cased();
  plain.arch.extra = Json::object();
  const Dims nodrop = dims_of(plain.arch);
  const double s = 128, b = 4, sbh = s * b * 768, scores = 12 * s * s * b;
  auto diff = [&](const Dims &d, Attention a) {
    return transformer_layer_activation_bytes(d, s, b, 2, 1, a, true, true) -
           transformer_layer_activation_bytes(d, s, b, 2, 1, a, true, false);
  };
  EXPECT_DOUBLE_EQ(diff(bert, Attention::sdpa), 2 * 2 * sbh);
  EXPECT_DOUBLE_EQ(diff(bert, Attention::eager), 2 * 2 * sbh + (7 - 5) * scores);
  EXPECT_DOUBLE_EQ(diff(nodrop, Attention::eager), 2 * 2 * sbh + (6 - 2) * scores);
  EXPECT_DOUBLE_EQ(diff(dims_of(test::llama3_8b().arch), Attention::sdpa), 0);

  // The estimate applies it to PyTorch AMP (bf16-amp with DDP), not to DeepSpeed's 16-bit model;
  // there the fp32 stream also gives BERT's separate query, key and value their own 16-bit input
  // copies (2 more per layer, Autocast.EachProjectionCastsItsOwnInput).
  auto model = test::bert_base_cased();
  fit::Run run;
  run.seq = 128;
  run.batch = 16; // activations above the weights and gradients: the peak is forward/backward
  run.attention = Attention::eager;
  run.optimizer = Optimizer::sgd;
  run.precision = Precision::bf16;
  auto pure = estimate_memory(model, run, test::gpu_80gb());
  run.precision = Precision::bf16_amp;
  auto amp = estimate_memory(model, run, test::gpu_80gb());
  ASSERT_EQ(pure.peak_phase, "forward/backward");
  EXPECT_DOUBLE_EQ(static_cast<double>(amp.activations - pure.activations),
                   12 * 4 * (2 * 2 * sbh + 2 * scores + (3 - 1) * 2 * sbh));
  run.strategy = Strategy::zero2;
  run.gpus = 2;
  auto ds = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(ds.activations, pure.activations);
}

// A frozen base keeps no input for a linear without an adapter (PyTorch saves an mm input only for
// the other operand's gradient; bitsandbytes' 4-bit matmul saves none): with PEFT's q, v adapters
// a Llama layer drops the o_proj input (e·sbq), the MLP input (e·sbh) and the down_proj input
// (e·sbI) of full fine-tuning, and keeps the two adapters' r-wide lora_A outputs.
TEST(Lora, FrozenLinearsKeepNoInputs) {
  auto model = test::llama3_8b();
  const Dims d = dims_of(model.arch);
  const double s = 512, b = 2, e = 2, r = 16, h = 4096, q = 4096, I = 14336;
  const double sb = s * b;
  fit::Run run;
  run.seq = 512;
  run.batch = 2;
  run.lora_rank = 16;
  const double full_layer =
      transformer_layer_activation_bytes(d, s, b, e, 1, Attention::sdpa, true);
  const double whole = 8 * sb + 14 * sb * 128256; // token ids, the loss at the start of backward
  for (bool qlora : {false, true}) {
    run.qlora = qlora;
    auto qv = estimate_memory(model, run, test::gpu_80gb());
    ASSERT_EQ(qv.peak_phase, "forward/backward");
    // ... and its two frozen RMSNorms keep their fp32 input only, not the normalised tensor (e).
    EXPECT_NEAR(static_cast<double>(qv.activations),
                32 * (full_layer - e * sb * (q + h + I) - 2 * e * sb * h + 2 * r * e * sb) + whole,
                2)
        << (qlora ? "QLoRA" : "LoRA");
  }
  run.qlora = false;
  auto qv = estimate_memory(model, run, test::gpu_80gb());
  // Every linear adapted: every input is saved, and seven r-wide outputs per layer; the frozen
  // norms still keep only their input. o_proj's input is SDPA's saved output (torch >= 2.5; the
  // full layer above is the count before): not a tensor of its own.
  run.lora_targets = LoraTargets::all_linear;
  auto all = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_NEAR(static_cast<double>(all.activations),
              32 * (full_layer - 2 * e * sb * h - e * sb * q + 7 * r * e * sb) + whole, 2);
  // q, v, o and the MLP (k frozen: q's adapter still needs the shared input).
  run.lora_targets = LoraTargets::custom;
  run.lora_modules = {"q", "v", "o", "gate", "up", "down"};
  auto qvo_mlp = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_NEAR(static_cast<double>(qvo_mlp.activations),
              32 * (full_layer - 2 * e * sb * h - e * sb * q + 6 * r * e * sb) + whole, 2);
  // Their trainable parameters: r x (in + out) of each adapted linear.
  EXPECT_EQ(qvo_mlp.optimizer,
            8u * 32 * 16 * (2 * (4096 + 4096) + (4096 + 1024) + 3 * (4096 + 14336)));
  EXPECT_LT(qv.activations, qvo_mlp.activations);
}

TEST(Lora, TargetListsParse) {
  std::vector<std::string> modules;
  auto t = parse_lora_targets("q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", modules);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, LoraTargets::custom);
  EXPECT_EQ(modules, (std::vector<std::string>{"q", "v", "o", "gate", "up", "down"}));
  EXPECT_EQ(*parse_lora_targets("qv", modules), LoraTargets::qv);
  EXPECT_TRUE(modules.empty());
  auto bad = parse_lora_targets("q,lm_head", modules);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("accepted: qv, all-linear"), std::string::npos);
}

// --loss: transformers' loss holds 14 B per logit at the start of backward; torchtune's chunked
// loss keeps the 16-bit logits and the fp32 rest for one of its 8 chunks; Liger's fused linear
// cross-entropy keeps no b x s x V tensor: the hidden states' gradient, an fp32 loss per token and
// one chunk of next_pow2(ceil(b s / ceil(V / h))) rows of logits.
TEST(Loss, FusedAndChunkedRemoveTheLogitsTerm) {
  auto small = test::llama3_8b();
  fit::Run run;
  run.seq = 4096;
  run.batch = 8;
  const double tokens = 8 * 4096;
  run.loss = Loss::standard;
  auto standard = estimate_memory(small, run, test::gpu_80gb());
  run.loss = Loss::fused;
  auto fused = estimate_memory(small, run, test::gpu_80gb());
  // 128256 / 4096 -> 32; 32768 / 32 = 1024 rows of 128256 logits.
  const double fused_loss = 2 * tokens * 4096 + 1024.0 * 128256 * 2 + 4 * tokens;
  EXPECT_NEAR(static_cast<double>(standard.activations - fused.activations),
              14 * tokens * 128256 - fused_loss, 2);
  EXPECT_LT(fused_loss, 0.02 * 14 * tokens * 128256);
}

// torch/optim/adam.py: foreach (the default on CUDA since 2.0) takes torch._foreach_sqrt of every
// exp_avg_sq at once (one more copy of the states); the single-tensor loop makes two temporaries
// of one parameter at a time; fused makes none. They show at the optimizer-step peak.
TEST(OptimizerImpl, AdamStepTemporaries) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 512;
  run.precision = Precision::fp32;
  auto at = [&](OptimizerImpl impl) {
    run.optimizer_impl = impl;
    auto e = estimate_memory(model, run, test::gpu_80gb());
    EXPECT_EQ(e.peak_phase, "optimizer step");
    return static_cast<double>(e.optimizer);
  };
  const double P = static_cast<double>(model.params);
  const double fused = at(OptimizerImpl::fused), foreach = at(OptimizerImpl::foreach);
  const double loop = at(OptimizerImpl::loop);
  EXPECT_DOUBLE_EQ(fused, 8 * P);
  EXPECT_NEAR(foreach - fused, 4 * P, 1);
  // The largest tensor: the 128256 x 4096 embedding (and the untied head).
  EXPECT_NEAR(loop - fused, 2 * 4 * 128256.0 * 4096, 1);
  // SGD has no Adam temporaries whatever the implementation.
  run.optimizer = Optimizer::sgd;
  run.optimizer_impl = OptimizerImpl::foreach;
  auto sgd = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(sgd.optimizer, 0u);
}

// torchtune's optimizer_in_bwd steps each parameter in backward and frees its gradient: no phase
// holds every gradient, so a full fine-tune whose peak was the optimizer step drops by about the
// gradients.
TEST(Options, OptimizerInBackwardHoldsOneGradient) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 512;
  run.precision = Precision::fp32;
  run.optimizer_impl = OptimizerImpl::fused;
  auto base = estimate_memory(model, run, test::gpu_80gb());
  ASSERT_EQ(base.peak_phase, "optimizer step"); // 4 + 4 + 8 bytes per parameter
  run.optimizer_in_backward = true;
  auto inbwd = estimate_memory(model, run, test::gpu_80gb());
  // The largest gradient alive: the 128256 x 4096 embedding's, in fp32.
  EXPECT_LE(static_cast<double>(inbwd.gradients), 4 * 128256.0 * 4096 + 1);
  // Now forward/backward is the peak: 12 bytes per parameter and the activations.
  EXPECT_EQ(inbwd.peak_phase, "forward/backward");
  EXPECT_GT(base.allocated - inbwd.allocated, 2 * static_cast<std::uint64_t>(model.params));
}

// bitsandbytes' paged optimizers put their states in CUDA unified memory: shown apart, out of the
// totals the verdict is judged on.
TEST(Options, PagedOptimizerStatesLeaveTheTotals) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 512;
  run.optimizer = Optimizer::adamw_8bit;
  auto plain = estimate_memory(model, run, test::gpu_80gb());
  run.paged_optimizer = true;
  auto paged = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(paged.optimizer, 0u);
  EXPECT_EQ(paged.paged_bytes, plain.optimizer);
  EXPECT_LT(paged.device, plain.device);
}

// DDP without gradient_as_bucket_view keeps bucket copies of the gradients (pytorch#41954).
TEST(Options, GradientAsBucketViewDropsTheBucketCopies) {
  auto model = test::llama(16, 2048, 16, 16, 5504);
  fit::Run run;
  run.seq = 512;
  run.gpus = 2;
  run.precision = Precision::fp32;
  run.optimizer = Optimizer::sgd;
  auto copies = estimate_memory(model, run, test::gpu_80gb());
  run.gradient_as_bucket_view = true;
  auto views = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(copies.gradients, 2 * views.gradients);
}

// torchtune's activation offloading moves the layers' saved tensors to host memory; about two
// layers' worth stay on the GPU.
TEST(Options, ActivationOffloadMovesLayersToTheHost) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 8192;
  run.lora_rank = 16;
  auto kept = estimate_memory(model, run, test::gpu_80gb());
  run.activation_offload = true;
  auto off = estimate_memory(model, run, test::gpu_80gb());
  const double moved = static_cast<double>(kept.activations - off.activations);
  EXPECT_NEAR(static_cast<double>(off.host_bytes), moved, 2);
  // 32 layers kept, two stay: 30 of them moved.
  const double loss = 8 * 8192.0 + 14 * 8192.0 * 128256;
  EXPECT_NEAR(moved / (static_cast<double>(kept.activations) - loss), 30.0 / 32, 1e-9);
}

// DeepSpeed's own buffers (deepspeed/runtime/zero/config.py defaults): the reduce bucket of
// reduce_bucket_size 16-bit elements, stages 1-2's all-gather bucket, stage 3's prefetch bucket;
// each follows its config key.
TEST(Options, ZeroBuffersFollowTheirConfigKeys) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 512;
  run.gpus = 8;
  auto part = [&](const std::string &name) -> std::optional<std::uint64_t> {
    for (const auto &o : estimate_memory(model, run, test::gpu_80gb()).overhead_parts)
      if (o.name == name)
        return o.bytes;
    return std::nullopt;
  };
  run.strategy = Strategy::zero2;
  EXPECT_EQ(part("ZeRO reduce bucket"), 1'000'000'000u);
  EXPECT_EQ(part("ZeRO all-gather bucket"), 1'000'000'000u);
  EXPECT_FALSE(part("ZeRO-3 prefetched parameters"));
  run.reduce_bucket_size = 2e8;
  run.allgather_bucket_size = 1e8;
  EXPECT_EQ(part("ZeRO reduce bucket"), 400'000'000u);
  EXPECT_EQ(part("ZeRO all-gather bucket"), 200'000'000u);
  run.strategy = Strategy::zero3;
  EXPECT_EQ(part("ZeRO-3 prefetched parameters"), 100'000'000u); // 5e7 x 2 B
  EXPECT_FALSE(part("ZeRO all-gather bucket"));
  run.stage3_prefetch_bucket_size = 1e9;
  run.stage3_max_live_parameters = 6e8; // the embedding (525M) in use leaves 75M to prefetch
  EXPECT_EQ(part("ZeRO-3 prefetched parameters"),
            static_cast<std::uint64_t>((6e8 - 128256.0 * 4096) * 2));
}

// The CUDA context by software stack and GPU (memory.md §4.1): lazy module loading since CUDA 11.7
// with PyTorch 1.13 (pytorch#86509) unless CUDA_MODULE_LOADING=EAGER; the nearest measurement.
TEST(Context, DependsOnTheStackAndTheGpu) {
  fit::Run run;
  auto a100 = test::gpu_80gb(); // compute capability 8.0
  auto ada = test::gpu_24gb();  // 8.9
  EXPECT_DOUBLE_EQ(cuda_context(run, a100).bytes, 0.47 * kGiB);
  EXPECT_TRUE(cuda_context(run, a100).lazy);
  EXPECT_DOUBLE_EQ(cuda_context(run, ada).bytes, 426 * kMiB);
  run.torch_version = "1.10.2";
  run.cuda_version = "11.3";
  EXPECT_FALSE(cuda_context(run, a100).lazy);
  EXPECT_DOUBLE_EQ(cuda_context(run, a100).bytes, 1.78 * kGiB);
  run.torch_version = "2.1.1";
  run.cuda_version = "12.1";
  EXPECT_DOUBLE_EQ(cuda_context(run, a100).bytes, 0.47 * kGiB);
  run.module_loading = "EAGER";
  EXPECT_FALSE(cuda_context(run, a100).lazy);
  EXPECT_DOUBLE_EQ(cuda_context(run, a100).bytes, 0.92 * kGiB);
  run.module_loading.clear();
  run.cuda_version = "11.6"; // a build before lazy loading existed
  EXPECT_FALSE(cuda_context(run, a100).lazy);
  // The estimate's device level carries it.
  fit::Run infer;
  infer.mode = Mode::infer;
  infer.seq = 16;
  auto lazy = estimate_memory(test::gpt2(), infer, a100);
  infer.torch_version = "1.10.2";
  auto eager = estimate_memory(test::gpt2(), infer, a100);
  EXPECT_EQ(eager.device - lazy.device, static_cast<std::uint64_t>(std::llround(1.78 * kGiB)) -
                                            static_cast<std::uint64_t>(std::llround(0.47 * kGiB)));
}

// Before PyTorch 2.0 zero_grad() zeroed gradients in place (set_to_none=False was the default), so
// they are held through forward and backward.
TEST(Context, PreTwoZeroGradKeepsGradients) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 4096;
  run.batch = 8;
  auto now = estimate_memory(model, run, test::gpu_80gb());
  ASSERT_EQ(now.peak_phase, "forward/backward");
  EXPECT_EQ(now.gradients, 0u);
  run.torch_version = "1.13.1";
  auto old = estimate_memory(model, run, test::gpu_80gb());
  EXPECT_EQ(old.gradients, static_cast<std::uint64_t>(4.0 * static_cast<double>(model.params)));
}

} // namespace
} // namespace dlrig::fit

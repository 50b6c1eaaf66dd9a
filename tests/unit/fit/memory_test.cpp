// Validation of the memory model against published outputs: the ZeRO paper
// (https://arxiv.org/abs/1910.02054), DeepSpeed's estimators
// (https://deepspeed.readthedocs.io/en/latest/memory.html), accelerate, Korthikanti et al.
// (https://arxiv.org/abs/2205.05198), the KV-cache figures, and the measured per-layer activation
// coefficients; docs/fit.md names the source of each.
#include "dlrig/fit/memory.hpp"
#include "unit/fit/models.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

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
  run.optimizer = Optimizer::sgd; // no step temporaries: the peak is forward/backward
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

} // namespace
} // namespace dlrig::fit

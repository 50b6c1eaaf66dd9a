#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/load.hpp"
#include "dlrig/fit/report.hpp"
#include "unit/fit/models.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

namespace dlrig::fit {
namespace {

// DeepSeek's latent attention has no k_proj or v_proj: LoRA's default q/v targets, or a list with
// k or v, are refused with the targets that exist; all-linear and q, o, gate, up, down are sized.
TEST(ResolveRun, LatentAttentionLoraNeedsTargetsItHas) {
  auto arch = model::model_from_config_text(R"({"model_type": "deepseek_v2",
      "hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16,
      "q_lora_rank": null, "moe_intermediate_size": 1408, "intermediate_size": 10944,
      "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
      "first_k_dense_replace": 1})",
                                            "config.json");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  auto model = test::make(*arch, model::derive_params(*arch));
  fit::Run run;
  run.lora_rank = 16;
  auto r = resolve_run(model, run, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--lora-targets qv (the default): config.json's latent "
                                   "attention has no k_proj or v_proj"),
            std::string::npos)
      << r.error().message;
  ASSERT_TRUE(parse_lora_targets("q,v", run.lora_modules).ok());
  run.lora_targets = LoraTargets::custom;
  EXPECT_FALSE(resolve_run(model, run, nullptr).ok());
  ASSERT_TRUE(parse_lora_targets("q,o,gate,up,down", run.lora_modules).ok());
  EXPECT_TRUE(resolve_run(model, run, nullptr).ok());
  run.lora_modules.clear();
  run.lora_targets = LoraTargets::all_linear;
  EXPECT_TRUE(resolve_run(model, run, nullptr).ok());
}

TEST(ResolveRun, ImpossibleRunsNameTheFlagAndTheFix) {
  auto model = test::llama3_8b(); // 32 heads, 8 KV heads, 32 layers
  fit::Run run;
  run.tp = 3;
  run.gpus = 3;
  auto r = resolve_run(model, run, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--tp 3 does not divide"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("32 attention heads"), std::string::npos);

  run = fit::Run{};
  run.gpus = 6;
  run.tp = 4;
  r = resolve_run(model, run, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a multiple of --tp 4 x --pp 1"), std::string::npos)
      << r.error().message;

  run = fit::Run{};
  run.pp = 3;
  run.gpus = 3;
  r = resolve_run(model, run, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--pp 3 does not divide"), std::string::npos);

  // DeepSpeed's pipeline engine takes ZeRO stage 0 or 1 only; FSDP composes with pipelining.
  for (Strategy s : {Strategy::zero2, Strategy::zero3}) {
    run = fit::Run{};
    run.pp = 2;
    run.gpus = 4;
    run.strategy = s;
    r = resolve_run(model, run, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("incompatible with pipeline parallelism"), std::string::npos)
        << r.error().message;
  }
  for (Strategy s : {Strategy::ddp, Strategy::zero1, Strategy::fsdp}) {
    run = fit::Run{};
    run.pp = 2;
    run.gpus = 4;
    run.strategy = s;
    EXPECT_TRUE(resolve_run(model, run, nullptr).ok()) << static_cast<int>(s);
  }

  run = fit::Run{};
  run.offload = Offload::params;
  run.strategy = Strategy::zero2;
  EXPECT_NE(resolve_run(model, run, nullptr).error().message.find("--offload params"),
            std::string::npos);

  run = fit::Run{};
  run.quant = Quant::int4;
  EXPECT_NE(resolve_run(model, run, nullptr).error().message.find("--quant"), std::string::npos);

  run = fit::Run{};
  run.seq = 4096;
  auto gpt2 = test::gpt2();
  EXPECT_NE(resolve_run(gpt2, run, nullptr).error().message.find("1024 learned positions"),
            std::string::npos);

  run = fit::Run{};
  run.seq = 128;
  EXPECT_NE(resolve_run(test::resnet("resnet50"), run, nullptr).error().message.find("--seq"),
            std::string::npos);
}

TEST(ResolveRun, DefaultsAreSaid) {
  std::vector<std::string> said;
  auto r = resolve_run(test::gpt2(), fit::Run{}, &said);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->seq, 1024);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("--seq not given"), std::string::npos);
  said.clear();
  r = resolve_run(test::resnet("resnet50"), fit::Run{}, &said);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->image_size, 224);
  EXPECT_EQ(said.size(), 1u);
}

TEST(MaxBatch, IsTheLargestThatFits) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 2048;
  run.lora_rank = 16;
  auto gpu = test::gpu_80gb();
  auto b = max_micro_batch(model, run, gpu);
  ASSERT_TRUE(b.has_value());
  ASSERT_GT(*b, 0);
  run.batch = *b;
  EXPECT_LE(estimate_memory(model, run, gpu).device, *gpu.memory_bytes);
  run.batch = *b + 1;
  EXPECT_GT(estimate_memory(model, run, gpu).device, *gpu.memory_bytes);
}

TEST(MaxBatch, ZeroWhenNothingFits) {
  fit::Run run;
  run.seq = 2048;
  EXPECT_EQ(max_micro_batch(test::gpt3_175b(), run, test::gpu_80gb()), 0);
  auto unknown = test::gpu_80gb();
  unknown.memory_bytes.reset();
  EXPECT_FALSE(max_micro_batch(test::gpt2(), run, unknown).has_value());
}

TEST(Suggest, RankedAndEachWithItsMemory) {
  // Full fine-tuning of an 8B model on a 24 GB card does not fit; the changes say what does.
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 2048;
  run.batch = 4;
  auto gpu = test::gpu_24gb();
  auto base = estimate_memory(model, run, gpu);
  ASSERT_GT(base.device, *gpu.memory_bytes);
  auto s = suggest(model, run, gpu);
  ASSERT_FALSE(s.empty());
  EXPECT_TRUE(s.front().fits) << s.front().change;
  bool seen_unfit = false;
  for (const auto &c : s) {
    EXPECT_GT(c.device_bytes, 0u);
    EXPECT_FALSE(c.flags.empty());
    if (!c.fits)
      seen_unfit = true;
    else
      EXPECT_FALSE(seen_unfit) << "fitting changes come first: " << c.change;
  }
  bool lora = false, ckpt = false;
  for (const auto &c : s) {
    lora |= c.flags.find("--lora") != std::string::npos;
    ckpt |= c.flags == "--checkpointing full";
  }
  EXPECT_TRUE(lora);
  EXPECT_TRUE(ckpt);
}

// The smaller micro-batch with accumulation is sized with accumulation on (the gradients then
// live through every micro-batch), so when it is offered as fitting it does fit; and it keeps the
// samples per optimizer step: 32 on a GPU whose largest micro-batch is 29 is 16 x 2, not 29 x 2.
TEST(Suggest, GradientAccumulationIsSizedWithItsGradients) {
  auto model = test::bert_base_cased();
  fit::Run run;
  run.seq = 512;
  run.batch = 32;
  run.precision = Precision::fp32;
  auto gpu = test::gpu_24gb();
  gpu.memory_bytes = 12'000'000'000;
  ASSERT_GT(estimate_memory(model, run, gpu).device, *gpu.memory_bytes);
  bool seen = false;
  for (const auto &c : suggest(model, run, gpu)) {
    if (c.flags.find("--grad-accum") == std::string::npos)
      continue;
    seen = true;
    EXPECT_TRUE(c.fits) << c.change;
    EXPECT_LE(c.device_bytes, *gpu.memory_bytes) << c.change;
    long long b = 0, k = 0;
    ASSERT_EQ(std::sscanf(c.flags.c_str(), "--batch %lld --grad-accum %lld", &b, &k), 2) << c.flags;
    EXPECT_EQ(b * k, 32) << c.flags;
  }
  EXPECT_TRUE(seen);
  run.batch = 31; // a prime: micro-batches of 1
  for (const auto &c : suggest(model, run, gpu)) {
    if (c.flags.rfind("--batch ", 0) == 0) {
      EXPECT_EQ(c.flags, "--batch 1 --grad-accum 31");
    }
  }
}

// A serving run that does not fit is offered the changes that make it fit (quantised weights,
// tensor parallelism): none was kept, because each change was checked with a training-only
// optimizer setting a serving run must not carry.
TEST(Suggest, ServingThatDoesNotFitGetsChanges) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.mode = Mode::infer;
  run.seq = 2048;
  run.max_tokens = 256;
  auto resolved = resolve_run(model, run, nullptr);
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_FALSE(resolved->optimizer_impl.has_value());
  auto gpu = test::gpu_24gb();
  gpu.memory_bytes = 12'884'901'888; // 12 GiB
  ASSERT_GT(estimate_memory(model, *resolved, gpu).device, *gpu.memory_bytes);
  std::vector<std::string> flags;
  for (const auto &c : suggest(model, *resolved, gpu))
    flags.push_back(c.flags);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "--quant int8"), flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "--quant int4"), flags.end());
}

// The frameworks' memory options are offered where they save memory, each with the flags that
// reproduce it; the fused loss never where the model has no vocabulary logits.
TEST(Suggest, ProposesTheFrameworksMemoryOptions) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 2048;
  run.batch = 4;
  run.lora_rank = 16;
  auto gpu = test::gpu_24gb();
  gpu.memory_bytes = 16'000'000'000;
  auto base = estimate_memory(model, run, gpu).device;
  ASSERT_GT(base, *gpu.memory_bytes);
  std::map<std::string, std::uint64_t> seen;
  for (const auto &c : suggest(model, run, gpu))
    seen[c.flags] = c.device_bytes;
  ASSERT_TRUE(seen.count("--loss fused")) << "no fused loss suggested";
  ASSERT_TRUE(seen.count("--activation-offload")) << "no activation offloading suggested";
  for (const char *flags : {"--loss fused", "--activation-offload"})
    EXPECT_LT(seen[flags], base) << flags;
  fit::Run fused = run;
  fused.loss = Loss::fused;
  EXPECT_EQ(seen["--loss fused"], estimate_memory(model, fused, gpu).device);

  // An encoder has no vocabulary logits to fuse.
  fit::Run enc;
  enc.seq = 512;
  enc.batch = 256;
  auto small = test::gpu_24gb();
  small.memory_bytes = 8'000'000'000;
  for (const auto &c : suggest(test::bert_base_cased(), enc, small))
    EXPECT_EQ(c.flags.find("--loss"), std::string::npos) << c.change;
}

TEST(Time, SixTimesParamsTimesTokensPlusAttention) {
  auto model = test::gpt3_175b();
  fit::Run run;
  run.seq = 2048;
  run.batch = 1;
  run.attention = Attention::flash;
  const double p = static_cast<double>(model.params);
  const double attn = 12.0 * 2048 * 2048 * 96 * 12288 / 2; // causal
  EXPECT_DOUBLE_EQ(step_flops(model, run), 6 * p * 2048 + attn);
  run.checkpointing = Checkpointing::full;
  EXPECT_DOUBLE_EQ(step_flops(model, run), 8 * p * 2048 + attn * 4 / 3);
  fit::Run plain;
  plain.seq = 2048;
  auto t = estimate_time(model, plain, test::gpu_80gb());
  ASSERT_TRUE(t.seconds_per_step.has_value());
  EXPECT_GT(*t.seconds_per_step, t.flops_per_step / 312e12) << "never faster than the peak";
  EXPECT_NEAR(*t.tokens_per_s, 2048 / *t.seconds_per_step, 1e-6);
}

TEST(Time, EpochFromDatasetTokensOrSamples) {
  auto model = test::gpt2();
  fit::Run run;
  run.seq = 1024;
  run.batch = 8;
  run.dataset_tokens = 1e9;
  auto t = estimate_time(model, run, test::gpu_80gb());
  ASSERT_TRUE(t.seconds_per_epoch.has_value());
  EXPECT_NEAR(*t.seconds_per_epoch, 1e9 / *t.tokens_per_s, 1e-6);
  auto cnn = test::resnet("resnet50");
  fit::Run r2;
  r2.image_size = 224;
  r2.batch = 32;
  r2.samples = 1'281'167; // ImageNet-1k train
  auto t2 = estimate_time(cnn, r2, test::gpu_80gb());
  ASSERT_TRUE(t2.seconds_per_epoch.has_value());
  EXPECT_NEAR(*t2.seconds_per_epoch, 1'281'167 / *t2.samples_per_s, 1e-6);
}

TEST(Time, UnknownThroughputIsUnknownNotZero) {
  auto gpu = test::gpu_80gb();
  gpu.fp8_flops.reset();
  fit::Run run;
  run.seq = 128;
  run.precision = Precision::fp8;
  auto t = estimate_time(test::gpt2(), run, gpu);
  EXPECT_FALSE(t.seconds_per_step.has_value());
  EXPECT_FALSE(t.notes.empty());
}

TEST(Time, CpuPeakFromIsaFlags) {
  CpuInfo cpu;
  cpu.cores = 28;
  cpu.max_hz = 3.8e9;
  cpu.isa = {"avx2", "fma", "avx512f"};
  auto c = cpu_target(cpu);
  ASSERT_TRUE(c.has_value());
  EXPECT_DOUBLE_EQ(c->peak(), 28 * 3.8e9 * 64);
  cpu.isa = {"avx2", "fma"};
  EXPECT_DOUBLE_EQ(cpu_target(cpu)->flops_per_cycle, 32);
  cpu.isa = {};
  EXPECT_FALSE(cpu_target(cpu).has_value()) << "no rated ISA: unknown, not a guess";
  cpu.isa = {"avx2", "fma"};
  cpu.cores.reset();
  EXPECT_FALSE(cpu_target(cpu).has_value());
}

TEST(Cnn, ResnetParamsAndMacsMatchTorchvision) {
  // torchvision's published num_params (memory.md §2.2) and ResNet-50's 4.09 GFLOPS (MACs).
  EXPECT_EQ(test::resnet("resnet50").params, 25'557'032);
  EXPECT_EQ(test::resnet("resnet18").params, 11'689'512);
  fit::Run run;
  run.mode = Mode::infer;
  run.image_size = 224;
  EXPECT_NEAR(step_flops(test::resnet("resnet50"), run) / 2, 4.09e9, 0.01e9);
  EXPECT_NEAR(step_flops(test::resnet("resnet18"), run) / 2, 1.81e9, 0.01e9);
}

TEST(Unet, WalkReproducesTheStableDiffusionParameterCount) {
  auto model = test::sd15_unet();
  auto u = unet_cost(model.arch, 512);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->latent_side, 64);
  EXPECT_DOUBLE_EQ(u->params, 859'520'964) << "the walk has the UNet's structure";
}

TEST(Unet, ActivationsScaleWithBatchAndEagerAttentionCosts) {
  auto model = test::sd15_unet();
  std::vector<std::string> said;
  auto run = resolve_run(model, fit::Run{}, &said);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->image_size, 512);
  auto gpu = test::gpu_80gb();
  run->optimizer = Optimizer::sgd;
  auto one = estimate_memory(model, *run, gpu);
  run->batch = 4;
  auto four = estimate_memory(model, *run, gpu);
  EXPECT_NEAR(static_cast<double>(four.activations), 4.0 * one.activations, 4);
  run->attention = Attention::eager;
  auto eager = estimate_memory(model, *run, gpu);
  // 16 self-attention layers; at the 64 x 64 latent: 8 heads x 4096^2 scores x 2 B per image.
  EXPECT_GT(eager.activations, four.activations + 4ull * 2 * 8 * 4096 * 4096);
}

// diffusers' LoRA training adapts to_q, to_k, to_v and to_out.0 of every attention block: for
// SD 1.5 at rank 4, 797,184 parameters (16 transformer layers: 14c + 2 x 768 per unit of rank at
// c = 320 (5), 640 (5), 1280 (6)). The base is frozen in 16-bit.
TEST(Unet, LoraOnTheAttentionBlocks) {
  auto model = test::sd15_unet();
  fit::Run in;
  in.lora_rank = 4;
  in.optimizer = Optimizer::adamw;
  auto run = resolve_run(model, in, nullptr);
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto e = estimate_memory(model, *run, test::gpu_80gb());
  EXPECT_EQ(e.optimizer, 8u * 797'184);
  EXPECT_EQ(e.weights, 2u * static_cast<std::uint64_t>(model.params) + 4u * 797'184);
  in.qlora = true;
  EXPECT_FALSE(resolve_run(model, in, nullptr).ok());
}

// diffusers' gradient checkpointing keeps each ResNet and attention block's input and recomputes
// one block at a time: far less than the whole graph, more than nothing, and the eager scores of
// one attention block only.
TEST(Unet, FullCheckpointingKeepsBlockInputsAndOneBlock) {
  auto model = test::sd15_unet();
  auto u = unet_cost(model.arch, 512);
  ASSERT_TRUE(u);
  EXPECT_GT(u->ckpt_elements, 0);
  EXPECT_LT(u->ckpt_elements + u->ckpt_working, u->saved_elements / 3);
  EXPECT_LT(u->ckpt_working_scores, u->score_elements);
  auto run = resolve_run(model, fit::Run{}, nullptr);
  ASSERT_TRUE(run.ok());
  run->optimizer = Optimizer::sgd;
  run->batch = 16; // forward/backward stays the peak
  auto gpu = test::gpu_80gb();
  auto none = estimate_memory(model, *run, gpu);
  run->checkpointing = Checkpointing::full;
  ASSERT_TRUE(resolve_run(model, *run, nullptr).ok());
  auto full = estimate_memory(model, *run, gpu);
  EXPECT_DOUBLE_EQ(static_cast<double>(full.activations),
                   std::round((u->ckpt_elements + u->ckpt_working) * 2 * 16));
  EXPECT_LT(full.activations, none.activations / 3);
  // Selective recompute is a transformer-layer notion: refused with the flag named.
  run->checkpointing = Checkpointing::selective;
  auto refused = resolve_run(model, *run, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--checkpointing"), std::string::npos);
}

// A ResNet with every residual block checkpointed keeps the blocks' inputs and recomputes one
// block at a time (MemTracker on the CPU: 243.5 MiB of activations at batch 8 in fp32, dlrig
// 234.3; docs/fit-accuracy.md).
TEST(Cnn, FullCheckpointingKeepsBlockInputs) {
  auto model = test::resnet("resnet50");
  fit::Run in;
  in.precision = Precision::fp32;
  in.batch = 8;
  auto run = resolve_run(model, in, nullptr);
  ASSERT_TRUE(run.ok()) << run.error().message;
  auto none = estimate_memory(model, *run, test::gpu_80gb());
  run->checkpointing = Checkpointing::full;
  ASSERT_TRUE(resolve_run(model, *run, nullptr).ok());
  auto full = estimate_memory(model, *run, test::gpu_80gb());
  EXPECT_LT(full.activations, none.activations / 2);
  EXPECT_NEAR(static_cast<double>(full.activations) / (1 << 20), 234.3, 0.5);
  EXPECT_GT(full.gradients, none.gradients); // the peak moves later in the walk
}

TEST(Checkpoint, DecoderShapeFromTensorNames) {
  std::vector<SafeTensor> t;
  auto add = [&](std::string n, std::vector<std::uint64_t> shape) {
    SafeTensor s;
    s.name = std::move(n);
    s.dtype = "BF16";
    s.shape = std::move(shape);
    s.end = s.elements() * 2;
    t.push_back(s);
  };
  add("model.embed_tokens.weight", {128256, 4096});
  for (int l = 0; l < 32; ++l) {
    auto p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj.weight", {4096, 4096});
    add(p + "self_attn.k_proj.weight", {1024, 4096});
    add(p + "mlp.gate_proj.weight", {14336, 4096});
    add(p + "input_layernorm.weight", {4096});
  }
  add("lm_head.weight", {128256, 4096});
  auto c = summarise_checkpoint(t, {"x"});
  auto arch = arch_from_checkpoint(c, model::ModelFamily::decoder, "x");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  EXPECT_EQ(arch->layers, 32);
  EXPECT_EQ(arch->hidden, 4096);
  EXPECT_EQ(arch->vocab, 128256);
  EXPECT_EQ(arch->heads * arch->head_dim, 4096);
  EXPECT_EQ(arch->kv_heads * arch->head_dim, 1024);
  EXPECT_EQ(arch->intermediate, 14336);
  EXPECT_TRUE(arch->gated_mlp);
  EXPECT_FALSE(arch->tied_embeddings);
  EXPECT_EQ(arch->norm, "rmsnorm");
  // The KV cache needs only kv_heads x head_dim: exact without a config.json.
  EXPECT_EQ(kv_bytes_per_token(dims_of(*arch), 2), 131'072u);

  std::vector<SafeTensor> nothing{t[1]};
  EXPECT_FALSE(
      arch_from_checkpoint(summarise_checkpoint(nothing, {"y"}), model::ModelFamily::decoder, "y")
          .ok());
}

// Llama 3.2 11B Vision on text-only batches: its 8 cross-attention layers are skipped, so they
// hold no activations and no KV cache (32 cached layers, as Llama 3.1 8B's), and fit says so.
TEST(ResolveRun, MllamaTextOnlyBatchesSkipCrossAttention) {
  auto arch = model::model_from_config_text(R"({"model_type": "mllama"})", "config.json");
  ASSERT_TRUE(arch.ok()) << arch.error().message;
  EXPECT_EQ(dims_of(*arch).layers, 32);
  EXPECT_EQ(kv_bytes_per_token(dims_of(*arch), 2), 131'072u);
  auto none = model::model_from_config_text(
      R"({"model_type": "mllama", "text_config": {"cross_attention_layers": []}})", "config.json");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_EQ(kv_bytes_per_token(dims_of(*none), 2), 40u * 2 * 1024 * 2);
  auto model = test::make(*arch, model::derive_params(*arch));
  std::vector<std::string> notes;
  ASSERT_TRUE(resolve_run(model, fit::Run{}, &notes).ok());
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string &n) {
    return n.find("its 8 cross-attention layers read only image features, so a text-only batch "
                  "skips them") != std::string::npos;
  }));
}

// Gemma 2, VaultGemma and gpt-oss have no SDPA path in current transformers (_supports_sdpa =
// False): without --attention fit runs eager as transformers does, and says so; --attention sdpa
// is refused as transformers refuses it; releases whose class ran SDPA keep it.
ModelInput from_config(const std::string &json) {
  auto arch = model::model_from_config_text(json, "config.json");
  EXPECT_TRUE(arch.ok()) << arch.error().message;
  return test::make(*arch, model::derive_params(*arch));
}

bool says(const std::vector<std::string> &notes, const std::string &text) {
  return std::any_of(notes.begin(), notes.end(),
                     [&](const std::string &n) { return n.find(text) != std::string::npos; });
}

// A one-layer decoder of 256 wide, 4 heads of 64 (the CPU measurement's shape).
std::string tiny(const std::string &type, const std::string &more = "") {
  return R"({"model_type": ")" + type + R"(", "hidden_size": 256, "intermediate_size": 512,
      "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 64,
      "vocab_size": 1000)" +
         more + "}";
}

TEST(ResolveRun, AttentionIsWhatTransformersRunsForTheModel) {
  for (const char *type : {"gemma2", "vaultgemma", "gpt_oss"}) {
    SCOPED_TRACE(type);
    const auto model = from_config(tiny(type));
    std::vector<std::string> notes;
    auto run = resolve_run(model, fit::Run{}, &notes);
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->attention, Attention::eager);
    EXPECT_TRUE(says(notes, std::string("attention: eager, which transformers (version not known: "
                                        "taken as the newest; --transformers VERSION) runs for ") +
                                type));
    fit::Run asked;
    asked.attention = Attention::sdpa;
    asked.attention_given = true;
    auto refused = resolve_run(model, asked, nullptr);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("refuses SDPA for " + std::string(type)),
              std::string::npos)
        << refused.error().message;
    asked.attention = Attention::flash;
    auto flash = resolve_run(model, asked, nullptr);
    ASSERT_TRUE(flash.ok());
    EXPECT_EQ(flash->attention, Attention::flash);
  }
  const auto gemma2 = from_config(tiny("gemma2"));
  auto at = [&](const char *version, bool given = false) {
    fit::Run r;
    r.transformers_version = version;
    r.attention_given = given;
    auto out = resolve_run(gemma2, r, nullptr);
    return out.ok() ? std::optional<Attention>(out->attention) : std::nullopt;
  };
  EXPECT_EQ(at("4.44.2"), Attention::sdpa); // before huggingface/transformers#32865
  EXPECT_EQ(at("4.45.0"), Attention::eager);
  EXPECT_EQ(at("4.47.1"), Attention::eager);
  EXPECT_EQ(at("4.48.0"), Attention::sdpa);
  EXPECT_EQ(at("5.20.2"), Attention::sdpa);
  EXPECT_EQ(at("5.21.0"), Attention::eager);
  EXPECT_EQ(at("4.46.0", true), Attention::sdpa); // SDPA asked for: allowed then
  EXPECT_EQ(at("5.21.0", true), std::nullopt);
  // Llama keeps SDPA; PaliGemma 2's Gemma 2 text model runs eager as Gemma 2 does.
  EXPECT_EQ(resolve_run(from_config(tiny("llama")), fit::Run{}, nullptr)->attention,
            Attention::sdpa);
  auto pali = from_config(R"({"model_type": "paligemma", "text_config": {"model_type": "gemma2",
      "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 257216}})");
  EXPECT_EQ(pali.arch.text_type(), "gemma2");
  EXPECT_EQ(resolve_run(pali, fit::Run{}, nullptr)->attention, Attention::eager);
}

// BLOOM and DeBERTa-v2 have neither an SDPA nor a flash-attention path (transformers 5.25.0 builds
// them eager and raises on both); T5 and Llama 4 have no flash-attention path, Mllama none from
// 5.23.0: --attention flash is refused there, and flash-attention is not offered as a change.
TEST(ResolveRun, FlashAttentionIsRefusedWhereTransformersRefusesIt) {
  auto with = [](const ModelInput &m, std::optional<Attention> a, const char *version = "") {
    fit::Run r;
    r.transformers_version = version;
    if (a) {
      r.attention = *a;
      r.attention_given = true;
    }
    return resolve_run(m, r, nullptr);
  };
  for (const char *type : {"bloom", "deberta-v2"}) {
    SCOPED_TRACE(type);
    const auto m = from_config(std::string(R"({"model_type": ")") + type + R"("})");
    EXPECT_EQ(with(m, std::nullopt)->attention, Attention::eager);
    EXPECT_FALSE(with(m, Attention::sdpa).ok());
    auto flash = with(m, Attention::flash);
    ASSERT_FALSE(flash.ok());
    EXPECT_NE(flash.error().message.find("refuses flash-attention for " + std::string(type)),
              std::string::npos)
        << flash.error().message;
    EXPECT_NE(flash.error().message.find("use --attention eager"), std::string::npos);
  }
  const auto mt5 = from_config(R"({"model_type": "mt5"})");
  EXPECT_EQ(with(mt5, std::nullopt)->attention, Attention::sdpa);
  EXPECT_FALSE(with(mt5, Attention::flash).ok());
  const auto mllama = from_config(R"({"model_type": "mllama"})");
  EXPECT_TRUE(with(mllama, Attention::flash, "5.22.0").ok());
  EXPECT_FALSE(with(mllama, Attention::flash, "5.23.0").ok());
  // bloom-560m's shape at 8 x 2048 tokens on an 80 GB GPU: eager (16 heads x 2048^2 x 8 x 6 B, 3.2
  // GB per layer), and flash-attention is no change offered.
  fit::Run run;
  run.seq = 2048;
  run.batch = 8;
  const auto bloom = from_config(R"({"model_type": "bloom", "hidden_size": 1024, "n_layer": 24,
      "n_head": 16, "vocab_size": 250880})");
  auto resolved = resolve_run(bloom, run, nullptr);
  ASSERT_TRUE(resolved.ok());
  auto rep = fit(bloom, *resolved, {test::gpu_80gb()}, FitOptions{}, std::nullopt);
  ASSERT_FALSE(rep.gpus[0].fits.value_or(true));
  for (const auto &s : rep.gpus[0].suggestions)
    EXPECT_EQ(s.flags.find("--attention"), std::string::npos) << s.flags;
}

// Where the run is eager (Gemma 2's default), flash-attention is one of the changes offered when it
// does not fit: it drops the s^2 scores.
TEST(Suggestions, FlashAttentionWhereTheRunIsEager) {
  const auto gemma2 = from_config(R"({"model_type": "gemma2", "hidden_size": 2304,
      "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
      "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000})");
  fit::Run run;
  run.seq = 4096;
  run.batch = 4;
  run.transformers_version = "5.25.0";
  auto resolved = resolve_run(gemma2, run, nullptr);
  ASSERT_TRUE(resolved.ok());
  ASSERT_EQ(resolved->attention, Attention::eager);
  auto rep = fit(gemma2, *resolved, {test::gpu_80gb()}, FitOptions{}, std::nullopt);
  ASSERT_EQ(rep.gpus.size(), 1u);
  ASSERT_FALSE(rep.gpus[0].fits.value_or(true));
  const auto &s = rep.gpus[0].suggestions;
  auto flash = std::find_if(s.begin(), s.end(),
                            [](const Suggestion &x) { return x.flags == "--attention flash"; });
  ASSERT_NE(flash, s.end());
  EXPECT_LT(flash->device_bytes, rep.gpus[0].memory.device);
}

// Eager scores per element, as saved-tensor hooks counted them on the CPU (transformers 5.25.0,
// torch 2.15.0; docs/fit.md): Llama's softmax(dtype=float32) keeps an fp32 output and its 16-bit
// copy (6 B in bf16 without autocast); Gemma 2's softcapping adds tanh's output (2 B); GPT-2's
// softmax runs in the scores' dtype (2 B). Under autocast every softmax is fp32 (6 B).
TEST(EagerScores, SoftmaxUpcastAndSoftcapping) {
  // Eager minus flash activations: the scores, less the output flash keeps (e x s x b x q).
  auto per_score = [](const ModelInput &m, Precision p) {
    fit::Run run;
    run.seq = 128;
    run.batch = 2;
    run.precision = p;
    run.optimizer = Optimizer::sgd;
    run.attention = Attention::eager;
    auto eager = estimate_memory(m, run, test::gpu_80gb());
    run.attention = Attention::flash;
    auto flash = estimate_memory(m, run, test::gpu_80gb());
    const double elements = 4.0 * 128 * 128 * 2, flash_output = 2.0 * 128 * 2 * 256;
    return (static_cast<double>(eager.activations) - static_cast<double>(flash.activations) +
            flash_output) /
           elements;
  };
  const auto llama = from_config(tiny("llama"));
  const auto gemma2 = from_config(tiny("gemma2"));
  const auto uncapped = from_config(tiny("gemma2", R"(, "attn_logit_softcapping": null)"));
  const auto vault = from_config(tiny("vaultgemma"));
  const auto gpt2 = from_config(R"({"model_type": "gpt2", "n_embd": 256, "n_layer": 1,
      "n_head": 4, "n_positions": 1024, "vocab_size": 1000, "attn_pdrop": 0.0, "resid_pdrop": 0.0,
      "embd_pdrop": 0.0})");
  EXPECT_TRUE(gemma2.arch.attn_softcap);
  EXPECT_FALSE(uncapped.arch.attn_softcap);
  EXPECT_TRUE(vault.arch.attn_softcap);
  EXPECT_DOUBLE_EQ(per_score(llama, Precision::bf16), 6);
  EXPECT_DOUBLE_EQ(per_score(uncapped, Precision::bf16), 6);
  EXPECT_DOUBLE_EQ(per_score(gemma2, Precision::bf16), 8);
  EXPECT_DOUBLE_EQ(per_score(vault, Precision::bf16), 8);
  EXPECT_DOUBLE_EQ(per_score(gpt2, Precision::bf16), 2);
  EXPECT_DOUBLE_EQ(per_score(llama, Precision::bf16_amp), 6);
  EXPECT_DOUBLE_EQ(per_score(gemma2, Precision::bf16_amp), 8);
  EXPECT_DOUBLE_EQ(per_score(gpt2, Precision::bf16_amp), 6);
}

// Gemma 2's final_logit_softcapping puts the logits through tanh, which keeps its output: e more
// bytes per logit at the loss's peak (TanhBackward0's bf16 [b, s, V] result on the CPU), and three
// element-wise kernels in the time model; a fused loss (Liger-Kernel) softcaps inside.
TEST(FinalSoftcap, TanhKeepsTheLogitsOnceMore) {
  const auto capped = from_config(tiny("gemma2"));
  const auto plain = from_config(tiny("gemma2", R"(, "final_logit_softcapping": null)"));
  ASSERT_TRUE(capped.arch.final_softcap);
  ASSERT_FALSE(plain.arch.final_softcap);
  fit::Run run;
  run.seq = 128;
  run.batch = 2;
  run.optimizer = Optimizer::sgd;
  run.attention = Attention::eager;
  const auto a = estimate_memory(capped, run, test::gpu_80gb());
  const auto b = estimate_memory(plain, run, test::gpu_80gb());
  EXPECT_DOUBLE_EQ(static_cast<double>(a.activations) - static_cast<double>(b.activations),
                   2.0 * 2 * 128 * 1000);
  run.loss = Loss::fused;
  EXPECT_EQ(estimate_memory(capped, run, test::gpu_80gb()).activations,
            estimate_memory(plain, run, test::gpu_80gb()).activations);
}

// DeBERTa's disentangled attention keeps, per c2p/p2c term and layer, the heads x s x 2k product
// torch.gather reads, gather's int64 s x s index, the position projection repeated to every
// sequence (b x 2k x hidden), and one key divided by the scale: saved-tensor hooks on a one-layer
// DeBERTa-v3-base shape (b 16, s 512, 2k 512, bf16 on the CPU, transformers 5.25.0) kept 562.2
// MB; fit 545.3 (302.1 without these terms).
TEST(EagerScores, DebertaDisentangledAttention) {
  const std::string cfg = R"({"model_type": "deberta-v2", "hidden_size": 768,
      "num_hidden_layers": 1, "num_attention_heads": 12, "intermediate_size": 3072,
      "vocab_size": 1000, "relative_attention": true, "pos_att_type": ["p2c", "c2p"],
      "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": true,
      "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
      "position_biased_input": false)";
  const auto both = from_config(cfg + "}");
  const auto c2p = from_config(cfg + R"(, "pos_att_type": ["c2p"]})");
  const auto none = from_config(cfg + R"(, "relative_attention": false})");
  EXPECT_EQ(both.arch.relative_types, 2);
  EXPECT_EQ(both.arch.position_projections, 0); // shared keys: no pos_key_proj
  EXPECT_EQ(c2p.arch.relative_types, 1);
  EXPECT_EQ(none.arch.relative_types, 0);
  fit::Run run;
  run.seq = 512;
  run.batch = 16;
  run.precision = Precision::bf16;
  run.optimizer = Optimizer::sgd;
  auto acts = [&](const ModelInput &m) {
    auto r = resolve_run(m, run, nullptr); // eager: DeBERTa-v2 has no other path
    EXPECT_EQ(r->attention, Attention::eager);
    return static_cast<double>(estimate_memory(m, *r, test::gpu_80gb()).activations);
  };
  const double s = 512, b = 16, w = 512, h = 768, heads = 12;
  const double term = heads * s * w * b * 2 + 8 * s * s + b * w * h * 2;
  const double key = s * b * h * 2;
  EXPECT_DOUBLE_EQ(acts(both) - acts(c2p), term);
  EXPECT_DOUBLE_EQ(acts(c2p) - acts(none), term + key);
  EXPECT_NEAR(acts(both), 562'219'014, 0.04 * 562'219'014);
}

TEST(Fit, VerdictHeadroomAndJson) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 2048;
  run.lora_rank = 16;
  FitOptions opts;
  opts.max_batch = true;
  auto rep = fit(model, run, {test::gpu_80gb(), test::gpu_24gb()}, opts, std::nullopt);
  ASSERT_EQ(rep.gpus.size(), 2u);
  const auto &g = rep.gpus[0];
  ASSERT_TRUE(g.fits.has_value());
  EXPECT_TRUE(*g.fits);
  EXPECT_EQ(*g.headroom, 80'000'000'000 - static_cast<std::int64_t>(g.memory.device));
  auto j = document(fit_report(rep, false), Envelope{});
  EXPECT_EQ(j["schema_version"], 1);
  const auto &gj = j["gpus"][0];
  EXPECT_EQ(gj["total_bytes"], g.memory.device);
  for (const char *k : {"weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"})
    EXPECT_TRUE(gj["breakdown"].contains(k)) << k;
  EXPECT_EQ(gj["verdict"], "fits");
  EXPECT_EQ(gj["judged_at"], "device");
  EXPECT_TRUE(gj["max_batch"].is_number_integer());
}

// FP8 training runs from compute capability 8.9 (Transformer Engine): on an older GPU the verdict
// is "does not run" with the fix, never "fits"; serving, or an unknown capability, is not refused.
TEST(Fit, Fp8TrainingDoesNotRunBeforeComputeCapability8_9) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 512;
  run.lora_rank = 16;
  run.precision = Precision::fp8;
  auto ampere = test::gpu_80gb(); // 8.0
  auto ada = test::gpu_24gb();    // 8.9
  auto unknown = test::gpu_80gb();
  unknown.compute_capability.clear();
  auto rep = fit(model, run, {ampere, ada, unknown}, FitOptions{}, std::nullopt);
  ASSERT_EQ(rep.gpus.size(), 3u);
  EXPECT_EQ(rep.gpus[0].cannot_run,
            "FP8 training needs compute capability 8.9 or newer (Transformer Engine); test 80GB "
            "is 8.0: use --precision bf16-amp");
  EXPECT_EQ(rep.gpus[0].fits, std::optional<bool>(false));
  EXPECT_TRUE(rep.gpus[0].suggestions.empty());
  EXPECT_TRUE(rep.gpus[1].cannot_run.empty());
  EXPECT_TRUE(rep.gpus[2].cannot_run.empty());
  EXPECT_FALSE(rep.all_fit());
  auto j = document(fit_report(rep, false), Envelope{});
  EXPECT_EQ(j["gpus"][0]["verdict"], "does-not-run");
  EXPECT_EQ(j["gpus"][0]["cannot_run"], rep.gpus[0].cannot_run);
  EXPECT_EQ(j["gpus"][1]["verdict"], "fits");
  EXPECT_TRUE(j["gpus"][1]["cannot_run"].is_null());
  run.mode = Mode::infer;
  run.lora_rank = 0;
  EXPECT_TRUE(cannot_run_on(run, ampere).empty());
}

// AMD: FP8 matrix cores came with CDNA 3 (MI300X, gfx942); CDNA 2 (MI250X, gfx90a) has none
// (data/archs.csv, ROCm's hardware specifications). A gfx target the catalog does not know is not
// refused.
TEST(Fit, Fp8TrainingOnAmdNeedsCdna3) {
  fit::Run run;
  run.seq = 512;
  run.lora_rank = 16;
  run.precision = Precision::fp8;
  auto gpu = [](std::string_view name) {
    const kb::GpuSpec *spec = kb::builtin().find_gpu(name);
    EXPECT_NE(spec, nullptr) << name;
    return gpu_target(*spec);
  };
  const GpuTarget mi250x = gpu("AMD Instinct MI250X"), mi300x = gpu("AMD Instinct MI300X");
  EXPECT_EQ(mi250x.compute_capability, "gfx90a");
  EXPECT_EQ(cannot_run_on(run, mi250x),
            "FP8 training needs FP8 matrix cores, which AMD Instinct MI250X (CDNA 2 gfx90a) lacks "
            "(ROCm GPU hardware specifications): use --precision bf16-amp");
  EXPECT_TRUE(cannot_run_on(run, mi300x).empty());
  GpuTarget unknown = mi300x;
  unknown.compute_capability = "gfx1201";
  EXPECT_TRUE(cannot_run_on(run, unknown).empty());
  auto rep = fit(test::llama3_8b(), run, {mi250x}, FitOptions{}, std::nullopt);
  ASSERT_EQ(rep.gpus.size(), 1u);
  EXPECT_EQ(document(fit_report(rep, false), Envelope{})["gpus"][0]["verdict"], "does-not-run");
  run.mode = Mode::infer;
  run.lora_rank = 0;
  EXPECT_TRUE(cannot_run_on(run, mi250x).empty());
}

// Beyond 2^31 tokens in flight per GPU the activations pass 2^63 bytes: refused, not summed wrong.
TEST(ResolveRun, TokensInFlightBeyondTwoToThe31AreRefused) {
  auto model = test::llama3_8b();
  fit::Run run;
  run.seq = 16'777'216;
  run.batch = 1'048'576;
  auto r = resolve_run(model, run, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("--batch 1048576 x --seq 16777216 = 1.76e+13 tokens per GPU: "
                                    "beyond the 2147483648 (2^31) dlrig sizes",
                                    0),
            0u)
      << r.error().message;
  run.batch = 128;
  run.seq = 1 << 24; // 2^31 exactly
  EXPECT_TRUE(resolve_run(model, run, nullptr).ok());
}

// A GPU its driver answers for stays a target when its memory is unknown (GB10's unified memory:
// NVML "not supported") and the catalog does not know it: its verdict is unknown, not "no GPU".
TEST(GpuTargets, AGpuTheDriverSeesWithUnknownMemoryStays) {
  Snapshot snap;
  Gpu g;
  g.bdf = "000f:01:00.0";
  g.vendor_id = "0x10de";
  g.device_id = "0x2e12";
  NvmlGpu n;
  n.name = "NVIDIA GB10";
  n.compute_capability = "12.1";
  g.nvml = n;
  snap.gpus.push_back(g);
  Gpu display; // a display controller nothing answers for
  display.bdf = "0000:00:02.0";
  display.vendor_id = "0x8086";
  display.device_id = "0xffff";
  snap.gpus.push_back(display);
  auto targets = gpu_targets(snap, kb::builtin());
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].name, "NVIDIA GB10");
  EXPECT_FALSE(targets[0].memory_bytes.has_value());
  auto rep = fit(test::llama3_8b(), fit::Run{}, targets, FitOptions{}, std::nullopt);
  EXPECT_FALSE(rep.gpus.at(0).fits.has_value());
  EXPECT_FALSE(rep.all_fit());
}

} // namespace
} // namespace dlrig::fit

namespace dlrig::fit {
namespace {

// fit and the model layer take their UNet numbers from the one walk (model/walk.hpp). A config
// with 64 heads per block (diffusers reads attention_head_dim as the head count), no
// cross_attention_dim (diffusers' default 1280) and SDXL's added embedding: the old estimator's own
// walk took 64 as a head size (5 heads), 768 as the text width and left out add_embedding.
TEST(OneWalk, FitAndTheModelLayerTakeTheSameNumbers) {
  const std::string text = R"({"_class_name": "UNet2DConditionModel",
    "block_out_channels": [320, 640], "layers_per_block": 2,
    "down_block_types": ["CrossAttnDownBlock2D", "DownBlock2D"],
    "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D"],
    "attention_head_dim": 64, "addition_embed_type": "text_time",
    "addition_time_embed_dim": 256, "projection_class_embeddings_input_dim": 2816,
    "sample_size": 64})";
  const auto dir =
      std::filesystem::temp_directory_path() / ("dlrig-onewalk-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "config.json") << text; }
  auto model = load_model((dir / "config.json").string(), std::nullopt, kb::builtin());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto modules = model::walk(model->arch, 512);
  ASSERT_TRUE(modules.ok()) << modules.error().message;
  const auto walked = model::total_params(*modules);
  EXPECT_EQ(model->params, walked);
  EXPECT_EQ(model::derive_params(model->arch), walked);
  auto u = unet_cost(model->arch, 512);
  ASSERT_TRUE(u);
  EXPECT_DOUBLE_EQ(u->params, static_cast<double>(walked));

  // Eager attention adds exactly the walk's scores: 64 heads × 4096² per layer at 64×64 (two
  // down attentions, three up) and 64 × 1024² in the mid block.
  double scores = 0;
  for (const auto &r : *modules)
    scores += r.scores;
  EXPECT_DOUBLE_EQ(scores, 64.0 * (5 * 4096.0 * 4096 + 1024.0 * 1024));
  EXPECT_DOUBLE_EQ(u->score_elements, scores);
  auto run = resolve_run(*model, fit::Run{}, nullptr);
  ASSERT_TRUE(run.ok()) << run.error().message;
  run->optimizer = Optimizer::sgd;
  auto gpu = test::gpu_80gb();
  auto sdpa = estimate_memory(*model, *run, gpu);
  run->attention = Attention::eager;
  auto eager = estimate_memory(*model, *run, gpu);
  EXPECT_NEAR(static_cast<double>(eager.activations - sdpa.activations), 2 * scores, 2);
}

// The software stack: --torch VERSION with its CUDA from the suffix or from the PyPI default build
// (data/torch.csv); this machine's from the snapshot's active Python environment.
TEST(Stack, TorchFlagAndSnapshot) {
  const auto &kb = kb::builtin();
  auto r = with_torch(fit::Run{}, "1.13.1+cu117", kb);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->torch_version, "1.13.1");
  EXPECT_EQ(r->cuda_version, "11.7");
  auto plain = with_torch(fit::Run{}, "2.1.1", kb);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->torch_version, "2.1.1");
  if (const auto *rel = kb.torch_release("2.1.1")) {
    for (const auto &v : rel->variants) {
      if (v.pypi_default && !v.cuda.empty()) {
        EXPECT_EQ(plain->cuda_version, v.cuda);
      }
    }
  }
  EXPECT_FALSE(with_torch(fit::Run{}, "two", kb).ok());
  EXPECT_FALSE(with_torch(fit::Run{}, "2.5.1+cpu", kb).ok());

  Snapshot snap;
  PythonEnv other, active;
  other.torch = TorchInstall{};
  other.torch->version = "1.12.1+cu113";
  other.torch->cuda = "11.3";
  active.active = true;
  active.torch = TorchInstall{};
  active.torch->version = "2.5.1+cu124";
  active.torch->cuda = "12.4";
  snap.software.python_envs = {other, active};
  snap.software.env["CUDA_MODULE_LOADING"] = "eager";
  auto m = with_machine_stack(fit::Run{}, snap);
  EXPECT_EQ(m.torch_version, "2.5.1");
  EXPECT_EQ(m.cuda_version, "12.4");
  EXPECT_EQ(m.module_loading, "EAGER");
  EXPECT_EQ(m.transformers_version, "") << "the active environment has no transformers";

  // transformers comes from the environment whose torch is used, unless the run names one, and
  // a dist-info version that is not one stays unknown.
  snap.software.python_envs[0].transformers = "4.30.0";
  snap.software.python_envs[1].transformers = "4.46.3";
  EXPECT_EQ(with_machine_stack(fit::Run{}, snap).transformers_version, "4.46.3");
  fit::Run given;
  given.transformers_version = "5.0.0";
  EXPECT_EQ(with_machine_stack(given, snap).transformers_version, "5.0.0");
  snap.software.python_envs[1].transformers = "unknown";
  EXPECT_EQ(with_machine_stack(fit::Run{}, snap).transformers_version, "");
}

// --transformers: a PEP 440 version, else a usage error naming the flag.
TEST(ResolveRun, TransformersVersionText) {
  auto model = test::llama3_8b();
  for (const char *ok : {"4.46.3", "5.0.0rc1", "4.57.0.dev0", "4.54"}) {
    fit::Run run;
    run.transformers_version = ok;
    EXPECT_TRUE(resolve_run(model, run, nullptr).ok()) << ok;
  }
  for (const char *bad : {"four", "v4.46.3", "4.46.3 ", "4.x", "4.46;3"}) {
    fit::Run run;
    run.transformers_version = bad;
    auto r = resolve_run(model, run, nullptr);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--transformers \"" + std::string(bad) + "\""),
              std::string::npos)
        << r.error().message;
  }
}

// The default Adam implementation follows the PyTorch release: foreach since 2.0, the
// single-tensor loop before; the new options refuse runs they cannot be part of.
TEST(ResolveRun, OptimizerImplementationAndOptions) {
  auto model = test::llama3_8b();
  fit::Run run;
  auto r = resolve_run(model, run, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->optimizer_impl, OptimizerImpl::foreach);
  run.torch_version = "1.13.1";
  EXPECT_EQ(resolve_run(model, run, nullptr)->optimizer_impl, OptimizerImpl::loop);
  run = fit::Run{};
  run.strategy = Strategy::zero2;
  run.gpus = 2;
  EXPECT_FALSE(resolve_run(model, run, nullptr)->optimizer_impl) << "DeepSpeed's own Adam";
  run.optimizer_impl = OptimizerImpl::fused; // dropped: the command line refuses it (exit 64)
  EXPECT_FALSE(resolve_run(model, run, nullptr)->optimizer_impl);
  run = fit::Run{};
  run.optimizer_in_backward = true;
  run.grad_accum = 2;
  EXPECT_FALSE(resolve_run(model, run, nullptr).ok());
  run = fit::Run{};
  run.gradient_as_bucket_view = true;
  run.strategy = Strategy::fsdp;
  EXPECT_FALSE(resolve_run(model, run, nullptr).ok());
  run = fit::Run{};
  run.loss = Loss::fused;
  EXPECT_FALSE(resolve_run(test::bert_base_cased(), run, nullptr).ok()) << "no vocabulary logits";
  EXPECT_TRUE(resolve_run(model, run, nullptr).ok());
}

} // namespace
} // namespace dlrig::fit

namespace dlrig::fit {
namespace {

// A Hugging Face repository id that is not a path here ("org/name") is what users type, as
// accelerate's estimate-memory takes it. dlrig does not download: it reads the snapshot a
// download left in the local Hugging Face cache (HF_HUB_CACHE's layout:
// models--ORG--NAME/refs/main naming snapshots/REVISION/), else the catalog model whose
// config.json comes from that repository, else it says how to get the config.
struct HubCache {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlrig-hub-" + std::to_string(::getpid()));
  HubCache() {
    std::filesystem::create_directories(dir);
    setenv("HF_HUB_CACHE", dir.c_str(), 1);
  }
  ~HubCache() {
    unsetenv("HF_HUB_CACHE");
    std::filesystem::remove_all(dir);
  }
  void snapshot(const std::string &repo, const std::string &revision, const std::string &config) {
    const auto snap = dir / repo / "snapshots" / revision;
    std::filesystem::create_directories(snap);
    std::ofstream(snap / "config.json") << config;
  }
};

const char *kSmallLlama = R"({"model_type": "llama", "hidden_size": 512,
  "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
  "intermediate_size": 1376, "vocab_size": 32000, "tie_word_embeddings": false})";

TEST(HubIds, ACachedSnapshotIsReadWithTheRevisionRefsMainNames) {
  HubCache hub;
  hub.snapshot("models--someone--small-llama", "aaa111", kSmallLlama);
  hub.snapshot("models--someone--small-llama", "bbb222", R"({"model_type": "llama"})");
  std::filesystem::create_directories(hub.dir / "models--someone--small-llama" / "refs");
  std::ofstream(hub.dir / "models--someone--small-llama" / "refs" / "main") << "aaa111";
  auto m = load_model("someone/small-llama", std::nullopt, kb::builtin());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->arch.hidden, 512);
  EXPECT_EQ(m->arch.layers, 4);
  EXPECT_NE(m->origin.find("snapshots/aaa111/config.json"), std::string::npos) << m->origin;
  EXPECT_EQ(m->arch.name, "someone/small-llama"); // not the revision folder's name
  ASSERT_EQ(m->assumptions.size(), 1u);
  EXPECT_NE(m->assumptions[0].find("someone/small-llama: read from the Hugging Face cache"),
            std::string::npos)
      << m->assumptions[0];
}

TEST(HubIds, WithoutRefsMainOnlyASingleSnapshotIsTaken) {
  HubCache hub;
  hub.snapshot("models--someone--small-llama", "aaa111", kSmallLlama);
  auto one = load_model("someone/small-llama", std::nullopt, kb::builtin());
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->arch.hidden, 512);
  hub.snapshot("models--someone--small-llama", "bbb222", kSmallLlama);
  auto two = load_model("someone/small-llama", std::nullopt, kb::builtin());
  ASSERT_FALSE(two.ok()); // which of the two is not guessed, and the message says it is there
  EXPECT_EQ(two.error().kind, ErrorKind::not_found);
  EXPECT_NE(two.error().message.find("the Hugging Face cache holds 2 snapshots of it (aaa111, "
                                     "bbb222) and no refs/main names one"),
            std::string::npos)
      << two.error().message;
}

// refs/main is read without blocking: a FIFO there (it waited for ever with std::ifstream) is not
// read, and the one snapshot is taken as when refs/main is missing; a line end after the hash
// does not hide it.
TEST(HubIds, ARefsMainThatIsNoRegularFileIsNotReadAndTheSoleSnapshotTaken) {
  HubCache hub;
  hub.snapshot("models--someone--small-llama", "aaa111", kSmallLlama);
  const auto refs = hub.dir / "models--someone--small-llama" / "refs";
  std::filesystem::create_directories(refs);
  ASSERT_EQ(::mkfifo((refs / "main").c_str(), 0600), 0);
  auto m = load_model("someone/small-llama", std::nullopt, kb::builtin());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->arch.hidden, 512);
  std::filesystem::remove(refs / "main");
  hub.snapshot("models--someone--small-llama", "bbb222", R"({"model_type": "llama"})");
  std::ofstream(refs / "main") << "aaa111\r\n";
  auto named = load_model("someone/small-llama", std::nullopt, kb::builtin());
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_NE(named->origin.find("snapshots/aaa111/config.json"), std::string::npos) << named->origin;
}

TEST(HubIds, AnUncachedIdIsTheCatalogModelFromThatRepository) {
  HubCache hub;
  // data/models.json's llama-3.1-8b: "config: https://huggingface.co/meta-llama/Llama-3.1-8B/...".
  auto m = load_model("meta-llama/Llama-3.1-8B", std::nullopt, kb::builtin());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->arch.name, "llama-3.1-8b");
  EXPECT_EQ(m->origin, "catalog");
  ASSERT_EQ(m->assumptions.size(), 1u);
  EXPECT_NE(m->assumptions[0].find("nor in the Hugging Face cache (" + hub.dir.string() + ")"),
            std::string::npos)
      << m->assumptions[0];
  // Case does not matter on the Hub; another repository's fine-tune is not taken for it.
  EXPECT_TRUE(load_model("META-LLAMA/llama-3.1-8b", std::nullopt, kb::builtin()).ok());
  auto other = load_model("meta-llama/Llama-3.1-8B-Instruct", std::nullopt, kb::builtin());
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, ErrorKind::not_found);
  EXPECT_NE(other.error().message.find("`hf download meta-llama/Llama-3.1-8B-Instruct "
                                       "config.json`"),
            std::string::npos)
      << other.error().message;
  // A path-like spec that is not an id stays a missing path.
  auto path = load_model("./nowhere/config.json", std::nullopt, kb::builtin());
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().message, "./nowhere/config.json: no such file or folder");
}

} // namespace
} // namespace dlrig::fit

namespace dlrig::fit {
namespace {

// A model is named after the folder holding its config.json: a bare "config.json" after the
// working folder, not after the file (which the error names already).
TEST(ConfigErrors, ABareConfigJsonIsNamedAfterTheWorkingFolder) {
  const std::string text = R"({"model_type": "llama", "hidden_size": 4096,
    "num_hidden_layers": 2, "num_attention_heads": 0, "intermediate_size": 11008,
    "vocab_size": 32000})";
  auto bare = parse_model_config(text, "config.json");
  ASSERT_FALSE(bare.ok());
  const std::string cwd = std::filesystem::current_path().filename().string();
  EXPECT_EQ(bare.error().message, "config.json: " + cwd +
                                      ": config field 'num_attention_heads' must be at least 1, "
                                      "got 0");
  auto ok = parse_model_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})",
      "config.json");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->name, cwd);
  // A config saved under a name of its own is named after it, not after its folder.
  auto named = parse_model_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})",
      "models/bart-base.json");
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->name, "bart-base");
  auto in_folder = parse_model_config(R"({"model_type": "llama"})", "models/tiny/config.json");
  ASSERT_FALSE(in_folder.ok());
  EXPECT_EQ(in_folder.error().message.rfind("models/tiny/config.json: tiny: config field ", 0), 0u)
      << in_folder.error().message;
}

} // namespace
} // namespace dlrig::fit

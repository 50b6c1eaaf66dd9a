// The time model: each operation's FLOPs and bytes against hand-derived values for one layer of
// Llama, BERT and ResNet; the roofline switching sides as the batch grows; communication against
// nccl-tests' bus-bandwidth conventions; and predictions against published measurements
// (../shared/reference/throughput.md), with docs/fit-accuracy.md's targets.
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/ops.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"

#include "models.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

namespace dlrig::fit {
namespace {

double sum(const std::vector<Op> &ops, Phase ph, OpKind kind, std::string_view name_part = "") {
  double f = 0;
  for (const auto &o : ops)
    if (o.phase == ph && o.kind == kind && o.name.find(name_part) != std::string::npos)
      f += kind == OpKind::memory ? o.bytes : o.flops;
  return f;
}

const Op *find(const std::vector<Op> &ops, Phase ph, std::string_view name) {
  for (const auto &o : ops)
    if (o.phase == ph && o.name == name)
      return &o;
  return nullptr;
}

// Eager attention's element-wise traffic per score: Gemma 2's softcapping adds three kernels
// (divide, tanh, multiply) of one read and one write each; a softmax that upcasts (Llama's) writes
// fp32 and casts back even without autocast, one that does not (GPT-2's) stays 16-bit.
TEST(TimeOps, EagerSoftcappingAndSoftmaxUpcast) {
  auto one_layer = [](std::string type, bool softcap, bool fp32_softmax) {
    auto model = test::llama(1, 256, 4, 4, 512, 1000);
    model.arch.hf_model_type = std::move(type);
    model.arch.attn_softcap = softcap;
    fit::Run run;
    run.batch = 2;
    run.seq = 128;
    run.precision = Precision::bf16;
    run.attention = Attention::eager;
    const auto ops = train_ops(model, run);
    const Op *o = find(ops, Phase::forward, "attention softmax/mask/dropout");
    EXPECT_NE(o, nullptr);
    EXPECT_EQ(dims_of(model.arch).softmax_fp32, fp32_softmax);
    return o ? std::pair{o->bytes, o->kernels} : std::pair{0.0, 0.0};
  };
  const double scores = 2.0 * 4 * 128 * 128;
  const auto input_dtype = one_layer("gpt2", false, false);
  const auto upcast = one_layer("llama", false, true);
  const auto capped = one_layer("gemma2", true, true);
  EXPECT_DOUBLE_EQ(input_dtype.first, scores * (2 + 2 + 2 + 2)); // mask add, softmax
  EXPECT_DOUBLE_EQ(input_dtype.second, 2);
  // softmax writes fp32 (4 - 2 more), the cast back reads it and writes 16-bit (4 + 2)
  EXPECT_DOUBLE_EQ(upcast.first - input_dtype.first, scores * (2 + 6));
  EXPECT_DOUBLE_EQ(upcast.second, 3);
  EXPECT_DOUBLE_EQ(capped.first - upcast.first, scores * 6 * 2);
  EXPECT_DOUBLE_EQ(capped.second, 6);
}

TEST(TimeOps, OneLlamaLayerByHand) {
  // One Llama-3-8B-shaped layer: h 4096, 32 heads, 8 KV heads of 128, MLP 14336, vocab 128256.
  auto model = test::llama(1, 4096, 32, 8, 14336, 128256);
  fit::Run run;
  run.batch = 2;
  run.seq = 1024;
  run.precision = Precision::bf16_amp;
  const double T = 2048, h = 4096, kv = 1024, I = 14336, V = 128256;
  auto ops = train_ops(model, run);

  const Op *q = find(ops, Phase::forward, "linear q_proj");
  ASSERT_NE(q, nullptr);
  EXPECT_DOUBLE_EQ(q->flops, 2 * T * h * h);
  EXPECT_DOUBLE_EQ(q->bytes, 2 * (T * h + h * h + T * h)); // bf16 input, weight, output
  const Op *k = find(ops, Phase::forward, "linear k_proj");
  ASSERT_NE(k, nullptr);
  EXPECT_DOUBLE_EQ(k->flops, 2 * T * h * kv);

  // Every linear: forward 2·T·params, backward twice (input and weight gradients).
  const double linear_params = 2 * h * h + 2 * h * kv + 3 * h * I + h * V;
  EXPECT_DOUBLE_EQ(sum(ops, Phase::forward, OpKind::gemm), 2 * T * linear_params);
  EXPECT_DOUBLE_EQ(sum(ops, Phase::backward, OpKind::gemm), 4 * T * linear_params);

  // SDPA, causal: 4·b·s²·q_dim / 2 forward, 2.5x that backward.
  const double attn = 4 * 2 * 1024.0 * 1024 * h / 2;
  EXPECT_DOUBLE_EQ(sum(ops, Phase::forward, OpKind::attention), attn);
  EXPECT_DOUBLE_EQ(sum(ops, Phase::backward, OpKind::attention), 2.5 * attn);

  // transformers' RMSNorm under bf16 autocast reads the fp32 residual stream, so its casts are
  // no-ops: pow 4+4, mean 4, mul 4+4, weight 4+4 = 28 bytes per element and 6 kernels (pow, mean,
  // add, rsqrt, mul, mul); two norms per layer and the final one.
  const Op *norm = find(ops, Phase::forward, "RMSNorm");
  ASSERT_NE(norm, nullptr);
  EXPECT_DOUBLE_EQ(norm->bytes, T * h * 28 * 3);
  EXPECT_DOUBLE_EQ(norm->kernels, 6 * 3);
  // Backward: g*w 4+4, the weight's g*n 4+4+4 and sum 4, x*r's grad*r 4+4, grad*x 4+4+4 and sum
  // 4, mean's expanded gradient 4, pow_backward's pow(1) copy 4+4, 2*() 4+4, grad*() 4+4+4, the
  // add of x's two gradients 4+4+4 = 92 bytes, 14 kernels (with rsqrt's and add's on one value
  // per row).
  const Op *norm_grad = find(ops, Phase::backward, "RMSNorm.grad");
  ASSERT_NE(norm_grad, nullptr);
  EXPECT_DOUBLE_EQ(norm_grad->bytes, T * h * 92 * 3);
  EXPECT_DOUBLE_EQ(norm_grad->kernels, 14 * 3);
  // SwiGLU: silu(gate) reads and writes I, times up reads 2I and writes I: 5 x 2 bytes.
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "MLP activation")->bytes, T * I * 10);
  // The loss: logits upcast (2 + 4), then log_softmax (4 + 4) per logit; backward the nll and
  // log_softmax gradients (4 + 12) and the cast back (4 + 2).
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "logits cast to fp32")->bytes, T * V * 6);
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "cross-entropy loss")->bytes, T * V * 8);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "logits cast to fp32.grad")->bytes, T * V * 6);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "cross-entropy loss.grad")->bytes, T * V * 16);

  // Rotary under autocast: cos and sin are fp32 (the hidden states' dtype), so per element of q
  // and k: q*cos 2+4, neg 2 (half read, half written), cat 2+2, *sin 2+4, add 4+4+4 = 30 bytes,
  // 5 kernels each; then autocast casts the fp32 rotated q and k for SDPA (4+2).
  const double qk = T * (h + kv);
  const Op *rope = find(ops, Phase::forward, "rotary embedding");
  ASSERT_NE(rope, nullptr);
  EXPECT_DOUBLE_EQ(rope->bytes, qk * 30);
  EXPECT_DOUBLE_EQ(rope->kernels, 10);
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "rotated q/k casts")->bytes, qk * 6);
  // Backward: grad*cos 4+4 and its cast to bf16 4+2, the same for sin, neg 2, two SliceBackwards
  // (zero fill 2, half copied 2) and two adds summing q's three gradients (2+2+2): 50 bytes, 11
  // kernels each; ToCopyBackward of the attention casts 2+4.
  const Op *rope_grad = find(ops, Phase::backward, "rotary embedding.grad");
  ASSERT_NE(rope_grad, nullptr);
  EXPECT_DOUBLE_EQ(rope_grad->bytes, qk * 50);
  EXPECT_DOUBLE_EQ(rope_grad->kernels, 22);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "rotated q/k casts.grad")->bytes, qk * 6);
  // The residual adds' 16-bit branches get their fp32 gradients cast (4+2), one per add; and
  // autograd sums the gradients of tensors read twice or more: the stream before each sub-block
  // (2), the attention norm's output read by q, k and v (2 more), the MLP norm's by gate and up
  // (1): 5 adds of fp32 elements (4+4+4).
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "residual gradient casts")->bytes, T * h * 6 * 2);
  const Op *sums = find(ops, Phase::backward, "autograd gradient sums");
  ASSERT_NE(sums, nullptr);
  EXPECT_DOUBLE_EQ(sums->bytes, T * h * 12 * 5);
  EXPECT_DOUBLE_EQ(sums->kernels, 5);

  // AdamW, foreach, fp32 master weights: eight passes, 80 bytes per parameter.
  const double p = static_cast<double>(model.params);
  EXPECT_DOUBLE_EQ(find(ops, Phase::optimizer, "adamw step (foreach)")->bytes, 80 * p);
  run.kernels = Kernels::fused;
  EXPECT_DOUBLE_EQ(find(train_ops(model, run), Phase::optimizer, "adamw step (fused)")->bytes,
                   28 * p);
}

TEST(TimeOps, OneBertLayerByHand) {
  auto model = test::bert_base_cased();
  model.arch.layers = 1;
  model.arch.head_dim = 64;
  model.arch.kv_heads = 12;
  model.arch.attention_bias = true; // BERT's linears have biases
  model.arch.mlp_bias = true;
  fit::Run run;
  run.batch = 4;
  run.seq = 128;
  run.precision = Precision::fp32;
  const double T = 512, h = 768, I = 3072;
  auto ops = train_ops(model, run);
  // Encoder: q, k, v, o, up, down; no vocabulary logits without a head.
  const double linear_params = 4 * h * h + 2 * h * I;
  EXPECT_DOUBLE_EQ(sum(ops, Phase::forward, OpKind::gemm), 2 * T * linear_params);
  EXPECT_EQ(find(ops, Phase::forward, "cross-entropy loss"), nullptr);
  EXPECT_EQ(find(ops, Phase::forward, "rotary embedding"), nullptr) << "learned positions";
  // nn.LayerNorm in fp32: one kernel reading and writing 4 bytes per element, two per layer and
  // the embeddings' norm; backward dX from dY and X, then gamma's and beta's gradients from dY
  // and X again: 5 passes in 2 kernels.
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "LayerNorm")->bytes, T * h * 8 * 3);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "LayerNorm.grad")->bytes, T * h * 20 * 3);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "LayerNorm.grad")->kernels, 2 * 3);
  // Each bias's gradient sums the output gradient over the tokens: one fp32 read of T x out per
  // biased linear (q, k, v, o, up, down).
  const Op *biases = find(ops, Phase::backward, "bias gradients");
  ASSERT_NE(biases, nullptr);
  EXPECT_DOUBLE_EQ(biases->bytes, T * (5 * h + I) * 4);
  EXPECT_DOUBLE_EQ(biases->kernels, 6);
  // Without autocast nothing is cast; the gradients of the attention input, read by q, k, v and
  // the skip connection, and of the MLP's input (its up projection and the skip connection) are
  // summed: 4 adds of T x h fp32 elements.
  EXPECT_EQ(find(ops, Phase::backward, "residual gradient casts"), nullptr);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "autograd gradient sums")->bytes, T * h * 12 * 4);
  // Dropout (BERT trains with 0.1): read, write and a 1-byte mask, twice per layer.
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "dropout")->bytes, T * h * 9 * 2);
  // Bidirectional attention: no causal halving.
  EXPECT_DOUBLE_EQ(sum(ops, Phase::forward, OpKind::attention), 4 * 4 * 128.0 * 128 * h);
}

// The vocabulary GEMM and its loss belong to a vocabulary head only: a decoder with a
// classification or question-answering head (BartForQuestionAnswering's qa_outputs, Llama's
// score) has none, an encoder's masked-LM head has one.
TEST(TimeOps, OnlyAVocabularyHeadHasVocabularyLogits) {
  fit::Run run;
  run.batch = 2;
  run.seq = 256;
  run.precision = Precision::fp32;
  const double T = 512, V = 32000, h = 1024;
  auto decoder = test::llama(1, 1024, 8, 8, 2816, 32000, /*tied=*/true);
  auto lm = train_ops(decoder, run);
  ASSERT_NE(find(lm, Phase::forward, "linear lm_head"), nullptr);
  EXPECT_DOUBLE_EQ(find(lm, Phase::forward, "linear lm_head")->flops, 2 * T * h * V);
  EXPECT_NE(find(lm, Phase::forward, "cross-entropy loss"), nullptr);

  // LlamaForSequenceClassification: score Linear(h, 2) on every token (then the last is kept).
  auto classifier = decoder;
  classifier.arch.lm_head = false;
  classifier.arch.num_labels = 2;
  classifier.arch.head_class = "LlamaForSequenceClassification";
  auto cls = train_ops(classifier, run);
  EXPECT_EQ(find(cls, Phase::forward, "linear lm_head"), nullptr);
  EXPECT_EQ(find(cls, Phase::forward, "cross-entropy loss"), nullptr);
  const double gemm_lm = sum(lm, Phase::forward, OpKind::gemm);
  EXPECT_NEAR(gemm_lm - sum(cls, Phase::forward, OpKind::gemm), 2 * T * h * (V - 2), 1);
  // A head the config does not name: one row per sequence (b = 2), as after a pooler.
  classifier.arch.head_class.clear();
  EXPECT_NEAR(gemm_lm - sum(train_ops(classifier, run), Phase::forward, OpKind::gemm),
              2 * T * h * V - 2 * 2 * h * 2, 1);

  auto mlm = test::bert_base_cased();
  mlm.arch.layers = 1;
  mlm.arch.mlm_head = true;
  auto encoder = train_ops(test::bert_base_cased(), run);
  auto masked = train_ops(mlm, run);
  ASSERT_NE(find(masked, Phase::forward, "linear lm_head"), nullptr);
  EXPECT_DOUBLE_EQ(find(masked, Phase::forward, "linear lm_head")->flops, 2 * T * 768 * 28996);
  EXPECT_NE(find(masked, Phase::forward, "cross-entropy loss"), nullptr);
  EXPECT_EQ(find(encoder, Phase::forward, "linear lm_head"), nullptr);
}

// An MoE token runs experts_per_token of the routed experts, but every shared expert and every
// dense layer's MLP: the forward linears' FLOPs are 2 x the active linear weights per token
// (model::active_params less the embedding, norms and q/k/v biases).
TEST(TimeOps, MoeSharedExpertsAndDenseLayersRunForEveryToken) {
  for (const char *config : {R"({"model_type": "qwen2_moe"})",
                             R"({"model_type": "qwen2_moe", "mlp_only_layers": [0, 5]})"}) {
    auto arch = model::model_from_config_text(config, "config.json");
    ASSERT_TRUE(arch.ok()) << arch.error().message;
    auto model = test::make(*arch, model::derive_params(*arch));
    fit::Run run;
    run.batch = 2;
    run.seq = 512;
    const double T = 2 * 512, h = 2048, L = 24, V = 151936;
    const double active = static_cast<double>(model::active_params(*arch));
    // Every active weight but the embedding, norms and q/k/v biases runs a GEMM on every token,
    // the shared expert's Linear(h, 1) gate included.
    const double linear = active - V * h - L * (2 * h + 3 * h) - h;
    EXPECT_NEAR(sum(train_ops(model, run), Phase::forward, OpKind::gemm, "linear "), 2 * T * linear,
                1e-9 * T * linear)
        << config;
  }
}

// Eight 224 px images through a CNN.
fit::Run eight_images(Precision p) {
  fit::Run run;
  run.batch = 8;
  run.image_size = 224;
  run.precision = p;
  return run;
}

TEST(TimeOps, ResNetConvolutionsAreTheWalksMacs) {
  auto model = test::resnet("resnet50");
  fit::Run run = eight_images(Precision::fp16_amp);
  double macs = 0;
  const auto walked = model::walk(model.arch, 224);
  for (const auto &r : *walked)
    macs += r.macs;
  auto ops = train_ops(model, run);
  EXPECT_NEAR(sum(ops, Phase::forward, OpKind::gemm), 2 * macs * 8, 1e-6 * macs);
  EXPECT_NEAR(sum(ops, Phase::backward, OpKind::gemm), 4 * macs * 8, 1e-6 * macs);
  // ResNet-50 forward is 4.1 GMACs per 224 px image (torchvision's docs: 4.09 GFLOPS as MACs).
  EXPECT_NEAR(macs / 1e9, 4.09, 0.05);
  // Batch norm in training reads its input twice and writes once: 3 x 2 bytes per element;
  // backward reads x and dy twice (the reduction, then dx) and writes dx: 5 x 2 bytes.
  double bn = 0, norms = 0;
  for (const auto &r : *walked)
    if (r.kind == "batchnorm") {
      bn += static_cast<double>(r.output.elements()) * 8;
      ++norms;
    }
  ASSERT_GT(norms, 50);
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "batch norm")->bytes, 3 * 2 * bn);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "batch norm.grad")->bytes, 5 * 2 * bn);
  // Two kernels each way (statistics and normalise; NCHW's backward is one kernel, channels-last
  // runs a reduction and an element-wise kernel).
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "batch norm")->kernels, 2 * norms);
  EXPECT_DOUBLE_EQ(find(ops, Phase::backward, "batch norm.grad")->kernels, norms);
  // And each counts the batch first (num_batches_tracked.add_(1), an int64 read and written).
  const Op *counters = find(ops, Phase::forward, "batch norm step counters");
  ASSERT_NE(counters, nullptr);
  EXPECT_DOUBLE_EQ(counters->kernels, norms);
  EXPECT_DOUBLE_EQ(counters->bytes, 16 * norms);
  EXPECT_EQ(find(ops, Phase::backward, "batch norm step counters"), nullptr);
  run.channels_last = true;
  EXPECT_DOUBLE_EQ(find(train_ops(model, run), Phase::backward, "batch norm.grad")->kernels,
                   2 * norms);
}

TEST(TimeOps, ResNetBlockInputsGetTheirTwoGradientsSummed) {
  // Each residual block's input feeds its first convolution and the skip connection, so
  // autograd adds two gradients per block (16 in ResNet-50), reading two and writing one: the
  // H100 profile ran 32 vectorised adds, 16 forward and 16 of these
  // (tests/data/measured/h100/profile/resnet50_tf32_b256.json).
  auto model = test::resnet("resnet50");
  fit::Run run = eight_images(Precision::fp16_amp);
  double inputs = 0, blocks = 0;
  int last = -1;
  const auto walked = model::walk(model.arch, 224);
  for (const auto &r : *walked)
    if (r.block >= 0 && r.block != last) {
      last = r.block;
      ASSERT_EQ(r.kind, "conv") << r.name;
      inputs += static_cast<double>(r.input.elements()) * 8;
      ++blocks;
    }
  ASSERT_EQ(blocks, 16);
  // layer1.0 takes the max-pool's 64 x 56 x 56 output; layer2.0 layer1's 256 x 56 x 56.
  auto ops = train_ops(model, run);
  const Op *sums = find(ops, Phase::backward, "autograd gradient sums");
  ASSERT_NE(sums, nullptr);
  EXPECT_DOUBLE_EQ(sums->bytes, 3 * 2 * inputs);
  EXPECT_DOUBLE_EQ(sums->kernels, 16);
  EXPECT_GT(inputs, 8.0 * (64 + 2 * 256) * 56 * 56);
  EXPECT_EQ(find(ops, Phase::forward, "autograd gradient sums"), nullptr);
}

TEST(TimeOps, NchwTensorCoreConvolutionsAreTransposed) {
  // cuDNN transposes an NCHW tensor-core convolution's input in and its output out: forward
  // 2 x (in + out) elements read and written, backward twice that (data and weight gradients).
  auto model = test::resnet("resnet50");
  fit::Run run = eight_images(Precision::tf32);
  double elements = 0;
  const auto walked = model::walk(model.arch, 224);
  for (const auto &r : *walked)
    if (r.kind == "conv")
      elements += static_cast<double>(r.input.elements() + r.output.elements()) * 8;
  auto ops = train_ops(model, run);
  const Op *fwd = find(ops, Phase::forward, "NCHW/NHWC transposes");
  const Op *bwd = find(ops, Phase::backward, "NCHW/NHWC transposes.grad");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  EXPECT_DOUBLE_EQ(fwd->bytes, 2 * 4 * elements);
  EXPECT_DOUBLE_EQ(bwd->bytes, 4 * 4 * elements);
  // channels_last keeps NHWC throughout; FP32 runs cuDNN's NCHW kernels: no transposes.
  run.channels_last = true;
  EXPECT_EQ(find(train_ops(model, run), Phase::forward, "NCHW/NHWC transposes"), nullptr);
  run.channels_last = false;
  run.precision = Precision::fp32;
  EXPECT_EQ(find(train_ops(model, run), Phase::forward, "NCHW/NHWC transposes"), nullptr);
}

TEST(TimeOps, RooflineSwitchesSidesAsTheBatchGrows) {
  DeviceRates rates;
  rates.gemm[static_cast<int>(Precision::bf16_amp)] = 250e12;
  rates.memory_bw = 1.7e12;
  rates.launch_s = 4.2e-6;
  auto linear = [](double m, double n) {
    Op o;
    o.kind = OpKind::gemm;
    o.precision = Precision::bf16_amp;
    o.m = m;
    o.n = n;
    o.k = n;
    o.flops = 2 * m * n * n;
    o.bytes = 2 * (m * n + n * n + m * n);
    o.kernels = 1;
    return o;
  };
  std::vector<OpTime> t;
  time_ops({linear(1, 256)}, rates, &t);
  EXPECT_EQ(t.back().bound, "launch") << "128 kB in 0.08 us: the launch dominates";
  time_ops({linear(1, 4096)}, rates, &t);
  EXPECT_EQ(t.back().bound, "memory") << "one token reads a 32 MB weight: bandwidth-bound";
  time_ops({linear(64, 4096)}, rates, &t);
  EXPECT_EQ(t.back().bound, "memory") << "a skinny GEMM still reads its weights";
  time_ops({linear(8192, 4096)}, rates, &t);
  EXPECT_EQ(t.back().bound, "compute");
  // The whole model too: decode at batch 1 is bandwidth-bound, prefill compute-bound.
  auto model = test::llama3_8b();
  auto gpu = test::gpu_80gb();
  gpu.form_factor = "sxm";
  fit::Run serve;
  serve.mode = Mode::infer;
  serve.seq = 2048;
  serve.max_tokens = 256;
  auto est = estimate_time(model, serve, gpu);
  ASSERT_TRUE(est.breakdown.has_value());
  EXPECT_GT(est.breakdown->memory, est.breakdown->gemm) << est.bottleneck;
  ASSERT_TRUE(est.decode_tokens_per_s_per_stream.has_value());
  // Bandwidth-bound decode: at most bandwidth / weight bytes tokens per second.
  EXPECT_LT(*est.decode_tokens_per_s_per_stream, 2.039e12 / (2.0 * model.params));
  EXPECT_GT(*est.decode_tokens_per_s_per_stream, 0.3 * 2.039e12 / (2.0 * model.params));
  serve.concurrency = 256;
  auto busy = estimate_time(model, serve, gpu);
  EXPECT_GT(*busy.decode_tokens_per_s, 20 * *est.decode_tokens_per_s) << "batching amortises";
}

TEST(TimeOps, DataParallelCommunicationFollowsBusBandwidth) {
  // nccl-tests: busbw = algbw x 2(n-1)/n for all-reduce; a DDP step all-reduces every gradient
  // once, hidden behind backward except the last 25 MB bucket.
  auto model = test::llama(16, 2048, 16, 16, 5632);
  auto gpu = test::gpu_80gb();
  gpu.form_factor = "pcie-server";
  gpu.pcie_gen = 4;
  gpu.pcie_lanes = 16;
  fit::Run run;
  run.batch = 16;
  run.seq = 2048;
  run.grad_accum = 4;
  auto one = estimate_time(model, run, gpu);
  run.gpus = 8;
  auto eight = estimate_time(model, run, gpu);
  ASSERT_TRUE(eight.breakdown && eight.breakdown->communication);
  const auto &kb = kb::builtin();
  const double raw = *kb.pcie_bytes_per_s(4, 16);
  const auto *row = kb.pcie(4);
  const double busbw = raw * *row->measured_h2d_high_bytes_per_s / *row->theoretical_bytes_per_s;
  const double grads = static_cast<double>(model.params) * 4; // fp32 gradients under autocast
  const double all_reduce = grads * 2 * 7 / 8 / busbw;
  const double last = 25e6 * 2 * 7 / 8 / busbw;
  EXPECT_GE(*eight.breakdown->communication, last - 1e-12);
  EXPECT_LE(*eight.breakdown->communication, all_reduce + 1e-12);
  EXPECT_GT(*eight.seconds_per_step, *one.seconds_per_step) << "same micro-batch, plus comm";
  EXPECT_GT(*eight.tokens_per_s, 6 * *one.tokens_per_s) << "hidden behind backward";
  // A single short sequence per step cannot hide 4 GB of gradients over PCIe: more GPUs are
  // slower in total, and the bottleneck says why.
  run.batch = 1;
  run.seq = 512;
  run.grad_accum = 1;
  auto starved = estimate_time(model, run, gpu);
  EXPECT_NE(starved.bottleneck.find("communication-bound"), std::string::npos)
      << starved.bottleneck;
  // More nodes without a known network: communication unknown, said, and a lower bound.
  run.nodes = 2;
  auto two = estimate_time(model, run, gpu);
  EXPECT_FALSE(two.breakdown->communication.has_value());
  EXPECT_FALSE(two.notes.empty());
}

TEST(TimeOps, MfuAndBottleneckAreReported) {
  auto model = test::llama3_8b();
  auto gpu = test::gpu_80gb();
  gpu.form_factor = "sxm";
  fit::Run run;
  run.batch = 4;
  run.seq = 4096;
  run.checkpointing = Checkpointing::full;
  auto t = estimate_time(model, run, gpu);
  ASSERT_TRUE(t.mfu.has_value());
  EXPECT_GT(*t.mfu, 0.2);
  EXPECT_LT(*t.mfu, 0.85);
  EXPECT_NE(t.bottleneck.find("compute-bound"), std::string::npos) << t.bottleneck;
  // A small model at a small batch: the element-wise work and launches dominate.
  auto small = test::llama(2, 256, 4, 4, 704, 32000);
  fit::Run tiny;
  tiny.batch = 1;
  tiny.seq = 64;
  auto s = estimate_time(small, tiny, gpu);
  ASSERT_TRUE(s.mfu.has_value());
  EXPECT_LT(*s.mfu, 0.1);
  EXPECT_TRUE(s.bottleneck.find("launch-bound") != std::string::npos ||
              s.bottleneck.find("memory-bound") != std::string::npos)
      << s.bottleneck;
}

// The basis lists the rates the step uses: a transformer's names its attention rate, a CNN's,
// which runs no attention, does not.
TEST(TimeOps, TheBasisNamesTheAttentionRateOnlyWhereTheStepHasAttention) {
  const auto &kb = kb::builtin();
  const auto h100 = gpu_target(*kb.find_gpu("NVIDIA H100 SXM5"));
  auto has_attention_line = [](const TimeEstimate &t) {
    return std::any_of(t.basis.begin(), t.basis.end(),
                       [](const std::string &l) { return l.rfind("attention", 0) == 0; });
  };
  fit::Run run;
  run.batch = 4;
  run.seq = 1024;
  run.precision = Precision::bf16_amp;
  EXPECT_TRUE(has_attention_line(estimate_time(test::llama3_8b(), run, h100)));
  auto cnn = estimate_time(test::resnet("resnet50"), eight_images(Precision::bf16_amp), h100);
  ASSERT_FALSE(cnn.basis.empty());
  EXPECT_FALSE(has_attention_line(cnn)) << fmt::format("{}", fmt::join(cnn.basis, "\n"));
}

// Each kernel's fixed latency on the GPU adds to its work (latency + bytes / bandwidth): forty
// kernels over 40 MB take the streaming time plus forty latencies, not the larger of the two.
TEST(TimeOps, EachKernelsLatencyAddsToItsWork) {
  DeviceRates rates;
  rates.memory_bw = 1e12;
  rates.launch_s = 1e-9; // the CPU keeps ahead: only the GPU's own cost is left
  rates.kernel_s = kGpuKernelSeconds;
  Op o;
  o.name = "element-wise";
  o.bytes = 40e6;
  o.kernels = 40;
  std::vector<OpTime> t;
  auto b = time_ops({o}, rates, &t);
  EXPECT_DOUBLE_EQ(b.memory, 40e6 / 1e12 + 40 * kGpuKernelSeconds);
  EXPECT_EQ(t.back().bound, "memory");
  // When the CPU's issue time is longer, the op waits for the CPU instead.
  rates.launch_s = 4.2e-6;
  b = time_ops({o}, rates);
  EXPECT_DOUBLE_EQ(b.launch, 40 * 4.2e-6);
  // The catalog's GPUs carry both.
  auto gpu = test::gpu_80gb();
  auto r = gpu_rates(gpu, kb::builtin());
  EXPECT_DOUBLE_EQ(r.kernel_s, kGpuKernelSeconds);
  EXPECT_DOUBLE_EQ(r.launch_s, kLaunchSeconds);
}

// Autocast casts each fp32 weight to 16 bits in the forward; backward, ToCopyBackward casts the
// 16-bit weight gradient back to fp32: as many bytes and kernels again. Not without autocast.
TEST(TimeOps, AutocastCastsWeightGradientsBack) {
  auto model = test::bert_base_cased();
  model.arch.head_dim = 64;
  model.arch.kv_heads = 12;
  fit::Run run;
  run.batch = 4;
  run.seq = 128;
  run.precision = Precision::bf16_amp;
  auto ops = train_ops(model, run);
  const Op *fwd = find(ops, Phase::forward, "autocast weight casts");
  const Op *bwd = find(ops, Phase::backward, "autocast weight-gradient casts");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  // Only the linears' weights are cast (q, k, v, o, up, down in 12 layers): not the embedding
  // tables (nn.Embedding is on none of autocast's lists) or the LayerNorms.
  const double h = 768, I = 3072;
  const double cast = 12 * (4 * h * h + 2 * h * I);
  EXPECT_DOUBLE_EQ(fwd->bytes, cast * (4 + 2));
  EXPECT_DOUBLE_EQ(fwd->kernels, 12 * 6);
  EXPECT_DOUBLE_EQ(bwd->bytes, cast * (2 + 4));
  EXPECT_DOUBLE_EQ(bwd->kernels, fwd->kernels);
  run.precision = Precision::fp32;
  EXPECT_EQ(find(train_ops(model, run), Phase::backward, "autocast weight-gradient casts"),
            nullptr);
}

// Under autocast transformers' residual stream is fp32 (fp32 embeddings, fp32 norm outputs, type
// promotion in the residual adds): each linear that reads a norm's output casts its fp32 input to
// 16 bits on every call, and backward casts the input gradient back. BERT: q, k, v and the
// intermediate dense read h-wide inputs.
TEST(TimeOps, AutocastCastsFp32ActivationsBeforeLinears) {
  auto model = test::bert_base_cased();
  fit::Run run;
  run.batch = 4;
  run.seq = 128;
  run.precision = Precision::bf16_amp;
  const double T = 512, h = 768, layers = 12;
  auto ops = train_ops(model, run);
  const Op *fwd = find(ops, Phase::forward, "autocast activation casts");
  const Op *bwd = find(ops, Phase::backward, "autocast activation casts.grad");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  EXPECT_DOUBLE_EQ(fwd->bytes, T * 4 * h * layers * (4 + 2));
  EXPECT_DOUBLE_EQ(fwd->kernels, 4 * layers);
  EXPECT_DOUBLE_EQ(bwd->bytes, fwd->bytes);
  // The residual adds read the fp32 stream and the 16-bit branch, and write fp32.
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "residual adds")->bytes, T * h * 10 * 2 * layers);
  // Not without autocast, nor with fused kernels (Megatron and Transformer Engine keep a 16-bit
  // stream).
  run.precision = Precision::fp32;
  EXPECT_EQ(find(train_ops(model, run), Phase::forward, "autocast activation casts"), nullptr);
  run.precision = Precision::bf16_amp;
  run.kernels = Kernels::fused;
  EXPECT_EQ(find(train_ops(model, run), Phase::forward, "autocast activation casts"), nullptr);
}

// transformers' "gelu_new" is a Python formula: eight element-wise kernels forward (18 elements of
// traffic per element of the MLP's width) and autograd's eleven backward (28 elements).
TEST(TimeOps, PythonTanhGeluRunsItsEagerKernels) {
  auto model = test::gpt2();
  model.arch.layers = 1;
  model.arch.extra["activation_function"] = "gelu_new";
  fit::Run run;
  run.batch = 2;
  run.seq = 256;
  run.precision = Precision::bf16_amp;
  const double T = 512, I = 3072, a = 2;
  auto ops = train_ops(model, run);
  const Op *fwd = find(ops, Phase::forward, "MLP activation");
  const Op *bwd = find(ops, Phase::backward, "MLP activation.grad");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  // Under autocast gelu_new's pow promotes the chain to fp32 (4-byte elements); gelu_fast (no
  // pow) and a plain bf16 run (no autocast) move 16-bit elements.
  EXPECT_DOUBLE_EQ(fwd->bytes, T * I * 18 * 4);
  EXPECT_DOUBLE_EQ(fwd->kernels, 8);
  EXPECT_DOUBLE_EQ(bwd->bytes, T * I * 28 * 4);
  EXPECT_DOUBLE_EQ(bwd->kernels, 11);
  model.arch.extra["activation_function"] = "gelu_fast";
  EXPECT_DOUBLE_EQ(find(train_ops(model, run), Phase::forward, "MLP activation")->bytes,
                   T * I * 18 * a);
  model.arch.extra["activation_function"] = "gelu_new";
  run.precision = Precision::bf16;
  EXPECT_DOUBLE_EQ(find(train_ops(model, run), Phase::forward, "MLP activation")->bytes,
                   T * I * 18 * a);
  run.precision = Precision::bf16_amp;
  // PyTorch's own GELU kernel: one kernel each way.
  model.arch.extra["activation_function"] = "gelu";
  ops = train_ops(model, run);
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "MLP activation")->kernels, 1);
  // Fused kernels (torch.compile): one kernel whatever the formula.
  model.arch.extra["activation_function"] = "gelu_new";
  run.kernels = Kernels::fused;
  ops = train_ops(model, run);
  EXPECT_DOUBLE_EQ(find(ops, Phase::forward, "MLP activation")->kernels, 1);
}

// transformers' "quick_gelu" (CLIP) is input * sigmoid(1.702 * input): three kernels forward (7
// elements of traffic), five backward (14), 16-bit under autocast.
TEST(TimeOps, QuickGeluRunsItsEagerKernels) {
  auto model = test::gpt2();
  model.arch.layers = 1;
  model.arch.extra["activation_function"] = "quick_gelu";
  fit::Run run;
  run.batch = 2;
  run.seq = 256;
  run.precision = Precision::fp16_amp;
  const double T = 512, I = 3072, a = 2;
  auto ops = train_ops(model, run);
  const Op *fwd = find(ops, Phase::forward, "MLP activation");
  const Op *bwd = find(ops, Phase::backward, "MLP activation.grad");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  EXPECT_DOUBLE_EQ(fwd->bytes, T * I * 7 * a);
  EXPECT_DOUBLE_EQ(fwd->kernels, 3);
  EXPECT_DOUBLE_EQ(bwd->bytes, T * I * 14 * a);
  EXPECT_DOUBLE_EQ(bwd->kernels, 5);
  run.kernels = Kernels::fused;
  EXPECT_DOUBLE_EQ(find(train_ops(model, run), Phase::forward, "MLP activation")->kernels, 1);
}

// A linear layer whose features are not a multiple of 16 bytes of its elements (GPT-2's 50257-wide
// LM head in bf16) runs cuBLAS's align1 kernels at 0.157 of the aligned rate (measured on an
// H200); the tokens are no operand's leading dimension, so an odd token count changes nothing, and
// FP32 (CUDA-core SGEMM) is not gated.
TEST(TimeOps, MisalignedFeaturesRunTheAlign1Kernels) {
  DeviceRates rates;
  rates.gemm[static_cast<int>(Precision::bf16_amp)] = 800e12;
  rates.gemm[static_cast<int>(Precision::fp32)] = 50e12;
  rates.memory_bw = 4e12;
  auto head = [](double vocab, double tokens, Precision p) {
    Op o;
    o.kind = OpKind::gemm;
    o.precision = p;
    o.m = tokens;
    o.n = vocab;
    o.k = 768;
    o.features_in = 768;
    o.features_out = vocab;
    o.flops = 2 * tokens * vocab * 768;
    o.kernels = 1;
    return o;
  };
  std::vector<OpTime> t;
  time_ops({head(50304, 16384, Precision::bf16_amp)}, rates, &t);
  const double aligned = t.back().seconds;
  time_ops({head(50257, 16384, Precision::bf16_amp)}, rates, &t);
  EXPECT_NEAR(t.back().seconds / aligned, 50257.0 / 50304 / 0.157, 0.05);
  time_ops({head(50304, 16383, Precision::bf16_amp)}, rates, &t);
  EXPECT_NEAR(t.back().seconds / aligned, 1, 0.01) << "the token count is not a leading dimension";
  time_ops({head(50304, 16384, Precision::fp32)}, rates, &t);
  const double fp32 = t.back().seconds;
  time_ops({head(50257, 16384, Precision::fp32)}, rates, &t);
  EXPECT_NEAR(t.back().seconds / fp32, 1, 0.01);
  // The builder marks a model's LM head with its vocabulary.
  auto model = test::gpt2();
  fit::Run run;
  run.precision = Precision::bf16_amp;
  bool marked = false;
  for (const auto &o : train_ops(model, run))
    marked |= o.name == "linear lm_head" && o.features_out == 50257;
  EXPECT_TRUE(marked);
}

// The driver names a GPU differently from the catalog ("NVIDIA H200" for "NVIDIA H200 SXM"): the
// GEMM rate measured on that catalog GPU (data/gemm_achieved.csv) is still its own, not the
// median of other GPUs.
TEST(TimeOps, DriverNamedGpuUsesItsCatalogMeasurement) {
  const auto &kb = kb::builtin();
  const auto *spec = kb.find_gpu("NVIDIA H200 SXM");
  ASSERT_NE(spec, nullptr);
  auto gpu = gpu_target(*spec);
  gpu.name = "NVIDIA H200";
  ASSERT_EQ(kb.find_gpu(gpu.name), spec);
  auto r = gpu_rates(gpu, kb);
  bool own = false;
  for (const auto &line : r.basis)
    own = own || (line.rfind("GEMM fp8:", 0) == 0 &&
                  line.find("NVIDIA H200 SXM measured") != std::string::npos);
  EXPECT_TRUE(own) << fmt::format("{}", fmt::join(r.basis, "\n"));
}

// QLoRA (bitsandbytes' Linear4bit, NF4 with double quantisation): a training batch dequantizes
// each 4-bit weight to 16 bits before the forward GEMM and again before the input-gradient GEMM
// (MatMul4Bit in bitsandbytes/autograd/_functions.py), and once more in a full recompute. Each
// dequantize runs three kernels (absmax from 8 bits, + offset, the NF4 weight) and moves, for n
// elements in blocks of 64 with one fp32 scale per 256 blocks: the packed weight n/2 and the
// 16-bit result 2n; per block the 8-bit absmax read (1), written as fp32 (4), the offset added
// (4 + 4) and read by the NF4 kernel (4); per 256 blocks the fp32 scale (4); the 256-entry fp32
// code and the fp32 offset (1,028).
TEST(TimeOps, QloraDequantizesEachFourBitWeightPerPass) {
  // Two layers, h 512, 8 heads of 64, 2 KV heads, MLP 1536: every weight a multiple of 64 x 256.
  auto model = test::llama(2, 512, 8, 2, 1536, 1000);
  fit::Run run;
  run.batch = 2;
  run.seq = 256;
  run.lora_rank = 8;
  auto dequant = [](double n) {
    return n / 2 + 2 * n + n / 64 * (1 + 4 + 4 + 4 + 4) + n / (64 * 256) * 4 + 256 * 4 + 4;
  };
  const double h = 512, kv = 128, I = 1536;
  // q, k, v, o, gate, up, down in each layer; the LM head stays 16-bit.
  const double per_layer = 2 * dequant(h * h) + 2 * dequant(h * kv) + 3 * dequant(h * I);
  const double linears = 2 * 7;
  EXPECT_EQ(find(train_ops(model, run), Phase::forward, "NF4 weight dequantize"), nullptr);

  run.qlora = true;
  auto ops = train_ops(model, run);
  const Op *fwd = find(ops, Phase::forward, "NF4 weight dequantize");
  const Op *bwd = find(ops, Phase::backward, "NF4 weight dequantize (input grad)");
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  EXPECT_DOUBLE_EQ(fwd->bytes, 2 * per_layer);
  EXPECT_DOUBLE_EQ(bwd->bytes, 2 * per_layer);
  auto dequantizes = [](const std::vector<Op> &step) {
    double n = 0;
    for (const auto &o : step)
      if (o.name.rfind("NF4 weight dequantize", 0) == 0)
        n += o.kernels / 3;
    return n;
  };
  EXPECT_DOUBLE_EQ(dequantizes(ops), 2 * linears); // forward and backward, per quantized linear

  run.checkpointing = Checkpointing::full;
  ops = train_ops(model, run);
  const Op *again = find(ops, Phase::recompute, "NF4 weight dequantize");
  ASSERT_NE(again, nullptr);
  EXPECT_DOUBLE_EQ(again->bytes, 2 * per_layer);
  EXPECT_DOUBLE_EQ(dequantizes(ops), 3 * linears);
  // Selective checkpointing recomputes the attention core only: no linear runs again.
  run.checkpointing = Checkpointing::selective;
  EXPECT_EQ(find(train_ops(model, run), Phase::recompute, "NF4 weight dequantize"), nullptr);
  // Each micro-batch dequantizes again.
  run.checkpointing = Checkpointing::none;
  run.grad_accum = 4;
  EXPECT_DOUBLE_EQ(find(train_ops(model, run), Phase::forward, "NF4 weight dequantize")->bytes,
                   4 * 2 * per_layer);
}

// The dequantizes make QLoRA slower than LoRA on the same GPU (Llama-3-8B, r 16, 1024 tokens,
// H100 SXM5): at least the forward and backward dequantizes' bytes at the GPU's memory rate
// (about 2.77 bytes per quantized parameter each), and they show in the step's operations.
TEST(TimeOps, QloraStepIsSlowerThanLoraByItsDequantizes) {
  const auto &kb = kb::builtin();
  const auto *spec = kb.find_gpu("NVIDIA H100 SXM5");
  ASSERT_NE(spec, nullptr);
  const auto gpu = gpu_target(*spec);
  const auto model = test::llama3_8b();
  fit::Run run;
  run.batch = 1;
  run.seq = 1024;
  run.lora_rank = 16;
  const auto lora = estimate_time(model, run, gpu);
  run.qlora = true;
  const auto qlora = estimate_time(model, run, gpu);
  ASSERT_TRUE(lora.seconds_per_step && qlora.seconds_per_step);
  double bytes = 0;
  for (const auto &o : qlora.ops)
    if (o.name.rfind("NF4 weight dequantize", 0) == 0)
      bytes += o.bytes;
  const double quantized = 32 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336);
  EXPECT_NEAR(bytes / (2 * quantized), 2.5 + 17.0 / 64, 1e-3);
  const auto rates = gpu_rates(gpu, kb, run);
  EXPECT_GT(*qlora.seconds_per_step - *lora.seconds_per_step, bytes / *rates.memory_bw);
}

// 16-bit fused attention runs at the published rate of the kernel PyTorch calls, by pass, head
// dimension, mask and sequence length (data/attention_achieved.csv): on an H100, cuDNN's (SDPA on
// PyTorch 2.11+, Transformer Engine), FlashAttention-2's for the flash-attn package or an older
// PyTorch; on an A100, FlashAttention-2's. Published points come back exactly; between them the
// share moves in log2(sequence) and head dimension; outside it is held.
TEST(TimeRates, FusedAttentionFollowsThePublishedRateOfTheKernelTorchCalls) {
  const auto &kb = kb::builtin();
  const auto h100 = gpu_target(*kb.find_gpu("NVIDIA H100 SXM5"));
  auto op = [](Phase ph, double seq, double head_dim, bool causal) {
    Op o;
    o.kind = OpKind::attention;
    o.phase = ph;
    o.precision = Precision::bf16_amp;
    o.seq = seq;
    o.head_dim = head_dim;
    o.causal = causal;
    o.flops = 1e12;
    o.kernels = 1;
    return o;
  };
  auto rate = [&](const DeviceRates &r, const Op &o) {
    std::vector<OpTime> t;
    time_ops({o}, r, &t);
    return o.flops / (t.back().seconds - r.kernel_s);
  };
  fit::Run run; // SDPA, PyTorch version unknown (a current one)
  auto cudnn = gpu_rates(h100, kb, run);
  // FlashAttention-3's Figure 5: cuDNN forward, head dim 64, 288 TFLOP/s causal at 1k tokens; 413
  // non-causal at 16k; Figure 6: backward 266 at 512.
  EXPECT_NEAR(rate(cudnn, op(Phase::forward, 1024, 64, true)), 288e12, 1e9);
  EXPECT_NEAR(rate(cudnn, op(Phase::forward, 16384, 64, false)), 413e12, 1e9);
  EXPECT_NEAR(rate(cudnn, op(Phase::backward, 512, 64, false)), 266e12, 1e9);
  EXPECT_NEAR(rate(cudnn, op(Phase::recompute, 2048, 128, true)), 484e12, 1e9);
  // Between: 724 tokens is half-way between 512 and 1k in log2; head dim 96 half-way 64 to 128.
  EXPECT_NEAR(rate(cudnn, op(Phase::forward, 724.077, 64, false)), (335e12 + 373e12) / 2, 0.1e12);
  EXPECT_NEAR(rate(cudnn, op(Phase::forward, 1024, 96, false)), (373e12 + 574e12) / 2, 1e9);
  // Held outside: CLIP's 77 tokens at 512's rate, 128k at 16k's, head dim 256 at 128's.
  EXPECT_NEAR(rate(cudnn, op(Phase::forward, 77, 64, false)), 335e12, 1e9);
  EXPECT_NEAR(rate(cudnn, op(Phase::forward, 131072, 128, true)), 539e12, 1e9);
  EXPECT_NEAR(rate(cudnn, op(Phase::forward, 4096, 256, false)), 609e12, 1e9);
  // No published causal backward: the non-causal one x the forward's causal/non-causal ratio.
  EXPECT_NEAR(rate(cudnn, op(Phase::backward, 2048, 128, true)), 465e12 * 484 / 617, 1e9);
  // Shorter sequences, a causal mask and a smaller head dimension are each slower.
  EXPECT_LT(rate(cudnn, op(Phase::forward, 512, 64, false)),
            rate(cudnn, op(Phase::forward, 4096, 64, false)));
  EXPECT_LT(rate(cudnn, op(Phase::forward, 1024, 64, true)),
            rate(cudnn, op(Phase::forward, 1024, 64, false)));
  EXPECT_LT(rate(cudnn, op(Phase::forward, 1024, 64, false)),
            rate(cudnn, op(Phase::forward, 1024, 128, false)));
  // flash-attn, or a PyTorch before 2.11: FlashAttention-2 forward + backward, one rate for both.
  run.attention = Attention::flash;
  auto fa2 = gpu_rates(h100, kb, run);
  EXPECT_NEAR(rate(fa2, op(Phase::forward, 1024, 64, true)), 192e12, 1e9);
  EXPECT_NEAR(rate(fa2, op(Phase::backward, 1024, 64, true)), 192e12, 1e9);
  // Transformer Engine (fused kernels) prefers cuDNN's attention on Hopper, flash or not.
  run.kernels = Kernels::fused;
  EXPECT_NEAR(rate(gpu_rates(h100, kb, run), op(Phase::forward, 1024, 64, true)), 288e12, 1e9);
  run.kernels = Kernels::eager;
  run.attention = Attention::sdpa;
  run.torch_version = "2.5.1";
  EXPECT_NEAR(rate(gpu_rates(h100, kb, run), op(Phase::forward, 512, 128, false)), 248e12, 1e9);
  // An A100: FlashAttention-2 measured there, 88 TFLOP/s causal at 512 tokens, head dim 64.
  const auto a100 = gpu_target(*kb.find_gpu("NVIDIA A100 80GB SXM4"));
  EXPECT_NEAR(rate(gpu_rates(a100, kb), op(Phase::backward, 512, 64, true)), 88e12, 1e9);
  // Another architecture takes the A100's share of its own peak (an RTX 4090: Ada).
  const auto ada = gpu_target(*kb.find_gpu("GeForce RTX 4090"));
  EXPECT_NEAR(rate(gpu_rates(ada, kb), op(Phase::forward, 16384, 128, true)),
              *ada.fp16_flops * 189 / 312, 1e9);
  // FP32 attention keeps a fraction of the FP32 peak, whatever the shape.
  Op f32 = op(Phase::forward, 512, 64, true);
  f32.precision = Precision::fp32;
  EXPECT_NEAR(rate(cudnn, f32), *h100.fp32_flops * kAttentionFractionHopper, 1e9);
  // The basis says which kernel and where it was measured.
  const std::string basis = fmt::format("{}", fmt::join(cudnn.basis, "\n"));
  EXPECT_NE(basis.find("cuDNN's fused attention as measured on an NVIDIA H100 SXM5"),
            std::string::npos)
      << basis;
}

// ---- Against published measurements ---------------------------------------------------------

struct Published {
  std::string what;
  std::string model, gpu;
  fit::Run run;
  double measured;     // per GPU: images/s or tokens/s
  bool tokens = false; // tokens/s per GPU (else samples/s for all GPUs)
};

fit::Run rn50(Precision p, int gpus, std::int64_t batch) {
  fit::Run r;
  r.batch = batch;
  r.image_size = 224;
  r.precision = p;
  r.optimizer = Optimizer::sgd_momentum;
  r.gpus = gpus;
  // DeepLearningExamples' configs.yml: memory_format nhwc for AMP; TF32 and FP32 keep NCHW.
  r.channels_last = p == Precision::fp16_amp;
  return r;
}

fit::Run nemo(int gpus, std::int64_t gbs, std::int64_t seq, int tp, int pp, int lora) {
  fit::Run r;
  r.batch = 1;
  r.seq = seq;
  r.precision = Precision::fp8;
  r.kernels = Kernels::fused;
  r.attention = Attention::flash;
  r.gpus = std::min(gpus, 8);
  r.nodes = std::max(1, gpus / 8);
  r.tp = tp;
  r.pp = pp;
  r.strategy = Strategy::zero1; // Megatron's distributed optimizer
  r.grad_accum = gbs / (gpus / (tp * pp));
  r.lora_rank = lora;
  // DGX H100: eight 400 Gb/s NDR InfiniBand adapters, one per GPU.
  r.network_bytes_per_s = 50e9;
  return r;
}

std::vector<Published> published() {
  // throughput.md §5.1 (NVIDIA DeepLearningExamples ResNet-50 v1.5, DALI) and §5.3/§5.4
  // (NeMo 24.07 performance summary, DGX H100, FP8).
  return {
      {"ResNet-50 1x A100 AMP", "resnet-50", "NVIDIA A100 80GB SXM4",
       rn50(Precision::fp16_amp, 1, 256), 2470},
      {"ResNet-50 1x A100 TF32", "resnet-50", "NVIDIA A100 80GB SXM4",
       rn50(Precision::tf32, 1, 256), 938},
      {"ResNet-50 8x A100 AMP", "resnet-50", "NVIDIA A100 80GB SXM4",
       rn50(Precision::fp16_amp, 8, 256), 16621},
      {"ResNet-50 8x A100 TF32", "resnet-50", "NVIDIA A100 80GB SXM4",
       rn50(Precision::tf32, 8, 256), 7248},
      {"ResNet-50 1x V100 AMP", "resnet-50", "Tesla V100 SXM2 16GB",
       rn50(Precision::fp16_amp, 1, 256), 1200},
      {"ResNet-50 1x V100 FP32", "resnet-50", "Tesla V100 SXM2 16GB", rn50(Precision::fp32, 1, 128),
       367},
      {"ResNet-50 8x V100 AMP", "resnet-50", "Tesla V100 SXM2 16GB",
       rn50(Precision::fp16_amp, 8, 256), 8322},
      {"ResNet-50 8x V100 FP32", "resnet-50", "Tesla V100 SXM2 16GB", rn50(Precision::fp32, 8, 128),
       2855},
      {"Llama 2 7B pretraining, 8x H100 FP8", "llama-2-7b", "NVIDIA H100 SXM5",
       nemo(8, 128, 4096, 1, 1, 0), 16847, true},
      {"Llama 2 13B pretraining, 16x H100 FP8", "llama-2-13b", "NVIDIA H100 SXM5",
       nemo(16, 128, 4096, 1, 4, 0), 8646, true},
      {"Llama 2 70B pretraining, 64x H100 FP8", "llama-2-70b", "NVIDIA H100 SXM5",
       nemo(64, 128, 4096, 4, 4, 0), 1707, true},
      {"Llama 2 7B SFT, 8x H100 FP8", "llama-2-7b", "NVIDIA H100 SXM5", nemo(8, 32, 4096, 1, 1, 0),
       17120, true},
      {"Llama 2 13B SFT, 8x H100 FP8", "llama-2-13b", "NVIDIA H100 SXM5",
       nemo(8, 32, 4096, 1, 4, 0), 9741, true},
      {"Llama 2 70B SFT, 16x H100 FP8", "llama-2-70b", "NVIDIA H100 SXM5",
       nemo(16, 32, 4096, 4, 4, 0), 1833, true},
      {"Llama 2 7B LoRA, 8x H100 FP8", "llama-2-7b", "NVIDIA H100 SXM5",
       nemo(8, 32, 4096, 1, 1, 32), 25206, true},
      {"Llama 2 13B LoRA, 8x H100 FP8", "llama-2-13b", "NVIDIA H100 SXM5",
       nemo(8, 32, 4096, 1, 1, 32), 14161, true},
      {"Llama 2 70B LoRA, 8x H100 FP8", "llama-2-70b", "NVIDIA H100 SXM5",
       nemo(8, 32, 4096, 2, 4, 32), 2557, true},
  };
}

double predict(const Published &p) {
  const auto &kb = kb::builtin();
  auto model = model_from_catalog(p.model, kb);
  EXPECT_TRUE(model.ok()) << p.model;
  const auto *spec = kb.find_gpu(p.gpu);
  EXPECT_NE(spec, nullptr) << p.gpu;
  if (!model.ok() || !spec)
    return 0;
  auto t = estimate_time(model.value(), p.run, gpu_target(*spec));
  if (!t.samples_per_s)
    return 0;
  return p.tokens ? *t.tokens_per_s / p.run.world() : *t.samples_per_s;
}

TEST(TimeAccuracy, PublishedMeasurements) {
  std::vector<double> errors;
  std::string table;
  for (const auto &p : published()) {
    const double got = predict(p);
    const double err = got / p.measured - 1;
    errors.push_back(std::abs(err));
    table +=
        fmt::format("| {} | {:.0f} | {:.0f} | {:+.0f} % |\n", p.what, got, p.measured, err * 100);
    EXPECT_LE(std::abs(err), 0.40)
        << p.what << ": predicted " << got << ", published " << p.measured;
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  EXPECT_LE(median, 0.15) << table;
  std::cout << table;
}

TEST(TimeAccuracy, PublishedComparisonsPointTheRightWay) {
  auto rows = published();
  auto rate = [&](std::string_view what) {
    for (const auto &p : rows)
      if (p.what == what)
        return predict(p);
    return 0.0;
  };
  EXPECT_GT(rate("ResNet-50 1x A100 AMP"), rate("ResNet-50 1x A100 TF32")) << "AMP beats TF32";
  EXPECT_GT(rate("ResNet-50 8x A100 AMP"), 5 * rate("ResNet-50 1x A100 AMP"))
      << "8 GPUs vs 1 (published: 6.7x)";
  EXPECT_GT(rate("ResNet-50 1x A100 AMP"), rate("ResNet-50 1x V100 AMP")) << "A100 vs V100";
  // BERT-large fine-tuning, A100 vs V100 (guide 001: 3.2x): the direction.
  const auto &kb = kb::builtin();
  auto bert = model_from_catalog("bert-large-uncased", kb).value();
  fit::Run r;
  r.batch = 32;
  r.seq = 384;
  r.precision = Precision::fp16_amp;
  auto a100 = estimate_time(bert, r, gpu_target(*kb.find_gpu("NVIDIA A100 80GB SXM4")));
  auto v100 = estimate_time(bert, r, gpu_target(*kb.find_gpu("Tesla V100 SXM2 16GB")));
  EXPECT_GT(*a100.samples_per_s, 1.5 * *v100.samples_per_s);
}

} // namespace
} // namespace dlrig::fit

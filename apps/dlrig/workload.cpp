// The workload options `fit` and `pick` share (see workload.hpp).
#include "workload.hpp"

#include "dlrig/fit/load.hpp"

#include "dlrig/core/text.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <optional>

namespace dlrig::cli {
namespace {

// A count as people write one: "7e9", "7000000000", "7B", "110M", "1.5T". Digit groups
// (7,000,000,000, 7_000_000_000) and a space before the suffix are allowed; the suffix is k, M, B
// (or bn, billion), T, or the word (thousand, million, trillion). nullopt when it is none, or not
// a finite number above 0.
std::optional<double> count_value(const std::string &s) {
  std::string num;
  auto digit = [&](std::size_t i) {
    return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ',' || s[i] == '_') {
      // A group separator has a digit before it and exactly three after ("7,5B" is no 75B).
      if (i == 0 || !digit(i - 1) || !digit(i + 1) || !digit(i + 2) || !digit(i + 3) ||
          digit(i + 4))
        return std::nullopt;
      continue;
    }
    if (s[i] != ' ')
      num += s[i];
  }
  static const std::pair<const char *, double> suffixes[] = {
      {"thousand", 1e3}, {"million", 1e6}, {"billion", 1e9}, {"trillion", 1e12}, {"bn", 1e9},
      {"k", 1e3},        {"m", 1e6},       {"b", 1e9},       {"t", 1e12}};
  double mult = 1;
  const std::string low = lower(num);
  for (const auto &[suffix, factor] : suffixes)
    if (low.size() > std::strlen(suffix) && low.ends_with(suffix)) {
      mult = factor;
      num.resize(num.size() - std::strlen(suffix));
      break;
    }
  try {
    std::size_t used = 0;
    double v = std::stod(num, &used);
    if (used != num.size() || !(v > 0) || !std::isfinite(v * mult))
      return std::nullopt;
    return v * mult;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

// --params: a count of at most 10^15.
Result<std::int64_t> parse_count(const std::string &s, const char *flag) {
  if (s.empty())
    return make_error(std::string(flag) + ": empty");
  const auto v = count_value(s);
  if (!v || *v > 1e15)
    return make_error(std::string(flag) + " \"" + s +
                      "\": expected a positive count such as 7000000000, 7e9, 7B or 110M");
  return static_cast<std::int64_t>(std::llround(*v));
}

// A count flag from 1 to HI that takes what --params takes (2e8, 200M, 1.5B, 15T).
void add_count_option(CLI::App &sub, const std::string &name, double &target,
                      const std::string &help, double hi) {
  const std::string range = fmt::format("1 to {:g}", hi);
  sub.add_option_function<std::string>(
         name,
         [name, &target, hi, range](const std::string &text) {
           const auto v = count_value(text);
           if (!v || *v < 1 || *v > hi)
             throw CLI::ValidationError(
                 name, fmt::format("\"{}\" is not a count from {} (such as 2e8, 200M or 1.5B)",
                                   text, range));
           target = *v;
         },
         help + " [" + range + "; 2e8, 200M, 1.5B]")
      ->type_name("N");
}

} // namespace

fit::Run workload_run(const WorkloadArgs &a, const kb::KnowledgeBase &kb) {
  fit::Run run = a.run;
  run.mode = need(fit::parse_mode(a.mode));
  run.precision = need(fit::parse_precision(a.precision));
  run.optimizer = need(fit::parse_optimizer(a.optimizer));
  run.checkpointing = need(fit::parse_checkpointing(a.checkpointing));
  run.strategy = need(fit::parse_strategy(a.strategy));
  run.offload = need(fit::parse_offload(a.offload));
  if (!a.attention.empty()) {
    run.attention = need(fit::parse_attention(a.attention));
    run.attention_given = true;
  }
  run.lora_targets = need(fit::parse_lora_targets(a.lora_targets, run.lora_modules));
  run.quant = need(fit::parse_quant(a.quant));
  run.kernels = need(fit::parse_kernels(a.kernels));
  if (!a.network.empty()) {
    const auto *link = kb.find_link(a.network);
    if (!link || !link->theoretical_bytes_per_s)
      throw Failure(ExitCode::usage,
                    fmt::format("--network \"{}\": not a link of the knowledge base with a known "
                                "rate (see `dlrig kb links`, e.g. \"InfiniBand NDR\")",
                                a.network));
    run.network_bytes_per_s = *link->theoretical_bytes_per_s / (link->bidirectional ? 2 : 1);
  }
  run.loss = need(fit::parse_loss(a.loss));
  if (!a.optimizer_impl.empty())
    run.optimizer_impl = need(fit::parse_optimizer_impl(a.optimizer_impl));
  if (run.optimizer_impl && run.optimizer != fit::Optimizer::adam &&
      run.optimizer != fit::Optimizer::adamw)
    throw Failure(ExitCode::usage,
                  "--optimizer-impl chooses PyTorch's Adam/AdamW "
                  "implementation: give --optimizer adam or adamw, or leave it out");
  if (run.optimizer_impl && run.strategy != fit::Strategy::ddp &&
      run.strategy != fit::Strategy::fsdp)
    throw Failure(ExitCode::usage,
                  "--optimizer-impl is for PyTorch's optimizer; DeepSpeed ZeRO steps with its own "
                  "fused Adam: leave it out with --strategy " +
                      std::string(fit::name(run.strategy)));
  if (a.dataset_tokens != 0)
    run.dataset_tokens = a.dataset_tokens;
  if (a.samples != 0)
    run.samples = a.samples;
  // The job's size is one figure: a flag that would be dropped is refused instead.
  if (run.dataset_tokens && run.samples)
    throw Failure(ExitCode::usage, "--dataset-tokens and --samples both size the epoch: give one "
                                   "(tokens for a language model, samples otherwise)");
  if (run.mode == fit::Mode::infer && (run.dataset_tokens || run.samples || run.epochs > 0))
    throw Failure(ExitCode::usage, "--dataset-tokens, --samples and --epochs size a training "
                                   "job; serving is timed per request (--max-tokens, "
                                   "--concurrency)");
  if (run.epochs > 0 && !run.dataset_tokens && !run.samples)
    throw Failure(ExitCode::usage, "--epochs needs the epoch's size: give --dataset-tokens N or "
                                   "--samples N");

  return run;
}

fit::ModelInput workload_model(const WorkloadArgs &a, const kb::KnowledgeBase &kb) {
  std::optional<kb::ModelFamily> family;
  if (!a.family.empty())
    family = need(fit::parse_family(a.family));
  fit::ModelInput model;
  if (!a.params.empty()) {
    if (!a.model.empty())
      throw Failure(ExitCode::usage, "give either MODEL or --params N --family F, not both");
    if (!family)
      throw Failure(ExitCode::usage, "--params needs --family (decoder, moe-decoder, encoder, "
                                     "encoder-decoder, cnn)");
    model = value_or_throw(
        fit::model_from_params(need(parse_count(a.params, "--params")), *family, kb.models),
        ErrorKind::usage);
  } else if (a.model.empty()) {
    throw Failure(ExitCode::usage, "which model? give a catalog name (`dlrig kb models`), a "
                                   "config.json, a .safetensors file or folder, a Hugging Face "
                                   "id (ORG/NAME), or --params N --family F");
  } else {
    model = value_or_throw(fit::load_model(a.model, family, kb));
  }

  return model;
}

void add_workload_options(CLI::App &sub, WorkloadArgs &a,
                          const std::function<void()> &after_concurrency) {
  sub.add_option("model", a.model,
                 "Catalog name, config.json (or its folder), .safetensors file, sharded folder, "
                 "or a Hugging Face id (ORG/NAME: its cached download, else the catalog's)")
      ->type_name("MODEL");
  sub.add_option("--params", a.params,
                 "Parameter count instead of a model (7e9, 7B, 7 billion, 7,000,000,000, 110M)")
      ->type_name("N");
  sub.add_option("--family", a.family,
                 "decoder | moe-decoder | encoder | encoder-decoder | cnn (with --params, or a "
                 "checkpoint without config.json)")
      ->type_name("F");
  sub.add_option("--mode", a.mode, "train | infer")->type_name("MODE");
  add_ranged_option<std::int64_t>(sub, "--batch", a.run.batch,
                                  "Micro-batch per GPU (data-parallel rank)", "N", 1, 1 << 20);
  add_ranged_option<std::int64_t>(sub, "--seq", a.run.seq,
                                  "Tokens per sample (default: 2048 or the model's context)", "N",
                                  1, 1 << 24);
  add_ranged_option<std::int64_t>(sub, "--image-size", a.run.image_size,
                                  "Image side in pixels (CNN, ViT)", "PX", 1, 1 << 16);
  sub.add_option("--precision", a.precision, "fp32 | tf32 | fp16-amp | bf16-amp | bf16 | fp8")
      ->type_name("P");
  sub.add_option("--optimizer", a.optimizer,
                 "sgd | sgd-momentum | adam | adamw | adamw-8bit | adafactor | lion")
      ->type_name("O");
  sub.add_option("--checkpointing", a.checkpointing, "none | selective | full")->type_name("C");
  add_ranged_option<std::int64_t>(sub, "--grad-accum", a.run.grad_accum,
                                  "Micro-batches per optimizer step", "N", 1, 1 << 20);
  add_ranged_option<int>(sub, "--gpus", a.run.gpus, "GPUs per node", "N", 1, 1024);
  add_ranged_option<int>(sub, "--nodes", a.run.nodes, "Nodes", "N", 1, 1 << 16);
  sub.add_option("--strategy", a.strategy, "ddp | zero1 | zero2 | zero3 | fsdp")->type_name("S");
  add_ranged_option<int>(sub, "--tp", a.run.tp, "Tensor-parallel degree", "N", 1, 1024);
  add_ranged_option<int>(sub, "--pp", a.run.pp, "Pipeline-parallel degree", "N", 1, 1024);
  sub.add_option("--offload", a.offload, "optimizer | params (to the CPU)")->type_name("WHAT");
  add_ranged_option<int>(sub, "--lora", a.run.lora_rank,
                         "Train LoRA adapters of rank R on a frozen base", "R", 1, 1 << 16);
  sub.add_flag("--qlora", a.run.qlora, "LoRA on a 4-bit NF4 base (QLoRA)");
  sub.add_option(
         "--lora-targets", a.lora_targets,
         "qv (PEFT's default: query and value; Phi's adds fc1, fc2) | all-linear (every linear but "
         "the head) | a list such as q,v,o,gate,up,down")
      ->type_name("T");
  sub.add_option("--attention", a.attention,
                 "eager | sdpa | flash (default: what transformers runs for the model: sdpa, "
                 "eager where the class has no SDPA path, as Gemma 2's and gpt-oss')")
      ->type_name("A");
  sub.add_option("--loss", a.loss,
                 "standard | fused (Liger-Kernel, Cut-CE: no b*s*V logits) | chunked (torchtune)")
      ->type_name("L");
  sub.add_option("--optimizer-impl", a.optimizer_impl,
                 "PyTorch Adam/AdamW: foreach (default since torch 2.0) | fused | loop")
      ->type_name("I");
  sub.add_flag(
      "--optimizer-in-backward", a.run.optimizer_in_backward,
      "Step each parameter in backward and free its gradient (torchtune optimizer_in_bwd)");
  sub.add_flag("--paged-optimizer", a.run.paged_optimizer,
               "bitsandbytes paged optimizer: states in CUDA unified memory");
  sub.add_flag("--activation-offload", a.run.activation_offload,
               "Offload saved activations to host memory (torchtune)");
  sub.add_flag("--gradient-as-bucket-view", a.run.gradient_as_bucket_view,
               "DDP(gradient_as_bucket_view=True): no gradient bucket copies");
  sub.add_flag("--channels-last", a.run.channels_last,
               "Time model: the CNN runs in NHWC (torch.channels_last); default NCHW, whose "
               "tensor-core convolutions cuDNN transposes");
  add_ranged_option<double>(sub, "--reduce-bucket-size", a.run.reduce_bucket_size,
                            "DeepSpeed ZeRO reduce_bucket_size, elements (default 5e8)", "N", 1,
                            1e12);
  add_ranged_option<double>(sub, "--allgather-bucket-size", a.run.allgather_bucket_size,
                            "DeepSpeed ZeRO-1/2 allgather_bucket_size, elements (default 5e8)", "N",
                            1, 1e12);
  add_ranged_option<double>(sub, "--stage3-prefetch-bucket-size", a.run.stage3_prefetch_bucket_size,
                            "DeepSpeed ZeRO-3 stage3_prefetch_bucket_size (default 5e7)", "N", 0,
                            1e12);
  add_ranged_option<double>(sub, "--stage3-max-live-parameters", a.run.stage3_max_live_parameters,
                            "DeepSpeed ZeRO-3 stage3_max_live_parameters (default 1e9)", "N", 1,
                            1e13);
  sub.add_option("--torch", a.torch,
                 "PyTorch version to size for (2.5.1, 1.13.1+cu117); default: this machine's")
      ->type_name("VERSION");
  sub.add_option("--transformers", a.run.transformers_version,
                 "transformers version to size for (4.46.3); default: that of this machine's "
                 "PyTorch environment")
      ->type_name("VERSION");
  sub.add_option("--quant", a.quant, "Serving weights: int8 | int4")->type_name("Q");
  add_ranged_option<std::int64_t>(sub, "--max-tokens", a.run.max_tokens,
                                  "Serving: new tokens per request", "N", 1, 1 << 24);
  add_ranged_option<std::int64_t>(sub, "--concurrency", a.run.concurrency,
                                  "Serving: requests in flight", "N", 1, 1 << 20);
  if (after_concurrency)
    after_concurrency();
  add_count_option(sub, "--dataset-tokens", a.dataset_tokens, "Tokens per epoch (time per epoch)",
                   1e16);
  add_count_option(sub, "--samples", a.samples, "Samples per epoch (time per epoch)", 1e13);
  add_ranged_option<double>(sub, "--epochs", a.run.epochs, "Epochs (total time)", "N", 0.001, 1e6);
  sub.add_option("--kernels", a.kernels,
                 "Time model: eager (PyTorch/transformers as written) | fused (torch.compile, "
                 "Megatron-LM / Transformer Engine)")
      ->type_name("K");
  sub.add_option("--network", a.network,
                 "Time model: the link between nodes, per GPU (a `dlrig kb links` name, e.g. "
                 "\"InfiniBand NDR\")")
      ->type_name("LINK");
}

} // namespace dlrig::cli

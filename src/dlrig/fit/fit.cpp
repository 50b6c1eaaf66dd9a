#include "dlrig/fit/fit.hpp"

#include "dlrig/core/pcie.hpp"
#include "dlrig/core/text.hpp"
#include "dlrig/core/version.hpp"
#include "dlrig/model/types.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace dlrig::fit {
namespace {

bool is_transformer(model::ModelFamily f) {
  return f != model::ModelFamily::cnn && f != model::ModelFamily::unet;
}

// A PEP 440 version as transformers' releases spell it ("4.46.3", "5.0.0rc1", "4.57.0.dev0"): a
// leading number, then only letters, digits and . + - _ !.
bool is_transformers_version(std::string_view v) {
  const auto parsed = parse_version(v);
  return !v.empty() && std::isdigit(static_cast<unsigned char>(v.front())) &&
         !parsed.parts.empty() && !parsed.wildcard &&
         std::all_of(v.begin(), v.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '.' || c == '+' || c == '-' || c == '_' || c == '!';
         });
}

std::string strip0x(const std::optional<std::string> &s) {
  if (!s)
    return {};
  auto v = *s;
  if (v.rfind("0x", 0) == 0 || v.rfind("0X", 0) == 0)
    v = v.substr(2);
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v;
}

bool fits_on(const MemoryEstimate &m, const GpuTarget &g) {
  return g.memory_bytes && m.device <= *g.memory_bytes;
}

// Seconds of device time per sample, for comparing a change with the run as given. The
// throughput cancels out when both use the same precision; nullopt when it is unknown.
std::optional<double> per_sample_seconds(const ModelInput &model, const Run &run,
                                         const GpuTarget &gpu) {
  auto t = estimate_time(model, run, gpu);
  if (!t.samples_per_s || *t.samples_per_s <= 0)
    return std::nullopt;
  return 1.0 / *t.samples_per_s;
}

} // namespace

std::string cannot_run_on(const Run &run, const GpuTarget &gpu) {
  // Transformer Engine runs FP8 from compute capability 8.9 (Ada, Hopper, Blackwell):
  // check_fp8_support in transformer_engine/pytorch/fp8.py ("Device compute capability 8.9 or
  // higher required for FP8 execution."). Serving is not refused: FP8 weights also run through
  // weight-only kernels (vLLM's FP8 Marlin) on older GPUs.
  if (run.mode != Mode::train || run.precision != Precision::fp8 || gpu.compute_capability.empty())
    return "";
  // An AMD GPU (a gfx target) trains in FP8 where its matrix cores have FP8 (data/archs.csv, from
  // AMD's ROCm GPU hardware specifications: CDNA 3 on, not CDNA 2 or CDNA); an architecture the
  // knowledge base does not settle is not refused.
  if (gpu.compute_capability.rfind("gfx", 0) == 0) {
    const kb::ArchSpec *a = kb::builtin().arch(gpu.compute_capability);
    if (!a || a->fp8 || !a->feature_known("fp8"))
      return "";
    return fmt::format("FP8 training needs FP8 matrix cores, which {} ({} {}) lacks (ROCm GPU "
                       "hardware specifications): use --precision {}",
                       gpu.name, a->name, gpu.compute_capability,
                       a->bf16 || gpu.bf16_flops ? "bf16-amp" : "fp16-amp");
  }
  const auto cc = parse_version(gpu.compute_capability);
  if (cc.parts.empty() || compare_versions(gpu.compute_capability, "8.9") >= 0)
    return "";
  return fmt::format("FP8 training needs compute capability 8.9 or newer (Transformer Engine); "
                     "{} is {}: use --precision {}",
                     gpu.name, gpu.compute_capability, gpu.bf16_flops ? "bf16-amp" : "fp16-amp");
}

bool FitReport::all_fit() const {
  return !gpus.empty() && std::all_of(gpus.begin(), gpus.end(),
                                      [](const GpuFit &g) { return g.fits.value_or(false); });
}

Result<Run> resolve_run(const ModelInput &model, Run run, std::vector<std::string> *assumptions) {
  const auto &arch = model.arch;
  const Dims d = dims_of(arch);
  auto note = [&](std::string s) {
    if (assumptions)
      assumptions->push_back(std::move(s));
  };
  auto positive = [](std::int64_t v) { return v >= 1; };
  if (!positive(run.batch))
    return make_error("--batch must be at least 1");
  if (!positive(run.grad_accum))
    return make_error("--grad-accum must be at least 1");
  if (run.gpus < 1 || run.nodes < 1)
    return make_error("--gpus and --nodes must be at least 1");
  if (run.tp < 1 || run.pp < 1)
    return make_error("--tp and --pp must be at least 1");
  if (run.concurrency < 1)
    return make_error("--concurrency must be at least 1");
  if (run.max_tokens < 0 || run.seq < 0 || run.image_size < 0 || run.lora_rank < 0)
    return make_error("--max-tokens, --seq, --image-size and --lora must not be negative");
  if (run.world() % (run.tp * run.pp) != 0)
    return make_error(fmt::format(
        "--gpus {} x --nodes {} = {} GPUs is not a multiple of --tp {} x --pp {} = {}: use a GPU "
        "count that is a multiple of {}, or a smaller --tp/--pp",
        run.gpus, run.nodes, run.world(), run.tp, run.pp, run.tp * run.pp, run.tp * run.pp));
  if (run.dataset_tokens && *run.dataset_tokens <= 0)
    return make_error("--dataset-tokens must be positive");
  if (run.samples && *run.samples <= 0)
    return make_error("--samples must be positive");

  if (const auto tower = model::tower_params(arch); tower > 0)
    note(fmt::format("{} is an image-text model: its {} vision tower and projector ({} parameters) "
                     "are held{}; the batches are taken as text only (no image's activations{})",
                     arch.display_name, arch.towers.front().hf_model_type, group_digits(tower),
                     run.lora() ? "" : " and trained",
                     arch.cross_attention_layers > 0
                         ? fmt::format("; its {} cross-attention layers read only image "
                                       "features, so a text-only batch skips them: no "
                                       "activations or KV cache for them",
                                       arch.cross_attention_layers)
                         : ""));
  if (arch.act_params > 0 && run.mode == Mode::train)
    note(fmt::format("{}'s xIELU activation is sized in transformers' Python form, which runs "
                     "unless the xielu package's CUDA kernel is installed: it keeps three more "
                     "tensors of the MLP's width (one fp32 over fp32 weights) and a 1-byte mask "
                     "per element; what the CUDA kernel keeps is not known to dlrig",
                     arch.display_name));
  if (const auto &q = arch.stored_quant) {
    // transformers' Trainer refuses a quantised model without adapters ("You cannot perform
    // fine-tuning on purely quantized models", src/transformers/trainer.py).
    const std::string stored =
        fmt::format("{} is stored quantised ({})", arch.display_name, model::describe(*q));
    const bool header = model.checkpoint && model.checkpoint->weight_bytes > 0;
    if (q->bits == 0 && !header)
      return make_error(
          fmt::format("{}: dlrig does not know the size of a '{}' weight; give the folder with its "
                      ".safetensors checkpoint, whose header has it",
                      stored, q->method));
    if (run.quant != Quant::none)
      return make_error(stored + ": --quant quantises a 16-bit model; leave it out");
    if (run.mode == Mode::train && run.qlora)
      return make_error(stored + ": train adapters on it with --lora R, not --qlora");
    if (run.mode == Mode::train && !run.lora())
      return make_error(stored + ": its weights cannot be trained, only adapters on them "
                                 "(transformers refuses a full fine-tune): give --lora R");
    note(fmt::format("weights as {} stores them ({}): {}", arch.display_name, model::describe(*q),
                     header ? "the safetensors header's bytes"
                            : "nn.Linear weights packed, the rest 16-bit"));
  }
  if (run.mode == Mode::train) {
    if (run.quant != Quant::none)
      return make_error("--quant is for --mode infer; to train on a 4-bit base use --qlora");
    if (run.max_tokens > 0 || run.concurrency > 1)
      return make_error("--max-tokens and --concurrency are for --mode infer");
  } else {
    if (run.lora())
      return make_error("--lora/--qlora are for --mode train");
    if (run.grad_accum > 1 || run.offload != Offload::none || run.strategy != Strategy::ddp ||
        run.checkpointing != Checkpointing::none)
      return make_error("--grad-accum, --offload, --strategy and --checkpointing are for --mode "
                        "train; serving shards with --tp/--pp");
  }
  const bool adam = run.optimizer == Optimizer::adam || run.optimizer == Optimizer::adamw;
  const bool zero = run.strategy == Strategy::zero1 || run.strategy == Strategy::zero2 ||
                    run.strategy == Strategy::zero3;
  if (run.mode == Mode::infer &&
      (run.optimizer_impl || run.optimizer_in_backward || run.paged_optimizer ||
       run.activation_offload || run.gradient_as_bucket_view || run.loss != Loss::standard))
    return make_error("--optimizer-impl, --optimizer-in-backward, --paged-optimizer, "
                      "--activation-offload, --gradient-as-bucket-view and --loss are for --mode "
                      "train");
  // PyTorch's Adam implementation means nothing for other optimizers or DeepSpeed's own fused Adam
  // (the command line refuses it there; a run changed afterwards just drops it).
  if (run.optimizer_impl && (!adam || zero))
    run.optimizer_impl.reset();
  if (run.optimizer_in_backward && run.grad_accum > 1)
    return make_error("--optimizer-in-backward frees each gradient at once, so it cannot "
                      "accumulate: use --grad-accum 1 (torchtune: \"Requires "
                      "gradient_accumulation_steps=1\")");
  if ((run.optimizer_in_backward || run.paged_optimizer) && (zero || run.offload != Offload::none))
    return make_error("--optimizer-in-backward and --paged-optimizer are PyTorch/bitsandbytes "
                      "options: use --strategy ddp or fsdp without --offload");
  if (run.paged_optimizer && !adam && run.optimizer != Optimizer::adamw_8bit &&
      run.optimizer != Optimizer::lion)
    return make_error("--paged-optimizer: bitsandbytes pages adam, adamw, adamw-8bit and lion; "
                      "give one of them");
  if (run.gradient_as_bucket_view && run.strategy != Strategy::ddp)
    return make_error("--gradient-as-bucket-view is an option of DDP: use it with --strategy ddp");
  if (run.activation_offload && !is_transformer(arch.family))
    return make_error("--activation-offload is modelled for transformers (torchtune's "
                      "enable_activation_offloading); for " +
                      arch.name + " use --checkpointing full");
  if (run.loss != Loss::standard &&
      (!is_transformer(arch.family) || arch.family == model::ModelFamily::encoder))
    return make_error("--loss " + std::string(name(run.loss)) +
                      " replaces a language model's vocabulary logits; " + arch.name + " has none");
  if (!run.torch_version.empty() && parse_version(run.torch_version).parts.empty())
    return make_error("--torch \"" + run.torch_version +
                      "\": expected a PyTorch version such as 2.5.1 or 1.13.1+cu117");
  if (!run.transformers_version.empty() && !is_transformers_version(run.transformers_version))
    return make_error("--transformers \"" + run.transformers_version +
                      "\": expected a transformers version such as 4.46.3 or 5.0.0");
  // What transformers runs when no attention is asked for: SDPA, or eager where the class has no
  // SDPA path (Gemma 2's softcapping, gpt-oss' sinks, BLOOM, DeBERTa-v2); SDPA or flash-attention
  // asked for is refused where transformers refuses it.
  if (is_transformer(arch.family)) {
    const auto eager = model::eager_attention(arch.text_type(), run.transformers_version);
    const std::string release = run.transformers_version.empty()
                                    ? std::string("transformers (version not known: taken as the "
                                                  "newest; --transformers VERSION)")
                                    : "transformers " + run.transformers_version;
    if (run.attention_given && run.attention == Attention::sdpa && eager.sdpa_refused)
      return make_error(fmt::format(
          "--attention sdpa: {} refuses SDPA for {} ({}: its class sets _supports_sdpa = False); "
          "use --attention eager, what it runs by default, or flash",
          release, arch.text_type(), eager.why));
    if (run.attention_given && run.attention == Attention::flash && eager.flash_refused)
      return make_error(fmt::format(
          "--attention flash: {} refuses flash-attention for {} ({}: its class sets "
          "_supports_flash_attn = False); use --attention {}",
          release, arch.text_type(), eager.why, eager.sdpa_refused ? "eager" : "sdpa or eager"));
    if (!run.attention_given && eager.by_default) {
      run.attention = Attention::eager;
      note(fmt::format("attention: eager, which {} runs for {} when none is asked for ({}); "
                       "eager keeps the s^2 attention scores{}",
                       release, arch.text_type(), eager.why,
                       eager.flash_refused ? "" : ": --attention flash sizes flash-attention"));
    }
  }
  if (run.mode == Mode::train && !run.optimizer_impl && adam && !zero)
    run.optimizer_impl =
        !run.torch_version.empty() && compare_versions(run.torch_version, "2.0") < 0
            ? OptimizerImpl::loop
            : OptimizerImpl::foreach;
  if (run.offload == Offload::params && run.strategy != Strategy::zero3 &&
      run.strategy != Strategy::fsdp)
    return make_error("--offload params needs --strategy zero3 or fsdp (parameter offload "
                      "exists only with full sharding)");
  // DeepSpeed's pipeline engine asserts a ZeRO stage below 2 ("ZeRO-2 and ZeRO-3 are incompatible
  // with pipeline parallelism", deepspeed/runtime/pipe/engine.py); PyTorch's pipelining composes
  // with FSDP (torchtitan's FSDP + TP + PP).
  if (run.pp > 1 && (run.strategy == Strategy::zero2 || run.strategy == Strategy::zero3))
    return make_error(fmt::format(
        "--pp {} with --strategy {}: DeepSpeed's pipeline engine refuses ZeRO stages 2 and 3 "
        "(\"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"); use --strategy "
        "zero1, or fsdp (PyTorch's pipelining shards with FSDP, as torchtitan does)",
        run.pp, name(run.strategy)));
  if (run.offload == Offload::optimizer && run.strategy == Strategy::ddp)
    return make_error("--offload optimizer needs --strategy zero1, zero2, zero3 or fsdp (DeepSpeed "
                      "ZeRO-Offload or FSDP CPU offload); plain DDP cannot offload");

  if (is_transformer(arch.family)) {
    if (run.image_size > 0 && arch.patch_size <= 0)
      return make_error("--image-size applies to image models; " + arch.name +
                        " takes --seq (tokens)");
    if (d.heads > 0 && d.heads % run.tp != 0)
      return make_error(fmt::format("--tp {} does not divide {}'s {} attention heads: use a --tp "
                                    "that divides {}",
                                    run.tp, arch.name, d.heads, d.heads));
    if (arch.kv_heads > 0 && run.tp > 1 && arch.kv_heads % run.tp != 0 &&
        run.tp % arch.kv_heads != 0)
      return make_error(fmt::format("--tp {} and {}'s {} key/value heads: one must divide the "
                                    "other; use a --tp that divides {}",
                                    run.tp, arch.name, arch.kv_heads, arch.kv_heads));
    const bool kv_listed = std::ranges::any_of(
        run.lora_modules, [](const std::string &m) { return m == "k" || m == "v"; });
    if (run.lora() && arch.kv_lora_rank > 0 &&
        (run.lora_targets == LoraTargets::qv ||
         (run.lora_targets == LoraTargets::custom && kv_listed)))
      return make_error(fmt::format(
          "--lora-targets {}: {}'s latent attention has no k_proj or v_proj (keys and values "
          "come from kv_a_proj_with_mqa and kv_b_proj); give --lora-targets all-linear, or a "
          "list of q, o, gate, up, down",
          run.lora_targets == LoraTargets::qv ? "qv (the default)" : "with k or v", arch.name));
    if (run.lora() && run.lora_targets == LoraTargets::qv)
      if (auto peft = model::peft_default_targets(arch.hf_model_type); !peft.empty()) {
        run.lora_targets = LoraTargets::custom;
        run.lora_modules = peft;
        note(fmt::format("LoRA targets: PEFT's default for {} ({}); --lora-targets q,v for the "
                         "query and value alone",
                         arch.hf_model_type, fmt::join(peft, ", ")));
      }
    const auto layers = std::max(d.layers, d.decoder_layers);
    if (layers > 0 && run.pp > 1 && layers % run.pp != 0)
      return make_error(fmt::format("--pp {} does not divide {}'s {} layers: use a --pp that "
                                    "divides {}",
                                    run.pp, arch.name, layers, layers));
    if (arch.patch_size > 0) {
      if (run.seq > 0)
        return make_error("--seq does not apply to " + arch.name + "; give --image-size");
      if (run.image_size == 0)
        run.image_size = arch.image_size;
      auto side = run.image_size / arch.patch_size;
      run.seq = side * side + 1;
    } else if (run.seq == 0) {
      run.seq = d.default_seq;
      note(fmt::format("--seq not given: {} tokens per sample", run.seq));
    }
    // Beyond 2^31 tokens in flight per GPU the activations alone pass 2^63 bytes for the largest
    // models and stop adding up: refused rather than summed wrong.
    constexpr std::int64_t kMaxTokens = std::int64_t{1} << 31;
    const double in_flight = static_cast<double>(run.batch) * static_cast<double>(run.concurrency) *
                             static_cast<double>(run.seq + run.max_tokens);
    if (in_flight > static_cast<double>(kMaxTokens))
      return make_error(fmt::format(
          "{} = {:.3g} tokens per GPU: beyond the {} (2^31) dlrig sizes; give a smaller --batch "
          "or --seq",
          run.mode == Mode::train
              ? fmt::format("--batch {} x --seq {}", run.batch, run.seq)
              : fmt::format("--batch {} x --concurrency {} x (--seq + --max-tokens) {}", run.batch,
                            run.concurrency, run.seq + run.max_tokens),
          in_flight, kMaxTokens));
    if (arch.learned_positions && arch.max_positions > 0 && run.seq > arch.max_positions)
      return make_error(fmt::format("--seq {} is longer than {}'s {} learned positions: use "
                                    "--seq {} or less",
                                    run.seq, arch.name, arch.max_positions, arch.max_positions));
    if (run.mode == Mode::infer && arch.learned_positions && arch.max_positions > 0 &&
        run.seq + run.max_tokens > arch.max_positions)
      return make_error(fmt::format("--seq + --max-tokens = {} is longer than {}'s {} positions",
                                    run.seq + run.max_tokens, arch.name, arch.max_positions));
  } else {
    if (run.seq > 0)
      return make_error("--seq applies to transformers; " + arch.name + " takes --image-size");
    if (run.dataset_tokens)
      return make_error("--dataset-tokens applies to transformers; give --samples (images)");
    if (run.tp > 1 || run.pp > 1)
      return make_error("--tp/--pp are modelled for transformers only");
    if (run.qlora)
      return make_error("--qlora is modelled for transformers only");
    if (run.quant != Quant::none)
      return make_error("--quant is modelled for transformers only (bitsandbytes replaces "
                        "nn.Linear layers, not " +
                        arch.name + "'s convolutions)");
    if (run.lora() && arch.family != model::ModelFamily::unet)
      return make_error("--lora is modelled for transformers and UNets (not for CNNs yet)");
    if (run.lora() && run.lora_targets == LoraTargets::custom)
      return make_error("--lora-targets with a list of projections is for transformers; for " +
                        arch.name + " give qv (diffusers' to_q, to_k, to_v, to_out) or all-linear");
    if (run.checkpointing == Checkpointing::selective)
      return make_error("--checkpointing selective recomputes a transformer layer's attention "
                        "core; for " +
                        arch.name + " give --checkpointing full");
    if (run.image_size == 0) {
      run.image_size = model::default_image_size(arch);
      note(fmt::format("--image-size not given: {} x {} pixels", run.image_size, run.image_size));
    }
    if (run.image_size < 32)
      return make_error("--image-size must be at least 32 pixels for " + arch.name);
    // The walk that memory and time fold over refuses what it cannot model, and says why.
    if (auto modules = model::walk_shared(arch, run.image_size); !modules)
      return make_error(modules.error().message);
  }
  if (run.qlora && run.lora_rank == 0) {
    run.lora_rank = 8;
    note("--qlora without --lora: rank 8 (PEFT's default r)");
  }
  return run;
}

std::optional<std::int64_t> max_micro_batch(const ModelInput &model, const Run &run,
                                            const GpuTarget &gpu) {
  if (!gpu.memory_bytes)
    return std::nullopt;
  Run r = run;
  auto fits = [&](std::int64_t b) {
    r.batch = b;
    return fits_on(estimate_memory(model, r, gpu), gpu);
  };
  if (!fits(1))
    return 0;
  std::int64_t lo = 1, hi = 2;
  constexpr std::int64_t kCap = std::int64_t{1} << 24;
  while (hi <= kCap && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > kCap)
    return lo;
  while (hi - lo > 1) {
    auto mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

namespace {

struct Candidate {
  Suggestion s;
  Run run;
};

// The command-line flags that turn `from` into `to`.
std::string flags_between(const Run &from, const Run &to) {
  std::vector<std::string> f;
  auto num = [&](const char *flag, auto a, auto b) {
    if (a != b)
      f.push_back(fmt::format("{} {}", flag, b));
  };
  auto named = [&](const char *flag, auto a, auto b) {
    if (a != b)
      f.push_back(fmt::format("{} {}", flag, name(b)));
  };
  named("--precision", from.precision, to.precision);
  named("--optimizer", from.optimizer, to.optimizer);
  named("--checkpointing", from.checkpointing, to.checkpointing);
  named("--attention", from.attention, to.attention);
  num("--batch", from.batch, to.batch);
  num("--grad-accum", from.grad_accum, to.grad_accum);
  num("--gpus", from.gpus, to.gpus);
  num("--nodes", from.nodes, to.nodes);
  named("--strategy", from.strategy, to.strategy);
  num("--tp", from.tp, to.tp);
  num("--pp", from.pp, to.pp);
  named("--offload", from.offload, to.offload);
  num("--lora", from.lora_rank, to.lora_rank);
  if (to.qlora && !from.qlora)
    f.push_back("--qlora");
  named("--quant", from.quant, to.quant);
  num("--concurrency", from.concurrency, to.concurrency);
  if (to.loss != from.loss)
    f.push_back(fmt::format("--loss {}", name(to.loss)));
  auto toggled = [&](const char *flag, bool a, bool b) {
    if (b && !a)
      f.push_back(flag);
  };
  toggled("--optimizer-in-backward", from.optimizer_in_backward, to.optimizer_in_backward);
  toggled("--paged-optimizer", from.paged_optimizer, to.paged_optimizer);
  toggled("--activation-offload", from.activation_offload, to.activation_offload);
  toggled("--gradient-as-bucket-view", from.gradient_as_bucket_view, to.gradient_as_bucket_view);
  std::string out;
  for (const auto &x : f)
    out += (out.empty() ? "" : " ") + x;
  return out;
}

std::vector<Candidate> single_changes(const ModelInput &model, const Run &run, const GpuTarget &gpu,
                                      std::optional<double> base_time) {
  std::vector<Candidate> out;
  const Dims d = dims_of(model.arch);
  auto add = [&](Run r, std::string change, std::string cost) {
    auto resolved = resolve_run(model, r, nullptr);
    if (!resolved)
      return;
    r = std::move(resolved).value();
    Candidate c;
    c.run = r;
    c.s.change = std::move(change);
    c.s.flags = flags_between(run, r);
    auto m = estimate_memory(model, r, gpu);
    c.s.device_bytes = m.device;
    c.s.fits = fits_on(m, gpu);
    auto t = per_sample_seconds(model, r, gpu);
    if (t && base_time && *base_time > 0)
      c.s.relative_time = *t / *base_time;
    c.s.extra_gpus = r.world() - run.world();
    c.s.alters_training = r.lora() != run.lora() || r.qlora != run.qlora;
    c.s.cost = std::move(cost);
    out.push_back(std::move(c));
  };

  if (run.mode == Mode::train) {
    if (run.batch > 1) {
      // The largest micro-batch that fits, or 1 (still lighter) when none does.
      // Sized with accumulation on: the gradients then live through every micro-batch.
      Run accumulating = run;
      accumulating.grad_accum = std::max<std::int64_t>(2, run.grad_accum);
      auto b = std::max<std::int64_t>(1, max_micro_batch(model, accumulating, gpu).value_or(0));
      if (b < run.batch) {
        // The same samples per optimizer step: the fewest accumulation steps that divide them
        // into micro-batches of at most b (a prime count ends at micro-batches of 1).
        const std::int64_t samples = run.batch * run.grad_accum;
        std::int64_t accum = (samples + b - 1) / b;
        while (samples % accum != 0)
          ++accum;
        Run r = run;
        r.batch = samples / accum;
        r.grad_accum = accum;
        add(r, fmt::format("micro-batch {} with gradient accumulation {}", r.batch, r.grad_accum),
            "same samples per optimizer step; smaller GEMMs may use the GPU less well");
      }
    }
    if (run.precision == Precision::fp32 || run.precision == Precision::tf32) {
      Run r = run;
      r.precision = gpu.bf16_flops ? Precision::bf16_amp : Precision::fp16_amp;
      add(r, fmt::format("mixed precision ({})", name(r.precision)),
          "16-bit activations and tensor-core speed; fp16 needs loss scaling");
    }
    const bool unet = model.arch.family == model::ModelFamily::unet;
    const bool cnn = model.arch.family == model::ModelFamily::cnn;
    if ((unet || cnn) && run.checkpointing != Checkpointing::full) {
      Run r = run;
      r.checkpointing = Checkpointing::full;
      add(r,
          unet ? "full activation checkpointing (every ResNet and attention block)"
               : "full activation checkpointing (every residual block)",
          "one more forward pass in backward (about +33% compute)");
    }
    if (is_transformer(model.arch.family)) {
      // Eager attention keeps the s^2 scores (Gemma 2's and gpt-oss' default): flash-attention
      // keeps none (FlashAttention-2 and 3 run from compute capability 8.0).
      if (run.attention == Attention::eager && (gpu.cc_major() == 0 || gpu.cc_major() >= 8)) {
        Run r = run;
        r.attention = Attention::flash;
        r.attention_given = true;
        add(r, "flash-attention (attn_implementation=\"flash_attention_2\"): no s^2 scores",
            "the flash-attn package or a kernels-hub build; the same attention");
      }
      if (run.checkpointing == Checkpointing::none) {
        Run r = run;
        r.checkpointing = Checkpointing::selective;
        add(r, "selective activation recomputation (attention core)",
            "recomputes the attention core in backward");
      }
      if (run.checkpointing != Checkpointing::full) {
        Run r = run;
        r.checkpointing = Checkpointing::full;
        add(r, "full activation checkpointing",
            "one more forward pass in backward (about +33% compute)");
      }
    }
    if (!run.lora() && (run.optimizer == Optimizer::adam || run.optimizer == Optimizer::adamw)) {
      Run r = run;
      r.optimizer = Optimizer::adamw_8bit;
      add(r, "8-bit AdamW (bitsandbytes)",
          "2 bytes of state per parameter instead of 8; small quality risk");
    }
    // The memory options of the frameworks themselves; resolve_run refuses each where it does not
    // apply (the model, the strategy, accumulation), and suggest() drops those that save nothing.
    // Not the paged optimizer: it absorbs spikes, and states paged every step cost a time this
    // model does not have.
    if (run.loss == Loss::standard) {
      Run r = run;
      r.loss = Loss::fused;
      add(r, "fused cross-entropy (Liger-Kernel, Cut-CE): no full-vocabulary fp32 logits",
          "a kernel library in the training script; the same loss");
    }
    if (!run.optimizer_in_backward && run.grad_accum == 1) {
      Run r = run;
      r.optimizer_in_backward = true;
      add(r, "optimizer step fused into backward (torchtune optimizer_in_bwd)",
          "each gradient is freed at once: no gradient accumulation, no gradient clipping");
    }
    if (!run.activation_offload) {
      Run r = run;
      r.activation_offload = true;
      add(r, "activation offloading to host memory (torchtune)",
          "saved activations cross PCIe twice per step (not modelled in the time)");
    }
    if (!run.gradient_as_bucket_view && run.strategy == Strategy::ddp && run.dp() > 1) {
      Run r = run;
      r.gradient_as_bucket_view = true;
      add(r, "DDP gradient_as_bucket_view=True", "none: the gradients are the buckets' views");
    }
    if (run.dp() > 1 && !run.lora() && run.strategy != Strategy::fsdp) {
      for (Strategy s : {Strategy::zero1, Strategy::zero2, Strategy::zero3}) {
        if (static_cast<int>(s) <= static_cast<int>(run.strategy))
          continue; // the enum lists ddp, zero1, zero2, zero3 in order of sharding
        Run r = run;
        r.strategy = s;
        add(r, fmt::format("ZeRO stage {}", static_cast<int>(s)),
            s == Strategy::zero3 ? "1.5x the data-parallel communication volume (ZeRO paper)"
                                 : "same communication volume as DDP (ZeRO paper)");
      }
    }
    // More GPUs: sharded states shrink with the data-parallel degree; when that is not enough,
    // the same with full checkpointing (activations do not shrink with more data-parallel GPUs).
    for (bool ckpt : {false, true}) {
      if (ckpt && ((!is_transformer(model.arch.family) && !unet && !cnn) ||
                   run.checkpointing == Checkpointing::full))
        break;
      Run r = run;
      if (r.strategy == Strategy::ddp && !run.lora())
        r.strategy = Strategy::zero3;
      if (ckpt)
        r.checkpointing = Checkpointing::full;
      bool found = false;
      for (int mult = 2; mult <= 1024 && !found; mult *= 2) {
        r.gpus = run.gpus * mult;
        if (r.gpus > 8 && run.gpus <= 8) {
          r.gpus = 8;
          r.nodes = run.nodes * run.gpus * mult / 8;
        }
        if (fits_on(estimate_memory(model, r, gpu), gpu)) {
          add(r,
              fmt::format("{} GPUs ({} per node x {} node{}) with {}{}", r.world(), r.gpus, r.nodes,
                          r.nodes > 1 ? "s" : "", name(r.strategy),
                          ckpt ? " and full checkpointing" : ""),
              "more hardware; communication across GPUs (not modelled in the time)");
          found = true;
        }
      }
      if (found)
        break;
    }
    if (is_transformer(model.arch.family)) {
      for (int tp : {2, 4, 8}) {
        if (d.heads > 0 && d.heads % tp != 0)
          continue;
        Run r = run;
        r.tp = run.tp * tp;
        r.gpus = run.gpus * tp;
        auto m = estimate_memory(model, r, gpu);
        if (fits_on(m, gpu)) {
          add(r, fmt::format("tensor parallelism {} over {} GPUs", r.tp, r.world()),
              "per-layer all-reduces: needs NVLink-class links between the GPUs");
          break;
        }
      }
      const auto layers = std::max(d.layers, d.decoder_layers);
      for (int pp : {2, 4, 8}) {
        if (layers % pp != 0)
          continue;
        Run r = run;
        r.pp = run.pp * pp;
        r.gpus = run.gpus * pp;
        r.grad_accum = std::max<std::int64_t>(run.grad_accum, 4 * r.pp);
        auto m = estimate_memory(model, r, gpu);
        if (fits_on(m, gpu)) {
          add(r,
              fmt::format("pipeline parallelism {} over {} GPUs, {} micro-batches", r.pp, r.world(),
                          r.grad_accum),
              "pipeline bubble (p-1)/m of the step");
          break;
        }
      }
    }
    if (!run.lora() && run.offload == Offload::none) {
      Run r = run;
      if (r.strategy == Strategy::ddp)
        r.strategy = Strategy::zero2;
      r.offload = Offload::optimizer;
      add(r, fmt::format("optimizer offload to the CPU ({})", name(r.strategy)),
          "the optimizer step runs on the CPU; gradients cross PCIe every step (slower, not "
          "modelled in the time)");
      if (r.strategy == Strategy::zero3 || r.strategy == Strategy::fsdp) {
        r.offload = Offload::params;
        add(r, fmt::format("parameter and optimizer offload ({})", name(r.strategy)),
            "parameters stream over PCIe every forward and backward (much slower)");
      }
    }
    if (!run.lora() && is_transformer(model.arch.family)) {
      Run r = run;
      r.lora_rank = 16;
      add(r, "LoRA rank 16 (frozen base)",
          "trains adapters only: a different (parameter-efficient) fine-tune");
      r.qlora = true;
      add(r, "QLoRA (4-bit NF4 base, LoRA rank 16)",
          "dequantisation in every matmul (slower than LoRA); a 4-bit base");
    } else if (run.lora() && !run.qlora && !model.arch.stored_quant) {
      Run r = run;
      r.qlora = true;
      add(r, "QLoRA (4-bit NF4 base)", "dequantisation in every matmul (slower than LoRA)");
    }
  } else {
    for (Quant q : {Quant::int8, Quant::int4}) {
      if (static_cast<int>(q) <= static_cast<int>(run.quant) || model.arch.stored_quant ||
          !is_transformer(model.arch.family))
        continue;
      Run r = run;
      r.quant = q;
      add(r, fmt::format("{} weights", name(q)),
          "quantised weights (bitsandbytes); some quality loss");
    }
    if (run.concurrency > 1) {
      Run r = run;
      r.concurrency = std::max<std::int64_t>(1, run.concurrency / 2);
      add(r, fmt::format("{} concurrent requests", r.concurrency), "less throughput");
    }
    for (int tp : {2, 4, 8}) {
      if (d.heads > 0 && d.heads % tp != 0)
        continue;
      Run r = run;
      r.tp = run.tp * tp;
      r.gpus = std::max(run.gpus, r.tp * r.pp);
      auto m = estimate_memory(model, r, gpu);
      if (fits_on(m, gpu)) {
        add(r, fmt::format("tensor parallelism {}", r.tp), "needs NVLink-class links");
        break;
      }
    }
  }
  return out;
}

bool adds_hardware(const Run &a, const Run &b) {
  return b.world() > a.world();
}

} // namespace

std::vector<Suggestion> suggest(const ModelInput &model, const Run &run, const GpuTarget &gpu) {
  const auto base_time = per_sample_seconds(model, run, gpu);
  const std::uint64_t base_bytes = estimate_memory(model, run, gpu).device;
  std::vector<Suggestion> out;
  for (auto &c : single_changes(model, run, gpu, base_time))
    if (c.s.device_bytes < base_bytes) // a change that saves nothing here is noise
      out.push_back(std::move(c.s));
  if (std::none_of(out.begin(), out.end(), [](const Suggestion &s) { return s.fits; })) {
    // No single change is enough: combine them greedily on the same GPUs, each time taking the
    // change that leaves the least memory, until it fits.
    Run cur = run;
    std::vector<std::string> steps;
    std::uint64_t cur_bytes = base_bytes;
    bool fits = false;
    for (int i = 0; i < 6 && !fits; ++i) {
      std::optional<Candidate> best;
      for (auto &c : single_changes(model, cur, gpu, base_time))
        if (!adds_hardware(run, c.run) && (!best || c.s.device_bytes < best->s.device_bytes))
          best = std::move(c);
      if (!best || best->s.device_bytes >= cur_bytes)
        break;
      cur = best->run;
      cur_bytes = best->s.device_bytes;
      fits = best->s.fits;
      steps.push_back(best->s.change);
    }
    if (steps.size() > 1) {
      Suggestion s;
      for (const auto &st : steps)
        s.change += (s.change.empty() ? "" : " + ") + st;
      s.flags = flags_between(run, cur);
      s.alters_training = cur.lora() != run.lora();
      s.device_bytes = cur_bytes;
      s.fits = fits;
      auto t = per_sample_seconds(model, cur, gpu);
      if (t && base_time && *base_time > 0)
        s.relative_time = *t / *base_time;
      s.cost = "the costs of each change together";
      out.push_back(std::move(s));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Suggestion &a, const Suggestion &b) {
    if (a.fits != b.fits)
      return a.fits;
    if ((a.extra_gpus > 0) != (b.extra_gpus > 0))
      return a.extra_gpus <= 0; // changes on the same GPUs before buying more
    if (a.alters_training != b.alters_training)
      return !a.alters_training; // the same training before a parameter-efficient one
    double ta = a.relative_time.value_or(2.0), tb = b.relative_time.value_or(2.0);
    if (ta != tb)
      return ta < tb;
    return a.device_bytes < b.device_bytes;
  });
  return out;
}

ModelInput as_transformers_builds(ModelInput in, const Run &run) {
  if (in.checkpoint || in.weights_only || !in.arch.lm_head || in.arch.tied_embeddings)
    return in;
  const auto since = model::tie_forced_since(in.arch.hf_model_type);
  if (!since)
    return in;
  if (run.transformers_version.empty()) {
    in.assumptions.push_back(fmt::format(
        "lm_head untied, as tie_word_embeddings says; transformers {} and later tie it to the "
        "embedding for {} whatever the config says (--transformers VERSION decides)",
        *since, in.arch.hf_model_type));
    return in;
  }
  if (compare_versions(run.transformers_version, *since) < 0)
    return in;
  const std::int64_t untied = in.params;
  in.arch.tied_embeddings = true;
  in.params = model::derive_params(in.arch);
  in.assumptions.push_back(fmt::format(
      "lm_head tied to the embedding: transformers {} ties it for {} whatever tie_word_embeddings "
      "says (since {}; data/model_types.json \"tie_forced\"): {} parameters, not {}",
      run.transformers_version, in.arch.hf_model_type, *since, group_digits(in.params),
      group_digits(untied)));
  return in;
}

FitReport fit(const ModelInput &given, const Run &run, const std::vector<GpuTarget> &gpus,
              const FitOptions &options, const std::optional<CpuTarget> &cpu) {
  const ModelInput model = as_transformers_builds(given, run);
  FitReport rep;
  rep.model = model;
  rep.run = run;
  for (const auto &g : gpus) {
    GpuFit f;
    f.gpu = g;
    f.memory = estimate_memory(model, run, g);
    if (g.memory_bytes) {
      f.fits = f.memory.device <= *g.memory_bytes;
      f.headroom =
          static_cast<std::int64_t>(*g.memory_bytes) - static_cast<std::int64_t>(f.memory.device);
    }
    f.cannot_run = cannot_run_on(run, g);
    if (!f.cannot_run.empty())
      f.fits = false;
    if (options.max_batch)
      f.max_batch = max_micro_batch(model, run, g);
    f.time = estimate_time(model, run, g, options.host);
    if (options.suggestions && f.fits && !*f.fits && f.cannot_run.empty())
      f.suggestions = suggest(model, run, g);
    rep.gpus.push_back(std::move(f));
  }
  if (cpu)
    rep.cpu = estimate_time_cpu(model, run, *cpu, options.host);
  return rep;
}

GpuTarget gpu_target(const kb::GpuSpec &spec) {
  GpuTarget g;
  g.name = spec.name;
  g.memory_bytes = spec.memory_bytes;
  g.compute_capability = spec.compute_capability;
  g.fp32_flops = spec.fp32_flops;
  g.tf32_flops = spec.tf32_flops;
  g.fp16_flops = spec.fp16_flops;
  g.bf16_flops = spec.bf16_flops;
  g.fp8_flops = spec.fp8_flops;
  g.memory_bandwidth_bytes_per_s = spec.memory_bandwidth_bytes_per_s;
  g.origin = "catalog";
  g.architecture = spec.architecture;
  g.form_factor = spec.form_factor;
  g.pcie_gen = spec.pcie_gen;
  g.pcie_lanes = spec.pcie_lanes;
  g.nvlink_bytes_per_s = spec.nvlink_bytes_per_s;
  return g;
}

std::vector<GpuTarget> gpu_targets(const Snapshot &snap, const kb::KnowledgeBase &kb) {
  std::vector<GpuTarget> out;
  for (const auto &gpu : snap.gpus) {
    std::optional<std::uint64_t> memory;
    std::string name = gpu.name.value_or(gpu.bdf);
    std::string cc;
    if (gpu.nvml) {
      memory = gpu.nvml->memory_total_bytes;
      if (gpu.nvml->name)
        name = *gpu.nvml->name;
      cc = gpu.nvml->compute_capability.value_or("");
    } else if (gpu.amd) {
      memory = gpu.amd->vram_total_bytes;
    }
    const kb::GpuSpec *spec = kb.find_gpu_by_pci(strip0x(gpu.vendor_id), strip0x(gpu.device_id));
    if (!spec)
      spec = kb.find_gpu(name);
    // An integrated or unknown display controller: nothing to size against. A GPU its driver
    // answers for stays, its memory unknown where the driver cannot say (GB10's unified memory,
    // NVML "not supported"): its verdict is then unknown, not "no GPU".
    if (!memory && !spec && !gpu.nvml && !gpu.amd)
      continue;
    GpuTarget t = spec ? gpu_target(*spec) : GpuTarget{};
    t.name = name;
    if (memory)
      t.memory_bytes = memory; // what the driver reports beats the catalog's nominal size
    if (!cc.empty())
      t.compute_capability = cc;
    t.origin = "this machine (" + gpu.bdf + ")";
    // The host link as this machine has it: the slowest hop on the way (its raw rate; an eGPU's
    // Thunderbolt tunnel is measured lower, links.csv), rather than the card's own capability.
    if (gpu.behind_thunderbolt.value_or(false)) {
      if (const auto *tb = kb.find_link("Thunderbolt 3"); tb && tb->measured_h2d_bytes_per_s) {
        t.host_link_bytes_per_s = tb->measured_h2d_bytes_per_s;
        t.host_link = "Thunderbolt (measured typical, links.csv)";
      }
    } else if (gpu.narrowest_gts && gpu.narrowest_width) {
      if (auto bps = pcie_bytes_per_s(*gpu.narrowest_gts, *gpu.narrowest_width)) {
        t.host_link_bytes_per_s = *bps;
        t.host_link = fmt::format("PCIe {:g} GT/s x{}", *gpu.narrowest_gts, *gpu.narrowest_width);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<Run> with_torch(Run run, std::string_view version, const kb::KnowledgeBase &kb) {
  const auto v = kb::parse_torch_version(version);
  if (v.release.empty() || parse_version(v.release).parts.empty())
    return make_error("--torch \"" + std::string(version) +
                      "\": expected a PyTorch version such as 2.5.1 or 1.13.1+cu117");
  if (v.local == "cpu" || v.local.starts_with("rocm"))
    return make_error("--torch \"" + std::string(version) +
                      "\": a CPU or ROCm build has no CUDA context to size; give a CUDA build "
                      "such as " +
                      v.release + "+cu121");
  run.torch_version = v.release;
  run.cuda_version.clear();
  if (v.local.starts_with("cu") && v.local.size() >= 4) { // cu117 -> 11.7, cu121 -> 12.1
    auto digits = v.local.substr(2);
    run.cuda_version = digits.substr(0, digits.size() - 1) + "." + digits.substr(digits.size() - 1);
  } else if (const auto *rel = kb.torch_release(v.release)) {
    for (const auto &var : rel->variants)
      if (var.pypi_default && !var.cuda.empty())
        run.cuda_version = var.cuda;
  }
  return run;
}

Run with_machine_stack(Run run, const Snapshot &snap) {
  const PythonEnv *chosen = nullptr;
  for (const auto &env : snap.software.python_envs)
    if (env.torch && env.torch->version &&
        (!chosen || (env.active.value_or(false) && !chosen->active.value_or(false))))
      chosen = &env;
  if (chosen) {
    run.torch_version = kb::parse_torch_version(*chosen->torch->version).release;
    run.cuda_version = chosen->torch->cuda.value_or("");
    // transformers from the same environment; a dist-info name that is not a version stays
    // unknown rather than failing --transformers' check.
    if (run.transformers_version.empty() && chosen->transformers &&
        is_transformers_version(*chosen->transformers))
      run.transformers_version = *chosen->transformers;
  }
  if (auto it = snap.software.env.find("CUDA_MODULE_LOADING"); it != snap.software.env.end()) {
    run.module_loading = it->second;
    for (auto &c : run.module_loading)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return run;
}

Result<ModelInput> model_from_catalog(std::string_view name, const kb::KnowledgeBase &kb) {
  const model::ModelArch *m = kb.find_model(name);
  if (!m) {
    std::vector<std::pair<std::size_t, std::string>> near;
    for (const auto &c : kb.models)
      near.emplace_back(edit_distance(lower(name), lower(c.name)), c.name);
    std::sort(near.begin(), near.end());
    std::string list;
    for (std::size_t i = 0; i < near.size() && i < 3; ++i)
      list += (i ? ", " : "") + near[i].second;
    return make_error(fmt::format("no model named \"{}\" in the catalog{}; give a catalog name "
                                  "(`dlrig kb models`), a config.json, a .safetensors file or "
                                  "--params N --family F",
                                  name, list.empty() ? "" : " (nearest: " + list + ")"));
  }
  ModelInput in;
  in.arch = *m;
  in.params = model::derive_params(*m);
  in.origin = "catalog";
  if (in.params <= 0)
    return make_error(fmt::format("catalog model {} has no derivable parameter count in this "
                                  "build; give its config.json or --params",
                                  m->name));
  return in;
}

} // namespace dlrig::fit

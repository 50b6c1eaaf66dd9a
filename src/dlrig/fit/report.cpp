#include "dlrig/fit/report.hpp"

#include "dlrig/fit/memory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace dlrig::fit {
namespace {

Json breakdown_json(const StepBreakdown &b) {
  return {{"gemm_s", b.gemm},
          {"attention_s", b.attention},
          {"memory_bound_s", b.memory},
          {"launch_s", b.launch},
          {"pipeline_bubble_s", b.bubble},
          {"communication_s", b.communication},
          {"host_link_s", b.host_link},
          {"input_s", b.input}};
}

Json op_json(const OpTime &o) {
  return {{"name", o.name},
          {"phase", std::string(name(o.phase))},
          {"kind", std::string(name(o.kind))},
          {"bound", o.bound},
          {"seconds", o.seconds},
          {"flops", o.flops},
          {"bytes", o.bytes},
          {"kernels", o.kernels}};
}

Json time_json(const TimeEstimate &t) {
  Json j;
  j["peak_flops"] = t.peak_flops;
  j["throughput_source"] = t.throughput_source;
  j["basis"] = t.basis;
  j["mfu"] = t.mfu;
  j["breakdown"] = t.breakdown ? breakdown_json(*t.breakdown) : Json(nullptr);
  j["bottleneck"] = t.bottleneck.empty() ? Json(nullptr) : Json(t.bottleneck);
  Json slowest = Json::array();
  for (const auto &o : t.top_ops)
    slowest.push_back(op_json(o));
  j["slowest_ops"] = slowest;
  Json every = Json::array();
  for (const auto &o : t.ops)
    every.push_back(op_json(o));
  j["ops"] = every;
  j["seconds_total"] = t.seconds_total;
  j["decode_tokens_per_s_per_stream"] = t.decode_tokens_per_s_per_stream;
  j["flops_per_step"] = t.flops_per_step;
  j["seconds_per_step"] = t.seconds_per_step;
  j["tokens_per_s"] = t.tokens_per_s;
  j["samples_per_s"] = t.samples_per_s;
  j["seconds_per_epoch"] = t.seconds_per_epoch;
  j["prefill_s"] = t.prefill_s;
  j["decode_tokens_per_s"] = t.decode_tokens_per_s;
  j["host_link_bytes_per_s"] = t.host_link_bytes_per_s;
  j["load_s"] = t.load_s;
  j["host_link_s_per_step"] = t.link_s_per_step;
  j["notes"] = t.notes;
  return j;
}

std::string verdict(const GpuFit &g) {
  if (!g.cannot_run.empty())
    return "does-not-run";
  if (!g.fits)
    return "unknown";
  return *g.fits ? "fits" : "does-not-fit";
}

std::string gb(std::uint64_t v) {
  return show_bytes_si(OptU64(v));
}

std::string signed_gb(std::int64_t v) {
  if (v >= 0)
    return gb(static_cast<std::uint64_t>(v));
  return "-" + gb(static_cast<std::uint64_t>(-v));
}

std::string run_line(const FitReport &r) {
  const auto &run = r.run;
  std::string s = fmt::format("{}, {}", name(run.mode), name(run.precision));
  if (run.mode == Mode::train) {
    s += fmt::format(", {}", name(run.optimizer));
    if (run.lora())
      s += fmt::format(", {} rank {} on {}", run.qlora ? "QLoRA" : "LoRA", run.lora_rank,
                       run.lora_targets == LoraTargets::qv ? "q, v"
                       : run.lora_targets == LoraTargets::all_linear
                           ? "all linear layers"
                           : fmt::format("{}", fmt::join(run.lora_modules, ", ")));
  } else if (run.quant != Quant::none) {
    s += fmt::format(", {} weights", name(run.quant));
  }
  s += fmt::format(", micro-batch {}", run.batch);
  if (run.seq > 0)
    s += fmt::format(" x {} tokens", run.seq);
  if (run.image_size > 0)
    s += fmt::format(" x {}px", run.image_size);
  if (run.grad_accum > 1)
    s += fmt::format(", grad-accum {}", run.grad_accum);
  if (run.mode == Mode::infer)
    s += fmt::format(", +{} new tokens, {} concurrent", run.max_tokens, run.concurrency);
  s += fmt::format(", {} GPU{}", run.world(), run.world() > 1 ? "s" : "");
  if (run.world() > 1 || run.strategy != Strategy::ddp)
    s += fmt::format(" ({}", name(run.strategy));
  if (run.tp > 1 || run.pp > 1)
    s += fmt::format(", tp {} pp {}", run.tp, run.pp);
  if (run.world() > 1 || run.strategy != Strategy::ddp)
    s += ")";
  if (run.checkpointing != Checkpointing::none)
    s += fmt::format(", checkpointing {}", name(run.checkpointing));
  if (run.offload != Offload::none)
    s += fmt::format(", offload {}", name(run.offload));
  if (run.attention != Attention::sdpa)
    s += fmt::format(", attention {}", name(run.attention));
  if (run.mode == Mode::train) {
    if (run.loss != Loss::standard)
      s += fmt::format(", {} loss", name(run.loss));
    if (run.optimizer_impl && *run.optimizer_impl != OptimizerImpl::foreach)
      s += fmt::format(", {} Adam", name(*run.optimizer_impl));
    if (run.optimizer_in_backward)
      s += ", optimizer in backward";
    if (run.paged_optimizer)
      s += ", paged optimizer";
    if (run.activation_offload)
      s += ", activation offload";
    if (run.gradient_as_bucket_view)
      s += ", gradient_as_bucket_view";
    if (run.channels_last)
      s += ", channels_last";
  }
  if (!run.torch_version.empty())
    s += fmt::format(", torch {}{}", run.torch_version,
                     run.cuda_version.empty() ? "" : " (CUDA " + run.cuda_version + ")");
  if (!run.transformers_version.empty())
    s += ", transformers " + run.transformers_version;
  return s;
}

std::string time_cell(const TimeEstimate &t) {
  if (!t.seconds_per_step)
    return kUnknown;
  return show_duration(*t.seconds_per_step);
}

// "GEMM 61 % · memory-bound 30 % · launch 2 % · communication 7 %"
std::string breakdown_cell(const StepBreakdown &b, double step) {
  std::string out;
  auto part = [&](std::string_view n, std::optional<double> v) {
    if (!v)
      return;
    if (*v <= 0 || step <= 0 || *v / step < 0.005)
      return;
    out += fmt::format("{}{} {:.0f} %", out.empty() ? "" : " · ", n, 100 * *v / step);
  };
  part("GEMM", b.gemm);
  part("attention", b.attention);
  part("memory-bound", b.memory);
  part("launch", b.launch);
  part("bubble", b.bubble);
  part("communication", b.communication);
  part("host link (overlapped)", b.host_link);
  part("input (overlapped)", b.input);
  return out;
}

void time_rows(Table &v, const TimeEstimate &tm, Mode mode) {
  if (mode == Mode::train) {
    v.add({"time per step", time_cell(tm)});
    if (tm.breakdown && tm.seconds_per_step)
      v.add({"where the time goes", breakdown_cell(*tm.breakdown, *tm.seconds_per_step)});
    if (!tm.bottleneck.empty())
      v.add({"bottleneck", tm.bottleneck});
    if (tm.mfu)
      v.add({"MFU", fmt::format("{:.0f} % (model FLOPs / time x peak)", *tm.mfu * 100)});
    if (tm.tokens_per_s)
      v.add({"tokens per second", show_si(*tm.tokens_per_s)});
    if (tm.samples_per_s)
      v.add({"samples per second", fmt::format("{:.2f}", *tm.samples_per_s)});
    if (tm.seconds_per_epoch)
      v.add({"time per epoch", show_duration(*tm.seconds_per_epoch)});
    if (tm.seconds_total)
      v.add({"time for all epochs", show_duration(*tm.seconds_total)});
  } else {
    v.add({"time to first token", tm.prefill_s ? show_duration(*tm.prefill_s) : kUnknown});
    if (tm.load_s && tm.host_link_bytes_per_s)
      v.add(
          {"model load", fmt::format("{} (the weights over the host link at {:.2f} GB/s, once)",
                                     show_duration(*tm.load_s), *tm.host_link_bytes_per_s / 1e9)});
    if (tm.decode_tokens_per_s)
      v.add({"decode", fmt::format("{} tokens/s per stream, {} tokens/s in all",
                                   show_si(tm.decode_tokens_per_s_per_stream.value_or(0)),
                                   show_si(*tm.decode_tokens_per_s))});
    if (!tm.bottleneck.empty())
      v.add({"bottleneck", tm.bottleneck});
  }
  for (const auto &b : tm.basis)
    v.add({"rate", b});
}

} // namespace

std::string show_duration(double s) {
  if (s < 1e-3)
    return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1)
    return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120)
    return fmt::format("{:.2f} s", s);
  if (s < 7200)
    return fmt::format("{:.1f} min", s / 60);
  if (s < 172800)
    return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

Json to_json(const FitReport &r) {
  Json j;
  const auto &m = r.model;
  j["model"] = {{"name", m.arch.name},
                {"family", std::string(family_name(m.arch.family))},
                {"params", m.params},
                {"origin", m.origin},
                {"source", m.arch.source},
                {"assumptions", m.assumptions}}; // the model's, as the text's "assumed" rows
  j["model"]["stored_quantization"] = nullptr;
  if (const auto &q = m.arch.stored_quant) {
    const auto per_weight = stored_bytes_per_weight(*q);
    j["model"]["stored_quantization"] = {
        {"method", q->method},
        {"bits", q->bits > 0 ? Json(q->bits) : Json(nullptr)},
        {"group_size", q->group_size > 0 ? Json(q->group_size) : Json(nullptr)},
        {"double_quant", q->double_quant},
        {"bytes_per_weight", per_weight ? Json(*per_weight) : Json(nullptr)}};
  }
  // The weights --quant/--qlora quantise (bitsandbytes' nn.Linear weights but the head).
  j["model"]["quantized_params"] = nullptr;
  if ((r.run.quant != Quant::none || r.run.qlora) && !m.arch.stored_quant)
    j["model"]["quantized_params"] = std::llround(quantized_params(m, r.run));
  // The trainable LoRA adapters (PEFT's "trainable params" less any modules_to_save).
  j["model"]["adapter_params"] = nullptr;
  if (r.run.lora())
    j["model"]["adapter_params"] = std::llround(adapter_params(m, r.run));
  if (m.checkpoint)
    j["model"]["checkpoint"] = {{"files", m.checkpoint->files},
                                {"tensors", m.checkpoint->tensors.size()},
                                {"params", m.checkpoint->params},
                                {"weight_bytes", m.checkpoint->weight_bytes}};
  const auto &run = r.run;
  j["run"] = {
      {"mode", name(run.mode)},
      {"batch", run.batch},
      {"seq", run.seq > 0 ? Json(run.seq) : Json(nullptr)},
      {"image_size", run.image_size > 0 ? Json(run.image_size) : Json(nullptr)},
      {"precision", name(run.precision)},
      {"optimizer", name(run.optimizer)},
      {"checkpointing", name(run.checkpointing)},
      {"grad_accum", run.grad_accum},
      {"gpus_per_node", run.gpus},
      {"nodes", run.nodes},
      {"world", run.world()},
      {"strategy", name(run.strategy)},
      {"tp", run.tp},
      {"pp", run.pp},
      {"dp", run.dp()},
      {"offload", name(run.offload)},
      {"lora_rank", run.lora_rank},
      {"qlora", run.qlora},
      {"lora_targets", name(run.lora_targets)},
      {"lora_modules", run.lora_modules},
      {"attention", name(run.attention)},
      {"quant", name(run.quant)},
      {"loss", name(run.loss)},
      {"optimizer_impl", run.optimizer_impl ? Json(name(*run.optimizer_impl)) : Json(nullptr)},
      {"optimizer_in_backward", run.optimizer_in_backward},
      {"paged_optimizer", run.paged_optimizer},
      {"activation_offload", run.activation_offload},
      {"gradient_as_bucket_view", run.gradient_as_bucket_view},
      {"channels_last", run.channels_last},
      {"reduce_bucket_size", run.reduce_bucket_size},
      {"allgather_bucket_size", run.allgather_bucket_size},
      {"stage3_prefetch_bucket_size", run.stage3_prefetch_bucket_size},
      {"stage3_max_live_parameters", run.stage3_max_live_parameters},
      {"torch", run.torch_version.empty() ? Json(nullptr) : Json(run.torch_version)},
      {"cuda", run.cuda_version.empty() ? Json(nullptr) : Json(run.cuda_version)},
      {"transformers",
       run.transformers_version.empty() ? Json(nullptr) : Json(run.transformers_version)},
      {"cuda_module_loading",
       run.module_loading.empty() ? Json(nullptr) : Json(run.module_loading)},
      {"max_tokens", run.max_tokens},
      {"concurrency", run.concurrency},
      {"dataset_tokens", run.dataset_tokens},
      {"samples", run.samples}};
  j["assumptions"] = r.assumptions;
  j["no_local_gpu"] = r.no_local_gpu;
  j["gpus"] = Json::array();
  for (const auto &g : r.gpus) {
    const auto &e = g.memory;
    Json gj;
    gj["name"] = g.gpu.name;
    gj["origin"] = g.gpu.origin;
    gj["memory_bytes"] = g.gpu.memory_bytes;
    gj["total_bytes"] = e.device;
    gj["allocated_bytes"] = e.allocated;
    gj["reserved_bytes"] = e.reserved;
    gj["device_bytes"] = e.device;
    gj["breakdown"] = {{"weights", e.weights},     {"gradients", e.gradients},
                       {"optimizer", e.optimizer}, {"activations", e.activations},
                       {"kv_cache", e.kv_cache},   {"overhead", e.overhead}};
    Json parts = Json::array();
    for (const auto &o : e.overhead_parts)
      parts.push_back({{"name", o.name}, {"bytes", o.bytes}, {"level", level_name(o.level)}});
    gj["overhead_detail"] = parts;
    gj["peak_phase"] = e.peak_phase;
    gj["host_bytes"] = e.host_bytes;
    gj["paged_bytes"] = e.paged_bytes;
    gj["verdict"] = verdict(g);
    gj["cannot_run"] = g.cannot_run.empty() ? Json(nullptr) : Json(g.cannot_run);
    gj["judged_at"] = "device";
    gj["headroom_bytes"] = g.headroom;
    gj["max_batch"] = g.max_batch;
    gj["notes"] = e.notes;
    gj["time"] = time_json(g.time);
    Json sj = Json::array();
    for (const auto &s : g.suggestions)
      sj.push_back({{"change", s.change},
                    {"flags", s.flags},
                    {"device_bytes", s.device_bytes},
                    {"fits", s.fits},
                    {"relative_time", s.relative_time},
                    {"extra_gpus", s.extra_gpus},
                    {"alters_training", s.alters_training},
                    {"cost", s.cost}});
    gj["suggestions"] = sj;
    j["gpus"].push_back(std::move(gj));
  }
  j["cpu"] = r.cpu ? time_json(*r.cpu) : Json(nullptr);
  return j;
}

namespace {

Table breakdown_table(const GpuFit &g) {
  const auto &e = g.memory;
  Table t;
  t.title = fmt::format("Memory per GPU on {} ({}, {}); peak in {}", g.gpu.name,
                        show_bytes_si(g.gpu.memory_bytes), g.gpu.origin, e.peak_phase);
  t.header = {"component", "bytes", "level"};
  t.add({"weights", gb(e.weights), "allocated"});
  t.add({"gradients", gb(e.gradients), "allocated"});
  t.add({"optimizer", gb(e.optimizer), "allocated"});
  t.add({"activations", gb(e.activations), "allocated"});
  t.add({"kv_cache", gb(e.kv_cache), "allocated"});
  for (const auto &o : e.overhead_parts)
    t.add({"overhead: " + o.name, gb(o.bytes), std::string(level_name(o.level))});
  t.add({"total allocated", gb(e.allocated), "allocated"});
  t.add({"total reserved", gb(e.reserved), "reserved"});
  t.add({"total as nvidia-smi shows it", gb(e.device), "device"});
  if (e.host_bytes > 0)
    t.add({"host memory (offloaded)", gb(e.host_bytes), "host"});
  if (e.paged_bytes > 0)
    t.add(
        {"paged optimizer states (unified memory, not in the totals)", gb(e.paged_bytes), "paged"});
  return t;
}

} // namespace

std::vector<Table> to_tables(const FitReport &r, bool summary) {
  std::vector<Table> out;
  Table head;
  head.title = "dlrig fit";
  head.add({"model", fmt::format("{} ({} parameters{}, {})", r.model.arch.name,
                                 show_si(static_cast<double>(r.model.params)),
                                 r.model.arch.stored_quant
                                     ? ", stored " + model::describe(*r.model.arch.stored_quant)
                                     : "",
                                 r.model.origin)});
  head.add({"run", run_line(r)});
  for (const auto &a : r.assumptions)
    head.add({"assumed", a});
  for (const auto &a : r.model.assumptions)
    head.add({"assumed", a});
  out.push_back(head);

  if (summary) {
    Table t;
    t.title = "Per-GPU peak on every catalog GPU (as nvidia-smi would show it)";
    t.header = {"GPU", "memory", "needs", "verdict", "headroom", "max batch", "step", "throughput"};
    for (const auto &g : r.gpus) {
      std::string thr = kUnknown;
      if (g.time.decode_tokens_per_s)
        thr = show_si(*g.time.decode_tokens_per_s) + " tok/s decode";
      else if (g.time.tokens_per_s)
        thr = show_si(*g.time.tokens_per_s) + " tok/s";
      else if (g.time.samples_per_s)
        thr = fmt::format("{:.1f} samples/s", *g.time.samples_per_s);
      t.add({g.gpu.name, show_bytes_si(g.gpu.memory_bytes), gb(g.memory.device), verdict(g),
             g.headroom ? signed_gb(*g.headroom) : kUnknown,
             g.max_batch ? std::to_string(*g.max_batch) : kUnknown, time_cell(g.time), thr});
    }
    out.push_back(t);
    return out;
  }

  if (r.no_local_gpu && !r.gpus.empty()) {
    // The breakdown once, on the smallest catalog GPU it fits (the largest when it fits none),
    // and the GPUs it fits, smallest first.
    std::vector<const GpuFit *> fit, short_of;
    std::vector<const GpuFit *> cannot;
    for (const auto &g : r.gpus)
      (!g.cannot_run.empty() ? cannot : g.fits.value_or(false) ? fit : short_of).push_back(&g);
    auto by_memory = [](const GpuFit *a, const GpuFit *b) {
      return a->gpu.memory_bytes.value_or(0) < b->gpu.memory_bytes.value_or(0);
    };
    std::stable_sort(fit.begin(), fit.end(), by_memory);
    std::stable_sort(short_of.begin(), short_of.end(), by_memory);
    const GpuFit &shown = !fit.empty()        ? *fit.front()
                          : !short_of.empty() ? *short_of.back()
                                              : r.gpus.back();
    out.push_back(breakdown_table(shown));
    Table f;
    f.title = "GPUs it fits (this machine has no GPU: sized against the catalog)";
    std::string names;
    for (std::size_t i = 0; i < fit.size() && i < 5; ++i)
      names += fmt::format("{}{} ({})", i ? ", " : "", fit[i]->gpu.name,
                           show_bytes_si(fit[i]->gpu.memory_bytes));
    if (fit.size() > 5)
      names += fmt::format(" and {} more with more memory", fit.size() - 5);
    f.add({"fits", fit.empty() ? "none of the " + std::to_string(r.gpus.size()) + " catalog GPUs"
                               : fmt::format("{} of {} catalog GPUs: {}", fit.size(), r.gpus.size(),
                                             names)});
    if (!short_of.empty())
      f.add({"does not fit", fmt::format("{} GPUs, up to {}", short_of.size(),
                                         show_bytes_si(short_of.back()->gpu.memory_bytes))});
    if (!cannot.empty()) // the reason without the GPU it names
      f.add({"does not run", fmt::format("{} GPUs: {}", cannot.size(),
                                         cannot.front()->cannot_run.substr(
                                             0, cannot.front()->cannot_run.find(';')))});
    for (const auto &n : shown.memory.notes)
      f.add({"note", n});
    f.add({"next", "--gpu NAME for one GPU's verdict, time and changes; --all-gpus for the table"});
    out.push_back(f);
  }

  for (const auto &g : r.gpus) {
    if (r.no_local_gpu)
      break;
    const auto &e = g.memory;
    out.push_back(breakdown_table(g));

    Table v;
    v.title = "Verdict";
    if (!g.cannot_run.empty())
      v.add({"verdict", "does not run: " + g.cannot_run});
    else if (!g.fits)
      v.add({"verdict", "unknown: the GPU's memory size is unknown"});
    else if (*g.fits)
      v.add({"verdict", fmt::format("fits, {} to spare (judged as nvidia-smi shows it)",
                                    signed_gb(*g.headroom))});
    else
      v.add({"verdict", fmt::format("does not fit: short by {} (judged as nvidia-smi shows it)",
                                    gb(static_cast<std::uint64_t>(-*g.headroom)))});
    if (g.max_batch)
      v.add({"max micro-batch", *g.max_batch > 0 ? std::to_string(*g.max_batch)
                                                 : "none: not even micro-batch 1 fits"});
    const auto &tm = g.time;
    v.add({"FLOPs per step", show_si(tm.flops_per_step)});
    time_rows(v, tm, r.run.mode);
    for (const auto &n : tm.notes)
      v.add({"note", n});
    for (const auto &n : e.notes)
      v.add({"note", n});
    out.push_back(v);

    if (!g.suggestions.empty()) {
      Table s;
      s.title = "Changes, best first (fits; on the same GPUs before more GPUs; least slowdown; "
                "least memory)";
      s.header = {"change", "flags", "per-GPU peak", "fits", "time per sample", "cost"};
      for (const auto &c : g.suggestions)
        s.add({c.change, c.flags, gb(c.device_bytes), c.fits ? "yes" : "no",
               c.relative_time ? fmt::format("x{:.2f}", *c.relative_time) : std::string(kUnknown),
               c.cost});
      out.push_back(s);
    }
  }
  if (r.cpu) {
    Table c;
    c.title = "The same on this machine's CPU";
    time_rows(c, *r.cpu, r.run.mode);
    if (!r.gpus.empty() && r.gpus.front().time.seconds_per_step && r.cpu->seconds_per_step)
      c.add({"GPU speed-up", fmt::format("x{:.0f}", *r.cpu->seconds_per_step /
                                                        *r.gpus.front().time.seconds_per_step)});
    out.push_back(c);
  }
  return out;
}

namespace {

std::string cell(const std::optional<double> &v) {
  return v ? fmt::format("{}", *v) : std::string();
}
template <class T> std::string cell(const std::optional<T> &v) {
  return v ? std::to_string(*v) : std::string();
}

} // namespace

Table to_csv(const FitReport &r, bool summary) {
  Table t;
  if (summary) {
    t.header = {
        "gpu",       "memory_bytes",     "device_bytes", "verdict",       "headroom_bytes",
        "max_batch", "seconds_per_step", "tokens_per_s", "samples_per_s", "decode_tokens_per_s"};
    for (const auto &g : r.gpus)
      t.add({g.gpu.name, cell(g.gpu.memory_bytes), std::to_string(g.memory.device), verdict(g),
             cell(g.headroom), cell(g.max_batch), cell(g.time.seconds_per_step),
             cell(g.time.tokens_per_s), cell(g.time.samples_per_s),
             cell(g.time.decode_tokens_per_s)});
    return t;
  }
  t.header = {"gpu", "component", "bytes", "level"};
  for (const auto &g : r.gpus) {
    const auto &e = g.memory;
    auto add = [&](const std::string &what, std::uint64_t bytes, std::string_view level) {
      t.add({g.gpu.name, what, std::to_string(bytes), std::string(level)});
    };
    add("weights", e.weights, "allocated");
    add("gradients", e.gradients, "allocated");
    add("optimizer", e.optimizer, "allocated");
    add("activations", e.activations, "allocated");
    add("kv_cache", e.kv_cache, "allocated");
    for (const auto &o : e.overhead_parts)
      add("overhead: " + o.name, o.bytes, level_name(o.level));
    add("total allocated", e.allocated, "allocated");
    add("total reserved", e.reserved, "reserved");
    add("total as nvidia-smi shows it", e.device, "device");
    if (e.host_bytes > 0)
      add("host memory (offloaded)", e.host_bytes, "host");
    if (e.paged_bytes > 0)
      add("paged optimizer states", e.paged_bytes, "paged");
  }
  return t;
}

Report fit_report(const FitReport &r, bool summary) {
  Report rep;
  rep.schema_version = kFitSchemaVersion;
  rep.json = [&r] { return to_json(r); };
  rep.table = [&r, summary](const TextStyle &s) {
    return render(to_tables(r, summary), Format::table, s.width);
  };
  rep.markdown = [&r, summary] { return render(to_tables(r, summary), Format::markdown); };
  rep.csv = [&r, summary] { return std::vector<Table>{to_csv(r, summary || r.no_local_gpu)}; };
  return rep;
}

} // namespace dlrig::fit

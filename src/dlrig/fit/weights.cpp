#include "dlrig/fit/weights.hpp"

#include "dlrig/output/table.hpp"

#include <fmt/format.h>

#include <cmath>

namespace dlrig::fit {

WeightsReport weights_report(const ModelInput &model, const std::vector<GpuTarget> &gpus,
                             const Run &run) {
  WeightsReport r;
  r.model = model.arch.name;
  r.origin = model.origin;
  if (model.checkpoint) {
    r.files = model.checkpoint->files;
    r.params = model.checkpoint->params;
    r.weight_bytes = model.checkpoint->weight_bytes;
    r.params_by_dtype = model.checkpoint->params_by_dtype;
  }
  if (!model.checkpoint) // a config.json fit does not model: its exact count
    r.params = static_cast<std::uint64_t>(model.params);
  r.bytes_16bit = 2 * r.params;
  r.bytes_int8 = r.params;
  r.bytes_int4 = (r.params + 1) / 2;
  if (!model.not_modelled.empty()) { // the shapes are exact: bitsandbytes' and PEFT's counts
    const double p = static_cast<double>(r.params);
    if (run.quant != Quant::none || run.qlora)
      r.quantized_params = static_cast<std::uint64_t>(std::llround(quantized_params(model, run)));
    if (run.quant != Quant::none) {
      r.bytes_quantized = static_cast<std::uint64_t>(
          std::llround(bnb_serving_bytes(p, static_cast<double>(*r.quantized_params), run.quant)));
      r.quant = run.quant;
    }
    if (run.lora())
      r.adapter_params = static_cast<std::uint64_t>(std::llround(adapter_params(model, run)));
  }
  for (const auto &g : gpus) {
    WeightsReport::Gpu out{g.name, g.memory_bytes, std::nullopt};
    if (g.memory_bytes)
      out.weights_fit =
          r.bytes_quantized.value_or(r.weight_bytes.value_or(r.bytes_16bit)) < *g.memory_bytes;
    r.gpus.push_back(std::move(out));
  }
  if (!model.not_modelled.empty()) {
    r.why = fmt::format("{} ({}): layers fit does not model yet; the parameters are exact",
                        model.arch.name, model.arch.hf_model_type);
    r.unknown = model.not_modelled;
    r.not_modelled = true;
    return r;
  }
  r.why = fmt::format("{}: tensor names not recognised; the header alone gives", r.model);
  r.unknown = {
      "activations (training and the prefill working set): need the hidden size, layers and heads",
      "KV cache when serving: needs the layers, key/value heads and head size",
      "training memory (gradients, optimizer states, activations): needs the shapes as well",
      "put the model's config.json beside the checkpoint (or pass it) for the full estimate"};
  return r;
}

Report weights_output(const WeightsReport &r) {
  Report rep;
  rep.json = [&r] {
    Json j;
    j["model"] = {{"name", r.model},
                  {"origin", r.origin},
                  {"files", r.files},
                  {"params", r.params},
                  {"params_by_dtype", r.params_by_dtype},
                  {"quantized_params", r.quantized_params},
                  {"adapter_params", r.adapter_params}};
    j["weights"] = {{"stored_bytes", r.weight_bytes ? Json(*r.weight_bytes) : Json(nullptr)},
                    {"bytes_16bit", r.bytes_16bit},
                    {"bytes_int8", r.bytes_int8},
                    {"bytes_int4", r.bytes_int4},
                    {"bytes_quantized", r.bytes_quantized},
                    {"fit_basis", r.bytes_quantized
                                      ? fmt::format("{} (bitsandbytes)", name(r.quant))
                                  : r.weight_bytes ? "stored"
                                                   : "16-bit"}};
    Json gpus = Json::array();
    for (const auto &g : r.gpus)
      gpus.push_back({{"name", g.name},
                      {"memory_bytes", g.memory_bytes ? Json(*g.memory_bytes) : Json(nullptr)},
                      {"weights_fit", g.weights_fit ? Json(*g.weights_fit) : Json(nullptr)}});
    j["gpus"] = std::move(gpus);
    j["activations_bytes"] = nullptr;
    j["kv_cache_bytes"] = nullptr;
    j["needs_config"] = r.unknown;
    j["why"] = r.why;
    return j;
  };
  auto tables = [&r] {
    std::vector<Table> out;
    Table t;
    t.title = r.why;
    t.add({"parameters (exact)", fmt::format("{}", r.params)});
    for (const auto &[dtype, n] : r.params_by_dtype)
      t.add({fmt::format("  in {}", dtype), fmt::format("{}", n)});
    if (r.weight_bytes)
      t.add({"weights as stored", show_bytes_si(*r.weight_bytes)});
    t.add({"serving weights at 16 bits", show_bytes_si(r.bytes_16bit)});
    t.add({"serving weights, all at int8", show_bytes_si(r.bytes_int8)});
    t.add({"serving weights, all at int4", show_bytes_si(r.bytes_int4)});
    if (r.quantized_params)
      t.add({"weights bitsandbytes quantises", fmt::format("{}", *r.quantized_params)});
    if (r.bytes_quantized)
      t.add({fmt::format("serving weights, --quant {} (bitsandbytes)", name(r.quant)),
             show_bytes_si(*r.bytes_quantized)});
    if (r.adapter_params)
      t.add({"LoRA adapter parameters", fmt::format("{}", *r.adapter_params)});
    t.add({"activations, KV cache",
           r.checkpoint_only() ? "n/a: need the config.json" : "n/a: not modelled yet"});
    out.push_back(std::move(t));
    if (!r.gpus.empty()) {
      Table g;
      g.title = r.bytes_quantized
                    ? fmt::format("Weights under --quant {} against each GPU's memory (before "
                                  "activations and caches)",
                                  name(r.quant))
                : r.weight_bytes
                    ? "Stored weights against each GPU's memory (before activations and KV cache)"
                    : "16-bit weights against each GPU's memory (before activations and caches)";
      g.header = {"GPU", "memory", "weights fit"};
      for (const auto &x : r.gpus)
        g.add({x.name, show_bytes_si(x.memory_bytes), show(x.weights_fit)});
      out.push_back(std::move(g));
    }
    Table n;
    n.title =
        r.checkpoint_only() ? "Not estimated without the model's config.json" : "Not estimated";
    for (const auto &u : r.unknown)
      n.add({"-", u});
    out.push_back(std::move(n));
    return out;
  };
  rep.table = [tables](const TextStyle &s) { return render(tables(), Format::table, s.width); };
  rep.markdown = [tables] { return render(tables(), Format::markdown); };
  rep.csv = [&r] {
    Table t;
    t.header = {"quantity", "value"};
    t.add({"params", fmt::format("{}", r.params)});
    t.add({"stored_bytes", r.weight_bytes ? fmt::format("{}", *r.weight_bytes) : ""});
    t.add({"bytes_16bit", fmt::format("{}", r.bytes_16bit)});
    t.add({"bytes_int8", fmt::format("{}", r.bytes_int8)});
    t.add({"bytes_int4", fmt::format("{}", r.bytes_int4)});
    t.add({"bytes_quantized", r.bytes_quantized ? fmt::format("{}", *r.bytes_quantized) : ""});
    t.add({"activations_bytes", ""});
    t.add({"kv_cache_bytes", ""});
    return std::vector<Table>{t};
  };
  return rep;
}

} // namespace dlrig::fit

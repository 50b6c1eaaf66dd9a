#pragma once
// What a checkpoint's header alone tells, for a .safetensors whose tensor names dlrig does not
// recognise and with no config.json beside it: the exact parameter count and weight bytes, and the
// memory the weights take when serving (as stored, at 16 bits, int8, int4) next to each GPU's
// memory. Activations, the KV cache and everything training keeps need the model's shapes: the
// report says so rather than guessing them.
#include "dlrig/fit/memory.hpp"
#include "dlrig/fit/model_input.hpp"
#include "dlrig/output/print.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::fit {

struct WeightsReport {
  std::string model;  // the path given
  std::string origin; // "safetensors PATH"
  std::vector<std::string> files;
  std::uint64_t params = 0; // exact: the tensors' elements (buffers such as inv_freq left out)
  // Exact: as stored, from the checkpoint's header; nullopt from a config.json alone.
  std::optional<std::uint64_t> weight_bytes;
  std::map<std::string, std::uint64_t> params_by_dtype;
  // Serving weights in bytes: as stored, and the parameters at 2, 1 and 0.5 bytes each.
  std::uint64_t bytes_16bit = 0, bytes_int8 = 0, bytes_int4 = 0;
  struct Gpu {
    std::string name;
    std::optional<std::uint64_t> memory_bytes;
    // The stored weights alone fit in the GPU's memory (the 16-bit weights without a checkpoint).
    std::optional<bool> weights_fit;
  };
  std::vector<Gpu> gpus;
  // A config.json fit does not model, where its layers' shapes are exact: with --quant or
  // --qlora the weights bitsandbytes converts (as for any config: quantized_params), and with
  // --quant the serving weights then (bnb_serving_bytes), which the GPUs are judged on; with
  // --lora/--qlora PEFT's adapter parameters.
  std::optional<std::uint64_t> quantized_params, bytes_quantized, adapter_params;
  Quant quant = Quant::none;        // --quant's, when bytes_quantized is set
  std::vector<std::string> unknown; // what needs the config.json, in words
  std::string why;           // why only the weights: the tensor names, or layers fit does not model
  bool not_modelled = false; // a config.json whose layers fit does not model (not a checkpoint's)
  bool checkpoint_only() const { return !not_modelled; }
};

WeightsReport weights_report(const ModelInput &model, const std::vector<GpuTarget> &gpus,
                             const Run &run = Run{});

// JSON (schema_version 1: model, weights, gpus, needs_config) and the human table.
Report weights_output(const WeightsReport &r);

} // namespace dlrig::fit

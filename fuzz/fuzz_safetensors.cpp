// libFuzzer target for the parsers `dlrig fit` reads untrusted files with: the safetensors header
// (length prefix + JSON), the sharded index, and config.json (through kb::model_from_config, then
// the estimator on what it gives).
// The first byte picks the parser; the rest is the input.
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/load.hpp"
#include "dlrig/fit/memory.hpp"
#include "dlrig/fit/model_input.hpp"
#include "dlrig/fit/safetensors.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0)
    return 0;
  std::string_view in(reinterpret_cast<const char *>(data + 1), size - 1);
  switch (data[0] % 4) {
  case 0: {
    // A whole file held in memory: length, header, data.
    auto n = dlrig::fit::parse_safetensors_length(in.substr(0, 8), in.size(), "fuzz");
    if (n && 8 + *n <= in.size()) {
      auto h = dlrig::fit::parse_safetensors_header(in.substr(8, *n), in.size() - 8 - *n, "fuzz");
      if (h) {
        auto c = dlrig::fit::summarise_checkpoint(h->tensors, {"fuzz"});
        (void)dlrig::fit::arch_from_checkpoint(c, dlrig::kb::ModelFamily::decoder, "fuzz");
      }
    }
    break;
  }
  case 1:
    (void)dlrig::fit::parse_safetensors_header(in, in.size(), "fuzz");
    break;
  case 2:
    (void)dlrig::fit::parse_safetensors_index(in, "fuzz");
    break;
  default: {
    // A config.json that parses goes on through what `dlrig fit` does with it: the run resolved
    // against the model, then memory and time on one catalog GPU (a hostile but well-formed
    // config: zero or huge sizes, odd head counts, a walk of an enormous UNet).
    auto arch = dlrig::fit::parse_model_config(in, "fuzz/config.json");
    if (!arch)
      break;
    dlrig::fit::ModelInput model;
    model.arch = std::move(arch).value();
    model.params = dlrig::model::derive_params(model.arch);
    if (model.params <= 0)
      break;
    dlrig::fit::Run given;
    if (model.arch.stored_quant) // trained only through adapters: serve it
      given.mode = dlrig::fit::Mode::infer;
    auto run = dlrig::fit::resolve_run(model, given, nullptr);
    if (!run)
      break;
    static const auto gpu =
        dlrig::fit::gpu_target(*dlrig::kb::builtin().find_gpu("NVIDIA H100 SXM5"));
    (void)dlrig::fit::estimate_memory(model, *run, gpu);
    (void)dlrig::fit::estimate_time(model, *run, gpu);
    break;
  }
  }
  return 0;
}

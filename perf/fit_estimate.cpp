// Times one `fit` estimate inside the library (no process start, no file reads): each case runs
// estimate_memory + estimate_time 2,000 times, five rounds, and prints the median and the slowest
// round in microseconds per estimate as a markdown table. Target (issue 6): under 1 ms.
// Usage: build/dlrig_perf_fit
#include "dlrig/fit/fit.hpp"
#include "dlrig/fit/load.hpp"
#include "dlrig/fit/memory.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace {

struct Case {
  const char *label, *model;
  dlrig::fit::Run run;
};

} // namespace

int main() {
  using namespace dlrig::fit;
  const auto &kb = dlrig::kb::builtin();
  const auto *gpu_spec = kb.find_gpu("NVIDIA H100 SXM5");
  if (!gpu_spec)
    return 70;
  const GpuTarget gpu = gpu_target(*gpu_spec);
  std::vector<Case> cases;
  Run zero3;
  zero3.seq = 4096;
  zero3.gpus = 8;
  zero3.strategy = Strategy::zero3;
  cases.push_back({"llama-3-8b, zero3 on 8 GPUs, 4096 tokens", "llama-3-8b", zero3});
  Run lora;
  lora.seq = 2048;
  lora.lora_rank = 16;
  lora.lora_targets = LoraTargets::all_linear;
  cases.push_back({"llama-3-8b, LoRA r16 all-linear", "llama-3-8b", lora});
  Run cnn;
  cnn.image_size = 224;
  cnn.batch = 64;
  cases.push_back({"resnet-50, batch 64 (backward walk)", "resnet-50", cnn});
  Run unet;
  unet.image_size = 512;
  unet.batch = 8;
  unet.checkpointing = Checkpointing::full;
  cases.push_back({"sd-1.5-unet, full checkpointing", "sd-1.5-unet", unet});

  fmt::print("| case | median us per estimate | slowest round us |\n|---|---|---|\n");
  constexpr int kRuns = 2000, kRounds = 5;
  for (const auto &c : cases) {
    auto model = load_model(c.model, std::nullopt, kb);
    if (!model) {
      fmt::print("| {} | n/a ({}) | |\n", c.label, model.error().message);
      continue;
    }
    std::vector<double> rounds;
    std::uint64_t sink = 0;
    for (int r = 0; r < kRounds; ++r) {
      Run run = c.run;
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kRuns; ++i) {
        run.batch = c.run.batch + i % 4;
        sink += estimate_memory(*model, run, gpu).device;
        sink += estimate_time(*model, run, gpu).seconds_per_step.has_value();
      }
      rounds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kRuns);
    }
    std::sort(rounds.begin(), rounds.end());
    fmt::print("| {} | {:.1f} | {:.1f} |\n", c.label, rounds[kRounds / 2] * 1e6,
               rounds.back() * 1e6);
    if (sink == 0)
      return 70;
  }
  return 0;
}

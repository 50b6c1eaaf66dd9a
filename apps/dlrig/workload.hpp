#pragma once
// The workload as `fit` and `pick` take it: a model (catalog name, config.json, safetensors or
// --params with --family) and a run (mode, batch, sequence, precision, optimizer, parallelism,
// LoRA...). One set of options and one parser for both commands.
#include "commands.hpp"
#include "dlrig/fit/fit.hpp"
#include "dlrig/kb/kb.hpp"

#include <functional>
#include <string>

namespace dlrig::cli {

struct WorkloadArgs {
  std::string model;
  std::string params, family;
  std::string mode = "train", precision = "bf16-amp", optimizer = "adamw", checkpointing = "none",
              strategy = "ddp", offload = "none", attention, quant = "none", lora_targets = "qv",
              kernels = "eager", loss = "standard", optimizer_impl;
  std::string network, torch;
  fit::Run run; // attention empty: not given (what transformers runs for the model)
  double dataset_tokens = 0, samples = 0; // 0 = not given
};

// A flag's value that a library parser refused is a usage error whatever the parser's kind.
template <class T> T need(Result<T> r) {
  return value_or_throw(std::move(r), ErrorKind::usage);
}

// Adds the model and run options in `fit`'s order; `after_concurrency` adds a command's own
// options at that place (fit's --max-batch), so --help reads as before.
void add_workload_options(CLI::App &sub, WorkloadArgs &a,
                          const std::function<void()> &after_concurrency = {});

// The run as given: every name parsed (usage errors name the flag), --network resolved through
// the knowledge base, --dataset-tokens/--samples set. Not yet resolve_run'd.
fit::Run workload_run(const WorkloadArgs &a, const kb::KnowledgeBase &kb);

// The model as given (usage errors for a missing or doubly given model; bad files: 65).
fit::ModelInput workload_model(const WorkloadArgs &a, const kb::KnowledgeBase &kb);

} // namespace dlrig::cli

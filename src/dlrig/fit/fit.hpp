#pragma once
// `dlrig fit` as pure functions: a model, a run and GPUs in; per-GPU memory with a verdict, the
// largest micro-batch, ranked changes when it does not fit, and time out.
#include "dlrig/core/snapshot.hpp"
#include "dlrig/fit/memory.hpp"
#include "dlrig/fit/time.hpp"
#include "dlrig/kb/kb.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlrig::fit {

// A change that makes a run lighter, with what it leads to.
struct Suggestion {
  std::string change;             // "gradient checkpointing (full)"
  std::string flags;              // "--checkpointing full"
  std::uint64_t device_bytes = 0; // per-GPU peak after the change (device level)
  bool fits = false;
  std::optional<double> relative_time; // time per sample after / before (more GPUs: < 1)
  int extra_gpus = 0;                  // GPUs the change adds
  bool alters_training = false;        // LoRA/QLoRA instead of full fine-tuning
  std::string cost;                    // what it costs, in words
};

struct GpuFit {
  GpuTarget gpu;
  MemoryEstimate memory;
  std::optional<bool> fits; // nullopt when the GPU's memory is unknown
  // Why the run cannot run on this GPU whatever its memory (FP8 training before compute capability
  // 8.9); empty when it can. Such a GPU's fits is false: it is never counted as one that fits.
  std::string cannot_run;
  std::optional<std::int64_t> headroom;  // memory - device-level peak (negative: short by)
  std::optional<std::int64_t> max_batch; // --max-batch: largest micro-batch that fits (0: none)
  TimeEstimate time;
  std::vector<Suggestion> suggestions; // ranked, when it does not fit
};

struct FitReport {
  ModelInput model;
  Run run;
  std::vector<GpuFit> gpus;
  std::optional<TimeEstimate> cpu;
  std::vector<std::string> assumptions; // defaults taken, shapes guessed: said in the output
  // Sized for this machine, which has no GPU: gpus is every catalog GPU, and the report shows the
  // breakdown once and the GPUs it fits.
  bool no_local_gpu = false;
  bool all_fit() const;
};

// Why `run` cannot run on `gpu` whatever its memory, naming the fix; empty when it can or when the
// GPU's compute capability is unknown.
std::string cannot_run_on(const Run &run, const GpuTarget &gpu);

// Fills what the user left to the model (sequence length, image size) and checks the run against
// the model; errors name the flag and the fix (the front door's exit 64).
Result<Run> resolve_run(const ModelInput &model, Run run, std::vector<std::string> *assumptions);

// The largest micro-batch that fits the GPU (binary search over the memory model); 0 when not
// even one does, nullopt when the GPU's memory is unknown.
std::optional<std::int64_t> max_micro_batch(const ModelInput &model, const Run &run,
                                            const GpuTarget &gpu);

// The changes that make the run lighter, ranked: those that fit first, then those on the same GPUs
// before those that add GPUs, then the same training before LoRA/QLoRA, then by their cost in
// speed, then by memory. When no single change
// fits, a combination of them (on the same GPUs) is added.
std::vector<Suggestion> suggest(const ModelInput &model, const Run &run, const GpuTarget &gpu);

struct FitOptions {
  bool max_batch = false;
  bool suggestions = true; // for GPUs where it does not fit
  HostRates host;          // `dlrig bench` results of this machine, for the time model
};

FitReport fit(const ModelInput &model, const Run &run, const std::vector<GpuTarget> &gpus,
              const FitOptions &options, const std::optional<CpuTarget> &cpu);

// GPU targets from the catalog or from a snapshot (NVML / amdgpu memory, with the catalog's
// throughput matched by PCI id or name).
GpuTarget gpu_target(const kb::GpuSpec &spec);
std::vector<GpuTarget> gpu_targets(const Snapshot &snap, const kb::KnowledgeBase &kb);

// The software stack a run is sized for (Run::torch_version, cuda_version, module_loading,
// transformers_version; --transformers sets the last before these, and resolve_run checks it).
// --torch VERSION ("2.1.1", "1.13.1+cu117"): its CUDA from the +cuXYZ suffix, else from the build
// plain `pip install torch==VERSION` gives (data/torch.csv); errors name the flag.
Result<Run> with_torch(Run run, std::string_view version, const kb::KnowledgeBase &kb);
// This machine's: the PyTorch of the active Python environment (else the first one found with
// PyTorch), its CUDA build, the transformers of that environment (unless the run already names
// one), and CUDA_MODULE_LOADING as set. Unknown parts stay empty.
Run with_machine_stack(Run run, const Snapshot &snap);

// The model as the run's transformers builds it (fit applies it; pick too): from the release in
// model::tie_forced_since (T5, mT5: 5.0.0) the config class ties lm_head to the shared embedding
// whatever tie_word_embeddings says, so a config saved untied (mT5, T5 v1.1) builds one matrix;
// said among the model's assumptions, also when the version is unknown. A checkpoint's own count
// stands.
ModelInput as_transformers_builds(ModelInput in, const Run &run);

// Looks a model up: a catalog name; errors list the nearest names.
Result<ModelInput> model_from_catalog(std::string_view name, const kb::KnowledgeBase &kb);

} // namespace dlrig::fit

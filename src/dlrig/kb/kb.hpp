#pragma once
// The knowledge base: sourced facts dlrig's answers rest on, loaded from the embedded data/ files
// through one validating loader. A value no source gives is nullopt (unknown).
#include "dlrig/core/result.hpp"
#include "dlrig/kb/model.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::kb {

using OptF64 = std::optional<double>;

// Throughputs are dense, in FLOP/s (INT8 in OP/s); fp16 is FP16 inputs with FP32 accumulate.
struct GpuSpec {
  std::string name;               // "H100 SXM5 80GB"
  std::string vendor;             // NVIDIA | AMD | Intel
  std::string architecture;       // "Hopper"
  std::string compute_capability; // "9.0" (NVIDIA) or gfx target (AMD)
  std::vector<std::string> pci_ids; // "10de:2330"
  std::string no_pci_id_reason;   // why pci_ids is empty
  std::optional<std::uint64_t> memory_bytes;
  std::string memory_type;
  OptF64 memory_bandwidth_bytes_per_s;
  OptF64 fp64_flops, fp32_flops, tf32_flops, fp16_flops, bf16_flops, fp8_flops, int8_ops;
  OptF64 tdp_w;
  std::optional<int> pcie_gen;
  std::optional<int> pcie_lanes;
  OptF64 nvlink_bytes_per_s;      // bidirectional per GPU
  std::optional<int> launch_year;
  OptF64 launch_price_usd;
  std::string form_factor;
  std::string source;
  std::string notes;
};

struct ArchSpec {
  std::string compute_capability; // "8.6"
  std::string name;               // "Ampere"
  bool tensor_cores = false, tf32 = false, bf16 = false, fp8 = false, fp4 = false;
  std::string source;
};

struct CudaDriverMin {
  std::string cuda;               // "12.4"
  std::string min_driver_linux;   // "550.54.14" (toolkit driver)
  std::string minor_compat_min_driver; // ">= 525.60.13" for 12.x minor-version compatibility
  std::string source;
};

struct TorchVariant {
  std::string tag;                // cu124 | cpu | rocm6.2
  std::string cuda;               // "12.4"; empty for cpu/rocm
  std::vector<std::string> arch_list; // sm_50 ... compute_90 (empty = unknown)
  std::string cudnn, nccl;        // bundled versions; empty = unknown
  std::string index_url;          // https://download.pytorch.org/whl/cu124
  bool pypi_default = false;      // what plain `pip install torch` gives on Linux x86_64
};

struct TorchRelease {
  std::string version;            // "2.5.1"
  std::vector<TorchVariant> variants;
  std::vector<std::string> python_versions;
  std::string torchvision, torchaudio; // matching companion versions
  std::string source;
};

// Host links, fabrics, cloud instances: defined with their loader (links.hpp, cloud.hpp may split
// out as the catalog grows).
struct LinkSpec;
struct CloudInstance;

struct KnowledgeBase {
  std::vector<GpuSpec> gpus;
  std::vector<ArchSpec> archs;
  std::vector<CudaDriverMin> cuda;
  std::vector<TorchRelease> torch;
  std::vector<ModelArch> models;

  // Lookups return nullptr when nothing matches.
  const GpuSpec* find_gpu(std::string_view name) const;            // exact or normalised name
  const GpuSpec* find_gpu_by_pci(std::string_view vendor_id,        // "10de"
                                 std::string_view device_id) const; // "2330"
  const ArchSpec* arch(std::string_view compute_capability) const;
  const CudaDriverMin* cuda_min_driver(std::string_view cuda_version) const;
  const TorchRelease* torch_release(std::string_view version) const; // "2.5.1" or "2.5.1+cu124"
  const ModelArch* find_model(std::string_view name) const;
};

// The embedded knowledge base, loaded and validated once (thread-safe). A malformed row is a
// bug in dlrig's data and throws Failure(internal) naming the file and line.
const KnowledgeBase& builtin();

} // namespace dlrig::kb

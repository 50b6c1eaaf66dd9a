#pragma once
// The knowledge base: sourced facts dlrig's answers rest on, loaded from the embedded data/ files
// through one validating loader. A value no source gives is nullopt (unknown) or an empty string.
// docs/knowledge-base.md describes every file, column and unit.
#include "dlrig/core/result.hpp"
#include "dlrig/core/version.hpp"
#include "dlrig/model/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlrig::kb {

// The catalog's rows (`models`) are the model layer's architectures (model/model.hpp).
using model::ModelArch;
using model::ModelFamily;

using OptF64 = std::optional<double>;

// data/gpus.csv. Throughputs are dense, in FLOP/s (INT8 in OP/s); fp16 is FP16 inputs with FP32
// accumulate. The file stores TFLOPS, GB/s and GB; the loader converts to base units.
struct GpuSpec {
  std::string name;                 // "NVIDIA H100 SXM5"
  std::string vendor;               // NVIDIA | AMD | Intel
  std::string architecture;         // "Hopper (GH100)": archs.csv name, then the die in brackets
  std::string compute_capability;   // "9.0" (NVIDIA), gfx target (AMD), family (Intel)
  std::vector<std::string> pci_ids; // "10de:2330", lower-case hex
  std::string no_pci_id_reason;     // why pci_ids is empty
  OptF64 memory_gb;                 // as the vendor states it ("80"); GB here is the vendor's word
  // memory_gb read as binary gigabytes (GiB): DRAM is sized in powers of two, and what NVML
  // reports (A100 80GB: 79.2 GiB usable to torch) sits just below it.
  std::optional<std::uint64_t> memory_bytes;
  std::string memory_type;
  OptF64 memory_bandwidth_bytes_per_s; // decimal: 1 GB/s = 1e9 B/s
  OptF64 fp64_flops, fp32_flops, tf32_flops, fp16_flops, bf16_flops, fp8_flops, int8_ops;
  OptF64 tdp_w;     // the top of the vendor's range when it states one ("300-350" -> 350)
  OptF64 tdp_min_w; // the bottom of that range; equal to tdp_w for a single figure
  std::optional<int> pcie_gen;
  std::optional<int> pcie_lanes;
  OptF64 nvlink_bytes_per_s; // bidirectional per GPU, as NVIDIA quotes it
  std::optional<int> launch_year;
  OptF64 launch_price_usd;
  std::string form_factor; // desktop | workstation | pcie-server | sxm | embedded
  std::string source;      // where the specification figures come from
  std::string pci_source;  // where the PCI ids come from
  std::string notes;       // which figure comes from which source, derivations, caveats
};

// data/archs.csv: compute capability (or AMD gfx target / Intel family) -> architecture.
struct ArchSpec {
  std::string compute_capability; // "8.6", "gfx942"
  std::string vendor;             // NVIDIA | AMD | Intel
  std::string name;               // "Ampere"
  std::string example_gpus;
  // true only where a source says the feature exists; see `unknown` for what no source settles.
  bool tensor_cores = false, tf32 = false, bf16 = false, fp8 = false, fp4 = false;
  std::vector<std::string> unknown; // feature names (tensor_cores, tf32, bf16, fp8, fp4) unknown
  std::string min_cuda;             // first CUDA toolkit that compiles for it; empty = unknown
  std::string last_cuda; // last toolkit that does ("11.8", "12.x"); empty = still supported
  std::string source;
  std::string notes;
  bool feature_known(std::string_view feature) const;
};

// data/cuda_drivers.csv: one row per toolkit release (GA and each update).
struct CudaDriverMin {
  std::string cuda;                    // "12.4"
  std::string version;                 // "12.4.1" (GA = .0)
  std::string release;                 // GA | U1 | U2 ...
  std::string min_driver_linux;        // "550.54.15" (Toolkit Driver Version, Linux x86_64)
  std::string min_driver_windows;      // "551.61" (Windows x86_64); "" where Table 3 says N/A
  std::string minor_compat_min_driver; // "525.60.13": minor-version compatibility for 12.x
  std::string source;
  std::string notes;
};

// data/torch.csv: one row per release and variant.
struct TorchVariant {
  std::string tag;    // cu124 | cpu | rocm6.2
  std::string cuda;   // "12.4"; empty for cpu/rocm
  std::string rocm;   // "6.2" for rocm variants
  std::string status; // stable | experimental (RELEASE.md's columns); empty = unknown
  std::vector<std::string> arch_list; // sm_50 ... compute_120 (empty = unknown)
  bool arch_list_partial = false;     // the source names some targets only: more may be in it
  std::string cudnn, nccl;            // bundled versions; empty = unknown
  std::string index_url;              // https://download.pytorch.org/whl/cu124
  bool pypi_default = false; // a source says plain `pip install torch` gives this (Linux x86_64)
  std::string source;
  std::string notes;
};

struct TorchRelease {
  std::string version; // "2.5.1": one patch release; every patch release has its own rows
  std::vector<TorchVariant> variants;
  std::vector<std::string> python_versions; // "3.9" ... "3.12"
  // The companions the source pairs with this exact release (the Linux wheel command's);
  // empty = unknown (1.5 and 1.6 name no torchaudio).
  std::string torchvision, torchaudio;
  // Further versions the source also pairs with it (2.0.0: conda's 0.15.0 / 2.0.0 beside the
  // wheels' 0.15.1 / 2.0.1). Written after the first, separated by ';', in the same column.
  std::vector<std::string> torchvision_also, torchaudio_also;
  std::string pypi_default_unverified; // variant the reference names, marked UNVERIFIED
  const TorchVariant *variant(std::string_view tag) const;
};

// A torch version string taken apart: "2.8.0.dev20250401+cu128" -> release "2.8.0",
// nightly_date "20250401", local "cu128". Pure; never fails (an unparsable string gives an
// empty release).
struct TorchVersion {
  std::string release;      // "2.8.0": the public release part, without .devN / aN / rcN
  std::string nightly_date; // "20250401" for a nightly (".devYYYYMMDD"); empty otherwise
  std::string pre;          // other pre-release tags as written ("rc1", "a0"); empty otherwise
  std::string local;        // "cu128", "cpu", "rocm6.3"; empty when the version has no '+'
  bool nightly() const { return !nightly_date.empty(); }
};
TorchVersion parse_torch_version(std::string_view version);

// The major.minor every build of a companion ("torchvision" or "torchaudio") for a torch
// major.minor has: torch 2.7 -> torchvision 0.22, torchaudio 2.7; torch 1.12 -> torchvision 0.13,
// torchaudio 0.12. Empty where no rule is known (another package, torch before 1.x). The rule is
// the pytorch/vision README's compatibility table; the torch.csv test checks it on every row.
std::string torch_companion_family(std::string_view torch_version, std::string_view companion);

// The first major.minor of a companion built on PyTorch's stable ABI, whose compiled operators
// then load in that torch and newer ones, so a build of it needs no release of its own for each
// torch: torchaudio 2.10 ("torchaudio is fully torch ABI stable", pytorch/audio#4142 and #4147,
// merged December 2025, before the 2.10 branch; torchaudio has been in maintenance since
// pytorch/audio#3902 and has no companion of its own for torch 2.11 on). Empty for the others.
std::string torch_stable_abi_since(std::string_view companion);

// What the knowledge base knows about one installed torch version.
struct TorchLookup {
  // The exact patch release when the data has it; otherwise (an unlisted patch, a nightly or a
  // release candidate) the newest listed patch of the same major.minor, whose variants and arch
  // lists describe the family but whose companions are not this version's; nullptr when the
  // minor is unknown too.
  const TorchRelease *release = nullptr;
  bool exact = false; // release->version is this version
  TorchVersion parsed;
};

// The exact install command for one variant:
// pip install torch==2.5.1 torchvision==0.20.1 torchaudio==2.5.1 --index-url URL
std::string pip_command(const TorchRelease &release, const TorchVariant &variant);

// data/cudnn.csv: cuDNN major (or range of minors) -> CUDA majors it is built for.
struct CudnnCompat {
  std::string cudnn;            // "9.0-9.10", "8.9"
  std::vector<int> cuda_majors; // 11, 12
  std::string cuda_builds;      // "11.8 and 12.x"
  std::string min_cc, max_cc;   // compute capabilities covered; empty = unknown
  std::string source;
  std::string notes;
};

// data/links.csv: host links, eGPU links and fabrics. Rates are per direction unless
// `bidirectional`; bytes per second, decimal.
struct LinkSpec {
  std::string name;       // "PCIe 4.0 x16", "Thunderbolt 3", "NVLink 4.0", "InfiniBand NDR"
  std::string kind;       // pcie | thunderbolt | usb4 | oculink | nvlink | nvswitch | infiniband |
                          // ethernet
  std::string generation; // "4.0", "3", "NDR"
  OptF64 transfer_rate_gts;    // PCIe GT/s per lane
  std::string encoding;        // "128b/130b"
  std::optional<int> lanes;    // PCIe lanes; links per GPU for NVLink; tunnel lanes for eGPU links
  OptF64 per_lane_bytes_per_s; // per lane (PCIe) or per link (NVLink), per direction
  OptF64 raw_bits_per_s;       // the link's signalling rate as marketed (40 Gb/s)
  OptF64 theoretical_bytes_per_s;  // payload the link can carry (the PCIe tunnel for eGPU links)
  bool bidirectional = false;      // theoretical rate counts both directions (NVLink convention)
  OptF64 measured_h2d_bytes_per_s; // typical measured host-to-device (low end of a range)
  OptF64 measured_h2d_high_bytes_per_s; // high end of the measured range; == low for one figure
  OptF64 measured_d2h_bytes_per_s;
  std::string measured_source;
  std::string source;
  std::string notes;
};

// data/gemm_achieved.csv: what a large dense GEMM measurably reaches on a GPU (cuBLAS through
// torch.matmul, best of a size sweep), per precision: fp32 (SIMT), tf32, fp16, bf16, fp8. The time
// model's attainable GEMM rate where no `dlrig bench` result exists.
struct GemmAchieved {
  std::string gpu;       // a gpus.csv name
  std::string precision; // fp32 | tf32 | fp16 | bf16 | fp8
  double flops = 0;      // FLOP/s
  std::string source;
  std::string notes;
};

// data/attention_achieved.csv: what a fused-attention kernel measurably reaches on a GPU in 16
// bits, by pass, head dimension, mask and sequence length (FlashAttention's benchmark: batch x
// sequence = 16k tokens, 2048 hidden, no dropout; FLOPs 4·b·s²·h·d forward, halved when
// causal, 2.5x that backward). The time model's fused-attention rate, as a share of that GPU's
// peak.
struct AttentionAchieved {
  std::string gpu;    // a gpus.csv name
  std::string kernel; // flash2 (FlashAttention-2, PyTorch's flash backend) | cudnn
  std::string pass;   // forward | backward | both (forward + backward timed together)
  int head_dim = 0;
  bool causal = false;
  double seq = 0;
  double flops = 0; // FLOP/s
  std::string source;
  std::string notes;
};

// data/arm_cpus.csv: what an Arm CPU's /proc/cpuinfo codes mean ("CPU implementer" 0x41 is
// ARM; "CPU part" 0xd4f under it is Neoverse-V2, Grace's core). A row without a part names only
// the implementer.
struct ArmCpuId {
  int implementer = 0;
  std::optional<int> part;
  std::string vendor; // "ARM", "NVIDIA", "Ampere"
  std::string core;   // "Neoverse-V2"; empty on an implementer's row
  std::string source;
};

// data/p2p_hangs.csv: drivers on which NCCL's peer-to-peer transport between GeForce cards over
// PCIe hangs (or corrupts) while NVML reports P2P as supported; NCCL_P2P_DISABLE=1 avoids it.
struct P2pHang {
  std::string gpu;           // a part of the GPU's name: "GeForce RTX 4090", "GeForce"
  std::string driver_from;   // first affected driver, inclusive ("545")
  std::string driver_before; // first driver without it, exclusive; empty = none known
  std::string source;
  std::string notes;
};

// data/gpu_families.csv: the variant a bare family name ("V100", "A100", "H100") means when it
// matches several catalog GPUs: the most common one, with the reason and its source.
struct GpuFamily {
  std::string family; // the name as guides write it ("V100")
  std::string gpu;    // gpus.csv name of the default variant
  std::string reason;
  std::string source;
};

// data/cloud.csv: cloud GPU instances with an on-demand price and its date.
struct CloudInstance {
  std::string provider; // AWS | Azure | GCP
  std::string instance; // p5.48xlarge
  int gpu_count = 0;
  std::string gpu_model;        // "H100 80GB"
  std::string gpu;              // gpus.csv name when the catalog has this GPU; empty otherwise
  OptF64 gpu_memory;            // total over the instance, in gpu_memory_unit, as stated
  std::string gpu_memory_unit;  // GB | GiB: providers differ, the figure is kept as given
  OptF64 host_memory;           // in host_memory_unit
  std::string host_memory_unit; // GiB | GB
  std::optional<int> vcpus;
  std::string interconnect; // "NVSwitch, NVLink 4.0 (900 GB/s per GPU)"
  std::string network;      // "3,200 Gb/s EFA (32 EFA interfaces)"
  OptF64 network_bits_per_s;
  OptF64 price_usd_per_hour; // Linux on-demand
  std::string price_region;
  std::string price_date; // YYYY-MM-DD or YYYY-MM
  std::string source;
  std::string notes;
};

// How a driver runs code for a CUDA version: https://docs.nvidia.com/deploy/cuda-compatibility/
enum class CudaSupport {
  native,       // driver >= the toolkit's minimum driver
  minor_compat, // same major, driver >= the major's minimum: runs with a limited feature set
                // (PTX JIT of newer PTX fails)
  unsupported,
  unknown // a version the data does not hold
};

struct KnowledgeBase {
  std::vector<GpuSpec> gpus;
  std::vector<ArchSpec> archs;
  std::vector<CudaDriverMin> cuda;
  std::vector<TorchRelease> torch; // oldest first
  std::vector<CudnnCompat> cudnn;
  std::vector<LinkSpec> links;
  std::vector<CloudInstance> cloud;
  std::vector<ArmCpuId> arm_cpus;
  std::vector<GemmAchieved> gemm_achieved;
  std::vector<AttentionAchieved> attention_achieved;
  std::vector<P2pHang> p2p_hangs;
  std::vector<GpuFamily> gpu_families;
  std::vector<ModelArch> models;

  // Lookups return nullptr when nothing matches.
  // Exact name, case and punctuation aside; then the one GPU whose name holds every word of
  // `name` (a word like "80GB" matches the memory size). Ambiguous -> nullptr.
  const GpuSpec *find_gpu(std::string_view name) const;
  // Every GPU a name could mean, best first: one for an exact or unique match, several when the
  // name is ambiguous ("h100": PCIe, SXM5, NVL), none when nothing matches.
  std::vector<const GpuSpec *> match_gpus(std::string_view name) const;
  const GpuSpec *find_gpu_by_pci(std::string_view vendor_id,        // "10de" or "0x10de"
                                 std::string_view device_id) const; // "2330"
  // "8.9", "gfx942", or a CUDA target ("sm_89", cc_of_target).
  const ArchSpec *arch(std::string_view compute_capability) const;
  // "12.4" -> the GA row (the lowest minimum of that minor); "12.4.1" -> that update's row.
  const CudaDriverMin *cuda_min_driver(std::string_view cuda_version) const;
  // "2.5.1" or "2.5.1+cu124": that patch release's rows. An unlisted patch, "2.5", a nightly
  // ("2.5.0.dev20240801+cu124") or a release candidate: the newest listed patch of that
  // major.minor (lookup_torch says which happened).
  const TorchRelease *torch_release(std::string_view version) const;
  TorchLookup lookup_torch(std::string_view version) const;
  const ModelArch *find_model(std::string_view name) const;
  // A Hugging Face repository id ("meta-llama/Llama-3.1-8B", case aside): the catalog model whose
  // source names huggingface.co/ORG/NAME/ (where its config.json was read). nullptr for an id not
  // of the form ORG/NAME.
  const ModelArch *model_of_repo(std::string_view id) const;
  const LinkSpec *find_link(std::string_view name) const; // "PCIe 4.0 x16", "Thunderbolt 3"
  // The PCIe row of that generation (1..6); nullptr for others.
  const LinkSpec *pcie(int generation) const;
  // Theoretical PCIe payload per direction for a generation and width (Gen3 x4 -> 3.94e9 B/s);
  // nullopt for a generation the table does not hold.
  OptF64 pcie_bytes_per_s(int generation, int lanes) const;
  const CloudInstance *find_cloud(std::string_view instance) const;
  // The implementer's row (part nullopt) or the core's row; nullptr when not in the table.
  const ArmCpuId *arm_cpu(int implementer, std::optional<int> part) const;

  // The highest CUDA (major.minor) this driver runs natively: the newest toolkit whose minimum
  // driver is on a branch (first number) no newer than the driver's. "550.54.14" -> "12.4".
  // Empty when the driver is older than every row or not a version.
  std::string max_cuda_for_driver(std::string_view driver) const;
  CudaSupport driver_supports_cuda(std::string_view driver, std::string_view cuda) const;
};

// A CUDA target as nvcc and torch write it -> its compute capability: "sm_90", "sm90",
// "compute_90", "sm_90a" -> "9.0"; "sm_120" -> "12.0". Empty for text that is not a target.
std::string cc_of_target(std::string_view target);
// A wheel's CUDA tag -> its CUDA version: "cu124" -> "12.4", "cu118" -> "11.8" (the last digit is
// the minor version). Empty for text that is not cuXYZ.
std::string cuda_of_tag(std::string_view tag);

// Rule R1 (https://docs.nvidia.com/cuda/ada-compatibility-guide/): a GPU of compute capability
// M.m runs a build whose arch list holds a cubin sm_Mk with k <= m (same major), or PTX
// compute_XY with XY <= Mm (JIT by the driver). Arch-specific (sm_90a) and family (sm_100f)
// targets cover only their own capability. Entries: "sm_86", "compute_90", "8.6", "8.6+PTX".
bool arch_list_covers(const std::vector<std::string> &arch_list, std::string_view cc);

// A torch variant that fits a machine, with what to run.
struct TorchChoice {
  const TorchRelease *release = nullptr;
  const TorchVariant *variant = nullptr;
  CudaSupport support = CudaSupport::unknown;
  std::string pip; // pip_command(*release, *variant)
};

// The newest release and CUDA variant whose CUDA the driver runs natively and whose (complete)
// arch list covers `cc`; nullopt when none does. Among a release's variants the newest CUDA wins.
std::optional<TorchChoice> newest_torch_for(const KnowledgeBase &kb, std::string_view driver,
                                            std::string_view cc);

// Version strings compared numerically part by part ("550.54.14" < "550.100"); missing parts are
// 0; "12.x" is a wildcard (core/version.hpp).
using dlrig::compare_versions;

// Parsers for one data file each: text in, rows out, or an error naming file:line and column
// ("data/gpus.csv:17: column fp16_tflops: 'abc' is not a number"). builtin() uses them on the
// embedded files; tests feed them bad text.
Result<std::vector<GpuSpec>> parse_gpus(std::string_view text, std::string_view file);
Result<std::vector<ArchSpec>> parse_archs(std::string_view text, std::string_view file);
Result<std::vector<CudaDriverMin>> parse_cuda_drivers(std::string_view text, std::string_view file);
Result<std::vector<TorchRelease>> parse_torch(std::string_view text, std::string_view file);
Result<std::vector<CudnnCompat>> parse_cudnn(std::string_view text, std::string_view file);
Result<std::vector<LinkSpec>> parse_links(std::string_view text, std::string_view file);
Result<std::vector<CloudInstance>> parse_cloud(std::string_view text, std::string_view file);
Result<std::vector<ArmCpuId>> parse_arm_cpus(std::string_view text, std::string_view file);
Result<std::vector<GemmAchieved>> parse_gemm_achieved(std::string_view text, std::string_view file);
Result<std::vector<AttentionAchieved>> parse_attention_achieved(std::string_view text,
                                                                std::string_view file);
Result<std::vector<P2pHang>> parse_p2p_hangs(std::string_view text, std::string_view file);
Result<std::vector<GpuFamily>> parse_gpu_families(std::string_view text, std::string_view file);

// The embedded knowledge base, loaded and validated once (thread-safe). A malformed row is a
// bug in dlrig's data and throws Failure(internal) naming the file and line.
const KnowledgeBase &builtin();

} // namespace dlrig::kb

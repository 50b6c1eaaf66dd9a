// gpu.gemm.{fp32,tf32,fp16,bf16,fp8,fp8_rowwise,fp8_block,mxfp8,int8}: cuBLASLt matmul per
// precision (docs/bench.md, "gpu.gemm"). cuBLASLt is loaded at run time (platform/cublaslt.hpp),
// preferably the copy the user's PyTorch loads. Per configuration: random-normal inputs of the
// tested type (generated on the host, rounded to the type, uploaded), cuBLASLt's heuristic asked
// for its top candidates and each timed (the fastest kept), then samples by the harness's rule with
// L2 flushed before each (a memset of 2 x L2 on the same stream, outside the timed events), and D
// checked on sampled entries against a host reference computed from the same rounded inputs.
// Layout: "TN" (A transposed, B not, column-major), the one layout FP8 accepts on Ada and Hopper
// (benchmarking.md §3), used for every precision so the figures compare. Rate: 2·m·n·k / t (FLOP,
// or integer operations for int8), against the catalog's dense peak. FP8 runs with per-tensor
// scales as FP8 training does (gemm::random_normal_e4m3_scaled): A and B use E4M3's range, their
// dequantisation scales go to cuBLASLt's A/B scale pointers, and the reference applies the same
// scales (docs/bench.md, "FP8 scales"); fp8_rowwise with a scale per row of A and per column of B
// (cuBLASLt's outer-vector scale mode); fp8_block with DeepSeek-V3's 1 x 128 blocks of A and 128 x
// 128 blocks of B (Hopper's block scale modes, gemm::BlockLayout); mxfp8 with a UE8M0 scale per 32
// elements along k of A's rows and B's columns (Blackwell's MXFP8, gemm::MxLayout).
#include "dlrig/bench/gemm_data.hpp"
#include "dlrig/bench/gpu.hpp"
#include "dlrig/kb/kb.hpp"
#include "dlrig/platform/cublaslt.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <thread>

namespace dlrig::bench {
namespace {

using namespace gpu;
namespace lt = cublaslt;
using gemm::Drift;

// ---- cuBLASLt, once per process -------------------------------------------------------------

struct Blas {
  lt::Library lib;
  std::map<int, lt::Handle> handles; // per GPU ordinal, created with its context current
};

Blas &blas(const Context &ctx) {
  // Never destroyed, like the driver: unloading cuBLASLt while the driver runs is unsafe.
  static Blas *b = [&] {
    const char *env = std::getenv("DLRIG_CUBLASLT_LIBRARY");
    auto override_path = env && *env ? std::optional<std::string>(env) : std::nullopt;
    return new Blas{lt::Library::open(lt::candidates(ctx.snapshot, override_path)), {}};
  }();
  return *b;
}

#define DLRIG_LT(ctx, field, ...)                                                                  \
  ::dlrig::cublaslt::call(blas(ctx).lib, blas(ctx).lib.api().field, __VA_ARGS__)

lt::Handle handle_for(const Context &ctx, const Device &d) {
  auto &b = blas(ctx);
  auto it = b.handles.find(d.ordinal);
  if (it != b.handles.end())
    return it->second;
  lt::Handle h = nullptr;
  DLRIG_LT(ctx, create, &h);
  b.handles[d.ordinal] = h;
  return h;
}

// Why cuBLASLt cannot run here: not found, or built for a newer CUDA than the driver runs (CUDA's
// minor-version compatibility: a library built for CUDA X.y needs a driver for CUDA X.0 or newer,
// https://docs.nvidia.com/deploy/cuda-compatibility/).
std::optional<std::string> library_unusable(const Context &ctx) {
  auto &b = blas(ctx);
  if (!b.lib.ready())
    return b.lib.error();
  const int driver = Runtime::get().driver().version();
  if (b.lib.cudart_version() && driver > 0 &&
      static_cast<int>(*b.lib.cudart_version() / 1000) > driver / 1000)
    return fmt::format("cuBLASLt {} ({}) is built for CUDA {} and needs a CUDA {} driver; this "
                       "driver runs CUDA {}",
                       lt::version_text(b.lib.version()), b.lib.path(),
                       lt::cuda_version_text(*b.lib.cudart_version()),
                       *b.lib.cudart_version() / 1000,
                       lt::cuda_version_text(static_cast<std::size_t>(driver)));
  return std::nullopt;
}

// ---- precisions ---------------------------------------------------------------------------------

// FP8's scales on A and B: one per tensor, one per row of A and per column of B (outer vectors),
// per block: 1 x 128 of A and 128 x 128 of B, or MXFP8's UE8M0 per 1 x 32 of both.
enum class Scales { none, tensor, rows, blocks, mx };

// What a result's details say of each granularity: the inputs, fp8_scales.granularity and .rule.
struct ScaleText {
  const char *inputs, *granularity, *rule;
};

const ScaleText &scale_text(Scales s) {
  static const ScaleText texts[] = {
      {"random normal N(0,1) rounded to the input type", nullptr, nullptr},
      {"random normal N(0,1), scaled per tensor into E4M3's range (x * 448 / amax) and rounded "
       "to E4M3",
       "per tensor",
       "stored = E4M3(x * 448 / amax(x)); scale = amax(x) / 448 (float32), D = a_scale * "
       "b_scale * sum(A_stored * B_stored)"},
      {"random normal N(0,1), scaled per row into E4M3's range (x * 448 / amax of its row) and "
       "rounded to E4M3",
       "per row of A and per column of B (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F)",
       "stored = E4M3(x * 448 / amax(row)); scale = amax(row) / 448 (float32), D(i, j) = "
       "a_scale[i] * b_scale[j] * sum(A_stored * B_stored)"},
      {"random normal N(0,1), scaled per block into E4M3's range (x * 448 / amax of its block: 1 "
       "x 128 of A, 128 x 128 of B) and rounded to E4M3",
       "per 1 x 128 block of A (a row's 128 elements along k, "
       "CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F) and per 128 x 128 block of B "
       "(CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F)",
       "stored = E4M3(x * 448 / amax(block)); scale = amax(block) / 448 (float32), D(i, j) = sum "
       "over k-blocks kb of a_scale[i, kb] * b_scale[kb, j / 128] * sum over kb's k of "
       "(A_stored * B_stored)"},
      {"random normal N(0,1), scaled per 32-element block along k by a power of two (OCP MX: X = "
       "2^(floor(log2(amax of its block)) - 8)) and rounded to E4M3",
       "per 32 elements along k of each row of A and column of B, a UE8M0 power of two (MXFP8, "
       "CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0, cuBLAS's tiled 128 x 4 layout)",
       "X = 2^(floor(log2(amax(block))) - 8) (UE8M0), stored = E4M3(x / X) saturating at 448, "
       "D(i, j) = sum over 32-element k-blocks kb of a_scale[i, kb] * b_scale[j, kb] * sum over "
       "kb's k of (A_stored * B_stored)"}};
  return texts[static_cast<int>(s)];
}

// cuBLASLt's A and B scale modes (cublasLtMatmulMatrixScale_t) for the granularities beyond one
// per tensor, and the cuBLAS that brought them (an older cuBLASLt refuses the attribute): 12.9
// for outer vectors and 128-element blocks, 12.8 for MXFP8's VEC32_UE8M0 (torch's
// aten/src/ATen/cuda/CUDABlas.cpp: "scaled_gemm with `torch.float8_e8m0fnu` scales of 1x32
// blocks is only supported for CUDA 12.8 and above").
// `compute_capability`: the one cuBLAS runs them on by its "Scaling Mode Support Overview"
// (https://docs.nvidia.com/cuda/cublas/#narrow-precision-data-types-usage: outer vectors and
// 128-element blocks "9.0", MXFP8's 32-element blocks "10.0+", so `or_later`); nullptr leaves
// it to cuBLASLt.
struct ScaleModes {
  std::int32_t a, b;
  const char *a_name, *b_name; // the enumerators, for messages
  const char *what;            // "per-row FP8 scales", for messages
  const char *compute_capability;
  bool or_later;     // compute_capability and every later one
  const char *since; // the cuBLAS version that brought them
};

const ScaleModes *scale_modes(Scales s) {
  // Row-wise ran before this gate existed and is left to cuBLASLt, as then.
  static const ScaleModes rows{lt::kScaleOuterVec32F,
                               lt::kScaleOuterVec32F,
                               "CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F",
                               "CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F",
                               "per-row FP8 scales",
                               nullptr,
                               false,
                               "12.9"};
  // A VEC128 and B BLK128x128, one of the three pairs cuBLAS supports (not both 128 x 128).
  static const ScaleModes blocks{lt::kScaleVec128_32F,
                                 lt::kScaleBlk128x128_32F,
                                 "CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F",
                                 "CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F",
                                 "128-element block FP8 scales",
                                 "9.0",
                                 false,
                                 "12.9"};
  // VEC32_UE8M0 on both: cuBLAS sets it "for all FP8-precision tensors".
  static const ScaleModes mx{lt::kScaleVec32Ue8m0,
                             lt::kScaleVec32Ue8m0,
                             "CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0",
                             "CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0",
                             "32-element MXFP8 block scales",
                             "10.0",
                             true,
                             "12.8"};
  switch (s) {
  case Scales::rows:
    return &rows;
  case Scales::blocks:
    return &blocks;
  case Scales::mx:
    return &mx;
  default:
    return nullptr;
  }
}

struct Precision {
  const char *name;                     // "bf16": the id's last part
  const char *what;                     // for --list
  lt::DataType ab, cd, scale;           // A and B; C and D; alpha and beta
  lt::ComputeType compute;              //
  gemm::Element ab_element, cd_element; // how the host writes and reads them
  const char *feature;                  // data/archs.csv column it needs; nullptr: none
  kb::OptF64 kb::GpuSpec::*peak;        // the catalog's dense peak
  double tolerance;                     // |D - ref| <= tolerance x sum |a||b|
  bool integer;
  Scales scales = Scales::none;
  bool scaled() const { return scales != Scales::none; }
};

// Tolerances: the output's rounding (fp16 2^-11, bf16 2^-8 relative) plus FP32 accumulation in
// any order; TF32 rounds the inputs to 10 mantissa bits (2^-11 each, so 2^-10 per product). The
// reference uses the inputs as rounded to the tested type, so only these remain.
const Precision kPrecisions[] = {
    {"fp32", "FP32 in and out, FP32 compute (SIMT)", lt::kR32F, lt::kR32F, lt::kR32F,
     lt::kCompute32F, gemm::Element::f32, gemm::Element::f32, nullptr, &kb::GpuSpec::fp32_flops,
     1e-4, false},
    {"tf32", "FP32 in and out, TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)", lt::kR32F,
     lt::kR32F, lt::kR32F, lt::kCompute32FFastTF32, gemm::Element::f32, gemm::Element::f32, "tf32",
     &kb::GpuSpec::tf32_flops, 4e-3, false},
    {"fp16", "FP16 in and out, FP32 accumulate", lt::kR16F, lt::kR16F, lt::kR32F, lt::kCompute32F,
     gemm::Element::f16, gemm::Element::f16, nullptr, &kb::GpuSpec::fp16_flops, 2e-3, false},
    {"bf16", "BF16 in and out, FP32 accumulate", lt::kR16BF, lt::kR16BF, lt::kR32F, lt::kCompute32F,
     gemm::Element::bf16, gemm::Element::bf16, "bf16", &kb::GpuSpec::bf16_flops, 1e-2, false},
    {"fp8", "FP8 E4M3 in, BF16 out, FP32 accumulate, per-tensor scales on A and B", lt::kR8FE4M3,
     lt::kR16BF, lt::kR32F, lt::kCompute32F, gemm::Element::e4m3, gemm::Element::bf16, "fp8",
     &kb::GpuSpec::fp8_flops, 1e-2, false, Scales::tensor},
    {"fp8_rowwise",
     "FP8 E4M3 in, BF16 out, FP32 accumulate, a scale per row of A and per column of B",
     lt::kR8FE4M3, lt::kR16BF, lt::kR32F, lt::kCompute32F, gemm::Element::e4m3, gemm::Element::bf16,
     "fp8", &kb::GpuSpec::fp8_flops, 1e-2, false, Scales::rows},
    {"fp8_block",
     "FP8 E4M3 in, BF16 out, FP32 accumulate, a scale per 1 x 128 block of A and 128 x 128 block "
     "of B",
     lt::kR8FE4M3, lt::kR16BF, lt::kR32F, lt::kCompute32F, gemm::Element::e4m3, gemm::Element::bf16,
     "fp8", &kb::GpuSpec::fp8_flops, 1e-2, false, Scales::blocks},
    {"mxfp8",
     "FP8 E4M3 in, BF16 out, FP32 accumulate, MXFP8: a UE8M0 scale per 32 elements along k of each "
     "row of A and column of B",
     lt::kR8FE4M3, lt::kR16BF, lt::kR32F, lt::kCompute32F, gemm::Element::e4m3, gemm::Element::bf16,
     "fp8", &kb::GpuSpec::fp8_flops, 1e-2, false, Scales::mx},
    {"int8", "INT8 in, INT32 out and accumulate", lt::kR8I, lt::kR32I, lt::kR32I, lt::kCompute32I,
     gemm::Element::i8, gemm::Element::i32, nullptr, &kb::GpuSpec::int8_ops, 0, true},
};

// The lowest NVIDIA compute capability data/archs.csv gives the feature, as text ("8.9").
std::string lowest_cc_with(const std::string &feature) {
  const auto &kb = kb::builtin();
  std::optional<double> low;
  std::string text;
  for (const auto &a : kb.archs) {
    if (a.vendor != "NVIDIA")
      continue;
    bool has = feature == "tf32" ? a.tf32 : feature == "bf16" ? a.bf16 : a.fp8;
    double cc = std::atof(a.compute_capability.c_str());
    if (has && (!low || cc < *low)) {
      low = cc;
      text = a.compute_capability;
    }
  }
  return text;
}

// Why this GPU cannot run the precision (data/archs.csv says its architecture lacks the feature);
// nullopt when it can or the architecture is not in the table (cuBLASLt then decides).
std::optional<std::string> lacks_feature(const Precision &p, const Device &d) {
  if (!p.feature)
    return std::nullopt;
  const std::string cc = fmt::format("{}.{}", d.cc_major, d.cc_minor);
  const kb::ArchSpec *a = kb::builtin().arch(cc);
  if (!a || !a->feature_known(p.feature))
    return std::nullopt;
  const std::string f = p.feature;
  bool has = f == "tf32" ? a->tf32 : f == "bf16" ? a->bf16 : a->fp8;
  if (has)
    return std::nullopt;
  std::string upper = f;
  for (char &c : upper)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format("{} tensor cores need compute capability >= {}; GPU {} ({}) is {} ({}; "
                     "data/archs.csv)",
                     upper, lowest_cc_with(f), d.ordinal, d.name, cc, a->name);
}

// Why cuBLAS does not run the precision's scale modes on this GPU (ScaleModes::
// compute_capability), nullopt when it does or they are left to cuBLASLt.
std::optional<std::string> lacks_scale_modes(const Precision &p, const Device &d) {
  const ScaleModes *modes = scale_modes(p.scales);
  const std::string cc = fmt::format("{}.{}", d.cc_major, d.cc_minor);
  if (!modes || !modes->compute_capability || cc == modes->compute_capability)
    return std::nullopt;
  if (modes->or_later && std::atof(cc.c_str()) >= std::atof(modes->compute_capability))
    return std::nullopt;
  // Where the GPU has cuBLAS's other kind of block-scaled FP8, the family that measures it.
  const char *other = "";
  if (p.scales == Scales::blocks && d.cc_major >= 10)
    other = ", where cuBLAS's block-scaled FP8 is MXFP8 (CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0, "
            "gpu.gemm.mxfp8)";
  else if (p.scales == Scales::mx && cc == "9.0")
    other = ", where cuBLAS's block-scaled FP8 is 128-element blocks (gpu.gemm.fp8_block)";
  return fmt::format(
      "cuBLAS runs {} ({} on A, {} on B) on compute capability {}{} only (its Scaling Mode "
      "Support Overview, https://docs.nvidia.com/cuda/cublas/#narrow-precision-data-types-usage); "
      "GPU {} ({}) is {}{}",
      modes->what, modes->a_name, modes->b_name, modes->compute_capability,
      modes->or_later ? " or later" : "", d.ordinal, d.name, cc, other);
}

// Why this GPU cannot run the precision: its tensor cores, or cuBLAS's scale modes.
std::optional<std::string> unsuited(const Precision &p, const Device &d) {
  if (auto why = lacks_feature(p, d))
    return why;
  return lacks_scale_modes(p, d);
}

std::optional<std::string> can_run(const Precision &p, const Context &ctx) {
  if (auto why = needs_gpus(1))
    return why;
  if (auto why = library_unusable(ctx))
    return why;
  Runtime &rt = Runtime::get();
  std::optional<std::string> first;
  for (int g : rt.usable()) {
    auto why = unsuited(p, rt.devices()[static_cast<std::size_t>(g)]);
    if (!why)
      return std::nullopt; // at least one GPU can
    if (!first)
      first = why;
  }
  return first;
}

// ---- shapes -------------------------------------------------------------------------------------

// Shapes: params {ordinal, m, n, k}. Square sizes per tier, plus the GEMMs of a Llama-2-7B layer
// for 4096 tokens (hidden 4096, MLP 11008; huggingface.co/meta-llama/Llama-2-7b-hf config.json):
// the fused QKV projection, the MLP's up and down projections.
struct Shape {
  std::string name;
  double m, n, k;
};

std::vector<Shape> shapes(const Context &ctx) {
  auto square = [](double s) { return Shape{fmt::format("{0:.0f}x{0:.0f}x{0:.0f}", s), s, s, s}; };
  const Shape qkv{"llama-7b qkv 4096x12288x4096", 4096, 12288, 4096};
  const Shape up{"llama-7b mlp-up 4096x11008x4096", 4096, 11008, 4096};
  const Shape down{"llama-7b mlp-down 4096x4096x11008", 4096, 4096, 11008};
  if (ctx.small)
    return {square(256), {"non-square 128x384x256", 128, 384, 256}};
  switch (ctx.tier) {
  case Tier::quick:
    return {square(4096), up};
  case Tier::standard:
    return {square(1024), square(2048), square(4096), square(8192), qkv, up, down};
  case Tier::sustained:
    return {square(8192), square(16384), qkv, up, down};
  }
  return {square(4096)};
}

std::vector<Config> configs(const Context &ctx) {
  std::vector<Config> out;
  for (int g : Runtime::get().usable())
    for (const Shape &s : shapes(ctx))
      out.push_back({fmt::format("gpu{} {}", g, s.name), {double(g), s.m, s.n, s.k}});
  return out;
}

// ---- the GPU's state under load -----------------------------------------------------------------

// NVML's clocks, power, temperature and clock-event reasons read while `busy` keeps the GPU at
// work (benchmarking.md §3 and §5 rule 5: a result carries the clocks it ran at), into details.
void record_state(Json &details, const Device &d, const std::function<void()> &busy,
                  const std::function<void()> &wait) {
  busy();
  std::string why;
  auto st = state_now(d, why);
  wait();
  if (!st) {
    details["gpu_state_during_run"] = nullptr;
    details["gpu_state_note"] = "clocks, power and temperature not read: " + why;
    return;
  }
  auto num = [](const auto &r, double scale = 1) {
    return r.value ? Json(static_cast<double>(*r.value) * scale) : Json(nullptr);
  };
  Json reasons = Json::array();
  bool slowed = false;
  if (st->clocks_event_reasons.value)
    for (const auto &name : clock_event_reasons(*st->clocks_event_reasons.value, slowed))
      reasons.push_back(name);
  details["gpu_state_during_run"] = {
      {"sm_clock_mhz", num(st->sm_clock_mhz)},
      {"memory_clock_mhz", num(st->memory_clock_mhz)},
      {"power_w", num(st->power_usage_mw, 1e-3)},
      {"temperature_c", num(st->temperature_c)},
      {"clocks_event_reasons", st->clocks_event_reasons.value ? reasons : Json(nullptr)}};
  details["throttled"] = st->clocks_event_reasons.value ? Json(slowed) : Json(nullptr);
  if (slowed)
    details["gpu_state_note"] = "the GPU lowered its clocks for heat or a hardware slowdown "
                                "during the run: the rate is below what it delivers cool";
}

// ---- one configuration --------------------------------------------------------------------------

constexpr std::size_t kWorkspaceBytes = 32u << 20; // cuBLAS's recommendation for Hopper
constexpr std::size_t kScaleAlign =
    16;                         // bytes: cuBLASLt's alignment for an FP8 scale pointer (below)
constexpr int kCandidates = 16; // heuristic results asked for
constexpr int kTrialRuns = 3;   // timed runs per candidate, at least ...
constexpr double kTrialSeconds = 2e-3;     // ... and until this much GPU time (short GEMMs)
constexpr int kMaxTrialRuns = 40;          // ... but never more than this
constexpr double kTrialWallSeconds = 5e-3; // ... nor past this much wall clock
constexpr double kRestSeconds = 1;         // the longest rest between the trials and the samples
constexpr int kSampledEntries = 64;

// Owning cuBLASLt descriptors.
struct Descriptors {
  const Context &ctx;
  lt::MatmulDesc op = nullptr;
  lt::Layout a = nullptr, b = nullptr, c = nullptr;
  lt::Preference pref = nullptr;
  ~Descriptors() {
    const auto &api = blas(ctx).lib.api();
    for (lt::Layout l : {a, b, c})
      if (l)
        api.matrix_layout_destroy(l);
    if (op)
      api.matmul_desc_destroy(op);
    if (pref)
      api.preference_destroy(pref);
  }
};

std::string peak_text(const Precision &p) {
  return p.integer ? "TOP/s" : "TFLOP/s";
}

// The catalog's spec of this GPU (the snapshot's PCI ids, else the driver's name).
const kb::GpuSpec *spec_of(const Context &ctx, const Device &d) {
  const auto &kb = kb::builtin();
  if (const dlrig::Gpu *g = snapshot_gpu(ctx, d); g && g->vendor_id && g->device_id)
    if (const auto *s = kb.find_gpu_by_pci(*g->vendor_id, *g->device_id))
      return s;
  return kb.find_gpu(d.name);
}

Outcome run_gemm(const Precision &p, const Config &c, const Context &ctx, Sampler &s) {
  Runtime &rt = Runtime::get();
  Device &d = device_for(c);
  if (auto why = unsuited(p, d))
    throw Skip(*why);
  return rt.guarded(d, [&] {
    auto m = static_cast<std::uint64_t>(c.params.at(1));
    auto n = static_cast<std::uint64_t>(c.params.at(2));
    auto k = static_cast<std::uint64_t>(c.params.at(3));
    if (p.scales == Scales::blocks)
      if (auto why = gemm::block_scale_shape_problem(m, n, k))
        throw Skip(*why);
    if (p.scales == Scales::mx)
      if (auto why = gemm::mx_scale_shape_problem(m, n, k))
        throw Skip(*why);
    const std::size_t ab = gemm::element_bytes(p.ab_element);
    const std::size_t cd = gemm::element_bytes(p.cd_element);
    std::string note;

    // Device memory: the workspace and the L2 flush buffer, then the matrices (out of memory for
    // them halves every dimension, not below 64, and says so: other processes hold memory).
    const std::size_t flush_bytes = std::max<std::size_t>(
        2 * static_cast<std::size_t>(std::max<std::int64_t>(d.l2_bytes, 0)), 1u << 20);
    // A shape the GPU's free memory cannot hold is skipped, naming the bytes (a smaller shape is
    // another measurement; the sweep has its own); stepping down stays for allocations that fail
    // although cuMemGetInfo said they fit, or when it does not answer.
    // FP32, TF32, FP16 and BF16 also try torch.matmul's layout, which needs B a second time.
    const bool both_layouts = !p.scaled() && !p.integer;
    const double needed =
        static_cast<double>(kWorkspaceBytes + flush_bytes) +
        static_cast<double>(k * m * ab + (both_layouts ? 2 : 1) * k * n * ab + m * n * cd);
    if (auto why = lacks_free_memory(
            d, needed,
            fmt::format("{} {}x{}x{} (A, B{}, D, the {} MiB workspace and the {} MiB L2 flush)",
                        p.name, m, n, k, both_layouts ? " in both layouts" : "",
                        kWorkspaceBytes >> 20, flush_bytes >> 20)))
      throw Skip(*why);
    auto work = std::make_unique<DeviceBuffer>(kWorkspaceBytes);
    auto flush = std::make_unique<DeviceBuffer>(flush_bytes);
    std::unique_ptr<DeviceBuffer> da, db, db_rows, dd;
    const std::uint64_t m0 = m, n0 = n, k0 = k;
    for (;;) {
      try {
        da = std::make_unique<DeviceBuffer>(k * m * ab);
        db = std::make_unique<DeviceBuffer>(k * n * ab);
        if (both_layouts)
          db_rows = std::make_unique<DeviceBuffer>(k * n * ab);
        dd = std::make_unique<DeviceBuffer>(m * n * cd);
        break;
      } catch (const cuda::Error &e) {
        da.reset();
        db.reset();
        db_rows.reset();
        dd.reset();
        if (e.code() != cuda::kErrorOutOfMemory || std::min({m, n, k}) / 2 < 64)
          throw;
        m /= 2;
        n /= 2;
        k /= 2;
      }
    }
    if (m != m0)
      note =
          fmt::format("out of memory for {}x{}x{}: stepped down to {}x{}x{}", m0, n0, k0, m, n, k);

    // Random normal inputs of the type: A is k x m (used transposed), B is k x n. FP8: scaled
    // per tensor, row or block into E4M3's range, the dequantisation scales in device memory
    // (cuBLASLt reads them there when the matmul runs).
    const std::uint64_t seed = 0x67656d6d;
    std::vector<unsigned char> ha, hb;
    gemm::ScaledE4m3 sa, sb;
    gemm::BlockScaledE4m3 ba, bb;
    gemm::MxScaledE4m3 ma, mb;
    std::unique_ptr<DeviceBuffer> scales;
    std::size_t b_scale_at = kScaleAlign; // B's scale's byte offset in `scales`
    if (p.scaled()) {
      std::vector<unsigned char> a_s, b_s; // as cuBLASLt reads them: float32s or UE8M0 bytes
      auto bytes_of = [](const std::vector<float> &v) {
        std::vector<unsigned char> out(v.size() * sizeof(float));
        std::memcpy(out.data(), v.data(), out.size());
        return out;
      };
      if (p.scales == Scales::mx) {
        // A UE8M0 byte per 32 elements along k of each row of A and column of B (together in A
        // stored k x m and B k x n), in cuBLAS's tiled layout (gemm::MxLayout).
        ma = gemm::random_normal_e4m3_mx(k, m, seed);
        mb = gemm::random_normal_e4m3_mx(k, n, seed + 1);
        ha = ma.data;
        hb = mb.data;
        a_s = ma.scales;
        b_s = mb.scales;
      } else if (p.scales == Scales::blocks) {
        // 1 x 128 blocks of A (each row's k elements, together in A stored k x m) and 128 x 128
        // of B, their scales as cuBLASLt reads them (gemm::BlockLayout).
        ba = gemm::random_normal_e4m3_blocks(k, m, 1, seed);
        bb = gemm::random_normal_e4m3_blocks(k, n, 128, seed + 1);
        ha = ba.data;
        hb = bb.data;
        a_s = bytes_of(ba.dequant);
        b_s = bytes_of(bb.dequant);
      } else {
        // Row-wise: a scale per row of A (its k elements, together in A stored k x m) and per
        // column of B (together in B stored k x n).
        const bool rows = p.scales == Scales::rows;
        sa = gemm::random_normal_e4m3_scaled(k * m, seed, rows ? k : 0);
        sb = gemm::random_normal_e4m3_scaled(k * n, seed + 1, rows ? k : 0);
        ha = sa.data;
        hb = sb.data;
        a_s = bytes_of(rows ? sa.rows_dequant : std::vector<float>{sa.dequant});
        b_s = bytes_of(rows ? sb.rows_dequant : std::vector<float>{sb.dequant});
      }
      // A's scale(s) at byte 0, B's on the next 16-byte boundary: cuBLASLt 13.1 refuses
      // (NOT_SUPPORTED, every algorithm) a scale pointer that is not 16-byte aligned — measured
      // on an H100, where B's scale 4 bytes after A's failed and 16 bytes after ran
      // (docs/bench.md, "FP8 scales"); cuBLAS documents it for the block modes ("Starting
      // addresses of scaling factors must be 16B aligned").
      b_scale_at = (a_s.size() + kScaleAlign - 1) / kScaleAlign * kScaleAlign;
      std::vector<unsigned char> both(b_scale_at + b_s.size(), 0);
      std::copy(a_s.begin(), a_s.end(), both.begin());
      std::copy(b_s.begin(), b_s.end(), both.begin() + static_cast<std::ptrdiff_t>(b_scale_at));
      scales = std::make_unique<DeviceBuffer>(both.size());
      DLRIG_CU(memcpy_htod, scales->ptr(), static_cast<const void *>(both.data()), both.size());
    } else {
      ha = gemm::random_normal(p.ab_element, k * m, seed);
      hb = gemm::random_normal(p.ab_element, k * n, seed + 1);
    }
    DLRIG_CU(memcpy_htod, da->ptr(), static_cast<const void *>(ha.data()), ha.size());
    DLRIG_CU(memcpy_htod, db->ptr(), static_cast<const void *>(hb.data()), hb.size());
    if (db_rows) {
      // B row by row (k rows of n), as torch stores a k x n tensor.
      std::vector<unsigned char> rows(hb.size());
      for (std::uint64_t j = 0; j < n; ++j)
        for (std::uint64_t kk = 0; kk < k; ++kk)
          std::memcpy(&rows[(kk * n + j) * ab], &hb[(j * k + kk) * ab], ab);
      DLRIG_CU(memcpy_htod, db_rows->ptr(), static_cast<const void *>(rows.data()), rows.size());
    }

    // The operation, in each layout tried (docs/bench.md "Layout"):
    //  TN: D (m x n, column-major) = A^T . B with A stored k x m and B k x n (FP8's and INT8's
    //      only layout);
    //  NN as torch.matmul calls cuBLAS for row-major tensors: D^T (n x m, column-major, i.e. D
    //      row-major) = B_rows . A, both untransposed, B_rows being B stored row by row.
    struct Stored {
      std::uint64_t rows, cols, ld; // as stored, column-major
    };
    struct Layout {
      const char *name = nullptr;
      int trans_a = lt::kOpN, trans_b = lt::kOpN;
      Stored a, b, d;
      const DeviceBuffer *first = nullptr, *second = nullptr; // the matmul's A and B
      bool d_row_major = false;                               // D's entry (i, j) at i * n + j
      std::unique_ptr<Descriptors> desc = nullptr;
      std::vector<lt::HeuristicResult> found = {};
    };
    std::vector<Layout> layouts;
    layouts.push_back({.name = "TN (A transposed, B not; column-major)",
                       .trans_a = lt::kOpT,
                       .trans_b = lt::kOpN,
                       .a = {k, m, k},
                       .b = {k, n, k},
                       .d = {m, n, m},
                       .first = da.get(),
                       .second = db.get(),
                       .d_row_major = false});
    if (db_rows)
      layouts.push_back({.name = "NN (row-major operands, as torch.matmul calls cuBLAS)",
                         .trans_a = lt::kOpN,
                         .trans_b = lt::kOpN,
                         .a = {n, k, n},
                         .b = {k, m, k},
                         .d = {n, m, n},
                         .first = db_rows.get(),
                         .second = da.get(),
                         .d_row_major = true});
    lt::Handle h = handle_for(ctx, d);
    const auto &lib = blas(ctx).lib;
    const std::string shape = fmt::format("{} {}x{}x{}", p.name, m, n, k);
    std::size_t returned_total = 0;
    lt::Status first_status = lt::kSuccess;
    for (Layout &l : layouts) {
      l.desc.reset(new Descriptors{ctx}); // an aggregate: clang has no make_unique for it
      Descriptors &desc = *l.desc;
      DLRIG_LT(ctx, matmul_desc_create, &desc.op, p.compute, p.scale);
      DLRIG_LT(ctx, matmul_desc_set_attribute, desc.op, lt::kDescTransA,
               static_cast<const void *>(&l.trans_a), sizeof l.trans_a);
      DLRIG_LT(ctx, matmul_desc_set_attribute, desc.op, lt::kDescTransB,
               static_cast<const void *>(&l.trans_b), sizeof l.trans_b);
      if (const ScaleModes *modes = scale_modes(p.scales)) {
        // Vector and block scales (cuBLASLt 12.8 or 12.9+): an older library refuses the
        // attribute.
        for (int attribute : {lt::kDescAScaleMode, lt::kDescBScaleMode}) {
          const bool is_a = attribute == lt::kDescAScaleMode;
          const std::int32_t mode = is_a ? modes->a : modes->b;
          if (lt::Status st =
                  lib.api().matmul_desc_set_attribute(desc.op, attribute, &mode, sizeof mode);
              st != lt::kSuccess)
            throw Skip(fmt::format(
                "cuBLASLt {} ({}) refused {} (CUBLASLT_MATMUL_DESC_{}_SCALE_MODE "
                "= {}: {}); they need cuBLAS {} or later",
                lt::version_text(lib.version()), lib.path(), modes->what, is_a ? "A" : "B",
                is_a ? modes->a_name : modes->b_name, lib.status_text(st), modes->since));
        }
      }
      if (scales) {
        // The attribute's value is the device pointer itself. No D scale: it converts the
        // result into an FP8 D's range, and D is BF16 here (docs/bench.md, "FP8 scales").
        const void *a_scale = reinterpret_cast<const void *>(scales->ptr());
        const void *b_scale = reinterpret_cast<const void *>(scales->ptr() + b_scale_at);
        DLRIG_LT(ctx, matmul_desc_set_attribute, desc.op, lt::kDescAScalePointer,
                 static_cast<const void *>(&a_scale), sizeof a_scale);
        DLRIG_LT(ctx, matmul_desc_set_attribute, desc.op, lt::kDescBScalePointer,
                 static_cast<const void *>(&b_scale), sizeof b_scale);
      }
      DLRIG_LT(ctx, matrix_layout_create, &desc.a, p.ab, l.a.rows, l.a.cols,
               static_cast<std::int64_t>(l.a.ld));
      DLRIG_LT(ctx, matrix_layout_create, &desc.b, p.ab, l.b.rows, l.b.cols,
               static_cast<std::int64_t>(l.b.ld));
      DLRIG_LT(ctx, matrix_layout_create, &desc.c, p.cd, l.d.rows, l.d.cols,
               static_cast<std::int64_t>(l.d.ld));
      DLRIG_LT(ctx, preference_create, &desc.pref);
      const std::uint64_t workspace = kWorkspaceBytes;
      DLRIG_LT(ctx, preference_set_attribute, desc.pref, lt::kPrefMaxWorkspaceBytes,
               static_cast<const void *>(&workspace), sizeof workspace);
      l.found.resize(kCandidates);
      int returned = 0;
      lt::Status hs =
          lib.api().algo_get_heuristic(h, desc.op, desc.a, desc.b, desc.c, desc.c, desc.pref,
                                       kCandidates, l.found.data(), &returned);
      if (&l == &layouts.front())
        first_status = hs;
      if (hs == lt::kNotSupported || (hs == lt::kSuccess && returned <= 0)) {
        l.found.clear(); // this layout has no algorithm here
        continue;
      }
      if (hs != lt::kSuccess)
        throw lt::Error(hs, "cublasLtMatmulAlgoGetHeuristic",
                        "cublasLtMatmulAlgoGetHeuristic: " + lib.status_text(hs));
      l.found.resize(static_cast<std::size_t>(returned));
      returned_total += l.found.size();
    }
    if (returned_total == 0)
      throw Skip(
          fmt::format("cuBLASLt has no algorithm for {} on GPU {} ({}, compute capability "
                      "{}.{}){}",
                      shape, d.ordinal, d.name, d.cc_major, d.cc_minor,
                      first_status == lt::kSuccess ? "" : ": " + lib.status_text(first_status)));

    const float alpha_f = 1, beta_f = 0;
    const std::int32_t alpha_i = 1, beta_i = 0;
    const void *alpha = p.integer ? static_cast<const void *>(&alpha_i) : &alpha_f;
    const void *beta = p.integer ? static_cast<const void *>(&beta_i) : &beta_f;
    Stream stream;
    auto as_ptr = [](cuda::DevicePtr x) { return reinterpret_cast<void *>(x); };
    auto matmul = [&](const Layout &l, const lt::MatmulAlgo &algo) {
      const Descriptors &desc = *l.desc;
      return lib.api().matmul(h, desc.op, alpha, as_ptr(l.first->ptr()), desc.a,
                              as_ptr(l.second->ptr()), desc.b, beta, as_ptr(dd->ptr()), desc.c,
                              as_ptr(dd->ptr()), desc.c, &algo, as_ptr(work->ptr()),
                              kWorkspaceBytes, reinterpret_cast<lt::Stream>(stream.get()));
    };
    // One cold run: L2 flushed on the stream first, then the matmul between the events.
    auto cold = [&](const Layout &l, const lt::MatmulAlgo &algo) {
      DLRIG_CU(memset_d8_async, flush->ptr(), static_cast<unsigned char>(0), flush_bytes,
               stream.get());
      lt::Status st = lt::kSuccess;
      Timed t = time_streams(d, {&stream}, [&] { st = matmul(l, algo); });
      if (st != lt::kSuccess)
        throw lt::Error(st, "cublasLtMatmul", "cublasLtMatmul: " + lib.status_text(st));
      return t;
    };

    // The heuristic's candidates of every layout, each warmed up and timed; the fastest is kept.
    std::optional<std::pair<std::size_t, std::size_t>> best; // layout, rank in its list
    double best_s = 0;
    std::optional<double> first_s; // the first layout's first candidate
    std::string last_refusal;
    int tried = 0;
    // Per layout: its candidates' trial medians, so a result shows why its layout won.
    Json trials = Json::array();
    const auto trials_began = std::chrono::steady_clock::now();
    for (std::size_t li = 0; li < layouts.size(); ++li) {
      const Layout &l = layouts[li];
      Json trial = {{"layout", l.name},
                    {"candidates_timed", 0},
                    {"first_candidate_s", nullptr},
                    {"best_s", nullptr},
                    {"best_rank", nullptr}};
      for (std::size_t i = 0; i < l.found.size(); ++i) {
        const lt::HeuristicResult &f = l.found[i];
        if (f.state != lt::kSuccess || f.workspace_size > kWorkspaceBytes)
          continue;
        if (lt::Status st = matmul(l, f.algo); st != lt::kSuccess) { // warm-up
          if (st != lt::kNotSupported && st != lt::kInvalidValue)
            throw lt::Error(st, "cublasLtMatmul", "cublasLtMatmul: " + lib.status_text(st));
          last_refusal = lib.status_text(st);
          continue;
        }
        ++tried;
        // A GEMM of microseconds gets more runs, so that noise does not pick its candidate.
        // Extra runs stop after kTrialWallSeconds of wall clock too: they are for GEMMs of a few
        // microseconds, whose runs cost tens of microseconds each, not for slow drivers.
        std::vector<double> t;
        double spent = 0;
        const auto began = std::chrono::steady_clock::now();
        auto wall = [&] {
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        };
        while (static_cast<int>(t.size()) < kTrialRuns ||
               (spent < kTrialSeconds && static_cast<int>(t.size()) < kMaxTrialRuns &&
                wall() < kTrialWallSeconds)) {
          t.push_back(cold(l, f.algo).seconds);
          spent += t.back();
        }
        double med = summarize(t).median;
        if (!first_s && li == 0)
          first_s = med;
        trial["candidates_timed"] = trial["candidates_timed"].get<int>() + 1;
        if (i == 0)
          trial["first_candidate_s"] = med;
        if (trial["best_s"].is_null() || med < trial["best_s"].get<double>()) {
          trial["best_s"] = med;
          trial["best_rank"] = i;
        }
        if (!best || med < best_s) {
          best = std::make_pair(li, i);
          best_s = med;
        }
      }
      trials.push_back(std::move(trial));
    }
    if (!best)
      throw Skip(fmt::format("cuBLASLt refused every candidate algorithm for {} on GPU {} ({}){}",
                             shape, d.ordinal, d.name,
                             last_refusal.empty() ? "" : ": " + last_refusal));
    const Layout &chosen = layouts[best->first];
    const lt::MatmulAlgo &chosen_algo = chosen.found[best->second].algo;
    // The trials ran back to back and leave a large GEMM's card at its power limit, which then
    // slows the first samples below what the trials measured (H100, docs/bench.md "On a real
    // GPU"); the card rests as long as the trials ran (at most kRestSeconds) before sampling.
    const double rest_s = std::min(
        kRestSeconds,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - trials_began).count());
    std::this_thread::sleep_for(std::chrono::duration<double>(rest_s));

    // --long: the SM clock, temperature and power read every 5 s between samples, so the result
    // shows the clock falling as the card heats (benchmarking.md §5 rule 9).
    const bool sustained = ctx.tier == Tier::sustained;
    Json series = Json::array();
    const auto started = std::chrono::steady_clock::now();
    auto since = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    double next_reading = 0;
    bool gated = false;
    StateLog log(d); // NVML read during every timed sample
    while (s.more()) {
      Timed t = cold(chosen, chosen_algo);
      gated = t.gated;
      s.add(t.seconds);
      if (sustained && since() >= next_reading) {
        std::string why;
        if (auto st = state_now(d, why))
          series.push_back(
              {{"t_s", since()},
               {"sm_clock_mhz",
                st->sm_clock_mhz.value ? Json(*st->sm_clock_mhz.value) : Json(nullptr)},
               {"temperature_c",
                st->temperature_c.value ? Json(*st->temperature_c.value) : Json(nullptr)},
               {"power_w",
                st->power_usage_mw.value ? Json(*st->power_usage_mw.value / 1e3) : Json(nullptr)}});
        next_reading = since() + 5;
      }
    }

    // Verification on sampled entries of D.
    Outcome o;
    // The GPU's state while about 50 ms of the same matmuls run (untimed).
    const int busy_runs =
        ctx.small ? 2 : static_cast<int>(std::clamp(0.05 / std::max(best_s, 1e-9), 1.0, 500.0));
    record_state(
        o.details, d,
        [&] {
          for (int i = 0; i < busy_runs; ++i)
            if (lt::Status st = matmul(chosen, chosen_algo); st != lt::kSuccess)
              throw lt::Error(st, "cublasLtMatmul", "cublasLtMatmul: " + lib.status_text(st));
        },
        [&] { DLRIG_CU(stream_synchronize, stream.get()); });
    log.into(o.details);
    std::vector<gemm::Entry> entries = gemm::sample_entries(m, n, kSampledEntries, seed);
    for (auto &e : entries) {
      unsigned char raw[4] = {};
      const std::uint64_t at = chosen.d_row_major ? e.i * n + e.j : e.j * m + e.i;
      DLRIG_CU(memcpy_dtoh, static_cast<void *>(raw), dd->ptr() + at * cd, cd);
      e.got = gemm::read_element(p.cd_element, raw);
    }
    if (ctx.corrupt && !entries.empty())
      entries.front().got = entries.front().got * 2 + 1;
    // FP8: the reference applies the same scales (in float32, as the GPU holds them), so a
    // library that ignores a scale pointer is off by the scales' product and fails.
    // Blocks and MXFP8: each k-block's partial product with its own two scales.
    const double dequant =
        p.scales == Scales::tensor ? static_cast<double>(sa.dequant) * sb.dequant : 1;
    if (p.scales == Scales::blocks)
      o.verification_error = gemm::verify(entries, ba, bb, p.cd_element, p.tolerance);
    else if (p.scales == Scales::mx)
      o.verification_error = gemm::verify(entries, ma, mb, p.cd_element, p.tolerance);
    else
      o.verification_error =
          gemm::verify(entries, p.ab_element, ha.data(), hb.data(), k, p.cd_element, p.tolerance,
                       dequant, sa.rows_dequant, sb.rows_dequant);

    o.work = gemm_flop(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k));
    o.work_unit = p.integer ? "OP" : "FLOP";
    o.rate_unit = peak_text(p);
    o.rate_scale = 1e12;
    if (const kb::GpuSpec *spec = spec_of(ctx, d); spec && (spec->*p.peak)) {
      o.peak = *(spec->*p.peak) / 1e12;
      o.peak_assumption = fmt::format("dense {} peak of {} (data/gpus.csv)", p.name, spec->name);
      // DLRIG_BENCH_SMALL's shapes are far below the floor's sizes: no floor there.
      if (!ctx.small)
        o.expectation = gemm_expectation(p.name, o.peak, o.rate_unit, static_cast<double>(m),
                                         static_cast<double>(n), static_cast<double>(k));
    } else {
      o.peak_assumption =
          spec ? fmt::format("{} has no {} peak in data/gpus.csv", spec->name, p.name)
               : fmt::format("\"{}\" is not in data/gpus.csv: no peak", d.name);
    }
    const auto &drv = rt.driver();
    Json state = o.details;
    o.details = {{"gpu", d.ordinal},
                 {"name", d.name},
                 {"bus_id", d.bus_id},
                 {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                 {"sms", d.sms},
                 {"driver_version", drv.version()},
                 {"driver_library", drv.library_path()},
                 {"resolved_by", drv.resolved_by()},
                 {"precision", p.name},
                 {"types", p.what},
                 {"m", m},
                 {"n", n},
                 {"k", k},
                 {"layout", chosen.name},
                 {"layout_trials", trials},
                 {"rest_before_samples_s", rest_s},
                 {"cublaslt_version", lt::version_text(lib.version())},
                 {"cublaslt_library", lib.path()},
                 {"cublaslt_found_in", lib.origin()},
                 {"candidates_returned", returned_total},
                 {"candidates_timed", tried},
                 {"algorithm_rank", best->second}, // 0 = the heuristic's first in its layout
                 {"workspace_bytes", kWorkspaceBytes},
                 {"l2_flush_bytes", flush_bytes},
                 {"inputs", scale_text(p.scales).inputs},
                 {"verified_entries", entries.size()},
                 {"timing", gated ? "CUDA events, gated by the hold kernel, L2 flushed before "
                                    "each sample"
                                  : "CUDA events, L2 flushed before each sample"}};
    o.details.update(state);
    if (sustained) {
      o.details["clock_series"] = series;
      const Drift drift = gemm::drift(s.samples(), series);
      o.details["rate_change_over_run"] =
          drift.rate_change ? Json(*drift.rate_change) : Json(nullptr);
      o.details["sm_clock_change_over_run"] =
          drift.clock_change ? Json(*drift.clock_change) : Json(nullptr);
      if (drift.note)
        o.details["sustained_note"] = *drift.note;
    }
    // Row-wise, blocks and MXFP8: each operand's scale count and range (one per row of A and per
    // column of B; one per block, and the layout cuBLASLt reads them in).
    auto range = [](const std::vector<float> &v) {
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      return Json{{"count", v.size()}, {"min", *lo}, {"max", *hi}};
    };
    auto scale_json = [&](const gemm::ScaledE4m3 &x, const gemm::BlockScaledE4m3 &blocks,
                          const gemm::MxScaledE4m3 &mx) {
      if (p.scales == Scales::tensor)
        return Json(x.dequant);
      if (p.scales == Scales::rows)
        return range(x.rows_dequant);
      if (p.scales == Scales::mx) {
        const gemm::MxLayout &l = mx.layout;
        std::vector<float> each; // the blocks' scales as values, without the tiles' padding
        for (std::uint64_t col = 0; col < l.cols; ++col)
          for (std::uint64_t kb = 0; kb < l.k_blocks(); ++kb)
            each.push_back(static_cast<float>(mx.at(col, kb)));
        Json j = range(each);
        j["layout"] = fmt::format(
            "{} x {} UE8M0 bytes (rows padded to a multiple of 128 x k-blocks padded to a multiple "
            "of 4) in cuBLAS's 128 x 4 tiles, tiles row-major: index (kb / 4 * 4 + i / 128 * {}) * "
            "128 + (i % 32) * 16 + (i % 128 / 32) * 4 + kb % 4",
            l.padded_cols(), l.padded_k_blocks(), l.padded_k_blocks());
        j["bytes"] = l.size();
        return j;
      }
      const gemm::BlockLayout &l = blocks.layout;
      std::vector<float> each; // the blocks' scales, without the layout's padding
      for (std::uint64_t cb = 0; cb < l.col_blocks(); ++cb)
        for (std::uint64_t kb = 0; kb < l.k_blocks(); ++kb)
          each.push_back(blocks.at(cb * l.cols_per_block, kb));
      Json j = range(each);
      j["layout"] =
          l.cols_per_block == 1
              ? fmt::format("{} x {} (rows x k-blocks), rows contiguous: index i + kb * {}", l.cols,
                            l.k_blocks(), l.cols)
              : fmt::format("{} x {} (k-blocks padded to a multiple of 4 x column blocks), "
                            "k-blocks contiguous: index kb + (j / 128) * {}",
                            l.size() / l.col_blocks(), l.col_blocks(), l.size() / l.col_blocks());
      j["floats"] = l.size();
      return j;
    };
    if (p.scaled())
      o.details["fp8_scales"] = {{"granularity", scale_text(p.scales).granularity},
                                 {"rule", scale_text(p.scales).rule},
                                 {"a_amax", p.scales == Scales::blocks ? ba.amax
                                            : p.scales == Scales::mx   ? ma.amax
                                                                       : sa.amax},
                                 {"b_amax", p.scales == Scales::blocks ? bb.amax
                                            : p.scales == Scales::mx   ? mb.amax
                                                                       : sb.amax},
                                 {"a_scale", scale_json(sa, ba, ma)},
                                 {"b_scale", scale_json(sb, bb, mb)},
                                 {"d_scale", nullptr}}; // BF16 D: no D scale
    if (lib.cudart_version())
      o.details["cublaslt_cuda"] = lt::cuda_version_text(*lib.cudart_version());
    if (first_s && *first_s > 0 && best_s > 0)
      o.details["gain_over_first_candidate"] = *first_s / best_s - 1;
    if (!note.empty())
      o.details["note"] = note;
    return o;
  });
}

Benchmark gemm_bench(const Precision &p) {
  return {std::string("gpu.gemm.") + p.name,
          "gpu.gemm",
          std::string("cuBLASLt matmul, ") + p.what + ", heuristic's best of " +
              std::to_string(kCandidates) + ", L2 flushed, verified",
          std::string("1 GPU, cuBLASLt") + (p.feature ? std::string(", ") + p.feature : ""),
          [&p](const Context &ctx) { return can_run(p, ctx); },
          configs,
          [&p](const Config &c, const Context &ctx, Sampler &s) { return run_gemm(p, c, ctx, s); }};
}

} // namespace

namespace gpu {

std::optional<Expectation> gemm_expectation(const std::string &precision,
                                            std::optional<double> peak,
                                            const std::string &rate_unit, double m, double n,
                                            double k) {
  static const char *const kFloored[] = {"fp32", "tf32", "fp16", "bf16"};
  if (!peak || !(*peak > 0) || std::min({m, n, k}) < 4096 ||
      std::find(std::begin(kFloored), std::end(kFloored), precision) == std::end(kFloored))
    return std::nullopt;
  return Expectation{
      0.5 * *peak, false,
      fmt::format("half the catalog's dense {} peak ({:g} {}) for a GEMM whose every side is >= "
                  "4096; below it, look for a power limit, throttling "
                  "(details.gpu_state_during_run), a slow or shared GPU, or other work on it",
                  precision, *peak, rate_unit),
      "published large GEMMs reach 63-87 % of the dense peak (shared/reference/benchmarking.md "
      "§2.1: H100 SXM bf16 794.5 of 989, A100 bf16 271 of 312, H100 PCIe bf16 496 of 756, RTX "
      "4090 fp32 52 of 82.6; https://github.com/stas00/ml-engineering/blob/master/compute/"
      "accelerator/README.md, https://github.com/zzc0721/torch-performance-test-data); "
      "benchmarking.md §5 rule 6 flags GEMM under ~70 % of the expected figure: 0.7 x ~0.7 = ~1/2"};
}

} // namespace gpu

std::vector<Benchmark> gpu_gemm_benchmarks() {
  std::vector<Benchmark> out;
  for (const Precision &p : kPrecisions)
    out.push_back(gemm_bench(p));
  return gpu::watching_faults(std::move(out));
}

} // namespace dlrig::bench

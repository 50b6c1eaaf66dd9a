#include "dlrig/fit/time.hpp"

#include "dlrig/kb/kb.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

namespace dlrig::fit {
namespace {

// The rows of one tensor-core MMA instruction, mma.sync.aligned.m16n8k16 (PTX ISA, "Matrix Shape":
// https://docs.nvidia.com/cuda/parallel-thread-execution/#warp-level-matrix-shape).
constexpr double kMmaRows = 16;

// A tensor-core GEMM with a dimension that is not a multiple of 16 bytes of its elements (8 for
// 16-bit types, 16 for FP8, 4 for TF32) cannot use cuBLAS's 16-byte-aligned kernels (NVIDIA Deep
// Learning Performance Guide, "Matrix Multiplication Background", Tensor Core Requirements:
// https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/);
// a linear layer's input and output features are its operands' leading dimensions (the tokens
// never are: the LM head's vocabulary is N forward, K for the input gradient and the leading
// dimension of the transposed logits for the weight gradient). cuBLAS then runs "align1"
// kernels (profiled: cutlass_75_tensorop_bf16_s1688gemm_..._align1 for GPT-2's 50257-wide head):
// one NVIDIA H200, torch 2.11 + cuBLAS 13.1, 2026-11-26, the three LM-head GEMMs of 1.265 TFLOP
// each took 13.28, 8.97 and 8.37 ms, 124 TFLOP/s in all against 792 TFLOP/s aligned (dlrig bench
// on the same card): 0.157 of the aligned rate (tests/data/measured/h200/profile/gpt2_*.json,
// docs/fit-accuracy.md). Measured on Hopper only; assumed the same share elsewhere.
constexpr double kMisalignedShare = 0.157;

// Elements in 16 bytes for a tensor-core precision; 0 where alignment does not gate the kernels
// (FP32 runs CUDA-core SGEMM).
double aligned_elements(Precision p) {
  switch (p) {
  case Precision::fp16_amp:
  case Precision::bf16_amp:
  case Precision::bf16:
    return 8;
  case Precision::fp8:
    return 16;
  case Precision::tf32:
    return 4;
  case Precision::fp32:
    return 0;
  }
  return 0;
}

bool misaligned(double x, double elements) {
  return elements > 0 && x > 0 && std::fmod(x, elements) != 0;
}

bool is_transformer(model::ModelFamily f) {
  return f != model::ModelFamily::cnn && f != model::ModelFamily::unet;
}

std::size_t idx(Precision p) {
  return static_cast<std::size_t>(p);
}

std::optional<double> peak_at(const GpuTarget &g, Precision p) {
  switch (p) {
  case Precision::fp32:
    return g.fp32_flops;
  case Precision::tf32:
    return g.tf32_flops;
  case Precision::fp16_amp:
    return g.fp16_flops;
  case Precision::bf16_amp:
  case Precision::bf16:
    return g.bf16_flops;
  case Precision::fp8:
    return g.fp8_flops;
  }
  return std::nullopt;
}

std::string_view precision_class(Precision p) {
  switch (p) {
  case Precision::fp32:
    return "fp32";
  case Precision::tf32:
    return "tf32";
  case Precision::fp16_amp:
    return "fp16";
  case Precision::bf16_amp:
  case Precision::bf16:
    return "bf16";
  case Precision::fp8:
    return "fp8";
  }
  return "";
}

bool tensor_16(std::string_view c) {
  return c == "fp16" || c == "bf16";
}

bool datacenter(std::string_view form) {
  return form == "sxm" || form == "pcie-server";
}

std::optional<double> spec_peak(const kb::GpuSpec &g, std::string_view c) {
  if (c == "fp32")
    return g.fp32_flops;
  if (c == "tf32")
    return g.tf32_flops;
  if (c == "fp16")
    return g.fp16_flops;
  if (c == "bf16")
    return g.bf16_flops;
  if (c == "fp8")
    return g.fp8_flops;
  return std::nullopt;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The fraction of the peak a large GEMM reaches on this GPU at this precision, and why.
std::optional<std::pair<double, std::string>>
achieved_fraction(const GpuTarget &gpu, std::string_view cls, const kb::KnowledgeBase &kb) {
  auto same = [&](std::string_view a, std::string_view b) {
    return a == b || (tensor_16(a) && tensor_16(b));
  };
  // This GPU's own measurement (fp16 and bf16 share the tensor-core rate): the row names the
  // catalog GPU, which the driver may name differently ("NVIDIA H200" for "NVIDIA H200 SXM"), so
  // a row counts when both names resolve to the same catalog GPU.
  const kb::GpuSpec *mine = kb.find_gpu(gpu.name);
  for (int pass = 0; pass < 2; ++pass)
    for (const auto &row : kb.gemm_achieved) {
      const bool this_gpu = row.gpu == gpu.name || (mine && kb.find_gpu(row.gpu) == mine);
      if (!this_gpu || !(pass == 0 ? row.precision == cls : same(row.precision, cls)))
        continue;
      const auto *spec = kb.find_gpu(row.gpu);
      auto peak = spec ? spec_peak(*spec, row.precision) : std::nullopt;
      if (peak && *peak > 0)
        return std::pair{row.flops / *peak,
                         fmt::format("{} measured {:.0f} TFLOP/s {} ({})", row.gpu,
                                     row.flops / 1e12, row.precision, row.source)};
    }
  // The median over GPUs of its class (datacenter or desktop), else over all.
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<double> fractions;
    for (const auto &row : kb.gemm_achieved) {
      if (!same(row.precision, cls))
        continue;
      const auto *spec = kb.find_gpu(row.gpu);
      if (!spec)
        continue;
      if (pass == 0 && datacenter(spec->form_factor) != datacenter(gpu.form_factor))
        continue;
      auto peak = spec_peak(*spec, row.precision);
      if (peak && *peak > 0)
        fractions.push_back(row.flops / *peak);
    }
    if (!fractions.empty())
      return std::pair{median(fractions), fmt::format("median fraction of {} measured {} GPU{} "
                                                      "(data/gemm_achieved.csv)",
                                                      fractions.size(),
                                                      pass == 1                     ? "other"
                                                      : datacenter(gpu.form_factor) ? "datacenter"
                                                                                    : "desktop",
                                                      fractions.size() > 1 ? "s" : "")};
  }
  return std::nullopt;
}

bool hopper(const GpuTarget &g) {
  return g.cc_major() == 9;
}

// Bus bandwidth for collectives inside one node (nccl-tests' busbw), and its basis.
std::optional<std::pair<double, std::string>> intra_node_busbw(const GpuTarget &g,
                                                               const kb::KnowledgeBase &kb) {
  if (g.nvlink_bytes_per_s && *g.nvlink_bytes_per_s > 0 && g.form_factor == "sxm") {
    // NVLink: per direction half the bidirectional figure; p2pBandwidthLatencyTest reaches
    // 376-380 of NVLink 4's 450 GB/s per direction (84 %, NVIDIA/nccl#1264).
    const double per_dir = *g.nvlink_bytes_per_s / 2;
    return std::pair{per_dir * 0.84,
                     fmt::format("NVLink {:.0f} GB/s per direction x 84 % (measured NVLink 4 "
                                 "p2p, NVIDIA/nccl#1264)",
                                 per_dir / 1e9)};
  }
  if (g.pcie_gen && g.pcie_lanes) {
    auto raw = kb.pcie_bytes_per_s(*g.pcie_gen, *g.pcie_lanes);
    const auto *row = kb.pcie(*g.pcie_gen);
    if (raw && row && row->measured_h2d_high_bytes_per_s && row->theoretical_bytes_per_s) {
      const double f = *row->measured_h2d_high_bytes_per_s / *row->theoretical_bytes_per_s;
      return std::pair{*raw * f, fmt::format("PCIe {}.0 x{}: {:.1f} GB/s x {:.0f} % (measured "
                                             "host copies, links.csv)",
                                             *g.pcie_gen, *g.pcie_lanes, *raw / 1e9, f * 100)};
    }
    if (raw)
      return std::pair{*raw, fmt::format("PCIe {}.0 x{} theoretical {:.1f} GB/s (no measurement "
                                         "in links.csv: an upper bound)",
                                         *g.pcie_gen, *g.pcie_lanes, *raw / 1e9)};
  }
  return std::nullopt;
}

// The host-to-device rate for the inputs.
std::optional<double> host_link_rate(const GpuTarget &g, const kb::KnowledgeBase &kb) {
  if (g.host_link_bytes_per_s)
    return g.host_link_bytes_per_s;
  if (g.pcie_gen && g.pcie_lanes) {
    auto raw = kb.pcie_bytes_per_s(*g.pcie_gen, *g.pcie_lanes);
    const auto *row = kb.pcie(*g.pcie_gen);
    if (raw && row && row->measured_h2d_bytes_per_s && row->theoretical_bytes_per_s)
      return *raw * *row->measured_h2d_bytes_per_s / *row->theoretical_bytes_per_s;
    return raw;
  }
  return std::nullopt;
}

// Input bytes copied to the GPU per sample: transformers' default collator sends input_ids,
// attention_mask and labels as int64; torchvision's reference recipe normalises images on the CPU
// to fp32 (3 x side^2 x 4 B) plus an int64 label.
double input_bytes_per_sample(const ModelInput &m, const Run &run) {
  if (is_transformer(m.arch.family))
    return 3 * 8 * static_cast<double>(run.seq);
  const double side =
      static_cast<double>(run.image_size > 0 ? run.image_size : model::default_image_size(m.arch));
  return 3 * side * side * 4 + 8;
}

double attention_flops_train(const Dims &d, double seqs, double s) {
  double f = 12 * seqs * s * s * static_cast<double>(d.layers + d.decoder_layers) *
             static_cast<double>(d.q_dim);
  return d.causal ? f / 2 : f;
}

double image_macs(const model::ModelArch &m, std::int64_t side) {
  double macs = 0;
  if (auto modules = model::walk_shared(m, side))
    for (const auto &r : **modules)
      macs += r.macs;
  return macs;
}

// Text tokens pass neither the experts a token does not pick nor an image-text model's vision
// tower and projector.
double active_params(const ModelInput &m) {
  return static_cast<double>(m.params - inactive_expert_params(dims_of(m.arch)) -
                             model::tower_params(m.arch));
}

void fill_rates(TimeEstimate &t, const ModelInput &model, const Run &run, double seconds) {
  t.seconds_per_step = seconds;
  const double samples = static_cast<double>(run.batch * run.grad_accum) * run.dp();
  t.samples_per_s = samples / seconds;
  if (is_transformer(model.arch.family)) {
    t.tokens_per_s = samples * static_cast<double>(run.seq) / seconds;
    if (run.dataset_tokens)
      t.seconds_per_epoch = *run.dataset_tokens / *t.tokens_per_s;
  }
  if (run.samples)
    t.seconds_per_epoch = *run.samples / *t.samples_per_s;
  if (t.seconds_per_epoch && run.epochs > 0)
    t.seconds_total = *t.seconds_per_epoch * run.epochs;
}

// Every op of the step in the order they run, and the eight slowest, slowest first. A step
// without attention (a CNN's) drops the attention rate's basis line.
void keep_ops(TimeEstimate &t, std::vector<OpTime> times) {
  if (std::none_of(times.begin(), times.end(),
                   [](const OpTime &o) { return o.kind == OpKind::attention; }))
    std::erase_if(t.basis, [](const std::string &l) { return l.rfind("attention", 0) == 0; });
  t.top_ops = times;
  std::stable_sort(t.top_ops.begin(), t.top_ops.end(),
                   [](const OpTime &a, const OpTime &b) { return a.seconds > b.seconds; });
  if (t.top_ops.size() > 8)
    t.top_ops.resize(8);
  t.ops = std::move(times);
}

std::string percent(double part, double whole) {
  return fmt::format("{:.0f} %", whole > 0 ? 100 * part / whole : 0);
}

// The two slowest operations bound the way `bound` says.
std::string slowest(const std::vector<OpTime> &ops, std::string_view bound) {
  std::map<std::string, double> by;
  for (const auto &o : ops)
    if (o.bound == bound) {
      std::string n = o.name;
      for (const char *suffix : {" (input grad)", " (weight grad)", ".grad"})
        if (auto p = n.find(suffix); p != std::string::npos)
          n.erase(p);
      by[n] += o.seconds;
    }
  std::vector<std::pair<double, std::string>> v;
  for (const auto &[n, s] : by)
    v.emplace_back(s, n);
  std::sort(v.rbegin(), v.rend());
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < 2; ++i)
    out += (i ? " and " : "") + v[i].second;
  return out;
}

// `packed`: the weights are already 4-bit or stored quantised (no --quant to suggest).
std::string bottleneck(const StepBreakdown &b, double step, const std::vector<OpTime> &ops,
                       const Run &run, bool packed = false) {
  // The largest part, put in words (only that one: this runs for every option pick times).
  const double parts[] = {b.gemm,
                          b.attention,
                          b.memory,
                          b.launch,
                          b.bubble,
                          b.communication.value_or(0),
                          b.host_link.value_or(0),
                          b.input.value_or(0)};
  switch (std::max_element(std::begin(parts), std::end(parts)) - std::begin(parts)) {
  case 0:
    return fmt::format("compute-bound: matrix multiplies take {} of the step; a faster "
                       "precision (bf16, fp8) or more GPUs shorten it",
                       percent(b.gemm, step));
  case 1:
    return fmt::format("attention-bound: the attention kernels take {} of the step at "
                       "this sequence length",
                       percent(b.attention, step));
  case 2:
    return fmt::format("memory-bound: {} (and other memory-bound work) take {} of the step; {}",
                       slowest(ops, "memory"), percent(b.memory, step),
                       run.mode == Mode::infer && packed
                           ? "more requests per step (--concurrency) raise throughput"
                       : run.mode == Mode::infer
                           ? "quantised weights (--quant int8|int4) or more requests per step "
                             "(--concurrency) raise throughput"
                       : run.kernels == Kernels::eager
                           ? "fused kernels (torch.compile, a fused optimizer: --kernels fused) or "
                             "a larger batch raise throughput"
                           : "a larger batch raises throughput");
  case 3:
    return fmt::format("launch-bound: {} of the step is kernel-launch overhead (kernels too "
                       "small to fill the GPU); a larger batch or CUDA graphs "
                       "(torch.compile mode=\"reduce-overhead\") help",
                       percent(b.launch, step));
  case 4:
    return fmt::format("pipeline bubble: {} of the step idle; more micro-batches "
                       "(--grad-accum) shrink it",
                       percent(b.bubble, step));
  case 5:
    return fmt::format("communication-bound: {} of the step waits for collectives; a faster "
                       "interconnect, fewer GPUs per replica or gradient accumulation help",
                       percent(b.communication.value_or(0), step));
  case 6:
    return fmt::format("input-bound: copying the inputs to the GPU takes {} of the step; the host "
                       "link (an x4 slot, a Thunderbolt dock) limits it",
                       percent(b.host_link.value_or(0), step));
  default:
    return fmt::format("input-bound: decoding the images on the CPU takes {} of the step; more "
                       "DataLoader workers, GPU decoding (DALI) or pre-decoded data help",
                       percent(b.input.value_or(0), step));
  }
}

} // namespace

namespace {

bool sixteen_bit(Precision p) {
  return p == Precision::fp16_amp || p == Precision::bf16_amp || p == Precision::bf16 ||
         p == Precision::fp8;
}

// The fused attention the run's PyTorch calls for 16-bit SDPA, and the GPU its published rates
// were measured on. PyTorch prefers cuDNN's attention on compute capability 9.0 and 10.0 when its
// cuDNN is newer than 9.15 (check_prefer_cudnn_attention in aten/src/ATen/native/transformers/
// cuda/sdp_utils.cpp, pytorch/pytorch#162073), which the 2.11 wheels bundle
// (huggingface/transformers#48163); before, and elsewhere, its flash backend, FlashAttention-2.
// `--attention flash` is the flash-attn package: FlashAttention-2. Transformer Engine
// (`--kernels fused`) prefers its cuDNN FusedAttention to FlashAttention on compute capability 9.0
// and later (get_attention_backend in NVIDIA/TransformerEngine's
// transformer_engine/pytorch/attention/dot_product_attention/utils.py). Published: cuDNN and
// FlashAttention-2 on an H100, FlashAttention-2 on an A100; other architectures take the A100's
// shares (Blackwell's cuDNN curve is not in the data).
std::pair<std::string_view, std::string_view> attention_kernel(const GpuTarget &gpu,
                                                               const Run &run) {
  if (!hopper(gpu))
    return {"flash2", "NVIDIA A100 80GB SXM4"};
  const bool old_torch =
      !run.torch_version.empty() && compare_versions(run.torch_version, "2.11") < 0;
  if (run.kernels != Kernels::fused && (run.attention == Attention::flash || old_torch))
    return {"flash2", "NVIDIA H100 SXM5"};
  return {"cudnn", "NVIDIA H100 SXM5"};
}

// Linear in log2(seq) between the published sequence lengths, held at the ends; nullopt when no
// point has this pass, mask and head dimension.
std::optional<double> along_seq(const std::vector<AttentionPoint> &curve, std::string_view pass,
                                bool causal, int head_dim, double seq) {
  std::vector<std::pair<double, double>> pts;
  for (const auto &p : curve)
    if (p.pass == pass && p.causal == causal && p.head_dim == head_dim)
      pts.emplace_back(p.seq, p.share);
  if (pts.empty())
    return std::nullopt;
  std::sort(pts.begin(), pts.end());
  if (seq <= pts.front().first)
    return pts.front().second;
  if (seq >= pts.back().first)
    return pts.back().second;
  for (std::size_t i = 1; i < pts.size(); ++i)
    if (seq <= pts[i].first) {
      const auto [s0, v0] = pts[i - 1];
      const auto [s1, v1] = pts[i];
      const double t = std::log2(seq / s0) / std::log2(s1 / s0);
      return v0 + t * (v1 - v0);
    }
  return pts.back().second;
}

// Linear in head dimension between the published ones, held at the ends.
std::optional<double> at_shape(const std::vector<AttentionPoint> &curve, std::string_view pass,
                               bool causal, double head_dim, double seq) {
  std::vector<int> dims;
  for (const auto &p : curve)
    if (p.pass == pass && p.causal == causal &&
        std::find(dims.begin(), dims.end(), p.head_dim) == dims.end())
      dims.push_back(p.head_dim);
  if (dims.empty())
    return std::nullopt;
  std::sort(dims.begin(), dims.end());
  if (head_dim <= dims.front())
    return along_seq(curve, pass, causal, dims.front(), seq);
  if (head_dim >= dims.back())
    return along_seq(curve, pass, causal, dims.back(), seq);
  for (std::size_t i = 1; i < dims.size(); ++i)
    if (head_dim <= dims[i]) {
      auto v0 = along_seq(curve, pass, causal, dims[i - 1], seq);
      auto v1 = along_seq(curve, pass, causal, dims[i], seq);
      const double t = (head_dim - dims[i - 1]) / (dims[i] - dims[i - 1]);
      return *v0 + t * (*v1 - *v0);
    }
  return std::nullopt;
}

} // namespace

double attention_share(const std::vector<AttentionPoint> &curve, const Op &op) {
  const std::string_view pass = op.phase == Phase::backward ? "backward" : "forward";
  const double d = op.head_dim > 0 ? op.head_dim : 64;
  if (auto v = at_shape(curve, pass, op.causal, d, op.seq))
    return *v;
  if (op.causal && pass == "backward") {
    auto nc = at_shape(curve, "backward", false, d, op.seq);
    auto fc = at_shape(curve, "forward", true, d, op.seq);
    auto fn = at_shape(curve, "forward", false, d, op.seq);
    if (nc && fc && fn && *fn > 0)
      return *nc * *fc / *fn;
  }
  if (auto v = at_shape(curve, "both", op.causal, d, op.seq))
    return *v;
  return 0;
}

DeviceRates gpu_rates(const GpuTarget &gpu, const kb::KnowledgeBase &kb, const Run &run) {
  DeviceRates r;
  r.launch_s = kLaunchSeconds;
  r.kernel_s = kGpuKernelSeconds;
  std::map<std::string, std::string> said;
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16_amp, Precision::bf16_amp,
                      Precision::bf16, Precision::fp8}) {
    auto peak = peak_at(gpu, p);
    if (!peak || *peak <= 0)
      continue;
    const std::string cls(precision_class(p));
    auto f = achieved_fraction(gpu, cls, kb);
    if (!f)
      continue;
    r.gemm[idx(p)] = *peak * f->first;
    r.attention[idx(p)] =
        sixteen_bit(p) ? *peak
                       : *peak * (hopper(gpu) ? kAttentionFractionHopper : kAttentionFraction);
    if (!said.count(cls)) {
      said[cls] = f->second;
      r.basis.push_back(fmt::format("GEMM {}: {:.0f} TFLOP/s peak x {:.0f} % ({})", cls,
                                    *peak / 1e12, f->first * 100, f->second));
    }
  }
  if (gpu.memory_bandwidth_bytes_per_s) {
    r.memory_bw = *gpu.memory_bandwidth_bytes_per_s * kStreamFraction;
    r.basis.push_back(fmt::format("memory: {:.0f} GB/s x {:.0f} % (streaming kernels, "
                                  "benchmarking.md §2.2)",
                                  *gpu.memory_bandwidth_bytes_per_s / 1e9, kStreamFraction * 100));
  }
  // The curve's rows name their GPU exactly as gpus.csv does (the loader checks it).
  const auto [kernel, measured_on] = attention_kernel(gpu, run);
  const kb::GpuSpec *ref = kb.find_gpu(measured_on);
  double lo = 1, hi = 0;
  if (ref && ref->fp16_flops && *ref->fp16_flops > 0)
    for (const auto &a : kb.attention_achieved)
      if (a.kernel == kernel && a.gpu == measured_on) {
        const double share = a.flops / *ref->fp16_flops;
        r.attention_curve.push_back({a.pass, a.head_dim, a.causal, a.seq, share});
        lo = std::min(lo, share);
        hi = std::max(hi, share);
      }
  // The basis names the attention rate the run's own precision uses.
  if (!sixteen_bit(run.precision))
    r.basis.push_back(
        fmt::format("attention in fp32/tf32: {:.0f} % of that precision's peak (no "
                    "published rate by shape; docs/fit.md \"Time\")",
                    (hopper(gpu) ? kAttentionFractionHopper : kAttentionFraction) * 100));
  else if (!r.attention_curve.empty())
    r.basis.push_back(
        fmt::format("attention: {} as measured on an {} by pass, head dim, mask and sequence "
                    "length, {:.0f}-{:.0f} % of the 16-bit peak (data/attention_achieved.csv)",
                    kernel == "cudnn" ? "cuDNN's fused attention" : "FlashAttention-2", measured_on,
                    lo * 100, hi * 100));
  r.basis.push_back(fmt::format("launch overhead {:.1f} us per kernel, {:.2f} us on the GPU",
                                kLaunchSeconds * 1e6, kGpuKernelSeconds * 1e6));
  return r;
}

void apply_measured_gemm(DeviceRates &rates, const GpuTarget &gpu, const HostRates &host,
                         const kb::KnowledgeBase &kb) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  const kb::GpuSpec *mine = kb.find_gpu(gpu.name);
  for (const auto &m : host.gpu_gemm) {
    if (!(m.flops > 0))
      continue;
    const kb::GpuSpec *theirs = kb.find_gpu(m.gpu);
    if (lower(m.gpu) != lower(gpu.name) && !(mine && mine == theirs))
      continue;
    bool used = false;
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16_amp, Precision::bf16_amp,
                        Precision::bf16, Precision::fp8})
      if (precision_class(p) == m.precision) {
        rates.gemm[idx(p)] = m.flops;
        used = true;
      }
    if (!used)
      continue;
    const std::string head = "GEMM " + m.precision + ":";
    const std::string line =
        fmt::format("GEMM {}: measured {:.0f} TFLOP/s on this machine's {} ({})", m.precision,
                    m.flops / 1e12, m.gpu, m.source);
    auto it = std::find_if(rates.basis.begin(), rates.basis.end(),
                           [&](const std::string &b) { return b.rfind(head, 0) == 0; });
    if (it != rates.basis.end())
      *it = line;
    else
      rates.basis.insert(rates.basis.begin(), line);
  }
}

StepBreakdown time_ops(const std::vector<Op> &ops, const DeviceRates &rates,
                       std::vector<OpTime> *times) {
  StepBreakdown b;
  for (const auto &o : ops) {
    double compute = 0;
    if (o.flops > 0) {
      std::optional<double> rate = o.kind == OpKind::attention ? rates.attention[idx(o.precision)]
                                                               : rates.gemm[idx(o.precision)];
      if (o.kind == OpKind::attention && rate && sixteen_bit(o.precision) &&
          !rates.attention_curve.empty())
        *rate *= attention_share(rates.attention_curve, o);
      if (o.kind == OpKind::gemm && rate && o.m > 0 && o.n > 0) {
        // A dimension below the tile (decode: one token per sequence) is not padded to a whole
        // 64 tile: cuBLAS runs such skinny GEMMs with small tiles or as GEMV, so it is padded to
        // the tensor-core instruction's 16 rows instead, and the op stays bound by its weights.
        auto q = [](double x) {
          const double tile = x < kGemmTile ? kMmaRows : kGemmTile;
          return x / (std::ceil(x / tile) * tile);
        };
        *rate *= q(o.m) * q(o.n);
        const double e = aligned_elements(o.precision);
        if (misaligned(o.features_in, e) || misaligned(o.features_out, e))
          *rate *= kMisalignedShare;
      }
      if (rate && *rate > 0)
        compute = o.flops / *rate;
    }
    const double mem = rates.memory_bw ? o.bytes / *rates.memory_bw : 0;
    const double launch = o.kernels * rates.launch_s;
    // On the GPU: the work's roofline plus each kernel's fixed latency; the op waits for the CPU
    // to issue its kernels when that takes longer.
    const double device = std::max(compute, mem) + o.kernels * rates.kernel_s;
    const double t = std::max(device, launch);
    std::string bound;
    if (t <= 0)
      continue;
    if (launch >= t) {
      b.launch += t;
      bound = "launch";
    } else if (mem >= compute) {
      b.memory += t;
      bound = "memory";
    } else {
      (o.kind == OpKind::attention ? b.attention : b.gemm) += t;
      bound = "compute";
    }
    if (times)
      times->push_back({o.name, o.phase, bound, t, o.flops, o.bytes, o.kind, o.kernels});
  }
  return b;
}

double step_flops(const ModelInput &model, const Run &run) {
  const auto &arch = model.arch;
  const Dims d = dims_of(arch);
  if (run.mode == Mode::infer) {
    const double seqs = static_cast<double>(run.batch * run.concurrency);
    if (!is_transformer(arch.family))
      return 2 * image_macs(arch, run.image_size) * seqs;
    const double s = static_cast<double>(run.seq);
    return 2 * active_params(model) * s * seqs + attention_flops_train(d, seqs, s) / 3;
  }
  const double samples = static_cast<double>(run.batch * run.grad_accum) * run.dp();
  if (!is_transformer(arch.family)) {
    // Forward 2 x MACs, backward twice the forward (memory.md §1.11's 2 + 4); full checkpointing
    // runs the forward once more (4 + 4).
    const double f = (run.checkpointing == Checkpointing::full ? 8 : 6);
    return f * image_macs(arch, run.image_size) * samples;
  }
  const double s = static_cast<double>(run.seq);
  const double tokens = samples * s;
  const double p = active_params(model);
  // LoRA: the frozen weights need no weight-gradient GEMMs, so backward is 2 x params x tokens.
  double f = (run.lora() ? 4 : 6) * p * tokens;
  const double attn = attention_flops_train(d, samples, s);
  f += attn;
  if (run.checkpointing == Checkpointing::full)
    f += 2 * p * tokens + attn / 3; // one more forward (memory.md §1.11: factor 4 instead of 3)
  else if (run.checkpointing == Checkpointing::selective)
    f += attn / 3; // the attention core's forward again (Korthikanti et al. §5)
  return f;
}

TimeEstimate estimate_time(const ModelInput &model, const Run &run, const GpuTarget &gpu,
                           const HostRates &host) {
  TimeEstimate t;
  const auto &kb = kb::builtin();
  DeviceRates rates = gpu_rates(gpu, kb, run);
  apply_measured_gemm(rates, gpu, host, kb);
  // The rates this run uses: its GEMM precision (and BF16 attention for FP8), memory, attention.
  for (const auto &line : rates.basis) {
    const bool gemm_line = line.rfind("GEMM ", 0) == 0;
    const std::string mine = fmt::format("GEMM {}:", precision_class(run.precision));
    if (!gemm_line || line.rfind(mine, 0) == 0)
      t.basis.push_back(line);
  }
  t.peak_flops = peak_at(gpu, run.precision);
  t.flops_per_step = step_flops(model, run);
  const auto gemm = rates.gemm[idx(run.precision)];
  if (!t.peak_flops || *t.peak_flops <= 0 || !gemm) {
    t.peak_flops.reset();
    t.throughput_source = "unknown";
    t.notes.push_back(fmt::format("{} has no {} throughput in the catalog: time unknown", gpu.name,
                                  precision_class(run.precision)));
    return t;
  }
  t.throughput_source = t.basis.empty() ? "" : t.basis.front();
  if (!rates.memory_bw)
    t.notes.push_back("the GPU's memory bandwidth is unknown: memory-bound work is not timed");

  if (run.mode == Mode::infer) {
    std::vector<OpTime> times;
    // The host link while serving: the weights cross it once at load; the prompt's ids (or the
    // images) before the prefill; per decode step one int64 token id per sequence each way, since
    // HF generate samples on the GPU and copies only the chosen ids back.
    const double seqs = static_cast<double>(run.batch * run.concurrency);
    double prompt_link = 0, step_link = 0;
    if (auto link = host_link_rate(gpu, kb); link && *link > 0) {
      t.host_link_bytes_per_s = link;
      t.load_s = static_cast<double>(estimate_memory(model, run, gpu).weights) / *link;
      const bool tokens = is_transformer(model.arch.family);
      prompt_link =
          (tokens ? 8 * static_cast<double>(run.seq) : input_bytes_per_sample(model, run)) * seqs /
          *link;
      if (tokens && run.max_tokens > 0) {
        step_link = 2 * 8 * seqs / *link;
        t.link_s_per_step = step_link;
      }
      t.basis.push_back(fmt::format(
          "host link {:.2f} GB/s{}: the weights cross it once at load ({:.1f} s), then {:.0f} B "
          "of token ids per decode step",
          *link / 1e9, gpu.host_link.empty() ? "" : " (" + gpu.host_link + ")", *t.load_s,
          2 * 8 * seqs));
      if (gpu.host_link.find("Thunderbolt") != std::string::npos ||
          gpu.host_link.find("USB4") != std::string::npos)
        t.notes.push_back("the tunnel's per-step synchronisation latency is not charged: no "
                          "sourced figure (links.md §1.3 gives its rates only)");
    }
    const bool packed = run.quant == Quant::int4 || model.arch.stored_quant.has_value();
    auto pre = time_ops(prefill_ops(model, run), rates, &times);
    t.prefill_s = pre.gpu() + prompt_link;
    t.seconds_per_step = t.prefill_s;
    if (run.max_tokens > 0 && is_transformer(model.arch.family)) {
      // Decode: one token per sequence per step, at the mean context of the generation.
      const double context = static_cast<double>(run.seq) + static_cast<double>(run.max_tokens) / 2;
      times.clear();
      auto dec = time_ops(decode_ops(model, run, context), rates, &times);
      if (t.link_s_per_step)
        dec.host_link = step_link;
      const double step = dec.gpu() + step_link;
      if (step > 0) {
        t.decode_tokens_per_s = seqs / step;
        t.decode_tokens_per_s_per_stream = 1 / step;
        t.breakdown = dec;
        t.bottleneck = bottleneck(dec, step, times, run, packed);
      }
    } else {
      t.breakdown = pre;
      t.bottleneck = bottleneck(pre, pre.gpu(), times, run, packed);
    }
    keep_ops(t, std::move(times));
    return t;
  }

  std::vector<OpTime> times;
  const auto ops = train_ops(model, run);
  StepBreakdown b = time_ops(ops, rates, &times);
  double backward = 0, compute = 0;
  for (const auto &o : times) {
    compute += o.seconds;
    if (o.phase == Phase::backward || o.phase == Phase::recompute)
      backward += o.seconds;
  }

  // Communication (nccl-tests' conventions: all-reduce moves 2(n-1)/n of the data per GPU,
  // all-gather and reduce-scatter (n-1)/n), over the slowest link the collective crosses.
  const int dp = run.dp();
  const double tp = run.tp, pp = run.pp;
  auto intra = intra_node_busbw(gpu, kb);
  std::optional<double> dp_bw = intra ? std::optional<double>(intra->first) : std::nullopt;
  if (intra && (dp > 1 || run.tp > 1))
    t.basis.push_back("collectives: " + intra->second);
  if (run.nodes > 1 && dp > 1) {
    if (run.network_bytes_per_s > 0) {
      dp_bw = dp_bw ? std::min(*dp_bw, run.network_bytes_per_s) : run.network_bytes_per_s;
      t.basis.push_back(fmt::format("between nodes: {:.1f} GB/s per GPU (--network)",
                                    run.network_bytes_per_s / 1e9));
    } else {
      dp_bw.reset();
      t.notes.push_back("the network between nodes is unknown (give --network, e.g. "
                        "\"InfiniBand NDR\"): communication time unknown");
    }
  }
  double comm = 0;
  bool comm_known = true;
  // Gradients as reduced: fp32 under autocast and fp32 runs, 16-bit otherwise; ZeRO/FSDP
  // partitions are of the whole replica's gradients.
  Run whole = run;
  whole.strategy = Strategy::ddp;
  const double trained = trained_params(model, whole);
  const bool wide = run.precision == Precision::fp32 || run.precision == Precision::tf32 ||
                    run.precision == Precision::fp16_amp || run.precision == Precision::bf16_amp;
  const double grad_bytes = trained * (wide ? 4 : 2);
  if (dp > 1) {
    if (!dp_bw) {
      comm_known = false;
    } else {
      const double n = dp;
      const double w16 = trained * 2;
      const double last_micro_backward = backward / static_cast<double>(run.grad_accum);
      switch (run.strategy) {
      case Strategy::ddp: {
        const double all = grad_bytes * 2 * (n - 1) / n / *dp_bw;
        const double last = std::min(kDdpBucketBytes, grad_bytes) * 2 * (n - 1) / n / *dp_bw;
        comm += std::max(0.0, all - last - last_micro_backward) + last;
        break;
      }
      case Strategy::zero1:
      case Strategy::zero2: {
        const double rs = grad_bytes * (n - 1) / n / *dp_bw;
        const double ag = w16 * (n - 1) / n / *dp_bw;
        comm +=
            (run.strategy == Strategy::zero2 ? std::max(0.0, rs - last_micro_backward) : rs) + ag;
        break;
      }
      case Strategy::zero3:
      case Strategy::fsdp: {
        const double per_micro = (2 * w16 + grad_bytes) * (n - 1) / n / *dp_bw;
        const double all = per_micro * static_cast<double>(run.grad_accum);
        const double layers = std::max<double>(1, model.arch.layers + model.arch.decoder_layers);
        comm += std::max(0.0, all - compute) + per_micro / layers;
        break;
      }
      }
    }
  }
  if (run.tp > 1) {
    // Megatron-LM: two all-reduces of the layer's activations forward and two backward.
    if (!intra) {
      comm_known = false;
    } else {
      const double layers = std::ceil((model.arch.layers + model.arch.decoder_layers) / pp);
      const double bytes = static_cast<double>(run.batch * run.seq) * model.arch.hidden *
                           activation_bytes(run.precision);
      comm += 4 * layers * bytes * 2 * (tp - 1) / tp / intra->first *
              static_cast<double>(run.grad_accum);
    }
  }
  if (comm_known)
    b.communication = comm;
  if (run.pp > 1) {
    // The 1F1B pipeline bubble: (p - 1) / m of the step idle (Narayanan et al. 2021).
    b.bubble = compute * (pp - 1) / static_cast<double>(run.grad_accum);
  }

  // Input: the host-to-device copy (pinned memory, overlapped with compute) and the decode.
  const double samples_per_gpu = static_cast<double>(run.batch * run.grad_accum);
  if (auto link = host_link_rate(gpu, kb); link && *link > 0) {
    b.host_link = samples_per_gpu * input_bytes_per_sample(model, run) / *link;
    t.basis.push_back(fmt::format("host link {:.1f} GB/s{}", *link / 1e9,
                                  gpu.host_link.empty() ? "" : " (" + gpu.host_link + ")"));
  }
  if (!is_transformer(model.arch.family) && host.images_per_s && *host.images_per_s > 0) {
    // One CPU decodes for every GPU of the node.
    b.input = samples_per_gpu * run.gpus / *host.images_per_s;
    t.basis.push_back(host.basis);
  } else if (!is_transformer(model.arch.family)) {
    t.notes.push_back("image decoding is not timed: run `dlrig bench data.decode` to measure it");
  }

  const double gpu_side = b.gpu() + b.communication.value_or(0);
  const double step = std::max({gpu_side, b.host_link.value_or(0), b.input.value_or(0)});
  t.breakdown = b;
  fill_rates(t, model, run, step);
  t.mfu = model_flops(model, run, ops) / (step * *t.peak_flops * run.world());
  t.bottleneck = bottleneck(b, step, times, run);
  if (!comm_known)
    t.notes.push_back("communication is not included: the time is a lower bound");
  keep_ops(t, std::move(times));
  return t;
}

std::optional<CpuTarget> cpu_target(const CpuInfo &cpu) {
  if (!cpu.cores || *cpu.cores <= 0)
    return std::nullopt;
  auto hz = cpu.max_hz ? cpu.max_hz : cpu.base_hz;
  if (!hz || *hz <= 0)
    return std::nullopt;
  auto has = [&](std::string_view f) {
    return std::find(cpu.isa.begin(), cpu.isa.end(), f) != cpu.isa.end();
  };
  CpuTarget c;
  c.model = cpu.model.value_or("CPU");
  c.cores = *cpu.cores;
  c.hz = *hz;
  if (has("avx512f")) {
    c.flops_per_cycle = 64;
    c.assumption = "AVX-512 with two FMA units: 64 FP32 FLOP/cycle/core";
  } else if (has("avx2") && has("fma")) {
    c.flops_per_cycle = 32;
    c.assumption = "AVX2 with two FMA units: 32 FP32 FLOP/cycle/core";
  } else if (has("avx2") || has("avx")) {
    c.flops_per_cycle = 16;
    c.assumption = "AVX without FMA: 16 FP32 FLOP/cycle/core";
  } else {
    return std::nullopt; // no ISA flags we can rate (e.g. aarch64 without a known figure)
  }
  c.assumption += fmt::format(", {} cores at {:.2f} GHz", c.cores, c.hz / 1e9);
  return c;
}

TimeEstimate estimate_time_cpu(const ModelInput &model, const Run &run, const CpuTarget &cpu,
                               const HostRates &host) {
  TimeEstimate t;
  // PyTorch trains in fp32 on the CPU whatever --precision.
  Run r = run;
  r.gpus = 1;
  r.nodes = 1;
  r.tp = r.pp = 1;
  r.precision = Precision::fp32;
  r.strategy = Strategy::ddp;
  DeviceRates rates;
  if (host.cpu_gemm_flops) {
    rates.gemm[idx(Precision::fp32)] = host.cpu_gemm_flops;
    t.throughput_source = fmt::format("this machine's CPU: measured cpu.gemm.sgemm {:.0f} GFLOP/s",
                                      *host.cpu_gemm_flops / 1e9);
  } else {
    rates.gemm[idx(Precision::fp32)] = cpu.peak();
    t.throughput_source = "this machine's CPU: theoretical peak, " + cpu.assumption +
                          " (an upper bound on speed; `dlrig bench cpu.gemm` measures it)";
  }
  rates.attention[idx(Precision::fp32)] = rates.gemm[idx(Precision::fp32)];
  rates.memory_bw = host.cpu_memory_bw;
  t.basis.push_back(t.throughput_source);
  if (!rates.memory_bw)
    t.notes.push_back("memory-bound work is not timed on the CPU (no `dlrig bench cpu.stream` "
                      "result): the time is a lower bound");
  t.peak_flops = cpu.peak();
  t.flops_per_step = step_flops(model, r);
  std::vector<OpTime> times;
  if (run.mode == Mode::infer) {
    auto pre = time_ops(prefill_ops(model, r), rates, &times);
    t.prefill_s = pre.gpu();
    t.seconds_per_step = t.prefill_s;
    t.breakdown = pre;
    return t;
  }
  auto b = time_ops(train_ops(model, r), rates, &times);
  t.breakdown = b;
  fill_rates(t, model, r, b.gpu());
  t.mfu = model_flops(model, r) / (b.gpu() * cpu.peak());
  return t;
}

} // namespace dlrig::fit

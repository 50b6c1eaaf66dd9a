// A stand-in for libcublasLt.so, driven by the scenario file named in
// DLRIG_FAKE_CUBLASLT_SCENARIO (format: docs/testing.md, "Fake cuBLASLt"). It runs inside a
// process that has loaded the fake libcuda (tests/fake_cuda, named by DLRIG_CUDA_LIBRARY): device
// pointers are that fake's host memory, so the matmul really computes D on the host (dlrig's
// verification is real), and its time is simulated: 2·m·n·k over the scenario's rate for the
// precision, divided by the chosen algorithm's speed factor, added to the stream's clock through
// the fake libcuda's hook, so CUDA events give the scenario's rate back.
//
// It fails closed: no scenario or an unreadable one fails cublasLtCreate; no fake libcuda loaded
// fails cublasLtCreate; a precision without a rate is NOT_SUPPORTED; a pointer outside the current
// fake GPU's allocations is INVALID_VALUE; a product larger than 2^31 multiply-adds is
// NOT_SUPPORTED (the host would take minutes: run with DLRIG_BENCH_SMALL=1).
//
// Scenario keys: "version" (cublasLtGetVersion), "cudart_version" (cublasLtGetCudartVersion),
// "tflops" {precision: rate}, precisions fp32 tf32 fp16 bf16 fp8 int8 (int8 in TOP/s),
// "algorithms" [speed factor per heuristic candidate, first = the heuristic's first; default
// [1]], "not_supported" [precisions the heuristic finds no algorithm for], "refuse" [precisions
// whose matmul answers NOT_SUPPORTED for every algorithm], "wrong" [precisions whose D is off],
// "layout_speed" {"TN"|"NN"|"NT"|"TT": factor} (a layout's kernels faster or slower),
// "errors" {symbol: status}, "ignore_scales" [precisions whose matmul accepts the A/B scale
// pointers but computes D as if they were 1, as a library that dropped them would],
// "scale_modes" ["outer_vec": CUBLASLT_MATMUL_DESC_A/B_SCALE_MODE may be OUTER_VEC_32F, one scale
// per row of op(A) and per column of op(B), as cuBLASLt 12.9+ on Hopper; "vec128" and
// "blk128x128": VEC128_32F and BLK128x128_32F, a scale per 128-element block along k of a row of
// op(A) or column of op(B), or per 128 x 128 block, read in cuBLAS's documented layouts (written
// here from the docs, apart from dlrig's gemm::BlockLayout, so that a layout mistake there fails
// verification) and applied to each k-block's partial product; a mode not listed is
// INVALID_VALUE, as an older library answers], "misread_block_scales" {precision: "tensor" |
// "k_major"} (a library that takes the block scales' first float as one scale per tensor, or
// reads A's 1 x 128 scales k-major: dlrig's verification must then fail); scale_modes'
// "vec32_ue8m0": VEC32_UE8M0 (MXFP8, cuBLAS 12.8+ on compute capability 10.0+), a UE8M0 byte per 32
// elements along k, read in cuBLAS's tiled 128 x 4 layout (read_mx_scales, decoded from the docs
// apart from dlrig's gemm::MxLayout) and applied to each 32-element k-block's partial product;
// "misread_mx_scales" {precision: "row_major" | "tensor"} (a library that reads them as a plain
// m x L matrix, or takes the first as one scale per tensor).
//
// Block scales are refused as cuBLAS documents them: with any mode other than VEC128 and
// BLK128x128 on the other operand, or both BLK128x128, NOT_SUPPORTED; m or n not a multiple of 4,
// NOT_SUPPORTED; a block mode without its scale pointer, or a scale tensor that runs past its
// allocation, INVALID_VALUE. MXFP8 scales likewise: VEC32_UE8M0 on one of A and B only, on a type
// that is not FP8, or with k not a multiple of 32, NOT_SUPPORTED; a scale buffer shorter than its
// whole tiles INVALID_VALUE.
//
// Scale pointers (CUBLASLT_MATMUL_DESC_A/B/D_SCALE_POINTER) are honoured: the float32 each points
// to is read from the fake GPU's memory when the matmul runs and D = a_scale * b_scale * A.B. A
// pointer outside the fake GPU's allocations, an A/B scale on a type that is not FP8, or a D scale
// with a D that is not FP8 is INVALID_VALUE (the D scale converts into an FP8 D's range); an A/B
// scale pointer that is not 16-byte aligned is NOT_SUPPORTED for every algorithm, as cuBLASLt 13.1
// answered on an H100 (docs/bench.md, "FP8 scales").
//
// Its exports are generated from dlrig's entry-point table (platform/cublaslt_entry_points.hpp).
#include "dlrig/bench/gemm_data.hpp"
#include "dlrig/platform/cublaslt_entry_points.hpp"

#include "fake_common/fake_library.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

using namespace dlrig::cublaslt;
using dlrig::bench::gemm::Element;
using dlrig::fake::CalledAs;
using dlrig::fake::find;
using dlrig::fake::g_symbol;
using nlohmann::json;

namespace {

struct FakeDesc {
  ComputeType compute = 0;
  DataType scale = 0;
  int trans_a = kOpN, trans_b = kOpN;
  const void *a_scale = nullptr, *b_scale = nullptr, *d_scale = nullptr; // device pointers
  std::int32_t a_mode = kScaleScalar32F, b_mode = kScaleScalar32F;       // A/B_SCALE_MODE
};
struct FakeLayout {
  DataType type = 0;
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
};
struct FakePreference {
  std::uint64_t max_workspace = 0;
};

using AdvanceFn = int (*)(Stream, double);
using IsDeviceFn = int (*)(std::uint64_t, std::size_t);

struct State {
  bool loaded = false;
  std::string load_error;
  json scenario;
  AdvanceFn advance = nullptr;
  IsDeviceFn is_device = nullptr;
  std::recursive_mutex mutex;
};

State &state() {
  static State s;
  return s;
}

void load() {
  auto &s = state();
  if (s.loaded || !s.load_error.empty())
    return;
  const char *path = std::getenv("DLRIG_FAKE_CUBLASLT_SCENARIO");
  if (!path || !*path) {
    s.load_error = "DLRIG_FAKE_CUBLASLT_SCENARIO is not set";
    return;
  }
  std::ifstream in(path);
  if (!in) {
    s.load_error = std::string("cannot read ") + path;
    return;
  }
  try {
    s.scenario = json::parse(in);
  } catch (const std::exception &e) {
    s.load_error = std::string(path) + ": " + e.what();
    return;
  }
  s.loaded = true;
}

// The fake libcuda's hooks, from the copy already loaded in this process.
bool bind_cuda() {
  auto &s = state();
  if (s.advance)
    return true;
  const char *cuda = std::getenv("DLRIG_CUDA_LIBRARY");
  void *h = cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  if (!h)
    return false;
  s.advance = reinterpret_cast<AdvanceFn>(dlsym(h, "dlrig_fake_cuda_advance"));
  s.is_device = reinterpret_cast<IsDeviceFn>(dlsym(h, "dlrig_fake_cuda_is_device_memory"));
  return s.advance && s.is_device;
}

Status enter() {
  load();
  auto &s = state();
  if (!s.loaded)
    return kNotInitialized;
  if (const json *forced = find(s.scenario, {"errors", g_symbol}))
    return forced->get<Status>();
  return kSuccess;
}

#define FAKE_ENTER()                                                                               \
  std::lock_guard<std::recursive_mutex> lock(state().mutex);                                       \
  if (Status entered = enter(); entered != kSuccess)                                               \
  return entered

bool listed(const char *key, const std::string &precision) {
  const json *l = find(state().scenario, {key});
  if (!l)
    return false;
  for (const auto &p : *l)
    if (p == precision)
      return true;
  return false;
}

// The precision a descriptor and A's layout describe, "" when not one dlrig uses.
std::string precision_of(const FakeDesc &d, const FakeLayout &a, const FakeLayout &c) {
  if (a.type == kR32F && c.type == kR32F && d.compute == kCompute32F)
    return "fp32";
  if (a.type == kR32F && c.type == kR32F && d.compute == kCompute32FFastTF32)
    return "tf32";
  if (a.type == kR16F && c.type == kR16F && d.compute == kCompute32F)
    return "fp16";
  if (a.type == kR16BF && c.type == kR16BF && d.compute == kCompute32F)
    return "bf16";
  if (a.type == kR8FE4M3 && c.type == kR16BF && d.compute == kCompute32F)
    return "fp8";
  if (a.type == kR8I && c.type == kR32I && d.compute == kCompute32I && d.scale == kR32I)
    return "int8";
  return "";
}

Element element_of(DataType t) {
  switch (t) {
  case kR32F:
    return Element::f32;
  case kR16F:
    return Element::f16;
  case kR16BF:
    return Element::bf16;
  case kR8FE4M3:
    return Element::e4m3;
  case kR8I:
    return Element::i8;
  default:
    return Element::i32;
  }
}

// m, n, k of D = op(A) op(B), or false when the layouts disagree.
bool dims(const FakeDesc &d, const FakeLayout &a, const FakeLayout &b, const FakeLayout &c,
          std::uint64_t &m, std::uint64_t &n, std::uint64_t &k) {
  m = d.trans_a == kOpT ? a.cols : a.rows;
  k = d.trans_a == kOpT ? a.rows : a.cols;
  const std::uint64_t kb = d.trans_b == kOpT ? b.cols : b.rows;
  n = d.trans_b == kOpT ? b.rows : b.cols;
  return m > 0 && n > 0 && k > 0 && k == kb && c.rows == m && c.cols == n &&
         a.ld >= static_cast<std::int64_t>(a.rows) && b.ld >= static_cast<std::int64_t>(b.rows) &&
         c.ld >= static_cast<std::int64_t>(c.rows);
}

bool block_mode(std::int32_t mode) {
  return mode == kScaleVec128_32F || mode == kScaleBlk128x128_32F;
}

// Why the operation is not supported, "" when it is.
std::string unsupported(const FakeDesc &d, const std::string &precision, std::uint64_t m,
                        std::uint64_t n, std::uint64_t k) {
  if (precision.empty())
    return "a type combination dlrig does not use";
  if (listed("not_supported", precision))
    return "the scenario's not_supported";
  if (!find(state().scenario, {"tflops", precision.c_str()}))
    return "no rate in the scenario";
  if (precision == "fp8" && !(d.trans_a == kOpT && d.trans_b == kOpN))
    return "FP8 needs the TN layout";
  if (block_mode(d.a_mode) || block_mode(d.b_mode)) {
    if (precision != "fp8")
      return "block scales need FP8";
    if (!block_mode(d.a_mode) || !block_mode(d.b_mode))
      return "a block scale mode with another kind of scale";
    if (d.a_mode == kScaleBlk128x128_32F && d.b_mode == kScaleBlk128x128_32F)
      return "128 x 128 blocks on both A and B";
    if (m % 4 != 0 || n % 4 != 0)
      return "block scales need m and n multiples of 4";
  }
  // MXFP8: VEC32_UE8M0 "for all FP8-precision tensors", so on both A and B; k whole 32-element
  // blocks, as the docs define the product.
  if (d.a_mode == kScaleVec32Ue8m0 || d.b_mode == kScaleVec32Ue8m0) {
    if (precision != "fp8")
      return "MXFP8 scales need FP8";
    if (d.a_mode != d.b_mode)
      return "VEC32_UE8M0 on one of A and B only";
    if (k % 32 != 0)
      return "MXFP8 scales need k a multiple of 32";
  }
  return "";
}

std::vector<double> algorithms() {
  const json *a = find(state().scenario, {"algorithms"});
  if (!a)
    return {1.0};
  return a->get<std::vector<double>>();
}

// MXFP8's UE8M0 scales of an operand with `cols` rows of op(A) (m) or columns of op(B) (n) and
// L = `k_blocks` 32-element blocks each, read from the fake GPU's memory into
// into[col * L + kb] = 2^(byte - 127). The layout is decoded as cuBLAS documents it ("1D Block
// Scaling Factors Layout", https://docs.nvidia.com/cuda/cublas/#d-block-scaling-factors-layout),
// written here from the docs' "Offset -> Indices" direction, apart from dlrig's
// gemm::MxLayout (which goes from indices to offsets), so that a layout mistake there fails
// verification: 128 x 4 tiles of 512 bytes, in row-major order over ceil(cols / 128) x
// ceil(L / 4) tiles; within one, "outer = ((offset % 16) / 4) * 32 + (offset / 16), inner =
// (offset % 4)". A buffer shorter than the whole tiles is INVALID_VALUE, one not 16-byte aligned
// NOT_SUPPORTED ("Starting addresses of scaling factors must be 16B aligned"). The scenario's
// "misread_mx_scales" {precision: "row_major" | "tensor"} reads them as a plain cols x L matrix
// or takes the first byte for the whole tensor instead.
Status read_mx_scales(const void *ptr, std::uint64_t cols, std::uint64_t k_blocks,
                      const std::string &precision, std::vector<double> &into) {
  auto &s = state();
  const std::uint64_t across = (k_blocks + 3) / 4, down = (cols + 127) / 128;
  const std::uint64_t bytes = across * down * 512;
  const auto at = reinterpret_cast<std::uint64_t>(ptr);
  if (!s.is_device(at, bytes))
    return kInvalidValue;
  if (at % 16 != 0)
    return kNotSupported;
  const auto *b = static_cast<const unsigned char *>(ptr);
  auto ue8m0 = [](unsigned char e) {
    return e == 0xFF ? std::nan("") : std::ldexp(1.0, static_cast<int>(e) - 127);
  };
  const json *misread = find(s.scenario, {"misread_mx_scales", precision.c_str()});
  if (misread) {
    for (std::uint64_t x = 0; x < cols * k_blocks; ++x)
      into[x] = ue8m0(b[*misread == "tensor" ? 0 : x]);
    return kSuccess;
  }
  for (std::uint64_t offset = 0; offset < bytes; ++offset) {
    const std::uint64_t tile = offset / 512, in = offset % 512;
    const std::uint64_t outer = tile / across * 128 + ((in % 16) / 4) * 32 + in / 16;
    const std::uint64_t inner = tile % across * 4 + in % 4;
    if (outer < cols && inner < k_blocks)
      into[outer * k_blocks + inner] = ue8m0(b[offset]);
  }
  return kSuccess;
}

namespace impl {

std::size_t get_version() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  load();
  return state().scenario.value("version", std::size_t(0));
}

std::size_t get_cudart_version() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  load();
  return state().scenario.value("cudart_version", std::size_t(0));
}

const char *get_status_name(Status s) {
  switch (s) {
  case kSuccess:
    return "CUBLAS_STATUS_SUCCESS";
  case kNotInitialized:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case kAllocFailed:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case kInvalidValue:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case kExecutionFailed:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case kNotSupported:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  default:
    return "CUBLAS_STATUS_UNKNOWN";
  }
}

const char *get_status_string(Status s) {
  switch (s) {
  case kSuccess:
    return "success";
  case kNotInitialized:
    return "the library was not initialized";
  case kAllocFailed:
    return "the resource allocation failed";
  case kInvalidValue:
    return "an invalid numeric value was used as an argument";
  case kExecutionFailed:
    return "the GPU program failed to execute";
  case kNotSupported:
    return "the functionality requested is not supported";
  default:
    return "unknown error";
  }
}

Status create(Handle *handle) {
  FAKE_ENTER();
  if (!handle)
    return kInvalidValue;
  if (!bind_cuda()) {
    std::fprintf(stderr, "fake cuBLASLt: the fake libcuda (DLRIG_CUDA_LIBRARY) is not loaded\n");
    return kNotInitialized;
  }
  *handle = reinterpret_cast<Handle>(new int(1));
  return kSuccess;
}

Status destroy(Handle handle) {
  FAKE_ENTER();
  if (!handle)
    return kNotInitialized;
  delete reinterpret_cast<int *>(handle);
  return kSuccess;
}

Status matmul_desc_create(MatmulDesc *desc, ComputeType compute, DataType scale) {
  FAKE_ENTER();
  if (!desc)
    return kInvalidValue;
  *desc = reinterpret_cast<MatmulDesc>(new FakeDesc{compute, scale});
  return kSuccess;
}

Status matmul_desc_destroy(MatmulDesc desc) {
  FAKE_ENTER();
  delete reinterpret_cast<FakeDesc *>(desc);
  return kSuccess;
}

Status matmul_desc_set_attribute(MatmulDesc desc, int attribute, const void *value,
                                 std::size_t bytes) {
  FAKE_ENTER();
  auto *d = reinterpret_cast<FakeDesc *>(desc);
  if (!d || !value)
    return kInvalidValue;
  if (attribute == kDescTransA || attribute == kDescTransB) {
    if (bytes != sizeof(int))
      return kInvalidValue;
    int v = 0;
    std::memcpy(&v, value, sizeof v);
    if (v != kOpN && v != kOpT)
      return kInvalidValue;
    (attribute == kDescTransA ? d->trans_a : d->trans_b) = v;
    return kSuccess;
  }
  if (attribute == kDescAScalePointer || attribute == kDescBScalePointer ||
      attribute == kDescDScalePointer) {
    if (bytes != sizeof(void *))
      return kInvalidValue;
    const void *ptr = nullptr;
    std::memcpy(&ptr, value, sizeof ptr);
    (attribute == kDescAScalePointer   ? d->a_scale
     : attribute == kDescBScalePointer ? d->b_scale
                                       : d->d_scale) = ptr;
    return kSuccess;
  }
  // A/B_SCALE_MODE: scalar, or outer vectors where the scenario's "scale_modes" lists
  // "outer_vec" (cuBLASLt 12.9+); otherwise INVALID_VALUE, as an older library refuses the
  // attribute.
  if (attribute == kDescAScaleMode || attribute == kDescBScaleMode) {
    if (bytes != sizeof(std::int32_t))
      return kInvalidValue;
    std::int32_t v = 0;
    std::memcpy(&v, value, sizeof v);
    const bool listed_mode = (v == kScaleOuterVec32F && listed("scale_modes", "outer_vec")) ||
                             (v == kScaleVec128_32F && listed("scale_modes", "vec128")) ||
                             (v == kScaleBlk128x128_32F && listed("scale_modes", "blk128x128")) ||
                             (v == kScaleVec32Ue8m0 && listed("scale_modes", "vec32_ue8m0"));
    if (v != kScaleScalar32F && !listed_mode)
      return kInvalidValue;
    (attribute == kDescAScaleMode ? d->a_mode : d->b_mode) = v;
    return kSuccess;
  }
  return kInvalidValue; // an attribute dlrig does not set
}

Status matrix_layout_create(Layout *layout, DataType type, std::uint64_t rows, std::uint64_t cols,
                            std::int64_t ld) {
  FAKE_ENTER();
  if (!layout || rows == 0 || cols == 0 || ld < static_cast<std::int64_t>(rows))
    return kInvalidValue;
  *layout = reinterpret_cast<Layout>(new FakeLayout{type, rows, cols, ld});
  return kSuccess;
}

Status matrix_layout_destroy(Layout layout) {
  FAKE_ENTER();
  delete reinterpret_cast<FakeLayout *>(layout);
  return kSuccess;
}

Status preference_create(Preference *pref) {
  FAKE_ENTER();
  if (!pref)
    return kInvalidValue;
  *pref = reinterpret_cast<Preference>(new FakePreference);
  return kSuccess;
}

Status preference_destroy(Preference pref) {
  FAKE_ENTER();
  delete reinterpret_cast<FakePreference *>(pref);
  return kSuccess;
}

Status preference_set_attribute(Preference pref, int attribute, const void *value,
                                std::size_t bytes) {
  FAKE_ENTER();
  auto *p = reinterpret_cast<FakePreference *>(pref);
  if (!p || !value || attribute != kPrefMaxWorkspaceBytes || bytes != sizeof(std::uint64_t))
    return kInvalidValue;
  std::memcpy(&p->max_workspace, value, sizeof p->max_workspace);
  return kSuccess;
}

[[maybe_unused]] Status algo_get_heuristic(Handle handle, MatmulDesc desc, Layout a, Layout b,
                                           Layout c, Layout d, Preference pref, int requested,
                                           HeuristicResult *results, int *returned) {
  FAKE_ENTER();
  auto *op = reinterpret_cast<FakeDesc *>(desc);
  auto *la = reinterpret_cast<FakeLayout *>(a);
  auto *lb = reinterpret_cast<FakeLayout *>(b);
  auto *lc = reinterpret_cast<FakeLayout *>(c);
  auto *ld = reinterpret_cast<FakeLayout *>(d);
  if (!handle || !op || !la || !lb || !lc || !ld || !pref || requested <= 0 || !results ||
      !returned)
    return kInvalidValue;
  std::uint64_t m = 0, n = 0, k = 0;
  if (!dims(*op, *la, *lb, *lc, m, n, k) || lb->type != la->type || ld->type != lc->type)
    return kInvalidValue;
  *returned = 0;
  if (!unsupported(*op, precision_of(*op, *la, *lc), m, n, k).empty())
    return kNotSupported;
  const auto algos = algorithms();
  const int count = std::min<int>(requested, static_cast<int>(algos.size()));
  for (int i = 0; i < count; ++i) {
    results[i] = HeuristicResult{};
    results[i].algo.data[0] = static_cast<std::uint64_t>(i) + 1; // never all zeros
    results[i].workspace_size = 0;
    results[i].state = kSuccess;
    results[i].waves_count = 1;
  }
  *returned = count;
  return kSuccess;
}

Status matmul(Handle handle, MatmulDesc desc, const void *alpha, const void *a, Layout a_layout,
              const void *b, Layout b_layout, const void *beta, const void *c, Layout c_layout,
              void *d, Layout d_layout, const MatmulAlgo *algo, void *workspace,
              std::size_t workspace_bytes, Stream stream) {
  FAKE_ENTER();
  auto &s = state();
  auto *op = reinterpret_cast<FakeDesc *>(desc);
  auto *la = reinterpret_cast<FakeLayout *>(a_layout);
  auto *lb = reinterpret_cast<FakeLayout *>(b_layout);
  auto *lc = reinterpret_cast<FakeLayout *>(c_layout);
  auto *ld = reinterpret_cast<FakeLayout *>(d_layout);
  if (!handle || !op || !la || !lb || !lc || !ld || !alpha || !beta || !a || !b || !c || !d ||
      !algo || (workspace_bytes && !workspace) || !s.advance)
    return kInvalidValue;
  std::uint64_t m = 0, n = 0, k = 0;
  if (!dims(*op, *la, *lb, *lc, m, n, k))
    return kInvalidValue;
  const std::string precision = precision_of(*op, *la, *lc);
  if (!unsupported(*op, precision, m, n, k).empty() || listed("refuse", precision))
    return kNotSupported;
  const auto algos = algorithms();
  const std::uint64_t index = algo->data[0];
  if (index == 0 || index > algos.size())
    return kInvalidValue; // not an algorithm the heuristic gave
  const Element ea = element_of(la->type), ec = element_of(lc->type);
  const std::size_t sa = dlrig::bench::gemm::element_bytes(ea);
  const std::size_t sc = dlrig::bench::gemm::element_bytes(ec);
  auto addr = [](const void *p) { return reinterpret_cast<std::uint64_t>(p); };
  if (!s.is_device(addr(a), static_cast<std::size_t>(la->ld) * la->cols * sa) ||
      !s.is_device(addr(b), static_cast<std::size_t>(lb->ld) * lb->cols * sa) ||
      !s.is_device(addr(c), static_cast<std::size_t>(lc->ld) * lc->cols * sc) ||
      !s.is_device(addr(d), static_cast<std::size_t>(ld->ld) * ld->cols * sc) ||
      (workspace_bytes && !s.is_device(addr(workspace), workspace_bytes)))
    return kInvalidValue;
  if (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) > 0x1.0p31) {
    std::fprintf(stderr, "fake cuBLASLt: %llux%llux%llu is too large for the host simulation\n",
                 static_cast<unsigned long long>(m), static_cast<unsigned long long>(n),
                 static_cast<unsigned long long>(k));
    return kNotSupported;
  }
  // The scales, read from the fake GPU's memory now, as the GPU would when the matmul runs.
  if ((op->a_scale || op->b_scale) && la->type != kR8FE4M3)
    return kInvalidValue;
  if (op->d_scale && ld->type != kR8FE4M3)
    return kInvalidValue;
  // Each of A's and B's scales per row of op(A) (m) or column of op(B) (n) and k-block: one
  // float32 for the tensor, one per row or column with the outer-vector mode, one per block with
  // the block modes (k-blocks of 128; without block modes the whole k is one block).
  const bool blocks = block_mode(op->a_mode), mx = op->a_mode == kScaleVec32Ue8m0;
  const std::uint64_t k_block = mx ? 32 : blocks ? 128 : k;
  const std::uint64_t k_blocks = (k + k_block - 1) / k_block;
  std::vector<double> a_scales(m * k_blocks, 1.0), b_scales(n * k_blocks, 1.0);
  const json *misread = find(s.scenario, {"misread_block_scales", precision.c_str()});
  for (int which = 0; which < 2; ++which) {
    const void *ptr = which == 0 ? op->a_scale : op->b_scale;
    const std::int32_t mode = which == 0 ? op->a_mode : op->b_mode;
    const std::uint64_t cols = which == 0 ? m : n;
    std::vector<double> &into = which == 0 ? a_scales : b_scales;
    if (!ptr) {
      if (mode != kScaleScalar32F)
        return kInvalidValue; // a vector or block mode without its scales
      continue;
    }
    if (mode == kScaleVec32Ue8m0) {
      if (Status st = read_mx_scales(ptr, cols, k_blocks, precision, into); st != kSuccess)
        return st;
      continue;
    }
    // cuBLAS's "Scaling factors layouts" (https://docs.nvidia.com/cuda/cublas/
    // #element-1d-and-128x128-2d-block-scaling-for-fp8-data-types): VEC128_32F "M-major for A
    // with shape M x L" (N for B), L = ceil(k / 128); BLK128x128_32F "K-major and the stride
    // between the consecutive columns must be a multiple of 4", shape L4 x ceil(M / 128).
    const std::uint64_t l4 = (k_blocks + 3) / 4 * 4;
    auto at = [&](std::uint64_t x, std::uint64_t kb) -> std::uint64_t {
      if (mode == kScaleOuterVec32F)
        return x;
      if (!block_mode(mode) || (misread && *misread == "tensor"))
        return 0;
      if (mode == kScaleBlk128x128_32F)
        return x / 128 * l4 + kb;
      if (misread && *misread == "k_major")
        return x * k_blocks + kb;
      return kb * cols + x;
    };
    const std::size_t count = mode == kScaleOuterVec32F  ? cols
                              : mode == kScaleVec128_32F ? cols * k_blocks
                              : block_mode(mode)         ? (cols + 127) / 128 * l4
                                                         : 1;
    if (!s.is_device(addr(ptr), count * sizeof(float)))
      return kInvalidValue;
    if (addr(ptr) % 16 != 0)
      return kNotSupported; // as cuBLASLt 13.1 on an H100: every algorithm refused
    for (std::uint64_t x = 0; x < cols; ++x)
      for (std::uint64_t kb = 0; kb < k_blocks; ++kb) {
        float v = 0;
        std::memcpy(&v, static_cast<const unsigned char *>(ptr) + at(x, kb) * sizeof v, sizeof v);
        into[x * k_blocks + kb] = v;
      }
  }
  if (listed("ignore_scales", precision)) {
    std::fill(a_scales.begin(), a_scales.end(), 1.0);
    std::fill(b_scales.begin(), b_scales.end(), 1.0);
  }
  double al = 0, be = 0;
  if (op->scale == kR32I) {
    std::int32_t x = 0, y = 0;
    std::memcpy(&x, alpha, 4);
    std::memcpy(&y, beta, 4);
    al = x;
    be = y;
  } else {
    float x = 0, y = 0;
    std::memcpy(&x, alpha, 4);
    std::memcpy(&y, beta, 4);
    al = x;
    be = y;
  }
  const auto *pa = static_cast<const unsigned char *>(a);
  const auto *pb = static_cast<const unsigned char *>(b);
  const auto *pc = static_cast<const unsigned char *>(c);
  auto *pd = static_cast<unsigned char *>(d);
  const bool wrong = listed("wrong", precision);
  std::vector<double> out(m * n);
  for (std::uint64_t j = 0; j < n; ++j)
    for (std::uint64_t i = 0; i < m; ++i) {
      double scaled = 0; // each k-block's partial product times its two scales
      for (std::uint64_t kb = 0; kb < k_blocks; ++kb) {
        double sum = 0;
        for (std::uint64_t p = kb * k_block; p < std::min(k, (kb + 1) * k_block); ++p) {
          const std::uint64_t ia = op->trans_a == kOpT ? i * la->ld + p : p * la->ld + i;
          const std::uint64_t ib = op->trans_b == kOpT ? p * lb->ld + j : j * lb->ld + p;
          sum += dlrig::bench::gemm::read_element(ea, pa + ia * sa) *
                 dlrig::bench::gemm::read_element(ea, pb + ib * sa);
        }
        scaled += a_scales[i * k_blocks + kb] * b_scales[j * k_blocks + kb] * sum;
      }
      double v = al * scaled;
      if (be != 0)
        v += be * dlrig::bench::gemm::read_element(ec, pc + (j * lc->ld + i) * sc);
      out[j * m + i] = wrong ? 1.5 * v + 1 : v;
    }
  for (std::uint64_t j = 0; j < n; ++j)
    for (std::uint64_t i = 0; i < m; ++i)
      dlrig::bench::gemm::write_element(ec, out[j * m + i], pd + (j * ld->ld + i) * sc);
  // "layout_speed" {"NN": factor, ...}: a speed factor per layout (op(A), op(B)), as a library
  // whose kernels for one layout are faster than for another.
  const std::string layout =
      std::string(op->trans_a == kOpT ? "T" : "N") + (op->trans_b == kOpT ? "T" : "N");
  const json *speed = find(s.scenario, {"layout_speed", layout.c_str()});
  const double rate = find(s.scenario, {"tflops", precision.c_str()})->get<double>() * 1e12 *
                      algos[static_cast<std::size_t>(index - 1)] *
                      (speed ? speed->get<double>() : 1.0);
  if (!(rate > 0))
    return kNotSupported;
  const double seconds =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / rate;
  return s.advance(stream, seconds) == 0 ? kSuccess : kExecutionFailed;
}

} // namespace impl

} // namespace

// --- the exports, generated from the table -----------------------------------------------------

// What a call answers when the scenario holds a value of the wrong type: an error status (never
// success), or 0 / nullptr.
template <class T> T on_exception() {
  if constexpr (std::is_same_v<T, Status>)
    return kInternalError;
  else
    return T{};
}

#define FAKE_EXPORT(field, ret, params, args, name)                                                \
  extern "C" __attribute__((visibility("default"))) ret name params {                              \
    CalledAs called_as(#name);                                                                     \
    try {                                                                                          \
      return impl::field args;                                                                     \
    } catch (const std::exception &e) {                                                            \
      std::fprintf(stderr, "fake cuBLASLt: %s: scenario value unusable: %s\n", #name, e.what());   \
      return on_exception<ret>();                                                                  \
    }                                                                                              \
  }

#ifdef FAKE_CUBLASLT_WITHOUT_HEURISTIC
// The "old library": every function but cublasLtMatmulAlgoGetHeuristic.
#define FAKE_EXPORT_BUT_HEURISTIC(field, ret, params, args, name)                                  \
  FAKE_EXPORT_IF_##field(field, ret, params, args, name)
#define FAKE_EXPORT_IF_algo_get_heuristic(...)
#define FAKE_EXPORT_IF_get_version FAKE_EXPORT
#define FAKE_EXPORT_IF_get_cudart_version FAKE_EXPORT
#define FAKE_EXPORT_IF_get_status_name FAKE_EXPORT
#define FAKE_EXPORT_IF_get_status_string FAKE_EXPORT
#define FAKE_EXPORT_IF_create FAKE_EXPORT
#define FAKE_EXPORT_IF_destroy FAKE_EXPORT
#define FAKE_EXPORT_IF_matmul_desc_create FAKE_EXPORT
#define FAKE_EXPORT_IF_matmul_desc_destroy FAKE_EXPORT
#define FAKE_EXPORT_IF_matmul_desc_set_attribute FAKE_EXPORT
#define FAKE_EXPORT_IF_matrix_layout_create FAKE_EXPORT
#define FAKE_EXPORT_IF_matrix_layout_destroy FAKE_EXPORT
#define FAKE_EXPORT_IF_preference_create FAKE_EXPORT
#define FAKE_EXPORT_IF_preference_destroy FAKE_EXPORT
#define FAKE_EXPORT_IF_preference_set_attribute FAKE_EXPORT
#define FAKE_EXPORT_IF_matmul FAKE_EXPORT
DLRIG_CUBLASLT_ENTRY_POINTS(FAKE_EXPORT_BUT_HEURISTIC)
#else
DLRIG_CUBLASLT_ENTRY_POINTS(FAKE_EXPORT)
#endif

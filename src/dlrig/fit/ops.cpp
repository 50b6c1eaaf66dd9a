#include "dlrig/fit/ops.hpp"

#include "dlrig/fit/memory.hpp"
#include "dlrig/model/walk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dlrig::fit {
namespace {

using model::ModelFamily;

bool is_transformer(ModelFamily f) {
  return f != ModelFamily::cnn && f != ModelFamily::unet;
}

// The GEMM rate a linear layer runs at: FP8 runs keep attention in BF16 (Transformer Engine
// runs only the linears in FP8).
Precision attention_precision(Precision p) {
  return p == Precision::fp8 ? Precision::bf16 : p;
}

bool amp(Precision p) {
  return p == Precision::fp16_amp || p == Precision::bf16_amp;
}

// Bytes of one weight element as the GEMM reads it: autocast and FP8 read 16-bit (FP8: the
// cast copy, 1 byte, plus its scale; counted as 1), quantised serving reads int8/int4, and a
// checkpoint stored quantised (GPTQ, AWQ...) its stored bytes.
double weight_read_bytes(const ModelInput &model, const Run &run) {
  if (model.arch.stored_quant)
    if (auto stored = stored_bytes_per_weight(*model.arch.stored_quant))
      return *stored;
  if (run.quant == Quant::int8)
    return 1;
  if (run.quant == Quant::int4)
    return 0.5;
  if (run.precision == Precision::fp8)
    return 1;
  return activation_bytes(run.precision);
}

// A linear's weight bytes as the GEMM reads it: weight_read_bytes, but 16-bit for the weights a
// quantised model leaves unquantised: under --quant those bitsandbytes does not replace
// (`converted`: bnb_converted); in a checkpoint stored quantised the head, classifier, pooler and
// router (as stored_weights).
double linear_read_bytes(const ModelInput &model, const Run &run, const model::LinearShape &l,
                         bool converted) {
  if (model.arch.stored_quant)
    return stored_unpacked(l) ? 2 : weight_read_bytes(model, run);
  if (run.quant != Quant::none && !converted)
    return 2;
  return weight_read_bytes(model, run);
}

// The output head's: 16-bit under every quantiser.
double head_read_bytes(const ModelInput &model, const Run &run) {
  return model.arch.stored_quant || run.quant != Quant::none ? 2 : weight_read_bytes(model, run);
}

// The master weights (and gradients) as stored: fp32 for fp32/tf32 and autocast runs (PyTorch
// AMP keeps fp32 parameters), 16-bit for pure bf16 and FP8 (Transformer Engine keeps bf16
// weights and casts them).
double master_bytes(Precision p) {
  return (p == Precision::fp32 || p == Precision::tf32 || amp(p)) ? 4 : 2;
}

struct Builder {
  std::vector<Op> ops;
  void add(Op op) {
    if (op.flops > 0 || op.bytes > 0 || op.kernels > 0)
      ops.push_back(std::move(op));
  }
  void gemm(std::string name, Phase ph, Precision p, double m, double n, double k, double count,
            double a_bytes, double b_bytes, double c_bytes) {
    Op o;
    o.name = std::move(name);
    o.kind = OpKind::gemm;
    o.phase = ph;
    o.precision = p;
    o.m = m;
    o.n = n;
    o.k = k;
    o.flops = 2 * m * n * k * count;
    o.bytes = (m * k * a_bytes + k * n * b_bytes + m * n * c_bytes) * count;
    o.kernels = count;
    add(std::move(o));
  }
  void memory(std::string name, Phase ph, double bytes, double kernels) {
    Op o;
    o.name = std::move(name);
    o.kind = OpKind::memory;
    o.phase = ph;
    o.bytes = bytes;
    o.kernels = kernels;
    add(std::move(o));
  }
};

// ---- Transformers ----------------------------------------------------------------------------

// QLoRA's frozen base: bitsandbytes' Linear4bit keeps each weight as packed NF4 (two 4-bit codes
// per byte) in blocks of 64 elements, and with double quantisation (QLoRA's setting,
// compress_statistics=True) each block's absmax as 8 bits, minus their mean (one fp32 offset),
// quantised blockwise again in blocks of 256 absmax values with one fp32 scale each and the
// 256-entry fp32 dynamic code (quantize_4bit in bitsandbytes/functional.py). A training batch
// runs no 4-bit GEMM: MatMul4Bit.forward dequantizes the weight to the compute dtype and calls
// torch.nn.functional.linear, and MatMul4Bit.backward dequantizes it again for the input gradient
// (grad_output @ W; no weight gradient) (bitsandbytes/autograd/_functions.py; 0.50's forward goes
// through the gemm_4bit op, whose CUDA dispatch takes the same dequantize + F.linear path past
// 1,536 tokens and, on Hopper, past 512 for every weight shape: _dequant_linear_fallback in
// bitsandbytes/backends/cuda/ops.py). One dequantize_4bit (functional.py) of the nested state runs
// three kernels: dequantize_blockwise of the absmax (8-bit in, fp32 out), absmax += offset, and
// the NF4 dequantize (the packed codes and fp32 absmax in, the weight out).
constexpr double kNf4Block = 64;     // elements per first-level absmax
constexpr double kNf4Block2 = 256;   // absmax values per second-level fp32 scale
constexpr double kDynamicCode = 256; // fp32 entries of the 8-bit absmax code
constexpr double kNf4DequantKernels = 3;

// Device-memory bytes of one dequantize of an n-element NF4 weight to `out_bytes` per element.
double nf4_dequantize_bytes(double n, double out_bytes) {
  const double blocks = std::ceil(n / kNf4Block);
  const double blocks2 = std::ceil(blocks / kNf4Block2);
  const double absmax = blocks * 1 + blocks2 * 4 + kDynamicCode * 4 + blocks * 4;
  const double offset = blocks * 4 * 2 + 4;
  const double weight = std::ceil(n / 2) + blocks * 4 + n * out_bytes;
  return absmax + offset + weight;
}

bool row_parallel(const std::string &role) {
  return role == "o" || role == "down" || role == "cross_o";
}

// The classifier runs on every token for question answering and token classification (the
// sequence output's qa_outputs or classifier) and for a decoder's sequence classification
// (transformers' GenericForSequenceClassification scores every position, then keeps the last
// non-padding one: modeling_layers.py); else once per sequence (after a pooler, BART's
// end-of-sequence token, an image).
bool classifier_per_token(const model::ModelArch &a) {
  const std::string_view h = a.head_class;
  return h.ends_with("ForQuestionAnswering") || h.ends_with("ForTokenClassification") ||
         ((a.family == ModelFamily::decoder || a.family == ModelFamily::moe_decoder) &&
          h.ends_with("ForSequenceClassification"));
}

bool per_layer(const std::string &role) {
  return !model::head_linear(role);
}

struct Shape {
  double b = 1, s = 1; // sequences and tokens per sequence in this pass
  double tokens() const { return b * s; }
};

// Element-wise traffic per element, forward, of the operations around the GEMMs of one layer, as
// transformers' eager code runs them (docs/fit.md "Time": each kernel's reads and writes).
struct Elementwise {
  double bytes = 0, kernels = 0;
};

// Bytes per element of the normalised tensor and kernels of one norm, forward or backward, as
// eager PyTorch runs it (docs/fit.md "Time"). `io` is the bytes of the norm's input and output
// elements: under autocast the residual stream a norm reads is fp32, and its output stays fp32.
//
// transformers' LlamaRMSNorm: to(float32), pow(2), mean, add eps, rsqrt, multiply, to(dtype),
// weight multiply; the two casts are no-ops on an fp32 input. Backward through autograd: the
// weight multiply's two gradients (g * w; and for a trained weight g * n summed over the tokens),
// the casts' ToCopyBackward, x * r's two gradients (grad * r; grad * x summed over the row), the
// rsqrt and add on one value per row, mean's backward (the row gradient expanded and divided:
// one full tensor written), pow_backward (grad * (2 * x.pow(1)): pow(1) is a copy, then two
// multiplies; torch/csrc/autograd/FunctionsManual.cpp) and the add that sums x's two gradients:
// 92 B per element in fp32, 14 kernels (16 with the casts).
//
// nn.LayerNorm: one kernel forward (autocast runs it in fp32: its output is fp32); backward
// PyTorch's layer_norm_backward_cuda runs two kernels, dX from dY and X, then gamma's and beta's
// gradients from dY and X again (aten/src/ATen/native/cuda/layer_norm_kernel.cu): 5 passes.
Elementwise norm_traffic(bool rmsnorm, double io, Kernels k, bool backward, bool weight_grad) {
  if (k == Kernels::fused)
    return backward ? Elementwise{4 * io, 1} : Elementwise{2 * io, 1};
  if (!rmsnorm)
    return backward ? Elementwise{5 * io, 2} : Elementwise{2 * io, 1};
  const bool cast = io < 4;
  const double casts = cast ? 2 * (io + 4) : 0;
  if (!backward)
    return {casts + 8 + 4 + 8 + 2 * io, cast ? 8.0 : 6.0};
  const double weight = weight_grad ? 4 * io : 0;
  return {2 * io + weight + casts + 24 + 4 + 28 + 12,
          (weight_grad ? 3 : 1) + (cast ? 2 : 0) + 11.0};
}

void transformer_pass(Builder &b, const ModelInput &model, const Run &run, Shape sh, Phase ph,
                      bool training, bool with_loss) {
  const auto &arch = model.arch;
  const Dims d = dims_of(arch);
  const double a = activation_bytes(run.precision);
  const bool amp_run = amp(run.precision) && training;
  const double tp = run.tp, pp = run.pp;
  const double layers = static_cast<double>(d.layers + d.decoder_layers);
  const double local_layers = std::ceil(layers / pp);
  const double T = sh.tokens();
  const bool fwd = ph != Phase::backward;
  const bool bwd = ph == Phase::backward;
  const double dir = bwd ? 2 : 1; // element-wise backward reads the gradient and a saved tensor
  const std::string tag = bwd ? ".grad" : "";
  const Precision gp = run.precision;
  const Precision ap = attention_precision(run.precision);

  // Linear layers.
  auto linears = model::linear_layers(arch);
  // Which bitsandbytes replaces (--quant, --qlora); a tied head added below is not one.
  auto converted = bnb_converted(arch, linears, run.transformers_version);
  converted.push_back(false);
  const bool has_head = std::any_of(linears.begin(), linears.end(),
                                    [](const auto &l) { return l.role == "lm_head"; });
  // A tied vocabulary head (linear_layers lists only untied ones): a decoder's or an
  // encoder-decoder's LM head, an encoder's masked-LM decoder; none for a classification or
  // question-answering head (the same rule as model::logits_width).
  const bool vocab_head = (arch.lm_head && arch.family != ModelFamily::encoder) || arch.mlm_head;
  if (!has_head && vocab_head && d.vocab > 0)
    linears.push_back({"lm_head", "lm_head", arch.hidden, d.vocab, 1, false});
  // Vocabulary logits and their loss exist only with a language-model head.
  const bool lm_head = std::any_of(linears.begin(), linears.end(),
                                   [](const auto &l) { return l.role == "lm_head"; });
  double bias_bytes = 0, bias_kernels = 0;
  for (std::size_t li = 0; li < linears.size(); ++li) {
    const auto &l = linears[li];
    if (l.role == "lm_head" && !with_loss)
      continue;
    double count = static_cast<double>(l.count);
    double m = T;
    if (per_layer(l.role))
      count = std::ceil(count / pp);
    if (l.routed && d.experts > 0)
      m = T * static_cast<double>(d.experts_per_token) / static_cast<double>(d.experts);
    if (l.role == "pooler" || l.role == "cls_dense" ||
        (l.role == "classifier" && !classifier_per_token(arch)))
      m = sh.b;
    double in = static_cast<double>(l.in), out = static_cast<double>(l.out);
    if (row_parallel(l.role))
      in /= tp;
    else
      out /= tp;
    const std::string nm = "linear " + l.module;
    const double wb = linear_read_bytes(model, run, l, converted[li]);
    if (run.precision == Precision::fp8 && training) {
      // Transformer Engine quantises each FP8 GEMM's operands first: forward the input and the
      // weight (cast_transpose: read 16-bit, write the FP8 copy in both layouts), backward the
      // output gradient.
      const double cast = fwd ? (m * in + in * out) * (2 + 2) : m * out * (2 + 2);
      b.memory("FP8 casts" + tag, ph, cast * count, 2 * count);
    }
    const std::size_t first = b.ops.size();
    if (fwd) {
      b.gemm(nm, ph, gp, m, out, in, count, a, wb, a);
    } else {
      // Backward: the input gradient always, the weight gradient for trained weights (LoRA and
      // QLoRA freeze the base weights: no weight-gradient GEMM).
      b.gemm(nm + " (input grad)", ph, gp, m, in, out, count, a, wb, a);
      if (!run.lora())
        b.gemm(nm + " (weight grad)", ph, gp, in, out, m, count, a, a, master_bytes(run.precision));
      if (!run.lora() && l.bias) {
        bias_bytes += m * out * a * count;
        bias_kernels += count;
      }
    }
    for (std::size_t i = first; i < b.ops.size(); ++i) {
      b.ops[i].features_in = in;
      b.ops[i].features_out = out;
    }
  }
  // A bias's gradient is the output gradient summed over the tokens: one reduction kernel per
  // biased linear reading it (AddmmBackward0's gradient for the bias, summed to its shape).
  // Seen on an H100: BERT's step ran 73 fp16 sum reductions, one per biased linear
  // (tests/data/measured/h100/profile).
  b.memory("bias gradients", ph, bias_bytes, bias_kernels);
  if (run.qlora && training) {
    // QLoRA: each 4-bit linear dequantizes its weight before the forward GEMM (and again in a
    // recompute) and before the input-gradient GEMM (above, nf4_dequantize_bytes).
    double bytes = 0, weights = 0;
    for (std::size_t li = 0; li < linears.size(); ++li) {
      const auto &l = linears[li];
      if (!converted[li])
        continue;
      double count = static_cast<double>(l.count);
      if (per_layer(l.role))
        count = std::ceil(count / pp);
      double in = static_cast<double>(l.in), out = static_cast<double>(l.out);
      if (row_parallel(l.role))
        in /= tp;
      else
        out /= tp;
      bytes += nf4_dequantize_bytes(in * out, a) * count;
      weights += count;
    }
    b.memory(bwd ? "NF4 weight dequantize (input grad)" : "NF4 weight dequantize", ph, bytes,
             kNf4DequantKernels * weights);
  }
  // Autocast and the fp32 residual stream: transformers' embeddings are fp32 (nn.Embedding is not
  // on autocast's lists), a norm's output stays fp32 (nn.LayerNorm is on the fp32 list; HF's
  // RMSNorm multiplies by its fp32 weight), and a residual add of fp32 and 16-bit is fp32 by type
  // promotion. So every linear that reads a norm's output (q, k, v or the fused qkv, gate and up,
  // the LM head) gets an fp32 input, which autocast casts to 16 bits on each call: activations
  // are not cached as weights are (PyTorch "Automatic Mixed Precision package": CUDA ops that can
  // autocast to float16, ops that autocast to float32, type promotion). Forward: read 4, write 2
  // bytes per input element, one kernel per linear; backward, ToCopyBackward casts the 16-bit
  // input gradient back to fp32 (read 2, write 4).
  if (amp_run && run.kernels == Kernels::eager) {
    double elements = 0, calls = 0;
    for (const auto &l : linears) {
      if (row_parallel(l.role) || l.role == "pooler" || l.role == "cls_dense" ||
          l.role == "classifier" || (l.role == "lm_head" && !with_loss))
        continue;
      const double count = per_layer(l.role) ? std::ceil(static_cast<double>(l.count) / pp)
                                             : static_cast<double>(l.count);
      const double m = l.routed && d.experts > 0 ? T * static_cast<double>(d.experts_per_token) /
                                                       static_cast<double>(d.experts)
                                                 : T;
      elements += m * static_cast<double>(l.in) * count;
      calls += count;
    }
    b.memory("autocast activation casts" + tag, ph, elements * (4 + a), calls);
  }

  // LoRA adapters: x·A (r columns) then ·B, and their gradients.
  if (run.lora() && training) {
    double r = std::max(1, run.lora_rank > 0 ? run.lora_rank : 16);
    double per_token = 0, modules = 0;
    // The adapters PEFT puts on the linears (lora_adapter: memory's count).
    const auto moe = model::moe_linears(arch.hf_model_type, run.transformers_version);
    for (const auto &l : linears) {
      const auto adapter = lora_adapter(run, l, moe);
      if (adapter.rank == 0)
        continue;
      per_token += 2 * r * adapter.rank * adapter.width * std::ceil(l.count / pp) / tp;
      modules += std::ceil(l.count / pp);
    }
    Op o;
    o.name = "LoRA adapters";
    o.kind = OpKind::gemm;
    o.phase = ph;
    o.precision = gp;
    o.m = T;
    o.n = r;
    o.k = static_cast<double>(arch.hidden);
    o.flops = per_token * T * (bwd ? 2 : 1);
    o.bytes = 0;
    o.kernels = modules * (bwd ? 4 : 2);
    b.add(std::move(o));
  }

  // Attention core.
  const double q_dim = static_cast<double>(d.q_dim) / tp;
  const double kv_dim = static_cast<double>(d.kv_dim) / tp;
  const double heads = std::max(1.0, static_cast<double>(d.heads) / tp);
  const double head_dim = d.heads > 0 ? static_cast<double>(d.q_dim) / d.heads : 64;
  const double s = sh.s;
  if (run.attention == Attention::eager) {
    // Two batched GEMMs over the whole s x s score matrix (the causal mask is added, not
    // skipped), then softmax (fp32 under autocast, and for 16-bit scores where transformers
    // upcasts it: Dims::softmax_fp32), dropout, the cast back, on every score; Gemma 2's
    // softcapping divides, takes tanh and multiplies first (three kernels).
    const double bh = sh.b * heads * local_layers;
    b.gemm("attention scores (QK^T)" + tag, ph, ap, s, s, head_dim, bh * (bwd ? 2 : 1), a, a, a);
    b.gemm("attention context (PV)" + tag, ph, ap, s, head_dim, s, bh * (bwd ? 2 : 1), a, a, a);
    const double scores = sh.b * heads * s * s * local_layers;
    const bool fp32_softmax = amp_run || (d.softmax_fp32 && a < 4);
    double per = (a + a) /* mask add */ + (a + (fp32_softmax ? 4 : a)) /* softmax */;
    double kernels = 2;
    if (d.attn_softcap) {
      per += 6 * a;
      kernels += 3;
    }
    if (d.dropout && training) {
      per += (fp32_softmax ? 8 : 2 * a) + 1;
      kernels += 1;
    }
    if (fp32_softmax) {
      per += 4 + a; // the fp32 probabilities cast back for the PV matmul
      kernels += 1;
    }
    b.memory("attention softmax/mask/dropout" + tag, ph, scores * per * dir,
             local_layers * kernels);
  } else {
    // SDPA / FlashAttention: 2 GEMM-like products forward (QK^T, PV), 5 backward (FlashAttention-2
    // recomputes QK^T); causal attention skips the masked half.
    double f = 4 * sh.b * s * s * q_dim * local_layers;
    if (d.causal)
      f /= 2;
    Op o;
    o.name =
        std::string(run.attention == Attention::flash ? "flash attention" : "SDPA attention") + tag;
    o.kind = OpKind::attention;
    o.phase = ph;
    o.precision = ap;
    o.flops = bwd ? 2.5 * f : f;
    o.bytes = T * (2 * q_dim + 2 * kv_dim) * a * local_layers * (bwd ? 2 : 1);
    o.kernels = local_layers * (bwd ? 2 : 1);
    o.seq = s;
    o.head_dim = head_dim;
    o.causal = d.causal;
    b.add(std::move(o));
  }

  // Element-wise operations per layer.
  const double h = static_cast<double>(arch.hidden);
  const double I = static_cast<double>(d.intermediate) / tp;
  // The residual stream a norm reads, and its output: fp32 under autocast (above).
  const double stream = amp_run && run.kernels == Kernels::eager ? 4 : a;
  const auto nt = norm_traffic(d.rmsnorm, stream, run.kernels, bwd, !run.lora());
  // One norm per sub-block (attention, cross-attention, MLP), and one more per stack: a decoder's
  // final norm (Llama's model.norm, GPT-2's ln_f, CLIP's final_layer_norm) or an encoder's
  // embedding norm (BERT's embeddings.LayerNorm, BART's layernorm_embedding).
  const double blocks = static_cast<double>(arch.norms_per_layer) * local_layers +
                        (arch.family == ModelFamily::encoder_decoder ? local_layers / 2 : 0);
  const double norms = blocks + (arch.family == ModelFamily::encoder_decoder ? 2 : 1);
  b.memory(std::string(d.rmsnorm ? "RMSNorm" : "LayerNorm") + tag, ph, T * h * nt.bytes * norms,
           nt.kernels * norms);
  const bool eager_amp = amp_run && run.kernels == Kernels::eager;
  if (!arch.learned_positions && d.causal) {
    // transformers' apply_rotary_pos_emb on q and k: q * cos + rotate_half(q) * sin, rotate_half
    // slicing two halves (views) and running neg on one and cat. cos and sin are computed in fp32
    // and cast to the hidden states' dtype (LlamaRotaryEmbedding.forward: cos.to(x.dtype)), which
    // under autocast is fp32 (above), so both products and their sum are fp32 by type promotion
    // while q, its negated half and the cat stay 16-bit: forward per element (c the product's
    // bytes) q * cos a + c, neg a, cat 2a, * sin a + c, add 3c; cos and sin are broadcast over
    // the heads and not counted. Backward through autograd: each product's gradient for the
    // 16-bit operand, grad * cos (2c), cast to 16 bits by the engine when the types differ
    // (torch/csrc/autograd/engine.cpp validate_outputs casts each gradient to its input's dtype:
    // c + a), twice; neg's gradient (a); each slice's SliceBackward (a zero-filled tensor of q's
    // shape with the half copied in: 2a, twice); and two adds summing q's three gradients (3a,
    // twice). Seen on an H200 and an H100: Llama's profiles ran the products as fp32 multiplies
    // of [4, 32, 1024, 64] by [1, 1, 1024, 64], its saved tensors keep fp32 cos and sin
    // (tests/data/measured/h200/saved-tensors/llama.txt).
    const double c = eager_amp ? 4 : a;
    double per = bwd ? 4 * c + (eager_amp ? 2 * (c + a) : 0) + 11 * a : 5 * a + 5 * c;
    double kernels = bwd ? (eager_amp ? 11 : 9) : 5;
    if (run.kernels == Kernels::fused) {
      per = 2 * a * dir;
      kernels = 0.5;
    }
    b.memory("rotary embedding" + tag, ph, T * (q_dim + kv_dim) * per * local_layers,
             2 * kernels * local_layers);
    if (eager_amp) {
      // The rotated q and k are fp32, so autocast casts them to 16 bits for the attention
      // (scaled_dot_product_attention and matmul are on its lower-precision list), and
      // ToCopyBackward casts their gradients back: c + a per element, one kernel each.
      b.memory("rotated q/k casts" + tag, ph, T * (q_dim + kv_dim) * (c + a) * local_layers,
               2 * local_layers);
    }
  }
  // Under autocast the residual stream is fp32 (above): each add reads the fp32 stream and the
  // 16-bit branch and writes fp32. Backward, the add passes its gradient through (no kernel), and
  // the engine casts the 16-bit branch's fp32 gradient to 16 bits (validate_outputs, above):
  // read 4, write a, one kernel per add.
  const double add_bytes = eager_amp ? 4 + a + 4 : 3 * a;
  if (!bwd)
    b.memory("residual adds", ph, T * h * add_bytes * blocks, blocks);
  else if (eager_amp)
    b.memory("residual gradient casts", ph, T * h * (4 + a) * blocks, blocks);
  if (bwd && run.kernels == Kernels::eager) {
    // A tensor read by n operations receives n gradients, which autograd sums with n - 1 adds
    // (torch/csrc/autograd/input_buffer.cpp, InputBuffer::accumulate), each reading two and
    // writing one element of the tensor: per sub-block the stream feeds its branch and the skip
    // connection (one add), and a norm's output feeding separate q, k and v projections gets two
    // more, feeding gate and up one more (cross-attention's k and v read the encoder's output
    // in every decoder layer). Seen on an H100: Llama-1B's step ran 113 in-place fp32 adds of
    // [4, 1024, 2048], 7 per layer with RMSNorm's own (tests/data/measured/h100/profile).
    double elements = T * h * blocks, adds = blocks;
    for (const auto &l : linears) {
      if (!per_layer(l.role) || l.routed)
        continue;
      const double count = std::ceil(static_cast<double>(l.count) / pp);
      const bool reads = l.role == "q" || l.role == "k" || l.role == "v" || l.role == "qkv" ||
                         l.role == "kv" || l.role == "gate" || l.role == "up" ||
                         l.role == "gate_up" || l.role.rfind("cross_", 0) == 0;
      const bool closes = l.role == "o" || l.role == "down" || l.role == "cross_o";
      if (reads && l.role != "cross_o") {
        elements += T * static_cast<double>(l.in) * count;
        adds += count;
      } else if (closes) {
        elements -= T * static_cast<double>(l.out) * count;
        adds -= count;
      }
    }
    b.memory("autograd gradient sums", ph, std::max(0.0, elements) * 3 * stream,
             std::max(0.0, adds));
  }
  {
    double mlp_tokens = T;
    double mlps = local_layers;
    if (arch.family == ModelFamily::moe_decoder && d.experts > 0)
      mlp_tokens = T * static_cast<double>(d.experts_per_token);
    double per = d.gated ? 5 * a : 2 * a * (1 + d.act_extra);
    double kernels = d.gated ? 2 : 1 + d.act_extra;
    if (d.act_extra > 0 && !d.gated) {
      // transformers' NewGELUActivation ("gelu_new"; "gelu_fast" is the same formula regrouped)
      // as eager PyTorch runs it: 0.5 * x * (1 + tanh(c * (x + 0.044715 * pow(x, 3)))), eight
      // element-wise kernels, 18 elements of traffic per element (pow, mul, add, mul, tanh, add,
      // mul, mul). Backward is autograd's chain: the two gradients of the last multiply (3 + 3),
      // 0.5x (2), tanh_backward (3), the two scalar multiplies (2 + 2), pow_backward's
      // grad * 3 * x.pow(2) (2 + 2 + 3) and the two adds that sum x's three gradients (3 + 3):
      // 28 elements, 11 kernels.
      // Under autocast, "gelu_new"'s pow is on the ops that autocast to float32
      // (https://docs.pytorch.org/docs/stable/amp.html, "CUDA Ops that can autocast to
      // float32"): its input is cast to fp32 and every later step promotes to fp32, so the chain
      // moves 4-byte elements (counted at 4 throughout; the 16-bit input and 0.5x are two of the
      // 18). "gelu_fast" has no pow and stays 16-bit. Seen on an H200: GPT-2's activation kernels
      // on [16, 1024, 3072] ran as fp32 (tests/data/measured/h200/profile/gpt2_*.json).
      const double ea = amp_run && d.act_fp32 > 0 ? 4 : a;
      per = bwd ? 28 * ea / dir : 18 * ea;
      kernels = bwd ? 11 : 8;
    }
    if (d.act_sigmoid && !d.gated) {
      // transformers' QuickGELUActivation ("quick_gelu", CLIP): input * torch.sigmoid(1.702 *
      // input) as three eager kernels, 7 elements of traffic (scalar multiply 2, sigmoid 2,
      // multiply 3). Backward: the multiply's two gradients (3 + 3), sigmoid_backward (3), the
      // scalar multiply's (2) and the add of x's two gradients (3): 14 elements, 5 kernels. None
      // is on autocast's lists, so 16-bit under AMP. Seen on an H200: CLIP's text tower ran 36
      // aten::mul, 24 scalar aten::mul, 12 sigmoid_backward and 12 add_ on [256, 77, 2048] in 12
      // layers (tests/data/measured/h200/profile/clip_text_tower_*.json).
      per = bwd ? 14 * a / dir : 7 * a;
      kernels = bwd ? 5 : 3;
    }
    if (run.kernels == Kernels::fused) {
      per = d.gated ? 3 * a : 2 * a;
      kernels = 1;
    }
    b.memory("MLP activation" + tag, ph, mlp_tokens * I * per * mlps * dir, kernels * mlps);
    if (eager_amp && d.act_extra > 0 && d.act_fp32 > 0 && !d.gated) {
      // gelu_new's fp32 chain under autocast: forward, pow's input cast to fp32 and, since the
      // result is fp32 by type promotion, the down projection's input cast back to 16 bits by
      // autocast; backward, ToCopyBackward of both and the engine's casts of the two 16-bit
      // operands' fp32 gradients (x in the add, 0.5 * x in the last multiply): a + 4 per
      // element each, two kernels forward, four backward. Seen on an H100: GPT-2's step ran 48
      // copies of [16, 1024, 3072] and 24 of [16384, 3072] (tests/data/measured/h100/profile).
      b.memory("MLP activation casts" + tag, ph, mlp_tokens * I * (a + 4) * mlps * (bwd ? 4 : 2),
               (bwd ? 4 : 2) * mlps);
    }
  }
  if (arch.family == ModelFamily::moe_decoder && d.experts > 0) {
    // Router softmax/top-k, and the tokens gathered to and scattered back from their experts
    // (transformers' Mixtral loop: per expert an index, a gather and an index_add).
    double per = 4 * a * h * static_cast<double>(d.experts_per_token);
    b.memory("MoE dispatch/combine" + tag, ph, T * per * local_layers * dir,
             local_layers * (3 + 3 * static_cast<double>(d.experts)));
  }
  if (d.dropout && training) {
    b.memory("dropout" + tag, ph, T * h * (2 * a + 1) * 2 * local_layers * dir, 2 * local_layers);
  }

  // Embedding lookup (forward) and its gradient (backward: zero the table's gradient and
  // scatter-add), and the loss over the vocabulary logits.
  if (d.vocab > 0) {
    if (fwd)
      b.memory("embedding", ph, T * h * 2 * a, 1);
    else if (training && !run.lora())
      b.memory("embedding.grad", ph,
               static_cast<double>(d.vocab) * h * master_bytes(run.precision) + T * h * 3 * a, 2);
  }
  if (with_loss && lm_head && d.logits > 0 && training) {
    const double logits = T * static_cast<double>(d.logits) / tp;
    const bool up = a < 4 && run.kernels == Kernels::eager;
    // Forward: logits.float(), log_softmax, nll; backward: the nll and log_softmax gradients and
    // the cast back (ToCopyBackward).
    double per_fwd = 8, per_bwd = 4 + 12, kernels = 2;
    if (run.kernels == Kernels::fused || run.loss != Loss::standard) {
      // Fused or chunked cross-entropy (Liger-Kernel, Cut-CE, torchtune) never writes the fp32
      // logits: each chunk's logits are written once and read back for the gradient.
      per_fwd = a;
      per_bwd = 2 * a;
      kernels = 3;
    } else if (up) {
      b.memory("logits cast to fp32" + tag, ph, logits * (a + 4), 1);
    }
    // Gemma 2's final_logit_softcapping: divide, tanh, multiply (one read and one write each;
    // backward reads the gradient and tanh's output).
    if (d.final_softcap && run.loss == Loss::standard)
      b.memory("final logit softcapping" + tag, ph, logits * a * (bwd ? 7 : 6), 3);
    b.memory("cross-entropy loss" + tag, ph, logits * (bwd ? per_bwd : per_fwd), kernels);
  }
}

// ---- CNNs and UNets --------------------------------------------------------------------------

void walk_pass(Builder &b, const ModelInput &model, const Run &run, double batch, Phase ph,
               bool training) {
  auto modules = model::walk_shared(
      model.arch, run.image_size > 0 ? run.image_size : model::default_image_size(model.arch));
  if (!modules)
    return;
  const double a = activation_bytes(run.precision);
  const double wb = weight_read_bytes(model, run);
  const bool bwd = ph == Phase::backward;
  double bn_bytes = 0, bn_k = 0, relu_bytes = 0, relu_k = 0, pool_bytes = 0, pool_k = 0,
         add_bytes = 0, add_k = 0, other_bytes = 0, other_k = 0, layout_bytes = 0, layout_k = 0,
         sum_bytes = 0, sum_k = 0, counter_bytes = 0, counter_k = 0;
  int block = -1;
  // Tensor cores convolve NHWC tensors. With PyTorch's default NCHW, cuDNN transposes each
  // tensor-core convolution's activations in and its result out (docs/fit.md "Time": cuDNN's
  // NCHW-to-NHWC transformations); FP32 without TF32 runs NCHW kernels, channels_last none.
  const bool transposes = run.precision != Precision::fp32 && !run.channels_last;
  for (const auto &r : **modules) {
    const double in = static_cast<double>(r.input.elements()) * batch;
    const double out = static_cast<double>(r.output.elements()) * batch;
    if (bwd && run.kernels == Kernels::eager && r.block >= 0 && r.block != block) {
      // A residual block's input feeds its first convolution and the skip connection (the
      // identity or the downsampling convolution): autograd sums its two gradients with one add
      // (InputBuffer::accumulate, as for a transformer's stream), reading two and writing one.
      // The block's first record is its first convolution, whose input is the block's.
      block = r.block;
      sum_bytes += 3 * a * in;
      sum_k += 1;
    }
    if (r.kind == "conv" || r.kind == "linear") {
      // Convolution as an implicit GEMM: M = batch x output pixels, N = output channels,
      // K = MACs per output element.
      const double pixels = static_cast<double>(r.output.height * r.output.width);
      const double m = batch * pixels;
      const double n = static_cast<double>(r.output.channels);
      const double k = (pixels > 0 && n > 0) ? r.macs / (pixels * n) : 0;
      if (k <= 0)
        continue;
      if (transposes && r.kind == "conv") {
        // Each transpose reads and writes its tensor: forward the input and the output; backward
        // the data gradient (dy in, dx out) and the weight gradient (x and dy in), two calls.
        layout_bytes += (bwd ? 4 : 2) * a * (in + out);
        layout_k += bwd ? 4 : 2;
      }
      if (!bwd) {
        b.gemm(r.kind + " " + r.name, ph, run.precision, m, n, k, 1, a, wb, a);
      } else {
        b.gemm(r.kind + " " + r.name + " (input grad)", ph, run.precision, m, k, n, 1, a, wb, a);
        b.gemm(r.kind + " " + r.name + " (weight grad)", ph, run.precision, k, n, m, 1, a, a,
               master_bytes(run.precision));
      }
    } else if (r.kind == "batchnorm" || r.kind == "norm") {
      // Training batch norm reads its input twice (statistics, then normalise) and writes once.
      // Backward reduces sum(dy) and sum(dy * (x - mean)) over the batch and pixels, then computes
      // each dx from dy and x again: x and dy read twice, dx written, 5 passes. PyTorch's CUDA
      // kernels (aten/src/ATen/native/cuda/Normalization.cuh): batch_norm_collect_statistics +
      // batch_norm_transform_input forward; NCHW's batch_norm_backward_kernel reduces and then
      // re-reads input and grad_output in one kernel, channels-last runs
      // batch_norm_backward_reduce then batch_norm_backward_elemt.
      bn_bytes += bwd ? 5 * a * out : (training ? 3 : 2) * a * out;
      bn_k += training ? (bwd && !run.channels_last ? 1 : 2) : 1;
      // Training, each BatchNorm first counts the batch: num_batches_tracked.add_(1) on its int64
      // (torch/nn/modules/batchnorm.py, _BatchNorm.forward), a kernel of its own.
      if (training && !bwd && r.kind == "batchnorm") {
        counter_bytes += 16;
        counter_k += 1;
      }
    } else if (r.kind == "relu") {
      relu_bytes += (bwd ? 3 : 2) * a * out;
      relu_k += 1;
    } else if (r.kind == "maxpool" || r.kind == "avgpool") {
      pool_bytes += bwd ? a * (in + 2 * out) + 8 * out : a * (in + out) + 8 * out;
      pool_k += 1;
    } else if (r.kind == "add") {
      add_bytes += bwd ? 0 : 3 * a * out;
      add_k += bwd ? 0 : 1;
    } else {
      // UNet resnets/transformers and other composite records: their MACs as one GEMM of the
      // record's output shape, and their saved elements written forward, read and written back.
      if (r.macs > 0) {
        const double n = std::max<double>(1, static_cast<double>(r.output.channels));
        const double m =
            batch * std::max<double>(1, static_cast<double>(r.output.height * r.output.width));
        const double k = r.macs / (m / batch * n);
        b.gemm(r.kind + " " + r.name + (bwd ? ".grad" : ""), ph, run.precision, m, n, k,
               bwd ? 2 : 1, a, wb, a);
      }
      other_bytes += r.saved * batch * a * (bwd ? 2 : 1);
      other_k += bwd ? 4 : 3;
    }
  }
  const std::string tag = bwd ? ".grad" : "";
  b.memory("batch norm" + tag, ph, bn_bytes, bn_k);
  b.memory("batch norm step counters", ph, counter_bytes, counter_k);
  b.memory("ReLU" + tag, ph, relu_bytes, relu_k);
  b.memory("pooling" + tag, ph, pool_bytes, pool_k);
  b.memory("residual adds" + tag, ph, add_bytes, add_k);
  b.memory("other element-wise" + tag, ph, other_bytes, other_k);
  b.memory("NCHW/NHWC transposes" + tag, ph, layout_bytes, layout_k);
  b.memory("autograd gradient sums", ph, sum_bytes, sum_k);
}

// ---- The optimizer step ----------------------------------------------------------------------

// Parameter tensors (for the per-tensor kernels of a for-loop optimizer).
double parameter_tensors(const ModelInput &model) {
  if (!is_transformer(model.arch.family)) {
    double n = 0;
    if (auto modules = model::walk_shared(model.arch, model::default_image_size(model.arch)))
      for (const auto &r : **modules)
        n += r.params > 0 ? (r.kind == "conv" ? 1 : 2) : 0;
    return n;
  }
  double n = 0;
  for (const auto &l : model::linear_layers(model.arch))
    n += static_cast<double>(l.count) * (l.bias ? 2 : 1);
  const double layers = static_cast<double>(model.arch.layers + model.arch.decoder_layers);
  return n +
         layers * static_cast<double>(model.arch.norms_per_layer) *
             (model.arch.norm == "layernorm" ? 2
              : model.arch.norm == "none"    ? 0
                                             : 1) +
         2;
}

// The weights autocast casts to 16 bits: those of the ops on its lower-precision list (linear,
// convolution, matmul), not embeddings (nn.Embedding is on none of its lists) or norms (their
// ops run in fp32 or take the fp32 weight as it is). A tied vocabulary head casts the embedding
// table it shares. Parameters and tensors (a weight and its bias are two casts).
struct CastWeights {
  double params = 0, tensors = 0;
};
CastWeights autocast_weights(const ModelInput &model) {
  CastWeights c;
  if (!is_transformer(model.arch.family)) {
    if (auto modules = model::walk_shared(model.arch, model::default_image_size(model.arch)))
      for (const auto &r : **modules)
        if ((r.kind == "conv" || r.kind == "linear") && r.params > 0) {
          c.params += r.params;
          c.tensors += r.kind == "conv" ? 1 : 2;
        }
    return c;
  }
  bool head = false;
  for (const auto &l : model::linear_layers(model.arch)) {
    c.params += static_cast<double>(l.params());
    c.tensors += static_cast<double>(l.count) * (l.bias ? 2 : 1);
    head = head || l.role == "lm_head";
  }
  const auto &a = model.arch;
  const Dims d = dims_of(a);
  if (!head && d.vocab > 0 && ((a.lm_head && a.family != ModelFamily::encoder) || a.mlm_head)) {
    c.params += static_cast<double>(a.hidden) * static_cast<double>(d.vocab);
    c.tensors += 1;
  }
  return c;
}

} // namespace

double trained_params(const ModelInput &model, const Run &run) {
  double p = static_cast<double>(model.params);
  if (run.lora()) {
    double r = std::max(1, run.lora_rank > 0 ? run.lora_rank : 16);
    double n = 0;
    for (const auto &l : model::linear_layers(model.arch)) {
      bool adapted = run.lora_targets == LoraTargets::all_linear
                         ? l.role != "lm_head"
                         : (l.role == "q" || l.role == "v" || l.role == "qkv");
      if (adapted)
        n += r * static_cast<double>(l.in + l.out) * static_cast<double>(l.count);
    }
    p = n;
  }
  p /= static_cast<double>(run.tp) * run.pp;
  if (run.strategy != Strategy::ddp)
    p /= std::max(1, run.dp()); // ZeRO/FSDP: each rank steps its own partition
  return p;
}

namespace {

void optimizer_step(Builder &b, const ModelInput &model, const Run &run) {
  const double p = trained_params(model, run);
  const double w = master_bytes(run.precision);
  // Bytes per parameter of one step: torch/optim adam.py's _multi_tensor_adam (foreach, PyTorch's
  // default on CUDA) runs lerp_ (m), mul_ and addcmul_ (v), mul_ (decoupled weight decay), sqrt,
  // div_, add_ (eps) and addcdiv_ (p) as separate passes; the fused kernel reads p, g, m, v once
  // and writes p, m, v. Optimizer states take the parameters' dtype.
  double passes_bytes = 0, fused_bytes = 0, passes = 0;
  switch (run.optimizer) {
  case Optimizer::adam:
  case Optimizer::adamw:
    passes_bytes = 3 * w + 2 * w + 3 * w + 2 * w + 2 * w + 2 * w + 2 * w + 4 * w;
    fused_bytes = 7 * w;
    passes = 8;
    break;
  case Optimizer::adamw_8bit:
    // bitsandbytes' 8-bit blockwise Adam: one kernel, 1-byte states.
    passes_bytes = fused_bytes = 3 * w + 4;
    passes = 1;
    break;
  case Optimizer::sgd:
    passes_bytes = fused_bytes = 3 * w;
    passes = 1;
    break;
  case Optimizer::sgd_momentum:
  case Optimizer::lion:
    passes_bytes = 3 * w + 2 * w + 3 * w;
    fused_bytes = 5 * w;
    passes = 3;
    break;
  case Optimizer::adafactor:
    passes_bytes = fused_bytes = 6 * w;
    passes = 6;
    break;
  }
  const bool adam = run.optimizer == Optimizer::adam || run.optimizer == Optimizer::adamw;
  const OptimizerImpl impl = run.optimizer_impl.value_or(
      run.kernels == Kernels::fused ? OptimizerImpl::fused : OptimizerImpl::foreach);
  const bool fused = (adam && impl == OptimizerImpl::fused) ||
                     (!adam && run.kernels == Kernels::fused) ||
                     run.optimizer == Optimizer::adamw_8bit;
  const bool loop = adam && impl == OptimizerImpl::loop;
  Op o;
  o.name = std::string(name(run.optimizer)) + (fused  ? " step (fused)"
                                               : loop ? " step (for-loop)"
                                                      : " step (foreach)");
  o.kind = OpKind::memory;
  o.phase = Phase::optimizer;
  o.bytes = p * (fused ? fused_bytes : passes_bytes);
  // foreach launches one kernel per pass per chunk of tensors (multi_tensor_apply's chunking).
  // The for-loop implementation launches every pass for every parameter tensor.
  o.kernels = fused  ? 1
              : loop ? passes * parameter_tensors(model)
                     : passes * std::max(1.0, std::ceil(parameter_tensors(model) / 110));
  b.add(std::move(o));
  if (run.precision == Precision::fp16_amp)
    b.memory("GradScaler unscale and inf check", Phase::optimizer, p * (2 * w + w), 2);
  if (run.grad_accum > 1 && !run.lora())
    b.memory("gradient accumulation", Phase::backward,
             p * 3 * w * static_cast<double>(run.grad_accum - 1), 0);
  if (amp(run.precision) && !run.lora()) {
    // Autocast casts each fp32 weight of a linear or convolution to 16 bits once per forward
    // (its cast cache).
    const CastWeights w16 = autocast_weights(model);
    const double cast_bytes =
        w16.params / (run.tp * run.pp) * (4 + 2) * static_cast<double>(run.grad_accum);
    const double cast_kernels = w16.tensors * static_cast<double>(run.grad_accum) / run.pp;
    b.memory("autocast weight casts", Phase::forward, cast_bytes, cast_kernels);
    // The cast is an autograd node (aten::_to_copy): backward, each weight's 16-bit gradient from
    // the weight-gradient GEMM is cast back to the fp32 parameter's dtype by ToCopyBackward, one
    // kernel per weight reading 2 and writing 4 bytes per element (PyTorch AMP docs: "the
    // backward ops run in the same type that autocast used for corresponding forward ops").
    b.memory("autocast weight-gradient casts", Phase::backward, cast_bytes, cast_kernels);
  }
}

void scale(std::vector<Op> &ops, std::size_t from, double k) {
  for (std::size_t i = from; i < ops.size(); ++i) {
    ops[i].flops *= k;
    ops[i].bytes *= k;
    ops[i].kernels *= k;
  }
}

} // namespace

std::string_view name(Phase p) {
  switch (p) {
  case Phase::forward:
    return "forward";
  case Phase::backward:
    return "backward";
  case Phase::recompute:
    return "recompute";
  case Phase::optimizer:
    return "optimizer";
  }
  return "?";
}

std::string_view name(OpKind k) {
  switch (k) {
  case OpKind::gemm:
    return "gemm";
  case OpKind::attention:
    return "attention";
  case OpKind::memory:
    return "memory";
  }
  return "?";
}

double activation_bytes(Precision p) {
  return (p == Precision::fp32 || p == Precision::tf32) ? 4 : 2;
}

std::vector<Op> train_ops(const ModelInput &model, const Run &run) {
  Builder b;
  const double micro = static_cast<double>(run.grad_accum);
  const auto family = model.arch.family;
  if (is_transformer(family)) {
    Shape sh{static_cast<double>(run.batch), static_cast<double>(run.seq)};
    transformer_pass(b, model, run, sh, Phase::forward, true, true);
    if (run.checkpointing == Checkpointing::full) {
      std::size_t from = b.ops.size();
      transformer_pass(b, model, run, sh, Phase::recompute, true, false);
      // The recompute runs the layers again, not the embedding or the loss.
      b.ops.erase(std::remove_if(b.ops.begin() + static_cast<long>(from), b.ops.end(),
                                 [](const Op &o) { return o.name == "embedding"; }),
                  b.ops.end());
    } else if (run.checkpointing == Checkpointing::selective) {
      std::size_t from = b.ops.size();
      transformer_pass(b, model, run, sh, Phase::recompute, true, false);
      b.ops.erase(std::remove_if(b.ops.begin() + static_cast<long>(from), b.ops.end(),
                                 [](const Op &o) {
                                   return o.kind != OpKind::attention &&
                                          o.name.rfind("attention", 0) != 0;
                                 }),
                  b.ops.end());
    }
    transformer_pass(b, model, run, sh, Phase::backward, true, true);
  } else {
    const double batch = static_cast<double>(run.batch);
    walk_pass(b, model, run, batch, Phase::forward, true);
    if (run.checkpointing == Checkpointing::full)
      walk_pass(b, model, run, batch, Phase::recompute, true);
    walk_pass(b, model, run, batch, Phase::backward, true);
  }
  scale(b.ops, 0, micro);
  optimizer_step(b, model, run);
  return b.ops;
}

std::vector<Op> prefill_ops(const ModelInput &model, const Run &run) {
  Builder b;
  const double seqs = static_cast<double>(run.batch * run.concurrency);
  if (is_transformer(model.arch.family)) {
    Shape sh{seqs, static_cast<double>(run.seq)};
    transformer_pass(b, model, run, sh, Phase::forward, false, false);
    // The first new token's logits: transformers' generate keeps only the last position's
    // (logits_to_keep), one lm_head GEMM row per sequence.
    const Dims d = dims_of(model.arch);
    if (d.vocab > 0)
      b.gemm("linear lm_head", Phase::forward, run.precision, seqs,
             static_cast<double>(d.vocab) / run.tp, static_cast<double>(model.arch.hidden), 1,
             activation_bytes(run.precision), head_read_bytes(model, run),
             activation_bytes(run.precision));
  } else {
    walk_pass(b, model, run, seqs, Phase::forward, false);
  }
  return b.ops;
}

std::vector<Op> decode_ops(const ModelInput &model, const Run &run, double context) {
  Builder b;
  if (!is_transformer(model.arch.family))
    return b.ops;
  const double seqs = static_cast<double>(run.batch * run.concurrency);
  Run r = run;
  r.attention = Attention::sdpa;
  Shape sh{seqs, 1};
  transformer_pass(b, model, r, sh, Phase::forward, false, false);
  // The attention core of one new token reads the whole KV cache: replace the s x s term.
  // A sliding layer's new token reads at most its window (kv_cache_layer_tokens).
  const Dims d = dims_of(model.arch);
  const double all = static_cast<double>(d.layers + d.decoder_layers);
  const double layers = std::ceil(all / static_cast<double>(run.pp));
  const double read =
      kv_cache_layer_tokens(d, 0, context, kv_windows_apply(d, run.transformers_version)) / all;
  const double a = activation_bytes(run.precision);
  for (auto &o : b.ops)
    if (o.kind == OpKind::attention) {
      o.name = "attention over the KV cache";
      o.flops = 4 * seqs * read * static_cast<double>(d.q_dim) / run.tp * layers;
      o.bytes = seqs * read * 2 * static_cast<double>(d.kv_dim) / run.tp * a * layers +
                seqs * 2 * static_cast<double>(d.q_dim) / run.tp * a * layers;
    }
  // DeepSeek's latent cache: each step expands every cached token's latent through kv_b_proj
  // (the attention then reads the expanded keys and values, as above).
  if (mla_latent_cache(model.arch, run.transformers_version)) {
    const auto &m = model.arch;
    b.gemm("kv_b_proj over the cached latent", Phase::forward, run.precision, seqs * read,
           static_cast<double>(m.heads * (m.head_dim - m.qk_rope_dim + m.v_head_dim)) / run.tp,
           static_cast<double>(m.kv_lora_rank), layers, a, weight_read_bytes(model, run), a);
  }
  if (d.vocab > 0)
    b.gemm("linear lm_head", Phase::forward, run.precision, seqs,
           static_cast<double>(d.vocab) / run.tp, static_cast<double>(model.arch.hidden), 1, a,
           head_read_bytes(model, run), a);
  return b.ops;
}

namespace {

double gemm_and_attention_flops(const std::vector<Op> &ops) {
  double f = 0;
  for (const auto &o : ops)
    if (o.kind != OpKind::memory)
      f += o.flops;
  return f;
}

} // namespace

double model_flops(const ModelInput &model, const Run &run) {
  Run r = run;
  r.checkpointing = Checkpointing::none;
  r.tp = r.pp = 1;
  return gemm_and_attention_flops(train_ops(model, r)) * run.dp();
}

double model_flops(const ModelInput &model, const Run &run, const std::vector<Op> &ops) {
  if (run.checkpointing != Checkpointing::none || run.tp != 1 || run.pp != 1)
    return model_flops(model, run);
  return gemm_and_attention_flops(ops) * run.dp();
}

} // namespace dlrig::fit

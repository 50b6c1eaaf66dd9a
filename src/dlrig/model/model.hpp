#pragma once
// A model's architecture as a Hugging Face config.json (or diffusers/torchvision equivalent)
// states it. Parameter counts are derived from these hyperparameters by code (params.cpp),
// never typed in. docs/models.md describes every field, each family's derivation, and how to add
// a model.
#include "dlrig/core/json.hpp"
#include "dlrig/core/result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlrig::model {

enum class ModelFamily {
  decoder,         // GPT-2, Llama, Mistral, Qwen, Gemma, Phi, GPT-3
  moe_decoder,     // Mixtral and other mixture-of-experts decoders
  encoder,         // BERT, ViT
  encoder_decoder, // T5
  cnn,             // ResNet
  unet             // Stable Diffusion UNet
};

// "decoder", "moe_decoder", "encoder", "encoder_decoder", "cnn", "unet" (the catalog's `family`).
std::string_view to_string(ModelFamily family);
Result<ModelFamily> parse_model_family(std::string_view text);

// torchvision ResNet (resnet.py): a stem (7×7 conv, batch norm, ReLU, 3×3 max pool), four stages of
// residual blocks, global average pooling and a linear classifier.
struct CnnArch {
  std::string block;                      // "basic" (BasicBlock) | "bottleneck" (Bottleneck, ×4)
  std::vector<std::int64_t> stage_blocks; // torchvision `layers`, e.g. {3, 4, 6, 3}
  std::vector<std::int64_t> stage_widths; // planes per stage, e.g. {64, 128, 256, 512}
  std::int64_t stem_width = 64;           // output channels of the stem convolution
  std::int64_t num_classes = 1000;        // classifier outputs
};

// diffusers UNet2DConditionModel (unets/unet_2d_condition.py) with the block types Stable Diffusion
// 1.x/2.x and XL use. Names follow the diffusers config.json.
struct UNetArch {
  std::int64_t in_channels = 4;
  std::int64_t out_channels = 4;
  std::vector<std::int64_t> block_out_channels;    // per down block; up blocks mirror them
  std::vector<std::string> down_block_types;       // CrossAttnDownBlock2D | DownBlock2D
  std::vector<std::string> up_block_types;         // CrossAttnUpBlock2D | UpBlock2D
  std::int64_t layers_per_block = 2;               // resnets per down block (up blocks: +1)
  std::vector<std::int64_t> attention_heads;       // per down block (diffusers' attention_head_dim
                                                   // is the head count, a historical misnomer)
  std::vector<std::int64_t> transformer_layers;    // per down block; mid block uses the last
  std::vector<std::int64_t> up_transformer_layers; // per up block (reversed down list by default)
  std::int64_t cross_attention_dim = 1280; // text encoder width (keys/values of attn2); 1280 when
                                           // the config omits it, as diffusers' default
  std::int64_t time_embed_dim = 0;         // 4 × block_out_channels[0] unless configured
  std::int64_t norm_num_groups = 32;
  bool use_linear_projection = false; // proj_in/proj_out as Linear (true) or 1×1 Conv (same count)
  std::string addition_embed_type;    // "" or "text_time" (SDXL's add_embedding)
  std::int64_t addition_time_embed_dim = 0;
  std::int64_t projection_class_embeddings_input_dim = 0; // add_embedding's input width
  std::int64_t sample_size = 0;      // latent side the model was trained at (64 = 512 px for SD)
  std::int64_t vae_scale_factor = 8; // pixels per latent cell: 2^(VAE blocks − 1) in diffusers
};

// How a pre-quantised checkpoint stores its nn.Linear weights: config.json's quantization_config
// (transformers' HfQuantizer configs). Embeddings, norms and the LM head stay 16-bit.
struct StoredQuant {
  std::string method;          // quant_method: gptq, awq, bitsandbytes, fp8, fbgemm_fp8,
                               // compressed-tensors, or another (then bits is 0: not known)
  int bits = 0;                // bits per weight, 0 when dlrig does not know the method
  std::int64_t group_size = 0; // weights per 16-bit scale along the input (0: one per row/block)
  bool double_quant = false;   // bitsandbytes 4-bit: bnb_4bit_use_double_quant
};
// "GPTQ 4-bit, groups of 128", "bitsandbytes 4-bit (double quantisation)", "hqq".
std::string describe(const StoredQuant &q);
// A quantization_config object (also AutoGPTQ's quantize_config.json with "quant_method": "gptq"
// added); errors name `name` and the key.
Result<StoredQuant> stored_quant_from_config(const Json &quantization_config,
                                             const std::string &name);

struct ModelArch {
  std::string name;         // catalog name, e.g. "llama-3.1-8b"
  std::string display_name; // "Llama 3.1 8B"
  ModelFamily family = ModelFamily::decoder;
  std::string hf_model_type; // config.json model_type: llama, gpt2, bert, t5, mixtral, ...;
                             // "unet" for diffusers UNet2DConditionModel
  // An image-text model's language model type (PaliGemma 2: gemma2), whose attention fit sizes;
  // empty otherwise. text_type() gives it, else hf_model_type.
  std::string text_model_type;
  const std::string &text_type() const {
    return text_model_type.empty() ? hf_model_type : text_model_type;
  }

  // Transformers (config.json names in comments).
  std::int64_t hidden = 0;         // hidden_size / n_embd / d_model
  std::int64_t layers = 0;         // num_hidden_layers / n_layer / num_layers
  std::int64_t decoder_layers = 0; // T5: num_decoder_layers
  std::int64_t heads = 0;          // num_attention_heads / n_head
  std::int64_t kv_heads = 0;       // num_key_value_heads (== heads without GQA)
  std::int64_t head_dim = 0;       // head_dim (hidden/heads when absent)
  std::int64_t intermediate = 0;   // intermediate_size / n_inner / d_ff (per expert for MoE)
  std::int64_t vocab = 0;          // vocab_size
  std::int64_t max_positions = 0;  // max_position_embeddings / n_positions (learned positions)
  bool learned_positions = false;  // GPT-2, BERT: a position embedding table
  std::int64_t type_vocab = 0;     // BERT token types
  bool tied_embeddings = true;     // tie_word_embeddings
  bool gated_mlp = false;          // SwiGLU/GeGLU: gate, up, down projections
  bool attention_bias = false;     // q/k/v/o biases
  bool qkv_bias = false;           // q/k/v biases only (Qwen2)
  bool mlp_bias = false;
  std::string norm = "rmsnorm";       // rmsnorm (weight only) | layernorm (weight and bias)
  std::int64_t experts = 0;           // num_local_experts
  std::int64_t experts_per_token = 0; // num_experts_per_tok
  std::int64_t image_size = 0;        // ViT / CNN input side in pixels
  std::int64_t patch_size = 0;        // ViT
  std::int64_t channels = 3;

  // Added by the model catalog (kb/models).
  bool out_bias = false;            // output projection bias without q/k/v biases (ViT with
                                    // qkv_bias = false; BERT/GPT-2 set attention_bias instead)
  std::int64_t norms_per_layer = 2; // Gemma-2: 4 (pre/post attention and feed-forward)
  bool fused_qkv = false;           // Phi-3 stores q/k/v as one qkv_proj (same count)
  bool fused_gate_up = false;       // Phi-3, GLM-4: gate and up as one gate_up_proj (same count)
  bool pooler = false;              // BERT/ViT base model: dense h×h + bias on the [CLS] token
  std::int64_t num_labels = 0;      // classifier head outputs (ViT/CNN); 0 = no head
  std::int64_t relative_attention_buckets = 0; // T5: relative_attention_num_buckets
  std::int64_t sliding_window = 0; // local attention window of the sliding layers; 0 = none
  std::int64_t sliding_layers = 0; // layers whose KV cache keeps only the last sliding_window
                                   // tokens (transformers' layer_types "sliding_attention")
  std::int64_t chunked_layers = 0; // of those, Llama 4's chunked-attention layers: attention
                                   // within fixed chunks, cached as a sliding window of a chunk
  CnnArch cnn;                     // family == cnn
  UNetArch unet;                   // family == unet

  // Structure knobs of the model types data/model_types.json describes (docs/models.md); the
  // defaults leave the built-in readers' counts unchanged.
  std::string qk_norm;                 // "", head_rms, head_ln, per_head_ln, proj_rms (OLMo-2)
  bool k_bias = true;                  // false: k_proj without bias where q/v have one (Whisper)
  bool lm_head_bias = false;           // Phi, GPT-J: lm_head Linear(h, V) with bias
  std::int64_t position_offset = 0;    // OPT, BART: max_positions + 2 position rows
  bool embed_norm = false;             // a norm after the embeddings (BLOOM, BERT, BART, CLIP)
  bool final_norm = true;              // a norm after the last layer
  std::int64_t embed_dim = 0;          // OPT word_embed_proj_dim, DeBERTa embedding_size
  std::int64_t dense_intermediate = 0; // MoE: intermediate of the layers without experts
  std::int64_t dense_layers = 0;       // MoE: layers with a dense MLP (mlp_only_layers...)
  std::int64_t shared_expert_intermediate = 0; // Qwen2-MoE shared expert
  bool shared_expert_gate = false;             // Qwen2-MoE: Linear(h, 1) gating the shared expert
  bool router_bias = false;                    // gpt-oss: the router Linear(h, E) has a bias
  bool routed_bias = true;      // false: mlp_bias spares the routed experts (DeepSeek-V2)
  bool attention_sinks = false; // gpt-oss: one learned sink logit per head
  // Gemma 2, VaultGemma: attn_logit_softcapping set (class default 50.0; null: none). Eager
  // attention then keeps tanh's output over the scores; flash-attention softcaps inside.
  bool attn_softcap = false;
  // final_logit_softcapping set (Gemma 2, VaultGemma: class default 30.0; Gemma 3: null): the
  // causal LM divides its logits, takes tanh and multiplies, and tanh keeps its output (b x s x V).
  bool final_softcap = false;
  std::int64_t act_params = 0; // Apertus: xIELU's own parameters per layer (alpha_p, alpha_n);
                               // fit's activation model reads them as xIELU's Python form
  // Qwen3-Next, Qwen3.5: q_proj also gives a sigmoid gate per output channel (2 x heads x d).
  bool attention_output_gate = false;
  // Gated DeltaNet linear-attention layers (Qwen3-Next, Qwen3.5): how many of `layers` they are
  // (the others are full attention), their key/value heads and head sizes, the depthwise causal
  // convolution's kernel. linear_split: Qwen3.5's in_proj_qkv, in_proj_z, in_proj_b, in_proj_a
  // instead of Qwen3-Next's in_proj_qkvz and in_proj_ba (the same parameters).
  std::int64_t linear_attention_layers = 0;
  std::int64_t linear_key_heads = 0, linear_value_heads = 0, linear_key_dim = 0,
               linear_value_dim = 0, linear_conv_kernel = 0;
  bool linear_split = false;
  // Granite 4.0's Mamba-2 mixers (granitemoehybrid) in the linear_attention_layers instead: heads
  // of mamba_head_dim (their product the mixer's width, mamba_expand x hidden), mamba_groups groups
  // of mamba_state-wide B and C, a depthwise convolution of linear_conv_kernel over the width, B
  // and C (with bias when mamba_conv_bias), in_proj and out_proj (with bias when mamba_proj_bias).
  std::int64_t mamba_heads = 0, mamba_head_dim = 0, mamba_groups = 0, mamba_state = 0;
  bool mamba_conv_bias = true, mamba_proj_bias = false;
  // LFM2's gated short convolutions in the linear_attention_layers instead: in_proj to 3 x hidden
  // (B, C and x), a depthwise Conv1d of linear_conv_kernel, out_proj; biases with short_conv_bias.
  bool short_conv = false, short_conv_bias = false;
  // Mllama's text model: of `layers`, the gated cross-attention layers (q/k RMSNorms of head_dim,
  // two one-element gates); they read only image features, so a text-only batch skips them
  // (transformers' MllamaTextModel). Its embedding holds embed_extra_rows rows more than the
  // vocabulary its head predicts (vocab_size + 8).
  std::int64_t cross_attention_layers = 0;
  std::int64_t embed_extra_rows = 0;
  // Mllama's vision model: of `layers`, the global transformer's gated layers (two one-element
  // gates each), and the tile and aspect-ratio position embeddings with their gates.
  std::int64_t gated_layers = 0;
  std::int64_t tile_params = 0;
  // DeepSeek's multi-head latent attention (kv_lora_rank > 0): q through a rank-q_lora_rank
  // bottleneck (0: one q_proj), keys and values from a shared rank-kv_lora_rank latent plus a
  // qk_rope_dim-wide rotary key; head_dim is the query/key head (nope + rope), v_head_dim the
  // value head.
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_rope_dim = 0, v_head_dim = 0;
  std::int64_t decoder_intermediate = 0;         // BART, Whisper: decoder_ffn_dim
  std::int64_t decoder_positions = 0;            // encoder-decoder: decoder position rows
  std::int64_t audio_mel_bins = 0;               // Whisper: conv stem over num_mel_bins
  std::int64_t relative_rows = 0;                // DeBERTa: rel_embeddings rows
  bool relative_norm = false;                    // DeBERTa: LayerNorm on rel_embeddings
  std::int64_t position_projections = 0;         // DeBERTa without share_att_key: 0, 1 or 2
  std::int64_t relative_types = 0;               // DeBERTa: c2p and p2c in pos_att_type (0-2)
  std::int64_t conv_kernel = 0, conv_groups = 1; // DeBERTa ConvLayer
  bool patch_bias = true;                        // ViT patch conv bias (CLIP: none)
  bool layer_scale = false;     // InternViT: lambda_1 and lambda_2 (hidden each) in every layer
  bool mask_token = false;      // InternViT with use_mask_token: one hidden-wide mask token
  bool final_layernorm = false; // InternViT: its final norm is a LayerNorm whatever `norm` is
  // CLIP: the text tower (this arch is the vision one); an image-text decoder (Gemma 3): the
  // vision tower (this arch is the language model).
  std::vector<ModelArch> towers;
  std::int64_t projection_dim = 0;   // CLIP: text/visual projections
  std::int64_t projector_params = 0; // image-text decoders: vision tower -> text model
  // The projector's nn.Linear modules as (in, out) (Mistral 3, Qwen2.5-VL's patch merger).
  std::vector<std::pair<std::int64_t, std::int64_t>> projector_linears;
  bool patch_positions = true;           // vision: a learned position per patch (Pixtral: none)
  std::int64_t temporal_patch = 1;       // vision: frames per patch (Qwen2.5-VL's Conv3d: 2)
  bool class_token = true;               // vision: a [CLS] token and its position (SigLIP: none)
  bool map_head = false;                 // SigLIP: the attention-pooling head (vision_use_head)
  std::vector<std::string> module_names; // PEFT names of q, k, v, o, gate, up, down, qkv,
                                         // lm_head, gate_up; empty = the built-in names

  // The head class (config.json `architectures`, data/model_heads.csv).
  std::string head_class; // as the config names it; "" = the type's default head
  bool lm_head = true;    // a vocabulary head (tied or untied) on a decoder/encoder-decoder
  bool mlm_head = false;  // masked-LM head: dense, LayerNorm, tied decoder + vocabulary bias
  bool cls_dense = false; // a dense h×h (+ bias) before the classifier
  bool classifier_bias = true;

  // A pre-quantised checkpoint's storage (config.json quantization_config); nullopt: 16/32-bit.
  std::optional<StoredQuant> stored_quant;

  // The original config.json object (less the catalog's own keys), so nothing is lost: rope
  // scaling, dtype, dropout rates, activation functions...
  Json extra;

  // The published exact count, for tests; nullopt when none is published (then
  // published_rounded holds the figure the source gives, e.g. "175B", and source says why).
  std::optional<std::int64_t> published_params;
  std::string published_rounded;
  std::string source; // where the hyperparameters and the published count come from
};

// Derived from the hyperparameters; the count PyTorch's sum(p.numel() for p in
// model.parameters()) gives for the model the catalog row describes (shared and tied tensors
// counted once; buffers such as batch-norm running statistics and rotary inv_freq not counted).
// CNNs and UNets: the sum over the one walk's records (walk.hpp); 0 when the architecture lacks
// its stages or blocks (only a hand-built ModelArch can).
std::int64_t derive_params(const ModelArch &m);

// The width of the logits the training loss reads: the vocabulary for an LM or masked-LM head,
// the classifier's outputs for a classification head, 0 for a base model.
std::int64_t logits_width(const ModelArch &m);

// Parameters one token passes through: for a mixture of experts only experts_per_token experts
// count; an image-text decoder's text tokens do not pass its vision tower and projector; for
// every other model the same as derive_params. For FLOPs (6 × active × tokens).
std::int64_t active_params(const ModelArch &m);

// An image-text decoder's vision tower and projector (derive_params counts them, text tokens do
// not run them); 0 for every other model.
std::int64_t tower_params(const ModelArch &m);

// One kind of nn.Linear (GPT-2: Conv1D) in a transformer, repeated `count` times, for LoRA
// (r · (in + out) per adapted module), QLoRA (only these weights are quantised; embeddings, norms
// and the LM head stay 16-bit) and tensor parallelism. Embeddings, norms, positions and T5's
// relative bias are not listed.
struct LinearShape {
  std::string role; // q, k, v, o, qkv (fused), gate, up, gate_up (fused), down, router, pooler,
                    // classifier, lm_head; cross-attention roles carry a "cross_" prefix (T5);
                    // latent attention: q (q_a_proj or q_proj), q_b, kv (kv_a_proj_with_mqa), kv_b
  std::string
      module; // the module name PEFT's target_modules matches: q_proj, c_attn, query, wi_0...
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t count = 0; // instances in the model: layers (× experts)
  bool bias = false;
  bool routed = false; // one of an MoE layer's routed experts: a token runs experts_per_token
  std::int64_t params() const { return count * (in * out + (bias ? out : 0)); }
};

// The linear layers of a transformer model (decoder, MoE, BERT, ViT, T5), in layer order; empty
// for CNNs and UNets.
std::vector<LinearShape> linear_layers(const ModelArch &m);
// A head's linear, outside the transformer blocks: lm_head, pooler, classifier, cls_dense (a
// classification head's dense or pre-classifier layer), mlm_dense (the masked-LM head's transform).
bool head_linear(std::string_view role);

// A config.json object (transformers, diffusers or the catalog's own rows) to a ModelArch. Errors
// name the missing or wrong field. Recognised: model_type llama, mistral, mixtral, qwen2, gemma2,
// phi3, gpt2, bert, vit, t5, resnet (torchvision keys block/layers/widths or the transformers
// ResNetConfig keys), and `_class_name: UNet2DConditionModel` (diffusers).
Result<ModelArch> model_from_config(const Json &config, const std::string &name);

// The same from config.json text; errors also name `origin` (a file path) and a JSON position.
Result<ModelArch> model_from_config_text(std::string_view text, const std::string &origin);

// A catalog in data/models.json's format (an object with a "models" array of rows: a config.json
// plus name, display_name, family, published_params, published_rounded, source). A bad row throws
// Failure(ExitCode::internal) naming `origin`, the row's name (or index) and the field.
std::vector<ModelArch> parse_model_catalog(std::string_view text, std::string_view origin);

// A model for `dlrig kb models --json` and reports: name, display_name, family, model_type, the
// derived `params` (and `active_params` for MoE), published_params (null when none), the
// hyperparameters the family uses, source, and the original `config`.
Json to_json(const ModelArch &m);

// The catalog embedded from data/models.json, validated; a bad row is a bug in dlrig's data and
// throws Failure(internal) naming the file and the model.
std::vector<ModelArch> load_model_catalog();

} // namespace dlrig::model

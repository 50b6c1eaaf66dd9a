#!/usr/bin/env python3
"""dlrig's parameter count next to the exact sum(p.numel()) of the model transformers builds.

Each case is a config.json: the default configuration of a transformers config class (written with
to_diff_dict(), so that only model_type is left and dlrig must know the class defaults), and the
fixtures under tests/data/models/ (published config.json values of well-known checkpoints). The
class built is the config's `architectures[0]` when it names one, else the class dlrig assumes for
that model_type without it (a causal LM for decoders, the seq2seq LM for encoder-decoders, the base
model for encoders, ViTForImageClassification when labels are given). Models are built on the meta
device (no memory, nothing downloaded); `dlrig fit CONFIG --json` gives dlrig's count.

Prints a markdown table (for docs/models.md) with the transformers and torch versions, and exits 1
when any count differs.

Usage: perf/model_params.py [--dlrig build/dlrig] [--only TYPE_OR_FIXTURE] [--json]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers
from transformers import AutoConfig

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The model types whose default configs are checked (data/model_types.json and the built-in
# readers of src/dlrig/model/config.cpp).
DEFAULT_TYPES = [
    "llama", "mistral", "mixtral", "qwen2", "gemma2", "phi3", "gpt2", "bert", "vit", "t5",
    "qwen3", "qwen3_moe", "qwen2_moe", "gemma", "phi", "gpt_neox", "gptj", "opt", "bloom",
    "falcon", "stablelm", "gpt_bigcode", "roberta", "xlm-roberta", "distilbert", "deberta-v2",
    "mt5", "bart", "mbart", "whisper", "clip", "granite", "smollm3", "gemma3_text", "cohere",
    "arcee", "olmo2", "gpt_oss", "olmoe", "granitemoe", "exaone4", "ernie4_5", "seed_oss",
    "siglip_vision_model", "gemma3", "deepseek_v3", "olmo3", "cohere2", "glm4", "glm4_moe",
    "pixtral", "mistral3", "qwen2_5_vl", "qwen2_5_vl_vision", "qwen3_vl", "qwen3_vl_moe",
    "minimax_m2", "phimoe", "ernie4_5_moe", "starcoder2", "llava", "llava_next",
    "llava_onevision", "llama4_text", "llama4", "paligemma", "glm4_moe_lite", "ministral3",
    "glm", "olmo", "helium", "smolvlm", "idefics3", "qwen2_vl", "qwen3_next", "qwen3_5_text",
    "qwen3_5_moe_text", "qwen3_5", "qwen3_5_moe", "internvl", "camembert", "granitemoeshared",
    "mllama", "mllama_text_model", "mllama_vision_model", "granitemoehybrid", "lfm2",
    "apertus", "vaultgemma", "data2vec-text", "flex_olmo",
]

BUILTIN = {"llama", "mistral", "mixtral", "qwen2", "gemma2", "phi3", "gpt2", "bert", "vit", "t5"}
DECODERS = {"llama", "mistral", "mixtral", "qwen2", "gemma2", "phi3", "gpt2", "qwen3", "qwen3_moe",
            "qwen2_moe", "gemma", "phi", "gpt_neox", "gptj", "opt", "bloom", "falcon", "stablelm",
            "gpt_bigcode", "granite", "smollm3", "gemma3_text", "cohere", "arcee", "olmo2",
            "gpt_oss", "olmoe", "granitemoe", "exaone4", "ernie4_5", "seed_oss", "gemma3",
            "deepseek_v3", "deepseek_v2", "olmo3", "ministral", "cohere2", "glm4", "glm4_moe",
            "minimax_m2", "phimoe", "ernie4_5_moe", "starcoder2", "llama4_text",
            "glm4_moe_lite", "ministral3", "glm", "olmo", "helium", "hunyuan_v1_dense",
            "hunyuan_v1_moe", "nemotron", "dots1", "qwen3_next", "qwen3_5_text",
            "qwen3_5_moe_text", "granitemoeshared", "mllama_text_model",
            "granitemoehybrid", "lfm2", "apertus", "vaultgemma", "flex_olmo"}
# Image-text models with no causal-LM class: the ForConditionalGeneration class (an LM head).
IMAGE_TEXT = {"mistral3", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "llava", "llava_next",
              "llava_onevision", "llama4", "paligemma", "smolvlm", "idefics3", "qwen2_vl",
              "qwen3_5", "qwen3_5_moe", "internvl", "aya_vision", "mllama"}
SEQ2SEQ = {"t5", "mt5", "bart", "mbart"}


def default_class(model_type, config):
    """The transformers class dlrig assumes when the config names no architectures."""
    if model_type == "mllama_text_model":  # no auto class maps Mllama's towers
        return transformers.MllamaForCausalLM
    if model_type == "mllama_vision_model":
        return transformers.MllamaVisionModel
    if model_type in IMAGE_TEXT:
        return transformers.AutoModelForImageTextToText
    if model_type in DECODERS:
        return transformers.AutoModelForCausalLM
    if model_type in SEQ2SEQ:
        return transformers.AutoModelForSeq2SeqLM
    if model_type == "whisper":
        return transformers.WhisperForConditionalGeneration
    if model_type == "vit" and ("num_labels" in config or "id2label" in config):
        return transformers.ViTForImageClassification
    return transformers.AutoModel


# Structural variants of the default configs: every knob of data/model_types.json and every head
# class of data/model_heads.csv that a type has, against the class transformers builds.
VARIANTS = {
    "qwen3": [{"attention_bias": True}, {"tie_word_embeddings": True},
              {"head_dim": 64, "num_key_value_heads": 4},
              {"architectures": ["Qwen3ForSequenceClassification"], "num_labels": 5},
              {"architectures": ["Qwen3Model"]}, {"architectures": ["Qwen3ForTokenClassification"]},
              {"architectures": ["Qwen3ForQuestionAnswering"]}],
    "qwen3_moe": [{"mlp_only_layers": [0, 3]}, {"decoder_sparse_step": 2}, {"attention_bias": True},
                  {"num_local_experts": 64}],
    "qwen2_moe": [{"mlp_only_layers": [1]}, {"decoder_sparse_step": 3}, {"qkv_bias": False},
                  {"shared_expert_intermediate_size": 0}],
    "gemma": [{"attention_bias": True}, {"tie_word_embeddings": False}],
    "granite": [{"attention_bias": True, "mlp_bias": True}, {"num_key_value_heads": 8},
                {"tie_word_embeddings": True}],
    "smollm3": [{"tie_word_embeddings": False}, {"head_dim": 64}],
    "gemma3_text": [{"tie_word_embeddings": False}, {"attention_bias": True}],
    "cohere": [{"use_qk_norm": True}, {"num_key_value_heads": 8, "use_qk_norm": True},
               {"tie_word_embeddings": False}],
    "arcee": [{"mlp_bias": True}, {"num_key_value_heads": 8}],
    "olmo2": [{"num_key_value_heads": 8}, {"attention_bias": True}],
    "deepseek_v3": [{"q_lora_rank": None}, {"attention_bias": True},
                    {"first_k_dense_replace": 0, "n_shared_experts": 2},
                    # Kimi K2's shape: 384 experts, 64 heads, one dense layer
                    {"n_routed_experts": 384, "num_attention_heads": 64,
                     "first_k_dense_replace": 1, "vocab_size": 163840}],
    # DeepseekV2Config's num_experts_per_tok is None (no forward runs without it): every variant
    # gives one.
    "deepseek_v2": [{"num_experts_per_tok": 6},
                    {"num_experts_per_tok": 6, "q_lora_rank": None, "mlp_bias": True},
                    {"num_experts_per_tok": 6, "attention_bias": True, "first_k_dense_replace": 2},
                    # DeepSeek-V2-Lite's shape
                    {"hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16,
                     "q_lora_rank": None, "moe_intermediate_size": 1408,
                     "intermediate_size": 10944, "n_routed_experts": 64, "n_shared_experts": 2,
                     "num_experts_per_tok": 6, "first_k_dense_replace": 1}],
    "olmo3": [{"num_key_value_heads": 8}, {"tie_word_embeddings": True}],
    # MinistralConfig's default head_dim is None, which its rotary embedding cannot take: every
    # variant gives one.
    "ministral": [{"head_dim": 64}, {"head_dim": 128, "tie_word_embeddings": True},
                  # Ministral 8B's shape
                  {"head_dim": 128, "hidden_size": 4096, "intermediate_size": 12288,
                   "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "vocab_size": 131072}],
    "cohere2": [{"num_key_value_heads": 8}, {"attention_bias": True},
                {"tie_word_embeddings": False}],
    "gpt_oss": [{"attention_bias": False},
                # gpt-oss-20b's shape: 24 layers (alternating window), 32 experts
                {"num_local_experts": 32, "num_hidden_layers": 24,
                 "layer_types": ["sliding_attention", "full_attention"] * 12}],
    "olmoe": [{"num_key_value_heads": 8}, {"num_experts": 8, "num_experts_per_tok": 2},
              {"num_local_experts": 8, "num_experts_per_tok": 2}],
    "granitemoe": [{"num_local_experts": 4}, {"num_key_value_heads": 8, "attention_bias": True}],
    "exaone4": [{"num_key_value_heads": 8}, {"tie_word_embeddings": True}],
    "ernie4_5": [{"use_bias": True}, {"tie_word_embeddings": False}],
    "glm4": [{"attention_bias": False}, {"tie_word_embeddings": True},
             {"architectures": ["Glm4ForSequenceClassification"], "num_labels": 3}],
    "glm4_moe": [{"use_qk_norm": True}, {"attention_bias": True}, {"num_local_experts": 64},
                 {"first_k_dense_replace": 0, "n_shared_experts": 2},
                 # GLM-4.5-Air's shape: 46 layers, 128 experts, head_dim 128, q/k/v biases
                 {"head_dim": 128, "attention_bias": True, "partial_rotary_factor": 0.5}],
    "pixtral": [{"image_size": 1540, "patch_size": 14}, {"num_key_value_heads": 4}],
    "mistral3": [{"tie_word_embeddings": False}, {"multimodal_projector_bias": True},
                 {"vision_feature_layer": [-1, -2], "spatial_merge_size": 1},
                 {"text_config": None, "vision_config": None},
                 # Mistral Small 3.1's config.json as published (untied head).
                 {"tie_word_embeddings": False, "architectures": ["Mistral3ForConditionalGeneration"],
                  "text_config": {"model_type": "mistral", "head_dim": 128, "hidden_size": 5120,
                                  "intermediate_size": 32768, "num_attention_heads": 32,
                                  "num_hidden_layers": 40, "num_key_value_heads": 8,
                                  "vocab_size": 131072, "sliding_window": None},
                  "vision_config": {"model_type": "pixtral", "hidden_size": 1024,
                                    "intermediate_size": 4096, "num_hidden_layers": 24,
                                    "num_attention_heads": 16, "head_dim": 64,
                                    "image_size": 1540, "patch_size": 14}},
                 # Ministral 3: a ministral3 text model behind Pixtral
                 {"text_config": {"model_type": "ministral3", "hidden_size": 3072,
                                  "intermediate_size": 9216, "num_hidden_layers": 26,
                                  "num_attention_heads": 32, "num_key_value_heads": 8,
                                  "head_dim": 128, "vocab_size": 131072,
                                  "tie_word_embeddings": True}},
                 # a Qwen-3 text model behind the same projector (text_config's own type)
                 {"text_config": {"model_type": "qwen3", "hidden_size": 1024,
                                  "intermediate_size": 3072, "num_hidden_layers": 4,
                                  "num_attention_heads": 16, "num_key_value_heads": 8,
                                  "head_dim": 128, "vocab_size": 151936}}],
    "qwen2_5_vl": [{"tie_word_embeddings": True},
                   {"text_config": {"tie_word_embeddings": True}},
                   {"vision_config": {"spatial_merge_size": 1, "temporal_patch_size": 1}},
                   # Qwen2.5-VL-7B's config.json as published: the text fields at the top level
                   {"text_config": None, "architectures": ["Qwen2_5_VLForConditionalGeneration"],
                    "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                    "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
                    "max_window_layers": 28, "tie_word_embeddings": False,
                    "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420,
                                      "num_heads": 16, "out_hidden_size": 3584, "patch_size": 14,
                                      "spatial_merge_size": 2, "temporal_patch_size": 2,
                                      "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}},
                   # Qwen2.5-VL-3B's (tied head)
                   {"text_config": None, "hidden_size": 2048, "intermediate_size": 11008,
                    "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 2,
                    "vocab_size": 151936, "tie_word_embeddings": True,
                    "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420,
                                      "num_heads": 16, "out_hidden_size": 2048}}],
    "qwen3_vl": [{"tie_word_embeddings": True}, {"text_config": {"attention_bias": True}},
                 {"vision_config": {"deepstack_visual_indexes": [5], "spatial_merge_size": 1,
                                    "num_position_embeddings": 1024}},
                 # Qwen3-VL-8B's shapes (published: 8.77B parameters)
                 {"architectures": ["Qwen3VLForConditionalGeneration"],
                  "text_config": {"hidden_size": 4096, "intermediate_size": 12288,
                                  "num_hidden_layers": 36, "num_attention_heads": 32,
                                  "num_key_value_heads": 8, "head_dim": 128,
                                  "vocab_size": 151936},
                  "vision_config": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304,
                                    "num_heads": 16, "out_hidden_size": 4096,
                                    "deepstack_visual_indexes": [8, 16, 24]}}],
    "qwen3_vl_moe": [{"text_config": {"mlp_only_layers": [0]}},
                     # Qwen3-VL-30B-A3B's shapes (published: 31.1B parameters)
                     {"text_config": {"hidden_size": 2048, "intermediate_size": 6144,
                                      "moe_intermediate_size": 768, "num_hidden_layers": 48,
                                      "num_attention_heads": 32, "num_key_value_heads": 4,
                                      "head_dim": 128, "num_local_experts": 128,
                                      "num_experts_per_tok": 8, "vocab_size": 151936,
                                      "tie_word_embeddings": False},
                      "vision_config": {"out_hidden_size": 2048}}],
    "minimax_m2": [{"num_key_value_heads": 4}, {"num_local_experts": 32},
                   {"tie_word_embeddings": True}],
    "phimoe": [{"attention_bias": True}, {"lm_head_bias": True}, {"num_local_experts": 4},
               {"tie_word_embeddings": True}],
    "ernie4_5_moe": [{"use_bias": True}, {"moe_layer_end_index": 20}, {"moe_layer_interval": 2},
                     {"moe_num_shared_experts": 0}, {"tie_word_embeddings": False},
                     {"moe_num_experts": 8, "moe_k": 2}, {"num_experts": 8},
                     # ERNIE-4.5-300B-A47B's shape: dense layers 0-2, 64 experts, no shared one
                     {"hidden_size": 8192, "num_hidden_layers": 54, "num_attention_heads": 64,
                      "num_key_value_heads": 8, "intermediate_size": 28672,
                      "moe_intermediate_size": 3584, "moe_num_experts": 64, "moe_k": 8,
                      "moe_num_shared_experts": 0, "moe_layer_start_index": 3,
                      "moe_layer_end_index": 53, "tie_word_embeddings": False}],
    "starcoder2": [{"use_bias": False}, {"tie_word_embeddings": False}, {"sliding_window": 4096},
                   # StarCoder2-15B's shape
                   {"hidden_size": 6144, "num_hidden_layers": 40, "num_attention_heads": 48,
                    "num_key_value_heads": 4, "intermediate_size": 24576}],
    "llava": [{"multimodal_projector_bias": False}, {"vision_feature_layer": [-2, -5, -8]},
              {"text_config": {"tie_word_embeddings": True}},
              # a SigLIP vision tower and a Qwen2 text model behind the same projector
              {"vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                                 "intermediate_size": 4304, "num_hidden_layers": 27,
                                 "num_attention_heads": 16, "image_size": 384,
                                 "patch_size": 14},
               "text_config": {"model_type": "qwen2", "hidden_size": 896,
                               "intermediate_size": 4864, "num_hidden_layers": 24,
                               "num_attention_heads": 14, "num_key_value_heads": 2,
                               "vocab_size": 151936}}],
    # llava-v1.6-mistral-7b-hf's text_config as published: the rest from MistralConfig()
    "llava_next": [{"text_config": {"model_type": "mistral", "intermediate_size": 14336,
                                    "max_position_embeddings": 32768,
                                    "num_key_value_heads": 8, "sliding_window": None,
                                    "vocab_size": 32064}},
                   {"multimodal_projector_bias": False}],
    # llava-onevision-qwen2-0.5b-ov's text model (a tied Qwen2 of 896)
    "llava_onevision": [{"text_config": {"model_type": "qwen2", "hidden_size": 896,
                                         "intermediate_size": 4864, "num_hidden_layers": 24,
                                         "num_attention_heads": 14, "num_key_value_heads": 2,
                                         "vocab_size": 152000, "tie_word_embeddings": True}},
                        {"vision_feature_layer": [-1, -2]}],
    "llama4_text": [{"moe_layers": [0, 5, 9]}, {"attention_bias": True},
                    {"tie_word_embeddings": True},
                    # Llama 4 Maverick's text model: 128 experts in every other layer
                    {"interleave_moe_layer_step": 2, "num_local_experts": 128}],
    "llama4": [{"vision_config": {"vision_output_dim": 4096}},
               {"text_config": {"interleave_moe_layer_step": 2, "num_local_experts": 128}},
               {"vision_config": {"image_size": 336, "projector_input_dim": 2048}}],
    # PaliGemma 2 3B at 224 px: a Gemma 2 text model, SigLIP without its head, projection 2304
    "paligemma": [{"projection_dim": 2304,
                   "text_config": {"model_type": "gemma2", "hidden_size": 2304,
                                   "intermediate_size": 9216, "num_hidden_layers": 26,
                                   "num_attention_heads": 8, "num_key_value_heads": 4,
                                   "query_pre_attn_scalar": 256, "sliding_window": 4096,
                                   "vocab_size": 257216},
                   "vision_config": {"intermediate_size": 4304, "vision_use_head": False}},
                  {"tie_word_embeddings": False},
                  {"vision_config": {"image_size": 448}}],
    "glm4_moe_lite": [{"q_lora_rank": None}, {"attention_bias": True},
                      {"mlp_layer_types": ["dense"] * 3 + ["sparse"] * 44},
                      {"num_local_experts": 32}],
    "ministral3": [{"head_dim": 64}, {"tie_word_embeddings": True},
                   {"num_key_value_heads": 4}],
    # Hunyuan: the class default head_dim (None) builds nothing; Hunyuan-7B's head_dim 128
    "hunyuan_v1_dense": [{"head_dim": 128}, {"head_dim": 128, "attention_bias": True},
                         {"head_dim": 128, "num_key_value_heads": 8, "tie_word_embeddings": True}],
    "hunyuan_v1_moe": [{"head_dim": 128}, {"head_dim": 128, "num_experts": 16, "moe_topk": 2},
                       {"head_dim": 128, "num_experts": 64, "moe_topk": 8,
                        "num_key_value_heads": 8, "intermediate_size": 3072}],
    # SmolVLM-256M's shape: SigLIP-B/16 at 512 px, scale_factor 4, a 30-layer SmolLM2-135M
    "smolvlm": [{"scale_factor": 4},
                {"scale_factor": 4, "vision_config": {"hidden_size": 768,
                                                      "intermediate_size": 3072,
                                                      "num_attention_heads": 12,
                                                      "image_size": 512, "patch_size": 16},
                 "text_config": {"model_type": "llama", "hidden_size": 576,
                                 "intermediate_size": 1536, "num_hidden_layers": 30,
                                 "num_attention_heads": 9, "num_key_value_heads": 3,
                                 "head_dim": 64, "vocab_size": 49280,
                                 "max_position_embeddings": 8192}}],
    "idefics3": [{"tie_word_embeddings": True},
                 {"vision_config": {"image_size": 364, "patch_size": 14, "num_hidden_layers": 27,
                                    "intermediate_size": 4304}}],
    # Nemotron and dots1: their class defaults build nothing (num_key_value_heads None; no
    # expert counts). Nemotron-Mini-4B's shape; the class's shape with its kv heads.
    "nemotron": [{"num_key_value_heads": 48},
                 {"num_key_value_heads": 8, "attention_bias": True, "mlp_bias": True},
                 {"hidden_size": 3072, "num_attention_heads": 24, "num_key_value_heads": 8,
                  "head_dim": 128, "intermediate_size": 9216}],
    # dots.llm1's shape, and a small one with sliding layers
    "dots1": [{"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6,
               "first_k_dense_replace": 1, "hidden_size": 4096},
              {"n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
               "num_key_value_heads": 8, "attention_bias": True, "tie_word_embeddings": True}],
    # Qwen2-VL-7B's shape, flat as the hub saves it; Qwen2-VL-2B's, tied through text_config
    "qwen2_vl": [{"text_config": None, "hidden_size": 3584, "intermediate_size": 18944,
                  "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                  "vision_config": {"hidden_size": 3584}},
                 {"text_config": {"hidden_size": 1536, "intermediate_size": 8960,
                                  "num_hidden_layers": 28, "num_attention_heads": 12,
                                  "num_key_value_heads": 2, "tie_word_embeddings": True,
                                  "vocab_size": 151936},
                  "vision_config": {"hidden_size": 1536}}],
    # Qwen3-Next and Qwen3.5: gated DeltaNet layers from layer_types or full_attention_interval
    "qwen3_next": [{"full_attention_interval": 2}, {"mlp_only_layers": [0, 5]},
                   {"decoder_sparse_step": 2}, {"attention_bias": True},
                   {"tie_word_embeddings": True, "linear_num_value_heads": 16},
                   {"num_hidden_layers": 4, "layer_types": ["linear_attention", "full_attention",
                                                            "linear_attention", "linear_attention"]},
                   {"linear_conv_kernel_dim": 8, "linear_key_head_dim": 64}],
    "qwen3_5_text": [{"full_attention_interval": 3}, {"attention_bias": True},
                     {"tie_word_embeddings": True}, {"linear_value_head_dim": 64},
                     {"num_hidden_layers": 3, "layer_types": ["full_attention", "linear_attention",
                                                              "full_attention"]}],
    "qwen3_5_moe_text": [{"num_experts": 64, "num_experts_per_tok": 4},
                         {"shared_expert_intermediate_size": 1024},
                         {"full_attention_interval": 2}],
    "qwen3_5": [{"text_config": {"hidden_size": 1024, "intermediate_size": 3584,
                                 "num_hidden_layers": 24, "num_attention_heads": 8,
                                 "num_key_value_heads": 2, "linear_num_value_heads": 16,
                                 "tie_word_embeddings": True},
                 "vision_config": {"depth": 12, "hidden_size": 768, "intermediate_size": 3072,
                                   "num_heads": 12, "out_hidden_size": 1024},
                 "tie_word_embeddings": True}],
    # InternVL3-1B's shape: InternViT-300M at 448 px and a Qwen2.5-0.5B text model; InternViT-6B's
    # options (qk norm, RMSNorm, a final norm, a mask token)
    "internvl": [{"text_config": {"model_type": "qwen2", "hidden_size": 896,
                                  "intermediate_size": 4864, "num_hidden_layers": 24,
                                  "num_attention_heads": 14, "num_key_value_heads": 2,
                                  "vocab_size": 151674, "tie_word_embeddings": True}},
                 {"vision_config": {"use_qk_norm": True, "norm_type": "rms_norm",
                                    "use_mean_pooling": False, "attention_bias": True}},
                 {"vision_config": {"use_mask_token": True,
                                    "use_absolute_position_embeddings": False,
                                    "image_size": 224, "patch_size": 16}},
                 {"downsample_ratio": 0.25}, {"tie_word_embeddings": False}],
    "glm": [{"attention_bias": False}, {"tie_word_embeddings": True}, {"head_dim": 64}],
    # OLMo-1B's shape: tied, 16 layers of 2048
    "olmo": [{"attention_bias": True}, {"num_key_value_heads": 8},
             {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
              "num_attention_heads": 16, "num_key_value_heads": 16,
              "tie_word_embeddings": True}],
    # (not head_dim: HeliumAttention's o_proj is Linear(hidden, hidden) whatever heads x head_dim)
    "helium": [{"attention_bias": True}, {"mlp_bias": True}, {"tie_word_embeddings": True},
               {"num_key_value_heads": 4}],
    "seed_oss": [{"attention_bias": False}, {"attention_out_bias": True, "mlp_bias": True}],
    "siglip_vision_model": [{"vision_use_head": False}, {"image_size": 896, "patch_size": 14}],
    # Gemma 3 4B's shape: the text model of 34 layers, SigLIP So400m/14 at 896 px without head
    "gemma3": [{"architectures": ["Gemma3ForConditionalGeneration"]},
               {"text_config": {"hidden_size": 2560, "intermediate_size": 10240,
                                "num_hidden_layers": 34, "num_attention_heads": 8,
                                "num_key_value_heads": 4, "head_dim": 256,
                                "layer_types": ["sliding_attention"] * 5 + ["full_attention"]
                                + ["sliding_attention"] * 5 + ["full_attention"]
                                + ["sliding_attention"] * 5 + ["full_attention"]
                                + ["sliding_attention"] * 5 + ["full_attention"]
                                + ["sliding_attention"] * 5 + ["full_attention"]
                                + ["sliding_attention"] * 4},
                "vision_config": {"hidden_size": 1152, "intermediate_size": 4304,
                                  "num_hidden_layers": 27, "num_attention_heads": 16,
                                  "image_size": 896, "patch_size": 14,
                                  "vision_use_head": False}}],
    "phi": [{"qk_layernorm": True}, {"num_key_value_heads": 8}, {"tie_word_embeddings": True}],
    "gpt_neox": [{"attention_bias": False}, {"use_parallel_residual": False},
                 {"tie_word_embeddings": True}],
    "gptj": [{"n_inner": 1000}, {"tie_word_embeddings": True}],
    "opt": [{"word_embed_proj_dim": 256}, {"do_layer_norm_before": False}, {"enable_bias": False},
            {"layer_norm_elementwise_affine": False}, {"_remove_final_layer_norm": True}],
    "bloom": [{"n_embed": 128}, {"hidden_size": 256, "n_head": 16}],
    "falcon": [{"multi_query": False}, {"parallel_attn": False}, {"bias": True},
               {"new_decoder_architecture": True, "num_kv_heads": 71},
               {"new_decoder_architecture": True, "num_ln_in_parallel_attn": 1},
               {"ffn_hidden_size": 1000}, {"tie_word_embeddings": False}],
    "stablelm": [{"qk_layernorm": True}, {"use_parallel_residual": True}, {"use_qkv_bias": True},
                 {"num_key_value_heads": 8}],
    "gpt_bigcode": [{"multi_query": False}, {"n_inner": 1000}],
    "roberta": [{"architectures": ["RobertaForSequenceClassification"], "num_labels": 3},
                {"architectures": ["RobertaForTokenClassification"]},
                {"architectures": ["RobertaForQuestionAnswering"]},
                {"architectures": ["RobertaForMultipleChoice"]},
                {"architectures": ["RobertaForCausalLM"]}],
    "camembert": [{"architectures": ["CamembertForSequenceClassification"], "num_labels": 3},
                  {"architectures": ["CamembertForMaskedLM"]},
                  {"architectures": ["CamembertForTokenClassification"]},
                  # camembert-base's vocabulary, almanach/camembert-large's shape
                  {"vocab_size": 32005}, {"hidden_size": 1024, "num_hidden_layers": 24,
                                          "num_attention_heads": 16, "intermediate_size": 4096,
                                          "vocab_size": 32005}],
    "data2vec-text": [{"architectures": ["Data2VecTextForSequenceClassification"], "num_labels": 3},
                      {"architectures": ["Data2VecTextForMaskedLM"]},
                      {"architectures": ["Data2VecTextForCausalLM"], "is_decoder": True},
                      {"architectures": ["Data2VecTextForQuestionAnswering"]},
                      # RoBERTa's vocabulary, positions and one token type
                      {"vocab_size": 50265, "max_position_embeddings": 514,
                       "type_vocab_size": 1}],
    "flex_olmo": [{"num_hidden_layers": 16, "hidden_size": 2048, "intermediate_size": 1024,
                   "num_experts": 8, "num_experts_per_tok": 2},
                  {"num_key_value_heads": 8, "attention_bias": True}],
    "vaultgemma": [{"hidden_size": 1152, "intermediate_size": 6912, "num_attention_heads": 4,
                    "num_key_value_heads": 4, "attn_logit_softcapping": None}],
    "granitemoeshared": [{"shared_intermediate_size": 1024},
                         # granite-4.0-tiny-preview's shape without its Mamba layers
                         {"hidden_size": 1536, "num_hidden_layers": 40, "num_attention_heads": 12,
                          "num_key_value_heads": 4, "intermediate_size": 512,
                          "shared_intermediate_size": 1024, "num_local_experts": 62,
                          "num_experts_per_tok": 6, "vocab_size": 49160,
                          "tie_word_embeddings": True},
                         {"shared_intermediate_size": 512, "attention_bias": True}],
    # Aya Vision's class defaults give the SigLIP tower 14 heads of 1152 (transformers refuses
    # them, as dlrig does): every case names 16, as SigLIP so400m has.
    # Granite 4.0's hybrids: Mamba-2 mixers with a few attention layers ("mamba"/"attention", as
    # the hub's configs name them), MoE or dense (num_local_experts 0: the shared MLP alone).
    "granitemoehybrid": [{"hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32,
                          "num_key_value_heads": 8, "num_local_experts": 72,
                          "num_experts_per_tok": 10, "intermediate_size": 768,
                          "shared_intermediate_size": 8192, "mamba_n_heads": 128,
                          "mamba_d_head": 64, "mamba_d_state": 128, "vocab_size": 100352,
                          "layer_types": ["attention" if i in (5, 15, 25, 35) else "mamba"
                                          for i in range(40)],
                          "tie_word_embeddings": True},
                         {"num_local_experts": 0, "shared_intermediate_size": 8192},
                         {"mamba_proj_bias": True, "mamba_conv_bias": False, "mamba_n_groups": 8,
                          "num_hidden_layers": 4,
                          "layer_types": ["mamba", "attention", "mamba", "attention"]},
                         {"num_hidden_layers": 3, "attention_bias": True,
                          "layer_types": ["linear_attention", "full_attention",
                                          "linear_attention"]}],
    # LFM2-1.2B's shape (6 attention layers of 16, the rest gated short convolutions), and the
    # MLP sizing knobs (block_ff_dim and tie_embedding are the hub's names).
    "lfm2": [{"full_attn_idxs": [2, 5, 8, 10, 12, 14], "block_ff_dim": 12288, "hidden_size": 2048,
              "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
              "tie_embedding": True},
             {"layer_types": ["conv", "full_attention", "conv"], "num_hidden_layers": 3,
              "conv_bias": True},
             {"block_auto_adjust_ff_dim": False},
             {"block_ffn_dim_multiplier": 1.5, "block_multiple_of": 1000},
             {"tie_embedding": False}, {"block_ff_dim": 6144}],
    # Apertus-70B's shape; an activation other than xIELU builds no alpha_p/alpha_n
    "apertus": [{"hidden_size": 8192, "intermediate_size": 43008, "num_hidden_layers": 80,
                 "num_attention_heads": 64, "num_key_value_heads": 8},
                {"hidden_act": "gelu"}, {"attention_bias": True}, {"tie_word_embeddings": True}],
    "aya_vision": [{"vision_config": {"num_attention_heads": 16}},
                   {"vision_config": {"num_attention_heads": 16}, "downsample_factor": 1},
                   {"vision_config": {"num_attention_heads": 16},
                    "alignment_intermediate_size": 28672, "tie_word_embeddings": False},
                   # a 27-layer tower at 364 px and Command R7B's shape behind the projector
                   {"alignment_intermediate_size": 28672,
                    "vision_config": {"num_attention_heads": 16, "num_hidden_layers": 27,
                                      "image_size": 364},
                    "text_config": {"model_type": "cohere2", "hidden_size": 4096,
                                    "intermediate_size": 14336, "num_hidden_layers": 32,
                                    "num_attention_heads": 32, "num_key_value_heads": 8,
                                    "vocab_size": 256000, "sliding_window": 4096}}],
    # Llama 3.2 11B Vision at 560 px, and 90B's text model (100 layers, 20 cross-attention)
    "mllama": [{"vision_config": {"image_size": 560}},
               {"vision_config": {"image_size": 560},
                "text_config": {"hidden_size": 8192, "intermediate_size": 28672,
                                "num_hidden_layers": 100, "num_attention_heads": 64,
                                "cross_attention_layers": list(range(3, 100, 5))}}],
    "mllama_text_model": [{"cross_attention_layers": [1, 2, 2, 60]},
                          {"cross_attention_layers": []}, {"num_key_value_heads": 32},
                          {"architectures": ["MllamaForCausalLM"]}],
    "mllama_vision_model": [{"image_size": 560}, {"max_num_tiles": 2,
                                                   "supported_aspect_ratios": [[1, 1], [1, 2],
                                                                               [2, 1]]},
                            {"num_global_layers": 4, "vision_output_dim": 3840}],
    "bert": [{"architectures": ["BertForSequenceClassification"], "num_labels": 3},
             {"architectures": ["BertForPreTraining"]},
             {"architectures": ["BertForTokenClassification"]},
             {"architectures": ["BertForQuestionAnswering"]},
             {"architectures": ["BertForMultipleChoice"]}, {"architectures": ["BertLMHeadModel"]}],
    "distilbert": [{"architectures": ["DistilBertForQuestionAnswering"]},
                   {"architectures": ["DistilBertForTokenClassification"], "num_labels": 9},
                   {"architectures": ["DistilBertForMultipleChoice"]},
                   {"sinusoidal_pos_embds": True}],
    "deberta-v2": [{"relative_attention": True},
                   {"relative_attention": True, "share_att_key": False,
                    "pos_att_type": ["c2p", "p2c"]},
                   {"relative_attention": True, "max_relative_positions": 128,
                    "pos_att_type": "c2p"},
                   {"embedding_size": 512}, {"type_vocab_size": 2},
                   {"architectures": ["DebertaV2ForMaskedLM"]},
                   {"architectures": ["DebertaV2ForSequenceClassification"], "num_labels": 3},
                   {"architectures": ["DebertaV2ForTokenClassification"]},
                   {"architectures": ["DebertaV2ForQuestionAnswering"]},
                   {"conv_kernel_size": 3, "conv_groups": 2, "relative_attention": True,
                    "norm_rel_ebd": "layer_norm"}],
    "mt5": [{"feed_forward_proj": "relu"}, {"num_decoder_layers": 3},
            {"architectures": ["MT5Model"]}, {"architectures": ["MT5ForQuestionAnswering"]}],
    "t5": [{"architectures": ["T5Model"]}, {"feed_forward_proj": "gated-gelu"},
           {"architectures": ["T5ForSequenceClassification"]},
           {"architectures": ["T5ForQuestionAnswering"]}],
    "bart": [{"architectures": ["BartModel"]}, {"decoder_ffn_dim": 1000, "decoder_layers": 3},
             {"architectures": ["BartForSequenceClassification"]},
             {"architectures": ["BartForQuestionAnswering"]}],
    "whisper": [{"num_mel_bins": 128}, {"decoder_ffn_dim": 1000},
                {"architectures": ["WhisperModel"]}],
    "clip": [{"projection_dim": 256, "text_config": {"hidden_size": 256, "num_attention_heads": 4},
              "vision_config": {"patch_size": 16, "image_size": 336}}],
    "vit": [{"architectures": ["ViTForImageClassification"], "num_labels": 10},
            {"qkv_bias": False}],
    "llama": [{"architectures": ["LlamaForSequenceClassification"]},
              {"architectures": ["LlamaModel"]},
              {"architectures": ["LlamaForTokenClassification"]}],
    "gpt2": [{"architectures": ["GPT2ForSequenceClassification"]},
             {"architectures": ["GPT2Model"]}],
}

# Keys a config class derives from others: a variant that changes the source drops them.
DERIVED = ("is_gated_act", "dense_act_fn", "layer_types", "moe_layers", "no_rope_layers")


def build_meta(cfg_dict):
    """The model transformers builds from this config on the meta device: its architectures[0],
    else the class dlrig assumes."""
    model_type = cfg_dict["model_type"]
    kwargs = {k: v for k, v in cfg_dict.items() if k != "model_type"}
    config = AutoConfig.for_model(model_type, **kwargs)
    archs = cfg_dict.get("architectures") or []
    with torch.device("meta"):
        if archs:
            return getattr(transformers, archs[0])._from_config(config)
        auto = default_class(model_type, cfg_dict)
        return (auto.from_config if hasattr(auto, "from_config") else auto._from_config)(config)


def count_transformers(cfg_dict):
    model = build_meta(cfg_dict)
    return sum(p.numel() for p in model.parameters()), type(model).__name__


def count_dlrig(dlrig, cfg_dict, folder):
    path = os.path.join(folder, "config.json")
    with open(path, "w") as f:
        json.dump(cfg_dict, f)
    # This transformers' version: from 5.0.0 it ties T5's and mT5's head whatever the config says
    # (data/model_types.json "tie_forced"), and dlrig counts as the version builds.
    r = subprocess.run([dlrig, "fit", path, "--json", "--gpu", "NVIDIA H100 SXM5",
                        "--transformers", transformers.__version__],
                       capture_output=True, text=True)
    try:
        j = json.loads(r.stdout)
        return j["model"]["params"], None
    except (ValueError, KeyError):
        return None, (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]


def cases(only):
    for t in DEFAULT_TYPES:
        if only and only != t:
            continue
        config = AutoConfig.for_model(t)
        d = config.to_diff_dict()
        d = {k: v for k, v in d.items() if k not in ("transformers_version",)}
        d["model_type"] = t
        yield f"{t} (default)", d, "transformers " + type(config).__name__ + "()"
        # The same model from model_type alone: dlrig must know the class defaults (the types of
        # data/model_types.json; the built-in readers ask for their keys instead).
        if t not in BUILTIN:
            yield f"{t} (model_type only)", {"model_type": t}, "class defaults"
    for t, variants in VARIANTS.items():
        if only and only != t:
            continue
        base = AutoConfig.for_model(t).to_diff_dict()
        base = {k: v for k, v in base.items() if k not in ("transformers_version",) + DERIVED}
        base["model_type"] = t
        for v in variants:
            d = dict(base)
            for k, x in v.items():
                if isinstance(x, dict) and isinstance(d.get(k), dict):  # a sub-config
                    x = {**{a: b for a, b in d[k].items() if a not in DERIVED}, **x}
                d[k] = x
            yield f"{t} + {json.dumps(v)}", d, "variant"
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "models", "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if only and only != name:
            continue
        with open(path) as f:
            d = json.load(f)
        yield name, d, os.path.relpath(path, ROOT)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlrig", default=os.path.join(ROOT, "build", "dlrig"))
    ap.add_argument("--only")
    ap.add_argument("--json", action="store_true", help="one JSON line per case")
    a = ap.parse_args()
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, d, origin in cases(a.only):
            try:
                want, cls = count_transformers(d)
            except Exception as e:  # a config transformers itself refuses
                want, cls = None, f"error: {e}"[:80]
            got, err = count_dlrig(a.dlrig, d, tmp)
            ok = want is not None and got == want
            bad += not ok
            rows.append((name, cls, want, got, err, "yes" if ok else "**no**"))
            if a.json:
                print(json.dumps({"case": name, "class": cls, "transformers": want, "dlrig": got,
                                  "error": err, "equal": rows[-1][-1]}))
    print(f"\ntransformers {transformers.__version__}, torch {torch.__version__}, meta device\n")
    print("| config | class built | transformers sum(p.numel()) | dlrig | equal |")
    print("|---|---|---:|---:|---|")
    for name, cls, want, got, err, ok in rows:
        g = f"{got:,}" if got is not None else f"refused: {' '.join(err)[:70]}"
        w = f"{want:,}" if want is not None else "n/a"
        print(f"| {name.replace('|', '/')} | {cls} | {w} | {g} | {ok} |")
    print(f"\n{len(rows) - bad} of {len(rows)} equal")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

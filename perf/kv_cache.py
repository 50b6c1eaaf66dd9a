#!/usr/bin/env python3
"""dlrig's serving KV cache next to the cache transformers really keeps, for sliding-window models.

Each case is a small model of one model type (64 wide, 16-wide heads, the type's own layer count
and layer rule: sliding_window_pattern, max_window_layers, layer_types...), with a 16-token window
so that a short prompt crosses it. transformers builds it on the CPU, runs the prompt (prefill) into
the DynamicCache that generate() makes (DynamicCache(config=the text config)), then feeds the new
tokens one at a time; the storage of every cached key and value tensor is summed after prefill and
after each step, and the peak is the cache's size. `dlrig fit CONFIG --mode infer --seq S
--max-tokens N --precision fp32` on the same config.json must give that peak to the byte (fit counts
the prompt and all N new tokens, as here).

Prints a markdown table (for docs/fit.md) and exits 1 when any figure differs.

Usage: perf/kv_cache.py [--dlrig build/dlrig] [--only CASE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.cache_utils import DynamicCache

TINY = {"hidden_size": 64, "intermediate_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128, "pad_token_id": 0}
WINDOW = 16
KV_DIM = 2 * 16  # kv heads x head dim


MLA = {"num_key_value_heads": 4, "kv_lora_rank": 16, "qk_nope_head_dim": 16,
       "qk_rope_head_dim": 8, "v_head_dim": 12, "moe_intermediate_size": 32,
       "n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1,
       "num_hidden_layers": 4}


def slot_bytes(given):
    """Bytes of one token of one layer's cached K and V at fp32 (DeepSeek, from transformers
    5.15.0: the kv_lora_rank latent and the rotary key)."""
    if "kv_lora_rank" in given:
        return 4 * (given["kv_lora_rank"] + given["qk_rope_head_dim"])
    return 2 * KV_DIM * 4


def layer_types(n, pattern):
    return ["full_attention" if pattern(i) else "sliding_attention" for i in range(n)]


# (name, model_type, overrides): each type with a window rule of data/model_types.json
# "kv_window", and types without one.
CASES = [
    ("llama (no window)", "llama", {"num_hidden_layers": 4}),
    ("llama + sliding_window", "llama", {"num_hidden_layers": 4, "sliding_window": WINDOW}),
    ("llama + layer_types", "llama", {"num_hidden_layers": 5, "sliding_window": WINDOW,
                                      "layer_types": layer_types(5, lambda i: i in (1, 4))}),
    ("mistral", "mistral", {"sliding_window": WINDOW}),
    ("mistral (window null)", "mistral", {"sliding_window": None}),
    ("mixtral + sliding_window", "mixtral", {"sliding_window": WINDOW, "num_local_experts": 4,
                                              "num_experts_per_tok": 2}),
    ("phi3 + sliding_window", "phi3", {"sliding_window": WINDOW}),
    ("qwen2 (use_sliding_window false)", "qwen2", {"sliding_window": WINDOW}),
    ("qwen2 + use_sliding_window", "qwen2", {"sliding_window": WINDOW,
                                             "use_sliding_window": True}),
    ("qwen3 + use_sliding_window", "qwen3", {"sliding_window": WINDOW, "use_sliding_window": True,
                                             "max_window_layers": 20}),
    ("qwen2_moe + use_sliding_window", "qwen2_moe", {
        "sliding_window": WINDOW, "use_sliding_window": True, "num_experts": 4,
        "moe_intermediate_size": 32, "shared_expert_intermediate_size": 32}),
    ("qwen3_moe + use_sliding_window", "qwen3_moe", {
        "sliding_window": WINDOW, "use_sliding_window": True, "num_experts": 4,
        "num_experts_per_tok": 2, "moe_intermediate_size": 32}),
    ("gemma2", "gemma2", {"sliding_window": WINDOW}),
    ("gemma3_text", "gemma3_text", {"sliding_window": WINDOW}),
    ("gemma3_text + sliding_window_pattern 4", "gemma3_text", {"sliding_window": WINDOW,
                                                              "sliding_window_pattern": 4}),
    ("gemma3", "gemma3", {}),
    ("mistral3", "mistral3", {}),
    ("llava_next (a Mistral text model)", "llava_next", {}),
    ("paligemma (a Gemma 2 text model)", "paligemma", {}),
    ("qwen2_5_vl + use_sliding_window", "qwen2_5_vl", {}),
    ("gpt_oss", "gpt_oss", {"sliding_window": WINDOW, "num_local_experts": 4}),
    ("exaone4", "exaone4", {"sliding_window": WINDOW}),
    ("smollm3 + use_sliding_window", "smollm3", {"sliding_window": WINDOW,
                                                 "use_sliding_window": True}),
    ("olmo3", "olmo3", {"sliding_window": WINDOW}),
    ("ministral", "ministral", {"sliding_window": WINDOW}),
    ("cohere2", "cohere2", {"sliding_window": WINDOW}),
    ("ministral3 + sliding_window", "ministral3", {"sliding_window": WINDOW,
                                                   "num_hidden_layers": 4}),
    # Llama 4: chunked-attention layers (no_rope_layers 1) keep attention_chunk_size tokens.
    ("llama4_text (chunked attention)", "llama4_text", {"attention_chunk_size": WINDOW,
                                                        "num_hidden_layers": 4,
                                                        "num_local_experts": 4,
                                                        "intermediate_size_mlp": 64}),
    ("llama4_text + no_rope_layers", "llama4_text", {"attention_chunk_size": WINDOW,
                                                     "num_hidden_layers": 4,
                                                     "no_rope_layers": [1, 0, 0, 1],
                                                     "num_local_experts": 4,
                                                     "intermediate_size_mlp": 64}),
    ("starcoder2 + sliding_window", "starcoder2", {"sliding_window": WINDOW,
                                                   "num_hidden_layers": 4}),
    ("phimoe + sliding_window", "phimoe", {"sliding_window": WINDOW, "num_local_experts": 4,
                                           "num_hidden_layers": 4}),
    ("ernie4_5_moe (no window)", "ernie4_5_moe", {"moe_intermediate_size": 32, "num_experts": 4,
                                                  "num_experts_per_tok": 2,
                                                  "num_hidden_layers": 3}),
    # DeepSeek's latent attention: transformers caches every head's key (nope + rope) and value.
    ("deepseek_v3", "deepseek_v3", dict(MLA, q_lora_rank=24, first_k_dense_replace=1)),
    ("deepseek_v2 (no q_lora_rank)", "deepseek_v2", dict(MLA, q_lora_rank=None)),
    ("glm4_moe_lite", "glm4_moe_lite", dict(MLA, q_lora_rank=24)),
    # Every layer keeps every token (no sliding_window in these configs).
    ("smolvlm (a Llama text model)", "smolvlm", {}),
    ("qwen2_vl + use_sliding_window", "qwen2_vl", {}),
    ("internvl (a Qwen2 text model)", "internvl", {}),
    ("nemotron", "nemotron", {"num_hidden_layers": 3}),
    ("dots1 + sliding_window (from max_window_layers)", "dots1", {
        "num_hidden_layers": 3, "sliding_window": WINDOW, "max_window_layers": 1,
        "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
        "first_k_dense_replace": 1, "moe_intermediate_size": 32}),
    ("glm", "glm", {"num_hidden_layers": 3}),
    ("olmo", "olmo", {"num_hidden_layers": 3}),
    ("helium", "helium", {"num_hidden_layers": 3}),
    ("hunyuan_v1_dense", "hunyuan_v1_dense", {"num_hidden_layers": 3}),
    ("hunyuan_v1_moe", "hunyuan_v1_moe", {"num_hidden_layers": 3, "num_experts": 4,
                                          "moe_topk": 2}),
    ("granitemoeshared", "granitemoeshared", {"num_hidden_layers": 3, "num_local_experts": 4,
                                              "shared_intermediate_size": 32}),
    ("aya_vision (a Cohere2 text model: 3 of 4 layers slide)", "aya_vision", {}),
    # A text-only prompt skips the cross-attention layers: they cache nothing.
    ("mllama_text_model (cross-attention layers 1 and 3 of 5)", "mllama_text_model",
     {"num_hidden_layers": 5, "cross_attention_layers": [1, 3]}),
    ("mllama (cross-attention layers 1 and 3 of 5)", "mllama", {}),
    ("lfm2 (every layer attention)", "lfm2", {"num_hidden_layers": 3}),
    ("apertus", "apertus", {"num_hidden_layers": 3}),
    ("flex_olmo", "flex_olmo", {"num_hidden_layers": 3, "num_experts": 4,
                                "num_experts_per_tok": 2}),
    ("vaultgemma (every other layer slides)", "vaultgemma", {"num_hidden_layers": 4,
                                                             "sliding_window": WINDOW}),
    ("vaultgemma + layer_types (all full)", "vaultgemma", {
        "num_hidden_layers": 3, "layer_types": ["full_attention"] * 3}),
]

# (prompt, new tokens): a prompt longer than the window, and one that the new tokens take past it.
RUNS = [(40, 8), (8, 24)]


def config_of(model_type, overrides):
    """The config.json a user would hand dlrig (no layer_types unless the case gives them)."""
    if "kv_lora_rank" in overrides:  # DeepSeek: no head_dim (its config derives one)
        given = {k: v for k, v in TINY.items() if k != "head_dim"}
        return dict(given, model_type=model_type, **overrides)
    if model_type == "gemma3":
        return {"model_type": "gemma3", "text_config": dict(TINY, sliding_window=WINDOW),
                "vision_config": {"hidden_size": 32, "intermediate_size": 32,
                                  "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "image_size": 56, "patch_size": 14},
                "mm_tokens_per_image": 4}
    if model_type == "mistral3":  # its text model is a Mistral (every layer slides)
        return {"model_type": "mistral3",
                "text_config": dict(TINY, model_type="mistral", num_hidden_layers=2,
                                    sliding_window=WINDOW),
                "vision_config": {"hidden_size": 32, "intermediate_size": 32,
                                  "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "image_size": 56, "patch_size": 14}}
    if model_type == "llava_next":  # LLaVA-NeXT on Mistral-7B: every text layer slides
        return {"model_type": "llava_next",
                "text_config": dict(TINY, model_type="mistral", num_hidden_layers=2,
                                    sliding_window=WINDOW),
                "vision_config": {"model_type": "clip_vision_model", "hidden_size": 32,
                                  "intermediate_size": 32, "num_hidden_layers": 1,
                                  "num_attention_heads": 2, "image_size": 56, "patch_size": 14}}
    if model_type == "paligemma":  # PaliGemma 2: every other Gemma 2 layer slides
        return {"model_type": "paligemma", "projection_dim": 64,
                "text_config": dict(TINY, model_type="gemma2", num_hidden_layers=4,
                                    sliding_window=WINDOW),
                "vision_config": {"hidden_size": 32, "intermediate_size": 32,
                                  "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "image_size": 56, "patch_size": 14, "vision_use_head": False}}
    if model_type == "qwen2_vl":  # flat, as the hub's configs: slides from max_window_layers
        return dict(TINY, model_type="qwen2_vl", num_hidden_layers=3, use_sliding_window=True,
                    sliding_window=WINDOW, max_window_layers=1,
                    rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                    vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64,
                                   "num_heads": 2})
    if model_type in ("smolvlm", "internvl"):  # a Llama or Qwen2 text model: no window
        return {"model_type": model_type,
                "text_config": dict(TINY, model_type="llama" if model_type == "smolvlm"
                                    else "qwen2", num_hidden_layers=2),
                "vision_config": {"hidden_size": 32, "intermediate_size": 32,
                                  "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "image_size": 56, "patch_size": 14}}
    if model_type == "aya_vision":
        return {"model_type": "aya_vision",
                "text_config": dict(TINY, model_type="cohere2", num_hidden_layers=4,
                                    sliding_window=WINDOW),
                "vision_config": {"hidden_size": 32, "intermediate_size": 32,
                                  "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "image_size": 56, "patch_size": 14, "vision_use_head": False}}
    if model_type == "mllama":
        return {"model_type": "mllama",
                "text_config": dict(TINY, num_hidden_layers=5, cross_attention_layers=[1, 3]),
                "vision_config": {"hidden_size": 32, "intermediate_size": 32,
                                  "num_hidden_layers": 1, "num_global_layers": 1,
                                  "attention_heads": 2, "image_size": 56, "patch_size": 14,
                                  "intermediate_layers_indices": [0],
                                  "vision_output_dim": 64}}
    if model_type == "qwen2_5_vl":  # flat, as the hub's configs: slides from max_window_layers
        return dict(TINY, model_type="qwen2_5_vl", num_hidden_layers=3, use_sliding_window=True,
                    sliding_window=WINDOW, max_window_layers=1,
                    rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                    vision_config={"depth": 1, "hidden_size": 32, "intermediate_size": 32,
                                   "num_heads": 2, "out_hidden_size": 64})
    given = dict(TINY, model_type=model_type, **overrides)
    # The built-in readers want the layer count given: the class's default.
    given.setdefault("num_hidden_layers",
                     AutoConfig.for_model(model_type).num_hidden_layers)
    return given


def storage_bytes(cache):
    seen = {}
    for layer in cache.layers:
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                s = t.untyped_storage()
                seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def measured_peak(model, config, prompt, new):
    torch.manual_seed(0)
    cache = DynamicCache(config=config.get_text_config(decoder=True))
    ids = torch.randint(0, 128, (1, prompt))
    peak = 0
    with torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, use_cache=True)
        peak = max(peak, storage_bytes(cache))
        for _ in range(new):
            nxt = out.logits[:, -1:].argmax(-1)
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
            peak = max(peak, storage_bytes(cache))
    return peak


def dlrig_kv(dlrig, text, prompt, new):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "config.json")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([dlrig, "fit", path, "--json", "--mode", "infer", "--seq", str(prompt),
                            "--max-tokens", str(new), "--precision", "fp32", "--batch", "1",
                            "--gpu", "NVIDIA H100 SXM5", "--transformers",
                            transformers.__version__], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["gpus"][0]["breakdown"]["kv_cache"], None
    except (ValueError, KeyError, IndexError):
        return None, ((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlrig", default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "build", "dlrig"))
    ap.add_argument("--only")
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, CPU, fp32; "
          f"token slots = bytes / one token's K and V in one layer (2 x {KV_DIM} x 4; DeepSeek: "
          f"its latent, (16 + 8) x 4)\n")
    print("| case | layers | prompt + new | transformers' peak (slots) | dlrig (slots) | equal |")
    print("|---|---|---|---|---|---|")
    bad = 0
    for name, model_type, overrides in CASES:
        if args.only and args.only not in (name, model_type):
            continue
        given = config_of(model_type, overrides)
        kw = {k: v for k, v in given.items() if k != "model_type"}
        config = AutoConfig.for_model(model_type, **kw)
        text = config.get_text_config(decoder=True)
        image_text = {"gemma3": transformers.Gemma3ForConditionalGeneration,
                      "mistral3": transformers.Mistral3ForConditionalGeneration,
                      "qwen2_5_vl": transformers.Qwen2_5_VLForConditionalGeneration,
                      "llava_next": transformers.LlavaNextForConditionalGeneration,
                      "paligemma": transformers.PaliGemmaForConditionalGeneration,
                      "smolvlm": transformers.SmolVLMForConditionalGeneration,
                      "qwen2_vl": transformers.Qwen2VLForConditionalGeneration,
                      "internvl": transformers.InternVLForConditionalGeneration,
                      "aya_vision": transformers.AyaVisionForConditionalGeneration,
                      "mllama": transformers.MllamaForConditionalGeneration,
                      "mllama_text_model": transformers.MllamaForCausalLM}
        model = image_text[model_type](config) if model_type in image_text \
            else AutoModelForCausalLM.from_config(config)
        model.eval()
        slot = slot_bytes(given)
        for prompt, new in RUNS:
            peak = measured_peak(model, config, prompt, new)
            # The config as given, and as transformers saves it (with the layer_types its config
            # class derives).
            for how, text_json in (("", json.dumps(given)),
                                   (" (saved)", config.to_json_string(use_diff=False))):
                ours, err = dlrig_kv(args.dlrig, text_json, prompt, new)
                same = ours == peak
                bad += not same
                shown = f"{ours // slot:,}" if ours is not None else f"error: {err}"
                print(f"| {name}{how} | {text.num_hidden_layers} | {prompt} + {new} | "
                      f"{peak // slot:,} | {shown} | {'yes' if same else 'NO'} |")
    print(f"\n{'all equal' if not bad else f'{bad} differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""dlrig's count of the weights bitsandbytes quantises (`fit --quant int4`, `--qlora`) next to the
weights transformers itself replaces with bnb.nn.Linear4bit under BitsAndBytesConfig(load_in_4bit=True).

The cases are those of perf/model_params.py (imported, not copied): the default configs of its
DEFAULT_TYPES, its VARIANTS and the fixtures under tests/data/models/, each built as that script
builds it (the config's architectures[0], else the class dlrig assumes), on the meta device. Before
building, transformers' own `get_hf_quantizer` makes the 4-bit quantizer as `from_pretrained` does;
after, its `preprocess_model` runs (get_modules_to_not_convert: tied weights, the output
embeddings, the last parameter's name less ".weight" (a head whose last parameter is a bias is
converted) and _keep_in_fp32_modules; then replace_with_bnb_linear, which converts modules whose
type is exactly nn.Linear, and Conv1D). The count is in_features * out_features of every Linear4bit
(no bias). `dlrig fit CONFIG --mode infer --quant int4 --json` (on an H100, as the other scripts)
gives dlrig's model.quantized_params: "n/a" while a build lacks that field, "refused" when dlrig
says --quant is not modelled for the family (neither counts as a difference).

--load saves small random MoE models (bf16) and really loads them on the CPU with
from_pretrained(..., quantization_config=BitsAndBytesConfig(load_in_4bit=True), device_map="cpu"),
counting the elements held in Params4bit (packed two to a byte: numel * 2) against the meta count.

Prints a markdown table with the transformers, torch and bitsandbytes versions, and exits 1 when
any dlrig count (or, with --load, any loaded count) differs.

Usage: perf/quant_params.py [--dlrig build/dlrig] [--only SUBSTRING] [--json] [--load]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import bitsandbytes as bnb
import torch
import transformers
from transformers import AutoConfig, BitsAndBytesConfig
from transformers.pytorch_utils import Conv1D
from transformers.quantizers.auto import get_hf_quantizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import model_params  # noqa: E402  (the cases and the class dlrig assumes)

# Small MoE models for --load: 256 wide, 2 layers, 4 experts (2 per token), 1024 tokens.
TINY = {"hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024,
        "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
LOAD_CASES = {
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen3_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
                  "head_dim": 64},
    "qwen2_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
                  "shared_expert_intermediate_size": 256},
    "olmoe": {"num_experts": 4, "num_experts_per_tok": 2},
    "granitemoe": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "deepseek_v3": {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1,
                    "topk_group": 1, "first_k_dense_replace": 1, "moe_intermediate_size": 128,
                    "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 32,
                    "qk_rope_head_dim": 16, "v_head_dim": 32, "num_key_value_heads": 4},
    "gpt_oss": {"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 64},
}


def bnb_config(**kw):
    return BitsAndBytesConfig(load_in_4bit=True, **kw)


def build_quantised(cfg_dict):
    """The meta model as model_params.count_transformers builds it, through from_pretrained's
    quantizer steps: get_hf_quantizer on the config, then preprocess_model on the model."""
    model_type = cfg_dict["model_type"]
    kwargs = {k: v for k, v in cfg_dict.items() if k != "model_type"}
    config = AutoConfig.for_model(model_type, **kwargs)
    quantizer, config, device_map = get_hf_quantizer(config, bnb_config(), None, True, {})
    archs = cfg_dict.get("architectures") or []
    with torch.device("meta"):
        if archs:
            model = getattr(transformers, archs[0])._from_config(config)
        else:
            auto = model_params.default_class(model_type, cfg_dict)
            model = (auto.from_config if hasattr(auto, "from_config") else auto._from_config)(config)
        params = sum(p.numel() for p in model.parameters())
        quantizer.preprocess_model(model=model, dtype=torch.bfloat16, device_map=device_map,
                                   checkpoint_files=None)
    return model, params, quantizer.modules_to_not_convert


def quantised(model):
    return sum(m.in_features * m.out_features for m in model.modules()
               if isinstance(m, bnb.nn.Linear4bit))


def kept(model):
    """Linear/Conv1D modules left 16-bit, and parameters of 3+ dims (fused experts), by pattern."""
    lin = {re.sub(r"\.\d+\.", ".N.", n) for n, m in model.named_modules()
           if isinstance(m, (torch.nn.Linear, Conv1D)) and not isinstance(m, bnb.nn.Linear4bit)}
    fused = {re.sub(r"\.\d+\.", ".N.", n) for n, p in model.named_parameters() if p.dim() >= 3}
    return sorted(lin), sorted(fused)


def verdict(want, got, err, refused):
    """A row's "equal" column: refused (the option is not modelled there), **no** (an error or a
    different count), n/a (this build has no such field) or yes."""
    if refused:
        return "refused"
    if err is not None:
        return "**no**"
    if got is None:
        return "n/a"
    return "yes" if got == want else "**no**"


def count_dlrig(dlrig, cfg_dict, folder):
    """(count or None, error line or None, refused): refused when dlrig says --quant is not
    modelled for the family."""
    path = os.path.join(folder, "config.json")
    with open(path, "w") as f:
        json.dump(cfg_dict, f)
    r = subprocess.run([dlrig, "fit", path, "--mode", "infer", "--quant", "int4", "--json",
                        "--gpu", "NVIDIA H100 SXM5", "--transformers", transformers.__version__],
                       capture_output=True, text=True)
    try:  # the JSON comes on stdout also when dlrig exits 1 (the model does not fit)
        return json.loads(r.stdout)["model"].get("quantized_params"), None, False
    except (ValueError, KeyError, AttributeError):
        err = ((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1]
        return None, err, bool(re.search(r"--quant.*not model|not model.*--quant", err))


def run_cases(a):
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, d, origin in model_params.cases(None):
            if a.only and a.only not in name:
                continue
            try:
                model, params, skip = build_quantised(d)
                want, cls, (lin, fused) = quantised(model), type(model).__name__, kept(model)
            except Exception as e:  # a config transformers itself refuses
                want, params, skip, lin, fused = None, None, [], [], []
                cls = f"error: {e}"[:80]
            got, err, refused = count_dlrig(a.dlrig, d, tmp)
            ok = verdict(want, got, err, refused)
            bad += ok == "**no**"
            rows.append((name, cls, params, want, got, err, ok))
            if a.json:
                print(json.dumps({"case": name, "class": cls, "params": params,
                                  "transformers": want, "dlrig": got, "error": err, "equal": ok,
                                  "not_convert": sorted(skip), "linear_kept": lin,
                                  "fused_3d": fused}))
    print(f"\ntransformers {transformers.__version__}, torch {torch.__version__}, bitsandbytes "
          f"{bnb.__version__}; meta device, BitsAndBytesConfig(load_in_4bit=True)\n")
    print("| config | class built | parameters | transformers' Linear4bit weights | dlrig | equal |")
    print("|---|---|---:|---:|---:|---|")
    for name, cls, params, want, got, err, ok in rows:
        g = f"{got:,}" if got is not None else (
            f"{'refused' if ok == 'refused' else 'error'}: {err[:70]}" if err else "n/a")
        p, w = (f"{x:,}" if x is not None else "n/a" for x in (params, want))
        print(f"| {name.replace('|', '/')} | {cls} | {p} | {w} | {g} | {ok} |")
    n = {k: sum(r[-1] == k for r in rows) for k in ("yes", "n/a", "refused")}
    print(f"\n{n['yes']} of {len(rows)} equal, {n['n/a']} n/a (no quantized_params), "
          f"{n['refused']} refused, {bad} differ")
    return bad


def load_cases(a):
    """Really quantise small MoE models on load and count what Params4bit holds."""
    print(f"\ntransformers {transformers.__version__}, torch {torch.__version__}, bitsandbytes "
          f"{bnb.__version__}; bf16 checkpoints loaded on the CPU with load_in_4bit\n")
    print("| model | parameters | meta Linear4bit weights | loaded Params4bit (numel x 2) | "
          "loaded 16-bit | still 16-bit (3-D) | equal |")
    print("|---|---:|---:|---:|---:|---|---|")
    bad = 0
    for t, extra in LOAD_CASES.items():
        if a.only and a.only not in t:
            continue
        config = AutoConfig.for_model(t, **{**TINY, **extra})
        d = dict(config.to_diff_dict(), model_type=t)
        d.pop("transformers_version", None)
        try:
            meta, params, _ = build_quantised(d)
            want = quantised(meta)
            torch.manual_seed(0)
            with tempfile.TemporaryDirectory() as tmp:
                transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16) \
                    .save_pretrained(tmp)
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    tmp, quantization_config=bnb_config(bnb_4bit_compute_dtype=torch.bfloat16),
                    device_map="cpu", dtype=torch.bfloat16)
            q4 = sum(p.numel() * 2 for p in model.parameters()
                     if isinstance(p, bnb.nn.Params4bit))
            b16 = sum(p.numel() for p in model.parameters()
                      if not isinstance(p, bnb.nn.Params4bit))
            fused = ", ".join(kept(model)[1]) or "-"
            ok = q4 == want and q4 + b16 == params
        except Exception as e:
            print(f"| {t} | error: {str(e)[:100]} | | | | | **no** |")
            bad += 1
            continue
        bad += not ok
        print(f"| {t} | {params:,} | {want:,} | {q4:,} | {b16:,} | {fused} | "
              f"{'yes' if ok else '**no**'} |")
    print(f"\n{'all equal' if not bad else f'{bad} differ'} (equal: loaded Params4bit = meta "
          f"count, and Params4bit + 16-bit = parameters)")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlrig", default=os.path.join(ROOT, "build", "dlrig"))
    ap.add_argument("--only", help="cases whose name contains this")
    ap.add_argument("--json", action="store_true", help="one JSON line per case")
    ap.add_argument("--load", action="store_true", help="really load small MoE models in 4-bit")
    a = ap.parse_args()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    start = time.time()
    bad = load_cases(a) if a.load else run_cases(a)
    print(f"{time.time() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

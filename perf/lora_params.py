#!/usr/bin/env python3
"""dlrig's count of LoRA adapter parameters (`fit --lora R [--lora-targets all-linear]`) next to
the adapters PEFT itself adds to the same transformers model.

The cases are those of perf/model_params.py (imported, not copied): the default configs of its
DEFAULT_TYPES, its VARIANTS and the fixtures under tests/data/models/, each built as that script
builds it (the config's architectures[0], else the class dlrig assumes), on the meta device. Each
is wrapped twice with peft.get_peft_model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0) and no
task_type (so PEFT adds no modules_to_save):
  default:    target_modules=None, PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING entry
              for config.model_type ("no PEFT default" when the type has none: not a difference);
  all-linear: every nn.Linear and transformers Conv1D except get_output_embeddings() (without a
              task_type classifier/score heads are wrapped too). For the MoE types PEFT converts
              for transformers 5 (mixtral, qwen3_moe, olmoe, deepseek_v2/v3: a pattern of
              transformers' conversion_mapping) it also wraps the fused experts and the router
              weight as target_parameters (gate_up_proj at rank 2r) and then drops every Linear
              named gate_proj/up_proj/down_proj (w1/w2/w3): dense MLPs and shared experts. The
              same conversion empties target_modules=None before the default is looked up, so
              the default setting fails there ("No `target_modules` passed", even for mixtral).
PEFT's count is the elements of the parameters whose name holds "lora_" (lora_A and lora_B).
`dlrig fit CONFIG --lora 8 [--lora-targets all-linear] --json` (training, on an H100, as the other
scripts) gives dlrig's model.adapter_params: "n/a" while a build lacks that field, "refused" when
dlrig's error is about the LoRA options (not modelled for the family, or targets the model lacks:
neither counts as a difference).

Prints a markdown table per target setting with the transformers, torch and peft versions, the
module names PEFT wrapped (layer indices as N, grouped by stack) for every row that is not equal,
and exits 1 when any count differs.

Usage: perf/lora_params.py [--dlrig build/dlrig] [--only SUBSTRING] [--targets default|all-linear|both]
                           [--json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import peft
import torch
import transformers
from peft import LoraConfig, get_peft_model

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import model_params  # noqa: E402  (the cases and the class dlrig assumes)
import quant_params  # noqa: E402  (a row's verdict)

RANK = 8
SETTINGS = {"default": None, "all-linear": "all-linear"}


def build(cfg_dict):
    """The meta model as model_params.py (and quant_params.py) build it."""
    return model_params.build_meta(cfg_dict)


def wrapped_summary(names, params=()):
    """'model.layers.N.{q_proj, v_proj}; classifier': the wrapped modules by stack (the name up to
    its first layer index), each with the distinct last components; parameters PEFT wrapped as
    target_parameters (fused experts, routers) end in "[param]" with their module's name."""
    stacks = {}
    for n in list(names) + [p + "[param]" for p in params]:
        m = re.match(r"(.*?)\.(\d+)\.(.*)$", n)
        keep = 2 if n.endswith("[param]") else 1
        prefix, last = (m.group(1) + ".N", ".".join(m.group(3).split(".")[-keep:])) if m \
            else (n, None)
        stacks.setdefault(prefix, set())
        if last:
            stacks[prefix].add(last)
    return "; ".join(f"{p}.{{{', '.join(sorted(s))}}}" if s else p for p, s in stacks.items())


def count_peft(cfg_dict, targets):
    """(adapter elements, class, wrapped names, status): status None, "no PEFT default" or an
    error line (a config transformers refuses, or PEFT failing on the model)."""
    try:
        model = build(cfg_dict)
    except Exception as e:  # a config transformers itself refuses
        return None, f"error: {e}"[:80], ([], []), "build error"
    cls = type(model).__name__
    cfg = LoraConfig(r=RANK, lora_alpha=16, lora_dropout=0.0, target_modules=targets)
    try:  # in the meta context PEFT makes its lora_A/lora_B on meta too (no CPU init)
        with torch.device("meta"):
            pm = get_peft_model(model, cfg)
    except ValueError as e:
        if "specify `target_modules`" in str(e):
            return None, cls, ([], []), "no PEFT default"
        return None, cls, ([], []), f"PEFT error: {str(e).splitlines()[0][:120]}"
    except Exception as e:
        return None, cls, ([], []), f"PEFT error: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
    n = sum(p.numel() for name, p in pm.named_parameters() if "lora_" in name)
    params = getattr(pm.base_model, "targeted_parameter_names", [])
    return n, cls, (list(pm.base_model.targeted_module_names), list(params)), None


def count_dlrig(dlrig, cfg_dict, folder, targets):
    """(count or None, error line or None, refused): refused when dlrig's error is about the LoRA
    options (not modelled for the family, or targets the model lacks)."""
    os.makedirs(os.path.join(folder, cfg_dict["model_type"]), exist_ok=True)
    path = os.path.join(folder, cfg_dict["model_type"], "config.json")  # dlrig names it by folder
    with open(path, "w") as f:
        json.dump(cfg_dict, f)
    cmd = [dlrig, "fit", path, "--lora", str(RANK)]
    if targets:
        cmd += ["--lora-targets", targets]
    cmd += ["--gpu", "NVIDIA H100 SXM5", "--transformers", transformers.__version__, "--json"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:  # no binary, or one being relinked
        return None, f"{dlrig}: {e}", False
    try:  # the JSON comes on stdout also when dlrig exits 1 (the model does not fit)
        return json.loads(r.stdout)["model"].get("adapter_params"), None, False
    except (ValueError, KeyError, AttributeError, TypeError):
        err = ((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1]
        # an error about the LoRA options themselves (not modelled for the family, or targets the
        # model lacks); a config field such as q_lora_rank is not one
        return None, err, bool(re.search(r"--q?lora|\bLoRA\b", err))


def run_setting(a, setting, cases, tmp):
    targets = SETTINGS[setting]
    rows = []
    for name, d, origin in cases:
        want, cls, names, status = count_peft(d, targets)
        got, err, refused = count_dlrig(a.dlrig, d, tmp, targets)
        if status is not None:  # nothing of PEFT's to compare against
            ok = "no PEFT default" if status == "no PEFT default" else "peft/build error"
        else:
            ok = quant_params.verdict(want, got, err, refused)
        rows.append(dict(case=name, cls=cls, peft=want, dlrig=got, error=err, status=status,
                         equal=ok, wrapped=wrapped_summary(*names),
                         modules=len(names[0]) + len(names[1])))
        if a.json:
            print(json.dumps({"targets": setting, **rows[-1]}), flush=True)
    return rows


def print_table(setting, rows):
    what = ("PEFT's default target_modules for the model type" if setting == "default"
            else 'target_modules="all-linear"')
    print(f"\n### --lora {RANK}{'' if setting == 'default' else ' --lora-targets all-linear'}"
          f" ({what})\n")
    print("| config | class built | PEFT adapter params | dlrig | equal | modules PEFT wrapped |")
    print("|---|---|---:|---:|---|---|")
    for r in rows:
        if r["dlrig"] is not None:
            g = f"{r['dlrig']:,}"
        elif r["error"]:
            g = f"{'refused' if r['equal'] == 'refused' else 'error'}: {r['error'][:70]}"
        else:
            g = "n/a"
        w = f"{r['peft']:,}" if r["peft"] is not None else (r["status"] or "n/a")
        mods = "" if r["equal"] == "yes" or not r["modules"] else \
            f"{r['modules']}: {r['wrapped']}"
        print(f"| {r['case'].replace('|', '/')} | {r['cls']} | {w.replace('|', '/')} | "
              f"{g.replace('|', '/')} | {r['equal']} | {mods} |")
    n = {k: sum(r["equal"] == k for r in rows)
         for k in ("yes", "n/a", "refused", "**no**", "no PEFT default", "peft/build error")}
    print(f"\n{setting}: {n['yes']} of {len(rows)} equal, {n['n/a']} n/a (no adapter_params), "
          f"{n['refused']} refused, {n['**no**']} differ; {n['no PEFT default']} no PEFT default, "
          f"{n['peft/build error']} PEFT/build errors")
    return n["**no**"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlrig", default=os.path.join(ROOT, "build", "dlrig"))
    ap.add_argument("--only", help="cases whose name contains this")
    ap.add_argument("--targets", choices=("default", "all-linear", "both"), default="both")
    ap.add_argument("--json", action="store_true", help="one JSON line per case and setting")
    a = ap.parse_args()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    warnings.filterwarnings("ignore")
    start = time.time()
    cases = [c for c in model_params.cases(None) if not a.only or a.only in c[0]]
    settings = list(SETTINGS) if a.targets == "both" else [a.targets]
    with tempfile.TemporaryDirectory() as tmp:
        results = {s: run_setting(a, s, cases, tmp) for s in settings}
    print(f"\ntransformers {transformers.__version__}, torch {torch.__version__}, peft "
          f"{peft.__version__}; meta device, LoraConfig(r={RANK}, lora_alpha=16, "
          f"lora_dropout=0.0), no task_type")
    bad = sum(print_table(s, results[s]) for s in settings)
    print(f"\n{time.time() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Side by side: where a profiled training step's GPU time went, and where fit's time model puts it.

For every case profiled on a GPU (tests/data/measured/<gpu>/profile/<case>.json, written by
perf/fit_profile.py) this runs `dlrig fit <config> --from <gpu>/snapshot.json --json` with the
case's recorded arguments (steps.jsonl, else fit-new.jsonl) and prints, per kernel class, the
profile's milliseconds and kernel count beside the model's (`time.ops[]`: every op with its kind,
kernels, bytes and seconds). Dev-time only (standard library; no GPU needed).

Classes, as perf/fit_profile.py names kernels:
  gemm       cuBLAS/cutlass/nvjet kernels; the model's gemm ops (linears, convolutions, eager
             attention's batched GEMMs)
  attn       fused attention kernels; the model's attention ops
  optim      multi_tensor_apply kernels; the model's optimizer-phase ops
  copy       kernels named *copy* (casts, .contiguous(), torch.cat's CatArrayBatchedCopy,
             memcpy/memset); the model's ops named "... casts" or "... copies"
  elem       element-wise and reduction kernels (norms, softmax, loss, activations, fills); every
             other memory op of the model
  conv       cuDNN kernels (convolutions, and for NCHW CNNs cuDNN's batch norm and layout
             transposes); the model's "NCHW/NHWC transposes"
The profile's "Optimizer.step#..." event is a GPU-side annotation spanning the optimizer's
kernels, not a kernel; perf/fit_profile.py filed it under element-wise, and it is taken out here.
"sum" is the kernels' summed time (profile) or the ops' summed time (model, no launch waits);
"busy" is the profile's merged GPU time, "step" the measured step.

Usage: perf/fit_profile_compare.py [--dlrig build/dlrig] [--gpu h100,h200] [--only NAME]
       [--ops]   (--ops also lists every op of the model for the cases shown)
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURED = os.path.join(ROOT, "tests", "data", "measured")
CLASSES = ("gemm", "attn", "optim", "copy", "elem", "conv")
PROFILE_CLASS = {"gemm": "gemm", "attention": "attn", "optimizer": "optim", "copy": "copy",
                 "elementwise": "elem", "reduction": "elem", "convolution": "conv"}
# The measured runs' transformers (tests/data/measured/<gpu>/README.md), as the CLI test passes it.
STACK = ["--transformers", "5.17.0"]


def model_class(op):
    if op["kind"] == "gemm":
        return "gemm"
    if op["kind"] == "attention":
        return "attn"
    if op["phase"] == "optimizer":
        return "optim"
    name = op["name"]
    if "transposes" in name:
        return "conv"
    if "cast" in name or "copies" in name:
        return "copy"
    return "elem"


def cases(gpu):
    """(name, config folder, dlrig args, measured step) for each case with a step time."""
    d = os.path.join(MEASURED, gpu)
    out = {}
    for file, kind in (("steps.jsonl", None), ("fit-new.jsonl", "new")):
        path = os.path.join(d, file)
        if not os.path.exists(path):
            continue
        for line in open(path):
            if not line.strip():
                continue
            c = json.loads(line)
            if kind is None:
                if "measured_step_s" not in c:
                    continue
                folder, step = c["config"], c["measured_step_s"]
            else:
                if "measured" not in c or not c["measured"].get("step_s"):
                    continue
                folder = "configs-new/" + c["case"].replace(" ", "_")
                step = c["measured"]["step_s"]
            out.setdefault(c["case"], (os.path.join(d, folder), c["dlrig_args"], step))
    return out


def profile_classes(p):
    by = {k: [0, 0.0] for k in CLASSES}
    for k, v in p["by_kernel_class"].items():
        c = PROFILE_CLASS.get(k, "elem")
        by[c][0] += v["count"]
        by[c][1] += v["seconds"]
    annotation = sum(o["cuda_s"] for o in p["top_ops"] if o["op"].startswith("Optimizer.step#"))
    by["elem"][0] -= 1 if annotation else 0
    by["elem"][1] -= annotation
    return by, p["kernel_s"] - annotation


def model_ops(dlrig, gpu, folder, args):
    cmd = [dlrig, "fit", folder, "--from", os.path.join(MEASURED, gpu, "snapshot.json"), "--json",
           *STACK, *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}\n{r.stderr}")
    t = json.loads(r.stdout)["gpus"][0]["time"]
    return t["ops"], t["seconds_per_step"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlrig", default=os.path.join(ROOT, "build", "dlrig"))
    ap.add_argument("--gpu", default="h100,h200")
    ap.add_argument("--only", help="only the cases whose name contains this")
    ap.add_argument("--ops", action="store_true", help="list every op of the model too")
    a = ap.parse_args()
    head = " | ".join(f"{c} ms (kernels)" for c in CLASSES)
    for gpu in a.gpu.split(","):
        print(f"\n## {gpu}: profile / model, ms (kernels)\n")
        print(f"| case | {head} | sum | busy | step | dlrig step |")
        print("|---|" + "---|" * (len(CLASSES) + 4))
        listings = []
        for name, (folder, args, step) in sorted(cases(gpu).items()):
            if a.only and a.only not in name:
                continue
            path = os.path.join(MEASURED, gpu, "profile", name.replace(" ", "_") + ".json")
            if not os.path.exists(path):
                continue
            p = json.load(open(path))
            prof, prof_sum = profile_classes(p)
            ops, est = model_ops(a.dlrig, gpu, folder, args)
            mod = {k: [0, 0.0] for k in CLASSES}
            for o in ops:
                m = mod[model_class(o)]
                m[0] += o["kernels"]
                m[1] += o["seconds"]
            cells = [f"{prof[c][1] * 1e3:.1f} / {mod[c][1] * 1e3:.1f} ({prof[c][0]:.0f} / {mod[c][0]:.0f})"
                     for c in CLASSES]
            print(f"| {name} | {' | '.join(cells)} | {prof_sum * 1e3:.1f} / "
                  f"{sum(o['seconds'] for o in ops) * 1e3:.1f} | {p['gpu_busy_s'] * 1e3:.1f} | "
                  f"{step * 1e3:.1f} | {est * 1e3:.1f} |")
            if a.ops:
                listings.append((name, ops))
        for name, ops in listings:
            print(f"\n### {gpu}: {name}: the model's ops\n")
            print("| class | phase | op | kernels | GB | ms | bound |")
            print("|---|---|---|---|---|---|---|")
            for o in ops:
                print(f"| {model_class(o)} | {o['phase']} | {o['name']} | {o['kernels']:.0f} | "
                      f"{o['bytes'] / 1e9:.2f} | {o['seconds'] * 1e3:.2f} | {o['bound']} |")


if __name__ == "__main__":
    main()

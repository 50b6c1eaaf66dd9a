#!/usr/bin/env python3
"""Measure PyTorch's live-tensor peak on the CPU next to `dlrig fit`'s allocated-level estimate.

Where no GPU is at hand, this checks the part of dlrig's memory model that does not depend on the
GPU: which tensors PyTorch keeps alive at the peak of a training step or a generation, by kind.
It runs small models (built from configs, random weights) for two steps under
torch.distributed._tools.mem_tracker.MemTracker (torch >= 2.5), which records every tensor storage
the step allocates, rounded to 512 B as the CUDA caching allocator rounds, by category (parameters
and buffers, gradients, optimizer states, activations, temporaries) at the peak.

What this is not: torch.cuda.max_memory_reserved or NVML's "used" (no caching allocator, no CUDA
context, no cuBLAS workspaces on the CPU), and CPU kernels are not CUDA kernels: autocast's CPU op
lists and the CPU attention kernels save slightly different tensors. dlrig's GPU-only overhead
parts (cuBLAS/cuBLASLt workspaces, fragmentation, context) are left out of its side of the
comparison. bench/fit_measure.py takes the GPU measurements.

Not covered: serving (MemTracker 2.5 refuses a module called again within one step, as generate
does) and LoRA (MemTracker's hooks fail on peft's frozen weights); bench/fit_measure.py has both.

Needs: torch >= 2.5, transformers; optional torchvision (ResNet-50).
Usage: python3 bench/fit_measure_cpu.py --dlrig build/dlrig [--only NAME] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys

import torch
from torch.distributed._tools.mem_tracker import MemTracker

GPU = "NVIDIA H100 SXM5"  # any catalog GPU: the allocated-level components do not depend on it


def tracked(model, opt, step, steps=2):
    mt = MemTracker()
    mt.track_external(*([model] + ([opt] if opt else [])))
    with mt:
        for _ in range(steps):
            step()
            mt.reset_mod_stats()
    peak = mt.get_tracker_snapshot("peak")[torch.device("cpu")]
    by = {str(k.value if hasattr(k, "value") else k): v for k, v in peak.items()}
    return {"weights": by.get("Parameter", 0) + by.get("Buffer", 0),
            "gradients": by.get("Gradient", 0), "optimizer": by.get("Optstate", 0),
            "activations": by.get("Activation", 0) + by.get("Temp", 0) + by.get("Other", 0),
            "total": by["Total"]}


def train(model, batch, precision, lr=1e-4):
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, foreach=True)  # PyTorch's default implementation
    dtype = torch.bfloat16 if precision == "bf16-amp" else None

    def step():
        b = batch()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype is not None):
            out = model(**b) if isinstance(b, dict) else model(b)
            loss = out.loss if hasattr(out, "loss") else out.float().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return tracked(model, opt, step)


def cases():
    out = []
    import transformers as tf

    def llama(name, batch, seq, precision, attn="sdpa", ckpt=False):
        def build():
            cfg = tf.LlamaConfig(hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                                 num_key_value_heads=2, intermediate_size=1408, vocab_size=32000,
                                 max_position_embeddings=2048, attn_implementation=attn)
            model = tf.LlamaForCausalLM(cfg)
            args = ["--seq", str(seq), "--batch", str(batch), "--precision", precision,
                    "--optimizer", "adamw", "--attention", attn]
            if ckpt:
                model.gradient_checkpointing_enable()
                args += ["--checkpointing", "full"]
            ids = lambda: {"input_ids": torch.randint(0, 32000, (batch, seq)),
                           "labels": torch.randint(0, 32000, (batch, seq))}
            return cfg.to_dict(), args, lambda: train(model, ids, precision)
        return name, build

    out.append(llama("llama-small bf16-amp b4 s256 sdpa", 4, 256, "bf16-amp"))
    out.append(llama("llama-small fp32 b4 s256 sdpa", 4, 256, "fp32"))
    out.append(llama("llama-small bf16-amp b4 s256 eager", 4, 256, "bf16-amp", attn="eager"))
    out.append(llama("llama-small bf16-amp b4 s256 full-ckpt", 4, 256, "bf16-amp", ckpt=True))

    def gpt2_train():
        cfg = tf.GPT2Config(attn_implementation="eager")
        model = tf.GPT2LMHeadModel(cfg)
        ids = lambda: {"input_ids": torch.randint(0, cfg.vocab_size, (2, 256)),
                       "labels": torch.randint(0, cfg.vocab_size, (2, 256))}
        return cfg.to_dict(), ["--seq", "256", "--batch", "2", "--precision", "fp32",
                               "--attention", "eager"], lambda: train(model, ids, "fp32")
    out.append(("gpt2 fp32 b2 s256 eager", gpt2_train))

    def bert_train():
        cfg = tf.BertConfig(vocab_size=28996, attn_implementation="sdpa")
        model = tf.BertForSequenceClassification(cfg)
        batch = lambda: {"input_ids": torch.randint(0, 28996, (4, 128)),
                         "labels": torch.randint(0, 2, (4,))}
        return cfg.to_dict(), ["--seq", "128", "--batch", "4", "--precision", "fp32",
                               "--attention", "sdpa"], lambda: train(model, batch, "fp32")
    out.append(("bert-base-cased fp32 b4 s128 sdpa", bert_train))

    try:
        import torchvision

        def resnet(precision, ckpt=False):
            def build():
                model = torchvision.models.resnet50()
                extra = []
                if ckpt:  # torch.utils.checkpoint around every residual block
                    import torch.utils.checkpoint as cp
                    for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
                        for blk in stage:
                            blk.forward = (lambda f: lambda x: cp.checkpoint(f, x, use_reentrant=False))(blk.forward)
                    extra = ["--checkpointing", "full"]
                batch = lambda: torch.randn(8, 3, 224, 224)
                cfg = {"model_type": "resnet", "architectures": ["ResNet"], "layers": [3, 4, 6, 3],
                       "block": "bottleneck", "num_classes": 1000, "image_size": 224}
                return cfg, ["--image-size", "224", "--batch", "8", "--precision", precision] + extra, \
                    lambda: train(model, batch, precision)
            return build
        out.append(("resnet50 fp32 b8", resnet("fp32")))
        out.append(("resnet50 bf16-amp b8", resnet("bf16-amp")))
        out.append(("resnet50 fp32 b8 full-ckpt", resnet("fp32", ckpt=True)))
    except ImportError:
        print("torchvision missing: ResNet-50 skipped", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlrig", default="build/dlrig")
    ap.add_argument("--out", default="/tmp/fit-measure-cpu")
    ap.add_argument("--only")
    a = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for name, build in cases():
        if a.only and a.only not in name:
            continue
        folder = os.path.join(a.out, name.replace(" ", "_"))
        os.makedirs(folder, exist_ok=True)
        try:
            cfg, args, run = build()
            measured = run()
        except Exception as e:  # a missing optional package is a result too
            print(json.dumps({"case": name, "skipped": f"{type(e).__name__}: {e}"}), flush=True)
            continue
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(cfg, f, default=str)
        est = subprocess.run([a.dlrig, "fit", folder, "--gpu", GPU, "--json"] + args,
                             capture_output=True, text=True)
        estimate = None
        if est.returncode in (0, 1):
            g = json.loads(est.stdout)["gpus"][0]
            estimate = {k: v for k, v in g["breakdown"].items() if k != "overhead"}
            estimate["activations"] += estimate.pop("kv_cache", 0)
            estimate["total"] = sum(estimate.values())
            estimate["peak_phase"] = g.get("peak_phase")
        row = {"case": name, "torch": torch.__version__, "measured": measured,
               "estimate": estimate, "dlrig_args": args,
               "dlrig_error": None if estimate else est.stderr.strip()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    keys = ("weights", "gradients", "optimizer", "activations", "total")
    print("\n| case | measured: " + " / ".join(keys) + " (MiB) | dlrig (MiB) | total error |")
    print("|---|---|---|---|")
    for r in rows:
        m = " / ".join(f"{r['measured'][k] / 2**20:.1f}" for k in keys)
        if r["estimate"]:
            e = " / ".join(f"{r['estimate'][k] / 2**20:.1f}" for k in keys)
            err = f"{(r['estimate']['total'] / r['measured']['total'] - 1) * 100:+.1f} %"
        else:
            e, err = "n/a (" + (r["dlrig_error"] or "")[:60] + ")", ""
        print(f"| {r['case']} | {m} | {e} | {err} |")


if __name__ == "__main__":
    main()

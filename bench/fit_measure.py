#!/usr/bin/env python3
"""Measure real PyTorch peak memory next to `dlrig fit`'s estimate (docs/fit-accuracy.md).

Runs a few training steps (or a prefill + decode) of models built from their config only (random
weights, nothing downloaded), and records three peaks per case:
  allocated  torch.cuda.max_memory_allocated()
  reserved   torch.cuda.max_memory_reserved()
  device     the most NVML/nvidia-smi "used" seen (total - free from torch.cuda.mem_get_info,
             sampled after every step; includes the CUDA context and NCCL buffers)
It writes each model's config.json under --out, runs `dlrig fit <that folder> --json` with the same
run options, and prints one JSON line per case plus a markdown table for docs/fit-accuracy.md.

Needs: torch with CUDA. Optional: transformers (Llama/BERT/GPT-2 cases), torchvision (ResNet-50),
peft (LoRA). Cases whose package is missing are skipped with a reason.

Usage: python3 bench/fit_measure.py --dlrig build/dlrig --out /tmp/fit-measure [--only NAME]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch


def device_used():
    free, total = torch.cuda.mem_get_info()
    return total - free


def reset():
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def measure_train(model, make_batch, precision, optimizer, steps=3, checkpointing=False):
    model.cuda().train()
    if checkpointing and hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable()
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=1e-4)
    else:  # adamw: PyTorch's default (foreach) implementation, as dlrig models it
        opt = torch.optim.AdamW(params, lr=1e-4)
    dtype = {"bf16-amp": torch.bfloat16, "fp16-amp": torch.float16}.get(precision)
    peak_dev = 0
    for _ in range(steps):
        batch = make_batch()
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = model(**batch).loss if isinstance(batch, dict) else model(batch).float().mean()
        loss.backward()
        peak_dev = max(peak_dev, device_used())
        opt.step()
        peak_dev = max(peak_dev, device_used())
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return {"allocated": torch.cuda.max_memory_allocated(),
            "reserved": torch.cuda.max_memory_reserved(), "device": peak_dev}


def measure_infer(model, input_ids, max_new_tokens, dtype):
    model.cuda().eval().to(dtype)
    with torch.no_grad():
        model.generate(input_ids=input_ids, max_new_tokens=max_new_tokens, do_sample=False,
                       min_new_tokens=max_new_tokens)
    torch.cuda.synchronize()
    return {"allocated": torch.cuda.max_memory_allocated(),
            "reserved": torch.cuda.max_memory_reserved(), "device": device_used()}


def cases():
    """(name, needs, builder) where builder returns (model, config_dict, dlrig_args, runner)."""
    out = []
    try:
        import transformers as tf
    except ImportError:
        tf = None

    def llama(name, layers, h, heads, kv, inter, vocab, batch, seq, precision, lora=0, ckpt=False):
        def build():
            cfg = tf.LlamaConfig(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                                 num_key_value_heads=kv, intermediate_size=inter, vocab_size=vocab,
                                 max_position_embeddings=max(seq, 2048), attn_implementation="sdpa")
            model = tf.LlamaForCausalLM(cfg)
            args = ["--seq", str(seq), "--batch", str(batch), "--precision", precision,
                    "--optimizer", "adamw"]
            if lora:
                import peft
                model = peft.get_peft_model(model, peft.LoraConfig(r=lora, target_modules=["q_proj", "v_proj"]))
                model.base_model.model.to(torch.bfloat16)
                args += ["--lora", str(lora)]
            if ckpt:
                args += ["--checkpointing", "full"]
            ids = lambda: {"input_ids": torch.randint(0, vocab, (batch, seq), device="cuda"),
                           "labels": torch.randint(0, vocab, (batch, seq), device="cuda")}
            run = lambda: measure_train(model, ids, precision, "adamw", checkpointing=ckpt)
            return cfg.to_dict(), args, run
        return (name, "transformers" + (" peft" if lora else ""), build)

    if tf:
        out.append(llama("llama-1b-shape bf16-amp b4 s1024", 16, 2048, 32, 8, 8192, 128256, 4, 1024, "bf16-amp"))
        out.append(llama("llama-1b-shape bf16-amp b4 s1024 full-ckpt", 16, 2048, 32, 8, 8192, 128256, 4, 1024, "bf16-amp", ckpt=True))
        out.append(llama("llama-1b-shape fp32 b2 s512", 16, 2048, 32, 8, 8192, 128256, 2, 512, "fp32"))
        out.append(llama("llama-3-8b-shape lora16 b1 s2048", 32, 4096, 32, 8, 14336, 128256, 1, 2048, "bf16-amp", lora=16))

        def gpt2_infer():
            cfg = tf.GPT2Config()
            model = tf.GPT2LMHeadModel(cfg)
            ids = torch.randint(0, cfg.vocab_size, (8, 512), device="cuda")
            return cfg.to_dict(), ["--mode", "infer", "--seq", "512", "--max-tokens", "128",
                                   "--batch", "8", "--precision", "bf16"], \
                lambda: measure_infer(model, ids, 128, torch.bfloat16)
        out.append(("gpt2 infer bf16 b8 s512+128", "transformers", gpt2_infer))

        def bert_train():
            cfg = tf.BertConfig(vocab_size=28996)
            model = tf.BertForSequenceClassification(cfg)
            batch = lambda: {"input_ids": torch.randint(0, 28996, (16, 512), device="cuda"),
                             "labels": torch.randint(0, 2, (16,), device="cuda")}
            return cfg.to_dict(), ["--seq", "512", "--batch", "16", "--precision", "fp16-amp"], \
                lambda: measure_train(model, batch, "fp16-amp", "adamw")
        out.append(("bert-base-cased fine-tune fp16-amp b16 s512", "transformers", bert_train))
    try:
        import torchvision

        def resnet():
            model = torchvision.models.resnet50()
            batch = lambda: torch.randn(64, 3, 224, 224, device="cuda")
            cfg = {"model_type": "resnet", "architectures": ["ResNet"], "layers": [3, 4, 6, 3],
                   "block": "bottleneck", "num_classes": 1000, "image_size": 224}
            return cfg, ["--image-size", "224", "--batch", "64", "--precision", "fp16-amp"], \
                lambda: measure_train(model, batch, "fp16-amp", "adamw")
        out.append(("resnet50 fp16-amp b64", "torchvision", resnet))
    except ImportError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlrig", default="build/dlrig")
    ap.add_argument("--out", default="/tmp/fit-measure")
    ap.add_argument("--only")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("no CUDA device: these measurements need a GPU")
    rows = []
    for name, needs, build in cases():
        if a.only and a.only not in name:
            continue
        folder = os.path.join(a.out, name.split()[0])
        os.makedirs(folder, exist_ok=True)
        reset()
        try:
            cfg, args, run = build()
            measured = run()
        except Exception as e:  # a missing optional package or an OOM is a result too
            print(json.dumps({"case": name, "skipped": f"{type(e).__name__}: {e}"}))
            continue
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(cfg, f, default=str)
        est = subprocess.run([a.dlrig, "fit", folder, "--json"] + args, capture_output=True, text=True)
        estimate = None
        if est.returncode in (0, 1):
            g = json.loads(est.stdout)["gpus"][0]
            estimate = {k: g[k + "_bytes"] for k in ("allocated", "reserved", "device")}
        row = {"case": name, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
               "measured": measured, "estimate": estimate, "dlrig_args": args,
               "dlrig_error": None if estimate else est.stderr.strip()}
        print(json.dumps(row), flush=True)
        rows.append(row)
        del run
        torch.cuda.empty_cache()
        time.sleep(1)
    print("\n| case | measured allocated / reserved / device (GB) | dlrig allocated / reserved / device (GB) |")
    print("|---|---|---|")
    for r in rows:
        m = " / ".join(f"{r['measured'][k] / 1e9:.2f}" for k in ("allocated", "reserved", "device"))
        e = " / ".join(f"{r['estimate'][k] / 1e9:.2f}" for k in ("allocated", "reserved", "device")) \
            if r["estimate"] else "n/a (" + (r["dlrig_error"] or "")[:60] + ")"
        print(f"| {r['case']} | {m} | {e} |")


if __name__ == "__main__":
    main()

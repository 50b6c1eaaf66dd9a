#!/usr/bin/env python3
"""Measure real PyTorch peak memory next to `dlrig fit`'s estimate (docs/fit-accuracy.md).

Models are built from their configuration only (random weights, nothing downloaded). Each case
writes its config.json under --out, runs `dlrig fit <that folder> --json` with the same run options,
and the script prints one JSON line per case plus a markdown table for docs/fit-accuracy.md.

--device cuda (needs torch with CUDA; optional transformers, torchvision, peft) records three peaks:
  allocated  torch.cuda.max_memory_allocated()
  reserved   torch.cuda.max_memory_reserved()
  device     the most NVML/nvidia-smi "used" seen (total - free from torch.cuda.mem_get_info,
             sampled after every step; includes the CUDA context and NCCL buffers)
  and compares them with dlrig's allocated / reserved / device estimates.

--device cpu (needs torch >= 2.5 and transformers; optional torchvision) checks, where no GPU is at
  hand, the part of dlrig's memory model that does not depend on the GPU: which tensors PyTorch
  keeps alive at the peak of a training step, by kind. Small models run two steps under
  torch.distributed._tools.mem_tracker.MemTracker, which records every tensor storage rounded to
  512 B as the CUDA caching allocator rounds, by category (parameters and buffers, gradients,
  optimizer states, activations, temporaries) at the peak. This is not max_memory_reserved or NVML's
  "used" (no caching allocator, no CUDA context, no cuBLAS workspace on the CPU), and CPU kernels
  save slightly different tensors than CUDA kernels; dlrig's GPU-only overhead is left out of its
  side. Not covered on the CPU: serving (MemTracker 2.5 refuses a module called again within one
  step, as generate does) and LoRA (its hooks fail on peft's frozen weights).

Cases whose package is missing are skipped with a reason.

Usage: python3 perf/fit_measure.py --device cuda|cpu --dlrig build/dlrig [--out DIR] [--only NAME]
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

TIMED_STEPS = 7  # --device cuda: steps timed after the memory steps (median reported)
CPU_GPU = "NVIDIA H100 SXM5"  # any catalog GPU: the allocated-level components do not depend on it


# --- measurement backends -------------------------------------------------------------------


def cuda_used():
    free, total = torch.cuda.mem_get_info()
    return total - free


def cuda_reset():
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def make_optimizer(model, optimizer):
    params = [p for p in model.parameters() if p.requires_grad]
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-4)
    return torch.optim.AdamW(params, lr=1e-4, foreach=True)  # PyTorch's default, as dlrig models it


def train_step(model, opt, make_batch, precision, device, after_backward=None):
    dtype = {"bf16-amp": torch.bfloat16, "fp16-amp": torch.float16}.get(precision)
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"  # convolutions: cuDNN's default, on
    batch = make_batch()
    with torch.autocast(device, dtype=dtype, enabled=dtype is not None):
        out = model(**batch) if isinstance(batch, dict) else model(batch)
        if getattr(out, "loss", None) is not None:
            loss = out.loss
        elif hasattr(out, "last_hidden_state"):  # a base model (CLIP's text tower): no head
            loss = out.last_hidden_state.float().mean()
        else:
            loss = out.float().mean()
    loss.backward()
    if after_backward:
        after_backward()
    opt.step()
    if after_backward:
        after_backward()
    opt.zero_grad(set_to_none=True)


def measure_train_cuda(model, make_batch, precision, optimizer="adamw", steps=3):
    model.cuda().train()
    opt = make_optimizer(model, optimizer)
    peak = [0]

    def sample():
        peak[0] = max(peak[0], cuda_used())

    for _ in range(steps):
        train_step(model, opt, make_batch, precision, "cuda", sample)
    torch.cuda.synchronize()
    out = {"allocated": torch.cuda.max_memory_allocated(),
           "reserved": torch.cuda.max_memory_reserved(), "device": peak[0]}
    # Step time for the time model (docs/fit-accuracy.md): the median of TIMED_STEPS more steps
    # after the warm-up above, each between CUDA events (batch creation on the GPU included, as
    # random ids or images stand in for a loader that keeps up).
    times = []
    for _ in range(TIMED_STEPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        train_step(model, opt, make_batch, precision, "cuda")
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    out["step_s"] = sorted(times)[len(times) // 2] if times else None
    return out


def measure_infer_cuda(model, input_ids, max_new_tokens, dtype):
    model.cuda().eval().to(dtype)
    with torch.no_grad():
        model.generate(input_ids=input_ids, max_new_tokens=max_new_tokens, do_sample=False,
                       min_new_tokens=max_new_tokens)
    torch.cuda.synchronize()
    return {"allocated": torch.cuda.max_memory_allocated(),
            "reserved": torch.cuda.max_memory_reserved(), "device": cuda_used()}


def measure_train_cpu(model, make_batch, precision, optimizer="adamw", steps=2, device="cpu"):
    from torch.distributed._tools.mem_tracker import MemTracker
    model.to(device).train()
    opt = make_optimizer(model, optimizer)
    mt = MemTracker()
    mt.track_external(model, opt)
    with mt:
        for _ in range(steps):
            train_step(model, opt, make_batch, precision, device)
            mt.reset_mod_stats()
    peak = mt.get_tracker_snapshot("peak")[torch.device(device, 0) if device == "cuda"
                                           else torch.device(device)]
    by = {str(k.value if hasattr(k, "value") else k): v for k, v in peak.items()}
    return {"weights": by.get("Parameter", 0) + by.get("Buffer", 0),
            "gradients": by.get("Gradient", 0), "optimizer": by.get("Optstate", 0),
            "activations": by.get("Activation", 0) + by.get("Temp", 0) + by.get("Other", 0),
            "total": by["Total"]}


# --- cases ----------------------------------------------------------------------------------


def llama_case(tf, device, name, layers, h, heads, kv, inter, vocab, batch, seq, precision,
               attn="sdpa", lora=0, ckpt=False):
    def build():
        cfg = tf.LlamaConfig(hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                             num_key_value_heads=kv, intermediate_size=inter, vocab_size=vocab,
                             max_position_embeddings=max(seq, 2048), attn_implementation=attn)
        model = tf.LlamaForCausalLM(cfg)
        args = ["--seq", str(seq), "--batch", str(batch), "--precision", precision,
                "--optimizer", "adamw", "--attention", attn]
        if lora:
            import peft
            model = peft.get_peft_model(model, peft.LoraConfig(r=lora, target_modules=["q_proj", "v_proj"]))
            model.base_model.model.to(torch.bfloat16)
            args += ["--lora", str(lora)]
        if ckpt:
            model.gradient_checkpointing_enable()
            args += ["--checkpointing", "full"]
        ids = lambda: {"input_ids": torch.randint(0, vocab, (batch, seq), device=device),
                       "labels": torch.randint(0, vocab, (batch, seq), device=device)}
        return cfg.to_dict(), args, lambda: MEASURE_TRAIN[device](model, ids, precision)
    return name, build


def resnet_case(device, name, batch, precision, ckpt=False, channels_last=False):
    def build():
        import torchvision
        model = torchvision.models.resnet50()
        extra = []
        fmt = torch.channels_last if channels_last else torch.contiguous_format
        if channels_last:
            model = model.to(memory_format=fmt)
            extra = ["--channels-last"]
        if ckpt:  # torch.utils.checkpoint around every residual block
            import torch.utils.checkpoint as cp
            for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
                for blk in stage:
                    blk.forward = (lambda f: lambda x: cp.checkpoint(f, x, use_reentrant=False))(blk.forward)
            extra += ["--checkpointing", "full"]
        images = lambda: torch.randn(batch, 3, 224, 224, device=device).contiguous(memory_format=fmt)
        cfg = {"model_type": "resnet", "architectures": ["ResNet"], "layers": [3, 4, 6, 3],
               "block": "bottleneck", "num_classes": 1000, "image_size": 224}
        return cfg, ["--image-size", "224", "--batch", str(batch), "--precision", precision] + extra, \
            lambda: MEASURE_TRAIN[device](model, images, precision)
    return name, build


def hf_case(device, name, make, batch, seq, precision, attn, labels, qa=False):
    """A transformers model trained on random ids; labels(vocab) gives the label tensor shape
    (None: no labels, the loss is the mean of the output); qa: start and end positions."""
    def build():
        cfg, model = make()
        if not getattr(cfg, "architectures", None):  # what dlrig must build: the class measured
            cfg.architectures = [type(model).__name__]
        vocab = cfg.vocab_size

        def data():
            d = {"input_ids": torch.randint(0, vocab, (batch, seq), device=device)}
            if qa:
                d["start_positions"] = torch.randint(0, seq, (batch,), device=device)
                d["end_positions"] = torch.randint(0, seq, (batch,), device=device)
            elif labels(vocab):
                d["labels"] = torch.randint(0, labels(vocab), (batch,) if labels(vocab) == 2
                                            else (batch, seq), device=device)
            return d
        return cfg.to_dict(), ["--seq", str(seq), "--batch", str(batch), "--precision", precision,
                               "--attention", attn], \
            lambda: MEASURE_TRAIN[device](model, data, precision)
    return name, build


def cases(device):
    try:
        import transformers as tf
    except ImportError:
        tf = None
        print("transformers missing: transformer cases skipped", file=sys.stderr)
    out = []
    bert = lambda attn: (lambda: (lambda c: (c, tf.BertForSequenceClassification(c)))(
        tf.BertConfig(vocab_size=28996, attn_implementation=attn)))
    if device == "cuda":
        if tf:
            big = (16, 2048, 32, 8, 8192, 128256)
            out.append(llama_case(tf, device, "llama-1b-shape bf16-amp b4 s1024", *big, 4, 1024, "bf16-amp"))
            out.append(llama_case(tf, device, "llama-1b-shape bf16-amp b4 s1024 full-ckpt", *big, 4, 1024,
                                  "bf16-amp", ckpt=True))
            out.append(llama_case(tf, device, "llama-1b-shape fp32 b2 s512", *big, 2, 512, "fp32"))
            out.append(llama_case(tf, device, "llama-3-8b-shape lora16 b1 s2048", 32, 4096, 32, 8, 14336,
                                  128256, 1, 2048, "bf16-amp", lora=16))

            def gpt2_infer():
                cfg = tf.GPT2Config()
                model = tf.GPT2LMHeadModel(cfg)
                ids = torch.randint(0, cfg.vocab_size, (8, 512), device="cuda")
                return cfg.to_dict(), ["--mode", "infer", "--seq", "512", "--max-tokens", "128",
                                       "--batch", "8", "--precision", "bf16"], \
                    lambda: measure_infer_cuda(model, ids, 128, torch.bfloat16)
            out.append(("gpt2 infer bf16 b8 s512+128", gpt2_infer))
            out.append(hf_case(device, "bert-base-cased fine-tune fp16-amp b16 s512", bert("sdpa"), 16, 512,
                               "fp16-amp", "sdpa", lambda v: 2))
        out.append(resnet_case(device, "resnet50 fp16-amp b64", 64, "fp16-amp"))
        out.append(resnet_case(device, "resnet50 bf16-amp b256 channels-last", 256, "bf16-amp",
                               channels_last=True))
        out.append(resnet_case(device, "resnet50 tf32 b256", 256, "tf32"))
        if tf:
            gpt2 = lambda: (lambda c: (c, tf.GPT2LMHeadModel(c)))(tf.GPT2Config(attn_implementation="sdpa"))
            out.append(hf_case(device, "gpt2 bf16-amp b16 s1024 sdpa", gpt2, 16, 1024, "bf16-amp", "sdpa",
                               lambda v: v))
            # Structures whose memory had not been measured (issue 12): Falcon's new decoder
            # architecture (grouped KV, two norms feeding parallel attention and MLP), question-
            # answering heads on encoder-decoders, CLIP's text tower on its own.
            falcon = lambda: (lambda c: (c, tf.FalconForCausalLM(c)))(tf.FalconConfig(
                vocab_size=32000, hidden_size=1024, num_hidden_layers=8, num_attention_heads=16,
                num_kv_heads=4, new_decoder_architecture=True, attn_implementation="sdpa"))
            out.append(hf_case(device, "falcon new-decoder-arch bf16-amp b8 s512 sdpa", falcon, 8, 512,
                               "bf16-amp", "sdpa", lambda v: v))
            bart_qa = lambda: (lambda c: (c, tf.BartForQuestionAnswering(c)))(tf.BartConfig(
                attn_implementation="sdpa"))
            out.append(hf_case(device, "bart-large QA fp16-amp b8 s384 sdpa", bart_qa, 8, 384, "fp16-amp",
                               "sdpa", None, qa=True))
            t5_qa = lambda: (lambda c: (c, tf.T5ForQuestionAnswering(c)))(tf.T5Config())
            out.append(hf_case(device, "t5 QA fp32 b16 s384 eager", t5_qa, 16, 384, "fp32", "eager", None,
                               qa=True))
            clip_text = lambda: (lambda c: (c, tf.CLIPTextModel(c)))(tf.CLIPTextConfig(
                attn_implementation="sdpa"))
            out.append(hf_case(device, "clip text tower fp16-amp b256 s77 sdpa", clip_text, 256, 77,
                               "fp16-amp", "sdpa", lambda v: 0))
    else:
        if tf:
            small = (4, 512, 8, 2, 1408, 32000)
            out.append(llama_case(tf, device, "llama-small bf16-amp b4 s256 sdpa", *small, 4, 256, "bf16-amp"))
            out.append(llama_case(tf, device, "llama-small fp32 b4 s256 sdpa", *small, 4, 256, "fp32"))
            out.append(llama_case(tf, device, "llama-small bf16-amp b4 s256 eager", *small, 4, 256, "bf16-amp",
                                  attn="eager"))
            out.append(llama_case(tf, device, "llama-small bf16-amp b4 s256 full-ckpt", *small, 4, 256,
                                  "bf16-amp", ckpt=True))
            gpt2 = lambda: (lambda c: (c, tf.GPT2LMHeadModel(c)))(tf.GPT2Config(attn_implementation="eager"))
            out.append(hf_case(device, "gpt2 fp32 b2 s256 eager", gpt2, 2, 256, "fp32", "eager", lambda v: v))
            out.append(hf_case(device, "bert-base-cased fp32 b4 s128 sdpa", bert("sdpa"), 4, 128, "fp32", "sdpa",
                               lambda v: 2))
        out.append(resnet_case(device, "resnet50 fp32 b8", 8, "fp32"))
        out.append(resnet_case(device, "resnet50 bf16-amp b8", 8, "bf16-amp"))
        out.append(resnet_case(device, "resnet50 fp32 b8 full-ckpt", 8, "fp32", ckpt=True))
    return out


MEASURE_TRAIN = {"cuda": measure_train_cuda, "cpu": measure_train_cpu}


# --- dlrig's side and the table -------------------------------------------------------------


def measured_stack():
    """The stack this run measures, for dlrig's rules that depend on it: --gpu (the CPU runs)
    reads no snapshot's stack, and transformers' release decides SDPA's grouped K/V."""
    args = []
    try:
        import transformers
        args += ["--transformers", transformers.__version__]
    except ImportError:
        pass
    return args


def estimate(dlrig, folder, args, device):
    cmd = [dlrig, "fit", folder, "--json"] + args + measured_stack() + \
        (["--gpu", CPU_GPU, "--torch", torch.__version__.split("+")[0]] if device == "cpu" else [])
    est = subprocess.run(cmd, capture_output=True, text=True)
    if est.returncode not in (0, 1):
        return None, est.stderr.strip()
    g = json.loads(est.stdout)["gpus"][0]
    if device == "cuda":
        e = {k: g[k + "_bytes"] for k in ("allocated", "reserved", "device")}
        e["step_s"] = (g.get("time") or {}).get("seconds_per_step")
        return e, None
    e = {k: v for k, v in g["breakdown"].items() if k != "overhead"}
    e["activations"] += e.pop("kv_cache", 0)
    e["total"] = sum(e.values())
    e["peak_phase"] = g.get("peak_phase")
    return e, None


def print_table(rows, device):
    if device == "cuda":
        keys, unit, scale = ("allocated", "reserved", "device"), "GB", 1e9
    else:
        keys, unit, scale = ("weights", "gradients", "optimizer", "activations", "total"), "MiB", 2**20
    total = "total" if device == "cpu" else "allocated"
    print(f"\n| case | measured: {' / '.join(keys)} ({unit}) | dlrig ({unit}) | {total} error |")
    print("|---|---|---|---|")
    for r in rows:
        m = " / ".join(f"{r['measured'][k] / scale:.2f}" for k in keys)
        if r["estimate"]:
            e = " / ".join(f"{r['estimate'][k] / scale:.2f}" for k in keys)
            err = f"{(r['estimate'][total] / r['measured'][total] - 1) * 100:+.1f} %"
        else:
            e, err = "n/a (" + (r["dlrig_error"] or "")[:60] + ")", ""
        print(f"| {r['case']} | {m} | {e} | {err} |")
    if device == "cuda":
        print("\n| case | measured step (ms) | dlrig step (ms) | error |")
        print("|---|---|---|---|")
        for r in rows:
            ms, es = r["measured"].get("step_s"), (r["estimate"] or {}).get("step_s")
            err = f"{(es / ms - 1) * 100:+.1f} %" if ms and es else "n/a"
            fmt = lambda v: f"{v * 1e3:.1f}" if v else "n/a"
            print(f"| {r['case']} | {fmt(ms)} | {fmt(es)} | {err} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), required=True)
    ap.add_argument("--dlrig", default="build/dlrig")
    ap.add_argument("--out", help="where the configs are written (default /tmp/fit-measure-DEVICE)")
    ap.add_argument("--only", help="run only the cases whose name contains this (a comma-separated "
                                   "list: any of them)")
    ap.add_argument("--categories", action="store_true",
                    help="--device cuda: PyTorch's MemTracker by category at the peak (as --device cpu "
                         "does) instead of the allocator's peaks and step times")
    a = ap.parse_args()
    if a.categories and a.device == "cuda":  # the CPU path's tracker, on the GPU
        MEASURE_TRAIN["cuda"] = lambda m, b, p, optimizer="adamw": measure_train_cpu(
            m, b, p, optimizer, device="cuda")
    out = a.out or f"/tmp/fit-measure-{a.device}"
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device: --device cuda needs a GPU (--device cpu checks the GPU-independent part)")
    torch.manual_seed(0)
    rows = []
    for name, build in cases(a.device):
        if a.only and not any(o in name for o in a.only.split(",")):
            continue
        folder = os.path.join(out, name.replace(" ", "_"))
        os.makedirs(folder, exist_ok=True)
        if a.device == "cuda":
            cuda_reset()
        try:
            # On the GPU the model is built there (a CPU init of billions of parameters takes
            # minutes); what building it left allocated at its peak is not the step's.
            with torch.device(a.device):
                cfg, args, run = build()
            if a.device == "cuda":
                cuda_reset()
            measured = run()
        except Exception as e:  # a missing optional package or an OOM is a result too
            print(json.dumps({"case": name, "skipped": f"{type(e).__name__}: {e}"}), flush=True)
            continue
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(cfg, f, default=str)
        kind = "cpu" if a.categories else a.device  # which side of dlrig's answer compares
        est, err = estimate(a.dlrig, folder, args, kind)
        row = {"case": name, "device": a.device, "torch": torch.__version__,
               "dlrig_stack": measured_stack(),
               "gpu": torch.cuda.get_device_name() if a.device == "cuda" else None,
               "measured": measured, "estimate": est, "dlrig_args": args, "dlrig_error": err}
        print(json.dumps(row), flush=True)
        rows.append(row)
        if a.device == "cuda":
            del run
            torch.cuda.empty_cache()
            time.sleep(1)
    print_table(rows, "cpu" if a.categories else a.device)


if __name__ == "__main__":
    main()

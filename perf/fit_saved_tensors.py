#!/usr/bin/env python3
"""List the tensors autograd keeps for backward after one training forward, by operator (dev-time
check of dlrig's activation model, docs/fit-accuracy.md "GPU results").

For each case (a config.json folder from tests/data/measured/<gpu>/) the model is built from its
configuration on the device, one forward and loss run under torch.autocast as perf/fit_measure.py
runs them, and the autograd graph is walked from the loss: every node's `_saved_*` tensors are
grouped by (operator, attribute, dtype, shape) and the distinct storages summed, parameters apart.
The memory allocated by the forward (torch.cuda.memory_allocated after minus before) is printed
beside it.

Usage: python3 perf/fit_saved_tensors.py --device cuda CASE_DIR:precision:batch:seq:head ... [--out F]
           [--attention sdpa|eager|auto]
  precision: bf16-amp, fp16-amp (autocast over fp32 weights), bf16, fp16 (a 16-bit model), fp32
  head: lm (labels = ids), cls (one label per sample), qa (start/end positions), none (mean of the
  last hidden state)
"""
import argparse
import collections
import json
import os

import torch
import transformers as tf


def build(folder, device, attention):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    arch = (cfg.get("architectures") or ["LlamaForCausalLM"])[0]
    conf = tf.AutoConfig.for_model(cfg["model_type"], **{k: v for k, v in cfg.items()
                                                         if k not in ("model_type", "transformers_version")})
    if attention != "auto":  # auto: what transformers picks for the class (eager for Gemma 2)
        conf._attn_implementation = attention
    with torch.device(device):
        model = getattr(tf, arch)(conf)
    return conf, model.train()


def walk(loss, params):
    rows = collections.Counter()
    storages, cast = {}, {}
    seen, stack = set(), [loss.grad_fn]
    shapes = {tuple(p.shape) for p in params.values()}
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        for attr in dir(n):
            if not attr.startswith("_saved_") or attr.endswith("_raw"):
                continue
            try:
                v = getattr(n, attr)
            except Exception:
                continue
            for t in (v if isinstance(v, (tuple, list)) else [v]):
                if not isinstance(t, torch.Tensor):
                    continue
                st = t.untyped_storage()
                key = st.data_ptr()
                if key in params or key == 0:
                    continue
                rows[(n.name(), attr, str(t.dtype).replace("torch.", ""), tuple(t.shape))] += 1
                if tuple(t.shape) in shapes and t.dtype != torch.float32:
                    cast[key] = st.nbytes()
                else:
                    storages[key] = (st.nbytes(), str(t.dtype))
        for nxt, _ in n.next_functions:
            stack.append(nxt)
    by_dtype = collections.Counter()
    for nb, dt in storages.values():
        by_dtype[dt] += nb
    return rows, sum(nb for nb, _ in storages.values()), dict(by_dtype), sum(cast.values())


def run_case(spec, device, attention="sdpa"):
    folder, precision, batch, seq, head = spec.split(":")
    batch, seq = int(batch), int(seq)
    conf, model = build(folder, device, attention)
    if precision in ("bf16", "fp16"):  # a 16-bit model without autocast
        model = model.to({"bf16": torch.bfloat16, "fp16": torch.float16}[precision])
    params = {p.untyped_storage().data_ptr(): p for p in model.parameters()}
    dtype = {"bf16-amp": torch.bfloat16, "fp16-amp": torch.float16}.get(precision)
    ids = torch.randint(0, conf.vocab_size, (batch, seq), device=device)
    batch_in = {"input_ids": ids}
    if head == "lm":
        batch_in["labels"] = ids
    elif head == "cls":
        batch_in["labels"] = torch.randint(0, 2, (batch,), device=device)
    elif head == "qa":
        batch_in["start_positions"] = torch.randint(0, seq, (batch,), device=device)
        batch_in["end_positions"] = torch.randint(0, seq, (batch,), device=device)
    cuda = device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    with torch.autocast(device, dtype=dtype, enabled=dtype is not None):
        out = model(**batch_in)
        loss = out.loss if getattr(out, "loss", None) is not None else \
            out.last_hidden_state.float().mean()
    res = {"case": spec, "attention": model.config._attn_implementation}
    if cuda:
        torch.cuda.synchronize()
        res["forward_allocated"] = torch.cuda.memory_allocated() - before
        res["forward_peak"] = torch.cuda.max_memory_allocated() - before
    rows, saved, by_dtype, cast = walk(loss, params)
    res.update(saved_bytes=saved, saved_by_dtype=by_dtype, weight_cast_bytes=cast,
               rows=[{"op": k[0], "attr": k[1], "dtype": k[2], "shape": list(k[3]), "count": c}
                     for k, c in sorted(rows.items(), key=lambda kv: -kv[1])])
    del out, loss, model
    if cuda:
        torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out")
    ap.add_argument("--attention", default="sdpa", choices=["sdpa", "eager", "auto"],
                    help="attn_implementation (auto: the class's own choice)")
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    results = []
    for spec in a.cases:
        try:
            r = run_case(spec, a.device, a.attention)
        except Exception as e:  # one failing case never stops the rest
            r = {"case": spec, "error": repr(e)}
        results.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "rows"}), flush=True)
        for row in r.get("rows", [])[:60]:
            print("   ", row["count"], row["op"], row["attr"], row["dtype"], row["shape"])
    if a.out:
        json.dump(results, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()

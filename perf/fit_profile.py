#!/usr/bin/env python3
"""Where one real training step's time goes on a GPU, for fit's time model (docs/fit-accuracy.md).

Runs perf/fit_measure.py's CUDA cases (the same models, batches and precisions as the measured
step times), each for three warm-up steps and then one step under torch.profiler (CPU and CUDA
activities, input shapes recorded), and writes one JSON summary per case:

  step_s            the profiled step's wall time on the host (ProfilerStep)
  kernels           kernels launched in the step; kernel_s their summed duration
  gpu_busy_s        the union of the kernels' intervals (the time the GPU had work)
  gpu_idle_share    1 - gpu_busy_s / the span from the first kernel's start to the last's end:
                    the GPU waiting on the host (eager PyTorch's per-operator CPU work)
  short_kernels     kernels shorter than 5 us, and their summed duration
  by_kernel_class   GEMM (cuBLAS/cuBLASLt/cutlass names), convolution (cuDNN), attention (flash/
                    efficient/fmha), elementwise and reductions, optimizer (multi_tensor_apply),
                    copies and memsets: count and seconds
  top_ops           the 40 operators with the most CUDA time (self), with their input shapes, count,
                    CUDA seconds and CPU seconds
  gemms             every GEMM-like operator call (aten::mm, addmm, bmm, linear, matmul) with its
                    shapes, calls and the CUDA seconds of its kernels

Usage: perf/fit_profile.py [--only NAME] [--out DIR]   (needs torch with CUDA; transformers,
torchvision for their cases). Never run in CI.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_measure  # noqa: E402
import torch  # noqa: E402

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm")


def kernel_class(name):
    n = name.lower()
    if any(k in n for k in ("flash", "fmha", "efficient_attention", "attention")):
        return "attention"
    if any(k in n for k in ("gemm", "cutlass", "sm90_xmma", "sm80_xmma", "ampere_", "hopper_", "cublas",
                            "nvjet", "s16816", "h16816")):
        return "gemm"
    if any(k in n for k in ("conv", "cudnn", "implicit", "wgrad", "dgrad", "nchw", "nhwc")):
        return "convolution"
    if "multi_tensor_apply" in n:
        return "optimizer"
    if any(k in n for k in ("memcpy", "memset", "copy")):
        return "copy"
    if any(k in n for k in ("reduce", "softmax", "norm", "cross_entropy", "nll", "sum")):
        return "reduction"
    return "elementwise"


def profile_train(model, make_batch, precision, optimizer="adamw", steps=3):
    from torch.profiler import ProfilerActivity, profile
    model.cuda().train()
    opt = fit_measure.make_optimizer(model, optimizer)
    for _ in range(steps):
        fit_measure.train_step(model, opt, make_batch, precision, "cuda")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        fit_measure.train_step(model, opt, make_batch, precision, "cuda")
        torch.cuda.synchronize()
    events = prof.events()
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
    spans = sorted((e.time_range.start, e.time_range.end) for e in kernels)
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in spans:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    span = (spans[-1][1] - spans[0][0]) if spans else 0
    classes = {}
    for e in kernels:
        c = classes.setdefault(kernel_class(e.name), {"count": 0, "seconds": 0.0})
        c["count"] += 1
        c["seconds"] += (e.time_range.end - e.time_range.start) / 1e6
    short = [e for e in kernels if e.time_range.end - e.time_range.start < 5]
    cpu_ops = [e for e in events if e.device_type == torch.autograd.DeviceType.CPU]
    wall = (max(e.time_range.end for e in cpu_ops) - min(e.time_range.start for e in cpu_ops)) / 1e6 \
        if cpu_ops else None
    avg = prof.key_averages(group_by_input_shape=True)
    dev_attr = "self_device_time_total" if hasattr(avg[0], "self_device_time_total") else "self_cuda_time_total"
    top = sorted(avg, key=lambda a: getattr(a, dev_attr), reverse=True)[:40]
    gemms = [a for a in avg if a.key in GEMM_OPS]
    row = lambda a: {"op": a.key, "shapes": str(a.input_shapes)[:300], "calls": a.count,
                     "cuda_s": getattr(a, dev_attr) / 1e6, "cpu_s": a.self_cpu_time_total / 1e6}
    return {"step_s": wall, "kernels": len(kernels),
            "kernel_s": sum(e.time_range.end - e.time_range.start for e in kernels) / 1e6,
            "gpu_busy_s": busy / 1e6, "gpu_span_s": span / 1e6,
            "gpu_idle_share": (1 - busy / span) if span else None,
            "short_kernels": {"count": len(short),
                              "seconds": sum(e.time_range.end - e.time_range.start for e in short) / 1e6},
            "cpu_ops": len(cpu_ops),
            "by_kernel_class": classes, "top_ops": [row(a) for a in top],
            "gemms": sorted((row(a) for a in gemms), key=lambda r: -r["cuda_s"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only the cases whose name contains this")
    ap.add_argument("--out", default="/tmp/fit-profile")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("no CUDA device")
    os.makedirs(a.out, exist_ok=True)
    fit_measure.MEASURE_TRAIN["cuda"] = profile_train
    torch.manual_seed(0)
    for name, build in fit_measure.cases("cuda"):
        if (a.only and not any(o in name for o in a.only.split(","))) or "infer" in name:
            continue
        fit_measure.cuda_reset()
        try:
            with torch.device("cuda"):
                _, _, run = build()
            summary = run()
        except Exception as e:
            print(json.dumps({"case": name, "skipped": f"{type(e).__name__}: {e}"}), flush=True)
            continue
        summary = {"case": name, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   **summary}
        with open(os.path.join(a.out, name.replace(" ", "_") + ".json"), "w") as f:
            json.dump(summary, f, indent=1)
        brief = {k: summary[k] for k in ("case", "step_s", "kernels", "kernel_s", "gpu_busy_s",
                                         "gpu_idle_share")}
        brief["by_kernel_class"] = {k: round(v["seconds"] * 1e3, 2) for k, v in
                                    summary["by_kernel_class"].items()}
        print(json.dumps(brief), flush=True)
        del run
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""dlrig's GPU benchmarks against PyTorch on the same card, in one run (issue 14, "On a real GPU").

Runs `dlrig bench --json` for gpu.gemm.* (and gpu.memory.copy, gpu.h2d.pinned) into a scratch
database, then times PyTorch at the same shapes and sizes on the same GPU, with the same method:
CUDA events, warm-up, L2 flushed (a 2 x L2 buffer zeroed) before every timed call, median of the
samples, and the stream held by a spin kernel (torch.cuda._sleep) while the start event, the call
and the end event are queued, as dlrig's gated timer holds it: the interval is the GPU's work, not
Python's dispatch of the call (--ungated: the earlier method, dispatch included). Prints a markdown
table (device name, dlrig, torch, ratio) for docs/bench.md.

  GEMM   torch.matmul per dtype (tf32: torch.backends.cuda.matmul.allow_tf32), fp8:
         torch._scaled_mm (E4M3 with per-tensor scales amax / 448, as dlrig's gpu.gemm.fp8,
         BF16 out; fp8_rowwise: a scale per row of A and per column of B; fp8_block: 1 x 128
         blocks of A and 128 x 128 blocks of B (run on an H100, k/128 a multiple of 4); mxfp8: a power-of-two
         float8_e8m0fnu scale per 32 elements along k in cuBLAS's 128 x 4 tiles, torch 2.7+ on
         a Blackwell GPU, not yet run on one), int8: torch._int_mm;
         rate 2*m*n*k / t.
  copy   dst.copy_(src) on the device, read + write bytes counted (dlrig's convention).
  h2d    pinned host tensor .to('cuda', non_blocking=True), bytes copied.

Usage: perf/gpu_side_by_side.py [--dlrig build/dlrig] [--quick] [--samples 50 | --match-samples]
                                [--results FILE...]
Needs a CUDA GPU and torch with CUDA; anything that cannot run prints n/a with the reason.
Never run in CI (timing belongs here, not in tests). Ran on one NVIDIA H200 on 2026-11-26
(docs/bench.md, "On a real GPU"), from perf/gpu_session.sh.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def dlrig_results(binary, quick, ids):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "bench", "--json", "--db", os.path.join(tmp, "r.db")]
        cmd += ["--quick"] if quick else []
        out = subprocess.run(cmd + ids, capture_output=True, text=True)
        if not out.stdout:
            sys.exit(f"dlrig bench printed nothing: {out.stderr[-2000:]}")
        return json.loads(out.stdout)["results"]


GATE_CYCLES = 2_000_000  # ~1 ms of spinning at GPU clocks: far longer than queueing one call


def timed(torch, fn, flush, samples, gated=True):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        flush.zero_()
        if gated:
            torch.cuda._sleep(GATE_CYCLES)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / 1e3)
    return statistics.median(out)


def to_blocked(torch, scales):
    """A (rows, k/32) scale matrix in cuBLAS's "1D Block Scaling Factors Layout": padded to 128 x 4
    tiles, tiles row-major, within one offset = (row % 32) * 16 + (row % 128 // 32) * 4 + col % 4
    (torchao's to_blocked, torchao/prototype/mx_formats/utils.py; dlrig's gemm::MxLayout)."""
    rows, cols = scales.shape
    rb, cb = -(-rows // 128), -(-cols // 4)
    padded = torch.zeros(rb * 128, cb * 4, dtype=scales.dtype, device=scales.device)
    padded[:rows, :cols] = scales
    blocks = padded.view(rb, 128, cb, 4).permute(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(-1, 32, 16).flatten()


def torch_gemm(torch, precision, m, n, k, flush, samples, gated):
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    if precision in ("fp32", "tf32", "fp16", "bf16"):
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
                 "bf16": torch.bfloat16}[precision]
        a = torch.randn(m, k, device=dev, dtype=dtype)
        b = torch.randn(k, n, device=dev, dtype=dtype)
        fn = lambda: torch.matmul(a, b)
    elif precision == "fp8":
        # Per-tensor scales as dlrig's gpu.gemm.fp8 (docs/bench.md, "FP8 scales"): stored =
        # x * 448 / amax, and _scaled_mm's scale_a / scale_b take amax / 448.
        xa = torch.randn(m, k, device=dev)
        xb = torch.randn(n, k, device=dev)
        scale_a = (xa.abs().max() / 448).float()
        scale_b = (xb.abs().max() / 448).float()
        a = (xa / scale_a).to(torch.float8_e4m3fn)
        b = (xb / scale_b).to(torch.float8_e4m3fn).t()  # column-major, as required
        fn = lambda: torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b,
                                      out_dtype=torch.bfloat16)
    elif precision == "fp8_rowwise":
        # A scale per row of A and per column of B, as dlrig's gpu.gemm.fp8_rowwise (torchao's
        # float8 "rowwise" recipe): scale_a is (m, 1) and scale_b (1, n), float32.
        xa = torch.randn(m, k, device=dev)
        xb = torch.randn(n, k, device=dev)
        scale_a = (xa.abs().amax(dim=1, keepdim=True) / 448).float()
        scale_b = (xb.abs().amax(dim=1, keepdim=True) / 448).float()
        a = (xa / scale_a).to(torch.float8_e4m3fn)
        b = (xb / scale_b).to(torch.float8_e4m3fn).t()  # column-major, as required
        scale_b = scale_b.t().contiguous()
        fn = lambda: torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b,
                                      out_dtype=torch.bfloat16)
    elif precision == "fp8_block":
        # DeepSeek-V3's blocks as dlrig's gpu.gemm.fp8_block gives cuBLASLt: A (m rows) in 1 x 128
        # blocks (VEC128_32F), B (n columns) in 128 x 128 blocks (BLK128x128_32F). torch calls
        # cuBLAS with its operands and their scales swapped for a row-major out (out^T =
        # mat2^T mat1^T, aten/src/ATen/native/cuda/cuBlasCommonArgs.h), so the same pairing is
        # mat1 = B's n x k with a 128 x 128 scale (n/128, k/128), k-blocks contiguous, and
        # mat2 = A's k x m column-major, whose 1 x 128 scale torch takes as (k/128, m)
        # (aten/src/ATen/native/cuda/ScaledBlas.cpp checks scale_b.t(): (m, k/128), m contiguous).
        kb, nb = -(-k // 128), -(-n // 128)
        if kb % 4:
            # torch passes the 128 x 128 scale with a row stride of k/128; cuBLAS wants it a
            # multiple of 4 (docs "Scaling factors layouts").
            raise ValueError(f"k/128 = {kb} is not a multiple of 4")
        pad = torch.nn.functional.pad
        xa = pad(torch.randn(m, k, device=dev), (0, kb * 128 - k))
        xb = pad(torch.randn(n, k, device=dev), (0, kb * 128 - k, 0, nb * 128 - n))
        sa = (xa.view(m, kb, 128).abs().amax(dim=2) / 448).float()           # (m, kb)
        sb = (xb.view(nb, 128, kb, 128).abs().amax(dim=(1, 3)) / 448).float()  # (nb, kb)
        a = (xa.view(m, kb, 128) / sa[:, :, None]).view(m, -1)[:, :k]
        b = (xb.view(nb, 128, kb, 128) / sb[:, None, :, None]).view(nb * 128, -1)[:n, :k]
        mat1 = b.contiguous().to(torch.float8_e4m3fn)        # (n, k) row-major
        mat2 = a.contiguous().to(torch.float8_e4m3fn).t()    # (k, m) column-major
        scale_1, scale_2 = sb.contiguous(), sa.t().contiguous()
        fn = lambda: torch._scaled_mm(mat1, mat2, scale_a=scale_1, scale_b=scale_2,
                                      out_dtype=torch.bfloat16)
    elif precision == "mxfp8":
        # MXFP8 as dlrig's gpu.gemm.mxfp8 (docs/bench.md, "MXFP8"): each 32 elements along k of a
        # row of A and of B's n x k share X = 2^(floor(log2 amax) - 8) (frexp: amax = f * 2^e,
        # f in [0.5, 1), so floor(log2 amax) = e - 1), stored = E4M3(x / X) saturating at 448,
        # the scales as float8_e8m0fnu bytes 127 + log2 X in the tiled layout. torch swaps the
        # operands and their scales for a row-major out; both scales have the same form, so
        # scale_a goes with mat1 = A (m, k) and scale_b with mat2 = B (k, n) column-major.
        if k % 32:
            raise ValueError(f"k = {k} is not a multiple of 32")

        def mx(x):
            blocks = x.view(x.shape[0], k // 32, 32)
            e = torch.frexp(blocks.abs().amax(dim=2))[1] - 1 - 8
            e = e.clamp(-127, 127)
            q = (blocks / torch.exp2(e.float())[:, :, None]).clamp(-448, 448)
            return (q.view(x.shape).to(torch.float8_e4m3fn),
                    (e + 127).to(torch.uint8).view(torch.float8_e8m0fnu))

        a, scale_a = mx(torch.randn(m, k, device=dev))
        b, scale_b = mx(torch.randn(n, k, device=dev))
        scale_a, scale_b = to_blocked(torch, scale_a), to_blocked(torch, scale_b)
        fn = lambda: torch._scaled_mm(a, b.t(), scale_a=scale_a, scale_b=scale_b,
                                      out_dtype=torch.bfloat16)
    elif precision == "int8":
        a = torch.randint(-127, 128, (m, k), device=dev, dtype=torch.int8)
        b = torch.randint(-127, 128, (k, n), device=dev, dtype=torch.int8)
        fn = lambda: torch._int_mm(a, b)
    else:
        raise ValueError(precision)
    return 2 * m * n * k / timed(torch, fn, flush, samples, gated) / 1e12


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dlrig", default=os.path.join(os.path.dirname(__file__), "..", "build", "dlrig"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--ungated", action="store_true", help="time torch without holding the stream "
                    "(Python's dispatch of each call inside the interval, the first run's method)")
    ap.add_argument("--match-samples", action="store_true",
                    help="time torch with as many samples as dlrig's result took (seconds.samples), "
                    "so both spend as long at the card's power limit; default --samples each")
    ap.add_argument("--only", help="only the dlrig results whose id contains this (gpu.gemm.fp16 ...)")
    ap.add_argument("--results", nargs="+", help="`dlrig bench --json` outputs saved earlier on this GPU "
                    "(skips running dlrig again)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        sys.exit(f"n/a: torch is not importable ({e})")
    if not torch.cuda.is_available():
        sys.exit("n/a: torch sees no CUDA device")
    props = torch.cuda.get_device_properties(0)
    flush = torch.empty(max(2 * getattr(props, "L2_cache_size", 0), 1 << 20) // 4,
                        device="cuda", dtype=torch.float32)
    if args.results:
        results = []
        for path in args.results:
            try:
                with open(path) as f:
                    results += json.load(f)["results"]
            except (OSError, ValueError, KeyError) as e:  # a run that was cut short
                print(f"{path}: no results ({type(e).__name__}: {e})", file=sys.stderr)
    else:
        results = dlrig_results(args.dlrig, args.quick,
                                ["gpu.gemm", "gpu.memory.copy", "gpu.h2d.pinned"])
    rows = []
    for r in results:
        d = r.get("details") or {}
        if r["status"] != "measured" or d.get("gpu", 0) != 0:
            continue
        if args.only and not any(o in r["id"] for o in args.only.split(",")):
            continue
        gated = not args.ungated
        mine = r["rate"]["median"]
        samples = args.samples
        if args.match_samples and (r.get("seconds") or {}).get("samples"):
            samples = int(r["seconds"]["samples"])
        try:
            if r["family"] == "gpu.gemm":
                what = f'{d["precision"]} {d["m"]}x{d["n"]}x{d["k"]}'
                theirs = torch_gemm(torch, d["precision"], d["m"], d["n"], d["k"], flush,
                                    samples, gated)
            elif r["id"] == "gpu.memory.copy":
                n = d["buffer_bytes"]
                src = torch.empty(n, dtype=torch.uint8, device="cuda")
                dst = torch.empty_like(src)
                what = f"D2D copy {n >> 20} MiB"
                theirs = 2 * n / timed(torch, lambda: dst.copy_(src), flush, samples, gated) / 1e9
            elif r["id"] == "gpu.h2d.pinned":
                n = d["bytes"]
                host = torch.empty(n, dtype=torch.uint8).pin_memory()
                what = f"H2D pinned {n >> 20} MiB"
                theirs = n / timed(torch, lambda: host.to("cuda", non_blocking=True), flush,
                                   samples, gated) / 1e9
            else:
                continue
        except Exception as e:  # a dtype this torch or GPU lacks
            rows.append((r["id"], r["config"], mine, None, r["rate_unit"], f"n/a: {e}"))
            continue
        rows.append((r["id"], what, mine, theirs, r["rate_unit"], ""))
    print(f"Device: {props.name} (torch {torch.__version__}, CUDA {torch.version.cuda}); torch timed "
          f"{'ungated (dispatch inside the interval)' if args.ungated else 'gated (stream held while queued)'}\n")
    print("| benchmark | shape / size | dlrig | torch | unit | dlrig / torch |")
    print("|---|---|---|---|---|---|")
    for bid, what, mine, theirs, unit, note in rows:
        t = f"{theirs:.1f}" if theirs else note
        ratio = f"{mine / theirs:.3f}" if theirs else "n/a"
        print(f"| {bid} | {what} | {mine:.1f} | {t} | {unit} | {ratio} |")


if __name__ == "__main__":
    main()

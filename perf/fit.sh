#!/usr/bin/env bash
# Times `dlrig fit` (20 runs each, median and p90 in milliseconds, whole process):
#   1. one estimate: Llama-3-8B-shaped sharded checkpoint on a saved snapshot's GPU;
#   2. --max-batch for a Llama-3-70B-shaped checkpoint on the same GPU;
#   3. --max-batch --all-gpus for the 70B model over the catalog (needs the knowledge base's GPU
#      catalog in the build; "n/a" otherwise).
# The checkpoints are written sparse (real headers, no weight bytes on disk) under $TMPDIR.
# Usage: perf/fit.sh [path/to/dlrig]   (default: build/dlrig)
set -euo pipefail
DLRIG=${1:-build/dlrig}
RUNS=${RUNS:-20}
WORK=${TMPDIR:-/tmp}/dlrig-bench-fit
mkdir -p "$WORK"

python3 - "$WORK" <<'EOF'
import json, os, struct, sys
work = sys.argv[1]

def shard(path, tensors):
    header, at = {}, 0
    for name, shape in tensors:
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [at, at + n]}
        at += n
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
    os.truncate(path, 8 + len(text) + at)

def llama(folder, layers, h, kv, inter, vocab=128256):
    os.makedirs(folder, exist_ok=True)
    if os.path.exists(os.path.join(folder, "model.safetensors.index.json")):
        return
    a, b = [("model.embed_tokens.weight", [vocab, h])], []
    for l in range(layers):
        p = f"model.layers.{l}."
        s = a if l < layers // 2 else b
        s += [(p + "self_attn.q_proj.weight", [h, h]), (p + "self_attn.k_proj.weight", [kv, h]),
              (p + "self_attn.v_proj.weight", [kv, h]), (p + "self_attn.o_proj.weight", [h, h]),
              (p + "mlp.gate_proj.weight", [inter, h]), (p + "mlp.up_proj.weight", [inter, h]),
              (p + "mlp.down_proj.weight", [h, inter]), (p + "input_layernorm.weight", [h]),
              (p + "post_attention_layernorm.weight", [h])]
    b += [("model.norm.weight", [h]), ("lm_head.weight", [vocab, h])]
    names = {}
    for i, t in ((1, a), (2, b)):
        f = f"model-0000{i}-of-00002.safetensors"
        shard(os.path.join(folder, f), t)
        names.update({n: f for n, _ in t})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": names}, f)

llama(os.path.join(work, "llama-3-8b"), 32, 4096, 1024, 14336)
llama(os.path.join(work, "llama-3-70b"), 80, 8192, 1024, 28672)
snap = {"schema_version": 1,
        "host": {"cpu": {"model": "bench CPU", "cores": 16, "max_hz": 4.0e9, "isa": ["avx2", "fma"]}},
        "gpus": [{"bdf": "0000:01:00.0", "vendor": "NVIDIA",
                  "nvml": {"index": 0, "name": "bench GPU 80GB", "memory_total_bytes": 85899345920,
                           "compute_capability": "9.0"}}]}
with open(os.path.join(work, "snapshot.json"), "w") as f:
    json.dump(snap, f)
EOF

source "$(dirname "$0")/time_it.sh"

SNAP="$WORK/snapshot.json"
printf '| case | median ms | p90 ms |\n|---|---|---|\n'
read -r m p < <(time_it "$DLRIG" fit "$WORK/llama-3-8b" --from "$SNAP" --lora 16 --seq 2048 --json)
printf '| one estimate (8B, LoRA, snapshot GPU) | %s | %s |\n' "$m" "$p"
read -r m p < <(time_it "$DLRIG" fit "$WORK/llama-3-70b" --from "$SNAP" --mode infer --seq 4096 --max-batch --json)
printf '| --max-batch (70B serving, snapshot GPU) | %s | %s |\n' "$m" "$p"
read -r m p < <(time_it "$DLRIG" fit "$WORK/llama-3-70b" --mode infer --seq 4096 --max-batch --all-gpus --json)
printf '| --max-batch --all-gpus (70B serving) | %s | %s |\n' "$m" "$p"
echo
BENCH=$(dirname "$DLRIG")/dlrig_perf_fit
if [ -x "$BENCH" ]; then
  echo "One estimate inside the library (memory + time, no process start):"
  "$BENCH"
else
  echo "One estimate inside the library: build the dlrig_perf_fit target"
fi

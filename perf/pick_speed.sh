#!/usr/bin/env bash
# Times `dlrig pick` over the whole catalog (every GPU x count, new and used, every rental and
# cloud instance: each sized by fit's memory model and timed by its time model), 20 runs each,
# median and p90 in milliseconds of the whole process (start, knowledge base, pick, printing), and
# the median CPU time of the process (what other builds on a shared machine do not inflate).
# Target (issue 16): under 100 ms for one pick on the 2-core machine.
# Usage: perf/pick_speed.sh [path/to/dlrig [path/to/baseline-dlrig]]   (default: build/dlrig)
# With a baseline, each case is timed for the baseline and then for dlrig, one after the other,
# so that both see the same load.
set -euo pipefail
DLRIG=${1:-build/dlrig}
BASELINE=${2:-}
RUNS=${RUNS:-20}
export TIME_IT_CPU=1
source "$(dirname "$0")/time_it.sh"

row() {
  local label=$1
  shift
  local m p c
  if [[ -n $BASELINE ]]; then
    read -r m p c < <(time_it "$BASELINE" pick "$@" --json)
    printf '| %s | baseline | %s | %s | %s |\n' "$label" "$m" "$p" "$c"
    read -r m p c < <(time_it "$DLRIG" pick "$@" --json)
    printf '| %s | this | %s | %s | %s |\n' "$label" "$m" "$p" "$c"
  else
    read -r m p c < <(time_it "$DLRIG" pick "$@" --json)
    printf '| %s | %s | %s | %s |\n' "$label" "$m" "$p" "$c"
  fi
}

if [[ -n $BASELINE ]]; then
  printf '| case | binary | median ms | p90 ms | CPU ms (median) |\n|---|---|---|---|---|\n'
else
  printf '| case | median ms | p90 ms | CPU ms (median) |\n|---|---|---|---|\n'
fi
row "Llama-3-8B LoRA, 2e8 tokens within 24 h" llama-3-8b --lora 16 --seq 2048 \
  --dataset-tokens 2e8 --within 24h
row "Llama-3-70B int4 serving at 20 tok/s" llama-3-70b --mode infer --quant int4 \
  --tokens-per-s 20
row "ResNet-50, 90 ImageNet epochs within 24 h" resnet-50 --precision fp16-amp --batch 256 \
  --samples 1281167 --epochs 90 --within 24h
row "Llama-3.2-1B LoRA, no goal (tiers)" llama-3.2-1b --lora 16 --seq 1024
row "pick --help (process start only, for scale)" --help

#!/usr/bin/env bash
# Everything dlrig does on a GPU, in one prepared run on a lent GPU machine, beside PyTorch on the
# same card (docs/testing.md, "On a real GPU"). Each step has its own time limit and the whole run a
# deadline, so a step that hangs costs only itself; every output lands under OUT/run and is packed
# into OUT/run.tgz after each step (what a killed run had finished still comes back).
#
#   [ONLY="machine gemm ..."] [PRECISIONS="bf16 ..."] perf/gpu_session.sh OUT [BUNDLE] [SECONDS]
#
# GEMM_LIMIT (default 45) is each precision's time limit in seconds, CPU_LIMIT (default 90) the cpu
# group's (its three GEMM rounds alone took 90 s on a 16-vCPU Xeon: ROUNDS=1 or a larger limit);
# SIDE_ARGS more arguments for the side-by-side (--match-samples: torch timed with as many samples
# as dlrig took).
# ONLY names the groups to run (default all): machine, software (info, snapshot, doctor,
# collect_env), capture, fit, gemm, memory, link, multi, side, extras (serve/watch once, text runs);
# and, named only: quick (the whole --quick GPU suite, timed), fitnew (FIT_ONLY cases of
# perf/fit_measure.py), categories (its --categories on CATEGORIES_ONLY), profile (perf/fit_profile.py),
# cpu (perf/bench_side_by_side.sh on this machine's CPU; STREAM_C in BUNDLE/stream.c), long (--long
# gpu.gemm.bf16, interrupted during its first configuration, which ends at its next sample), repeat (gemm + side
# once more), cpucore (cpu with dlrig's OpenBLAS told the core: OPENBLAS_CORETYPE=$CORE), ranks
# (nccl.* as ranks of a multi-process job through the real NCCL). DEEP=0 leaves out the --deep
# snapshot and doctor, UNGATED=0 the ungated side-by-side.
# BUNDLE (default .devrun): perf/gpu_bundle.sh's bundle.tar.xz (dlrig, the shared libraries it
# links, pci.ids), built on another machine. SECONDS (default 500): the deadline.
# Steps, most important first: the machine (nvidia-smi, torch), info/snapshot/doctor (also on the
# machine's own collect_env report), a fixture (perf/capture_machine.py), fit against measured
# PyTorch memory and step time (perf/fit_measure.py) with `dlrig watch` recording meanwhile, the GPU
# benchmarks, the side-by-side with torch (perf/gpu_side_by_side.py), serve/watch once.
set -u
OUT=${1:?usage: perf/gpu_session.sh OUT [BUNDLE] [SECONDS]}
BUNDLE=$(cd "${2:-.devrun}" && pwd)
BUNDLE_DIR=$BUNDLE # where extra inputs lie (stream.c for the cpu group)
if [[ -f $BUNDLE/bundle.tar.xz ]]; then # perf/gpu_bundle.sh's archive
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$BUNDLE/bundle.tar.xz" /tmp/dlrig-bundle
  BUNDLE=/tmp/dlrig-bundle
fi
DEADLINE=$(($(date +%s) + ${3:-500}))
R=$OUT/run
mkdir -p "$R"
export LD_LIBRARY_PATH=$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DLRIG_PCI_IDS=$BUNDLE/pci.ids
export XDG_DATA_HOME=$R/xdg # bench stores here, fit reads the measured GEMM rates from here
export NO_COLOR=1 PYTHONUNBUFFERED=1
# The driver's libraries where the loader's cache lacks them (a container with the driver mounted).
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/nvidia/lib64:/usr/local/nvidia/lib
fi
D=$BUNDLE/dlrig

pack() { tar czf "$OUT/run.tgz.tmp" -C "$OUT" run 2>/dev/null && mv "$OUT/run.tgz.tmp" "$OUT/run.tgz"; }

want() { [[ -z ${ONLY:-} || " $ONLY " == *" $1 "* ]]; }
named() { [[ " ${ONLY:-} " == *" $1 "* ]]; }

# step NAME LIMIT CMD...: stdout to NAME.out, stderr to NAME.err, rc and seconds to steps.txt.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((DEADLINE - $(date +%s)))
  if ((left < 5)); then
    echo "$name skipped: deadline" | tee -a "$R/steps.txt"
    return
  fi
  ((limit > left)) && limit=$left
  local t0 t1
  t0=$(date +%s%N)
  timeout -k 5 "$limit" "$@" >"$R/$name.out" 2>"$R/$name.err"
  local rc=$?
  t1=$(date +%s%N)
  echo "$name rc=$rc $(((t1 - t0) / 1000000)) ms (limit $limit s)" | tee -a "$R/steps.txt"
  pack
}

if want machine; then
  step machine 30 bash -c 'uname -a; cat /etc/os-release; nvidia-smi; nvidia-smi -q;
    python3 -c "import torch, sys; print(sys.version); print(torch.__version__, torch.version.cuda,
    torch.backends.cudnn.version(), torch.cuda.get_device_name(), torch.cuda.get_device_properties(0))";
    ldd '"$D"'; nproc; free -g; df -h .'
  step version 10 "$D" --version
fi
if named quick; then # issue 14: the whole --quick GPU suite on one GPU, under 60 s
  step bench-quick-gpu 120 "$D" bench --quick --json gpu.gemm gpu.memory gpu.launch gpu.h2d gpu.d2h gpu.bidir gpu.p2p nccl
fi
if want software; then
  step info 30 "$D" info
  step info-json 30 "$D" info --json
  step snapshot 30 "$D" snapshot
  [[ ${DEEP:-1} == 1 ]] && step snapshot-deep 60 "$D" snapshot --deep --deep-timeout 30
  step doctor 60 "$D" doctor
  [[ ${DEEP:-1} == 1 ]] && step doctor-deep-json 90 "$D" doctor --deep --deep-timeout 30 --json
  step collect-env 60 python3 -m torch.utils.collect_env
  step doctor-collect-env 30 "$D" doctor --from "$R/collect-env.out"
  step info-collect-env 30 "$D" info --from "$R/collect-env.out"
fi
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
want capture && step capture 60 python3 perf/capture_machine.py "$R/fixture" --source "one ${GPU_NAME:-NVIDIA GPU} lent by the device tool"
if want fit; then
  "$D" watch --json --interval 0.5 --record "$R/watch-fit.jsonl" >/dev/null 2>"$R/watch-record.err" &
  WATCH=$!
  step fit-measure 150 python3 perf/fit_measure.py --device cuda --dlrig "$D" --out "$R/fit-configs"
  kill -INT $WATCH 2>/dev/null
  wait $WATCH 2>/dev/null
  step watch-replay 20 "$D" watch --replay "$R/watch-fit.jsonl"
fi
if want gemm; then
  step bench-list 20 "$D" bench --list
  for p in ${PRECISIONS:-bf16 fp16 fp8 fp8_rowwise fp8_block mxfp8 tf32 fp32 int8}; do
    step "bench-gemm-$p" "${GEMM_LIMIT:-45}" "$D" bench --json "gpu.gemm.$p"
  done
fi
want memory && step bench-memory 50 "$D" bench --json gpu.memory gpu.launch
want link && step bench-link 60 "$D" bench --json gpu.h2d gpu.d2h gpu.bidir
want multi && step bench-multi 15 "$D" bench --json gpu.p2p nccl
# ranks: nccl.* as one rank of a multi-process job through the real NCCL: a job of one rank, then two
# ranks on a one-GPU machine (both on GPU 0, which NCCL refuses: the message must say so).
if named ranks; then
  step bench-nccl-rank 30 "$D" bench --json --rank 0 --nranks 1 --rendezvous 127.0.0.1:29611 nccl.all_reduce
  step bench-nccl-2ranks 40 bash -c '"$0" bench --json --rank 1 --nranks 2 --rendezvous 127.0.0.1:29612 nccl.all_reduce 2>&1 >/dev/null | sed "s/^/rank1: /" & "$0" bench --json --rank 0 --nranks 2 --rendezvous 127.0.0.1:29612 nccl.all_reduce; echo "rank0 rc=$?"; wait' "$D"
fi
if want side; then
  step side-by-side 80 python3 perf/gpu_side_by_side.py --samples 20 ${SIDE_ARGS:-} --dlrig "$D" --results "$R"/bench-gemm-*.out "$R/bench-memory.out" "$R/bench-link.out"
  [[ ${UNGATED:-1} == 1 ]] && step side-by-side-ungated 80 python3 perf/gpu_side_by_side.py --ungated --samples 20 --dlrig "$D" --results "$R"/bench-gemm-*.out "$R/bench-memory.out" "$R/bench-link.out"
fi
named fitnew && step fit-new 120 python3 perf/fit_measure.py --device cuda --dlrig "$D" --out "$R/fit-new" --only "${FIT_ONLY:-falcon,QA,clip}"
named categories && step fit-categories 90 python3 perf/fit_measure.py --device cuda --categories --dlrig "$D" --out "$R/fit-cat" --only "${CATEGORIES_ONLY:-gpt2 bf16,bert,llama-1b-shape bf16-amp b4 s1024}"
named profile && step fit-profile 150 python3 perf/fit_profile.py --out "$R/profile"
if named cpu; then
  step cpu-side-by-side "${CPU_LIMIT:-90}" env STREAM_C="$BUNDLE_DIR/stream.c" BUILD="$BUNDLE" BENCH_VENV=/nonexistent perf/bench_side_by_side.sh /tmp
fi
# One SIGINT (--foreground: to dlrig only, not the group, which would be a second Ctrl-C) a few
# seconds in: the first --long configuration (60 s sustained) ends at its next sample and is kept
# (details.interrupted), none follows.
# cpucore: the same with dlrig (only dlrig: numpy's and torch's own libraries keep their choice)
# running OpenBLAS with OPENBLAS_CORETYPE=$CORE (default SkylakeX), for a CPU whose model OpenBLAS
# does not recognise (docs/bench.md, cpu.gemm).
if named cpucore; then
  W=/tmp/dlrig-core
  mkdir -p "$W"
  printf '#!/bin/sh\nOPENBLAS_CORETYPE=%s exec %s "$@"\n' "${CORE:-SkylakeX}" "$BUNDLE/dlrig" >"$W/dlrig"
  chmod +x "$W/dlrig"
  ln -sf "$BUNDLE/dlrig_perf_io" "$W/dlrig_perf_io"
  step cpu-side-by-side-core 90 env STREAM_C="$BUNDLE_DIR/stream.c" BUILD="$W" BENCH_VENV=/nonexistent perf/bench_side_by_side.sh /tmp
fi
named long && step bench-long-bf16 90 timeout --foreground -s INT 5 "$D" bench --long --json gpu.gemm.bf16
if named repeat; then
  for p in ${REPEAT_PRECISIONS:-fp16 fp32}; do
    step "bench-gemm2-$p" 45 "$D" bench --json "gpu.gemm.$p"
  done
  step side-by-side-2 80 python3 perf/gpu_side_by_side.py --samples 20 --dlrig "$D" --results "$R"/bench-gemm2-*.out
fi
if want extras; then
  step serve-once 20 "$D" serve --once
  step watch-once 20 "$D" watch --once
  step bench-text 40 "$D" bench --quick gpu.gemm.bf16 gpu.memory.copy gpu.h2d.pinned
  step fit-text 20 "$D" fit tests/data/models/qwen3-8b.json --batch 4 --seq 4096 --precision bf16-amp
  step machine-after 20 nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE
fi
pack
echo "done: $R"

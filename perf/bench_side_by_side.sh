#!/usr/bin/env bash
# dlrig against the reference tool for each host benchmark, in one run on one machine, with the
# ratios (issue 13): numpy/torch matmul vs dlrig's cpu.gemm, the reference stream.c vs cpu.stream,
# fio vs storage.read on the same file, and data.decode's rate for the record.
#
# Usage: perf/bench_side_by_side.sh [DIR]   (DIR: where the 1 GiB test file goes; default .)
# STREAM_FIFO=1 (root) runs both STREAM tools under SCHED_FIFO: a fair pair on a machine shared with other work.
# Needs: build/dlrig_perf_io (cmake --build build --target dlrig_perf_io), fio (scripts/deps.sh),
# a C compiler with OpenMP; optional: the venv /work/venv-bench (or $BENCH_VENV) with numpy and
# torch (pip install numpy; pip install torch --index-url https://download.pytorch.org/whl/cpu).
# stream.c: STREAM_C=PATH (a local copy), else downloaded at run time from its official site; never
# committed (its licence asks that modified versions and results be labelled; see its header).
# Needs build/dlrig too (cpu.gemm and cpu.stream run through `dlrig bench --json`, scratch db).
# Anything that cannot run here prints n/a with the reason; nothing is guessed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
dir=${1:-.}
venv=${BENCH_VENV:-/work/venv-bench}
py=python3
[ -x "$venv/bin/python" ] && py=$venv/bin/python
threads=$(nproc)
work=$(mktemp -d)
file="$dir/.dlrig-side-by-side.bin"
cleanup() { rm -rf "$work"; rm -f "$file"; }
trap cleanup EXIT INT TERM

rows=()
row() { rows+=("| $1 | $2 | $3 | $4 | $5 |"); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

echo "== machine" >&2
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
fs=$(df -PT "$dir" | awk 'NR == 2 { print $2 " on " $1 }')
echo "$cpu, $threads threads, $(uname -r), $fs" >&2

# --- GEMM: numpy and torch at the same sizes and threads; dlrig's cpu.gemm through the CLI.
echo "== gemm" >&2
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
gemm_py=$(cat <<'PY'
import sys, time
n, lib, dt = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def best(f, reps=5):
    f(); ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    ts.sort(); return ts[len(ts) // 2]
if lib == "numpy":
    import numpy as np
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(dt); b = rng.standard_normal((n, n)).astype(dt)
    t = best(lambda: np.matmul(a, b))
else:
    import torch
    torch.set_num_threads(int(sys.argv[4]))
    d = {"float32": torch.float32, "float64": torch.float64}[dt]
    a = torch.randn(n, n, dtype=d); b = torch.randn(n, n, dtype=d)
    t = best(lambda: torch.matmul(a, b))
print(f"{2 * n**3 / t / 1e9:.1f}")
PY
)
# dlrig's cpu.gemm at the standard tier (n = 512, 1024, 2048; all threads and one), then numpy and
# torch at n = 2048, in ROUNDS interleaved rounds (default 3): on a shared VM whose speed drifts by
# tens of percent over minutes, only runs made next to each other compare. Each round gives a ratio
# (dlrig's median over the faster reference's median of the same round); the table shows the medians
# over the rounds and every round's ratio.
rounds=${ROUNDS:-3}
dlrig_gemm() { # $1 json file, $2 dtype; prints the median GFLOP/s at n = 2048 with every thread, or n/a
  "$py" -c "import json,sys
d=json.load(open('$1')); i={'float32':'cpu.gemm.sgemm','float64':'cpu.gemm.dgemm'}['$2']
v=[r['rate']['median'] for r in d.get('results',[]) if r.get('id')==i and r.get('status')=='measured'
   and r['details'].get('n')==2048 and r['details'].get('threads')==$threads]
print('%.1f' % v[0] if v else 'n/a')" 2>/dev/null || echo n/a
}
median() { tr ' ' '\n' | grep -v '^n/a$' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A dl_r np_r th_r q_r
for ((k = 1; k <= rounds; k++)); do
  echo "   round $k of $rounds" >&2
  "$build/dlrig" bench cpu.gemm.sgemm cpu.gemm.dgemm --json --db "$work/side.db" \
    >"$work/gemm.json" 2>/dev/null || true
  for dt in float32 float64; do
    dl=$(dlrig_gemm "$work/gemm.json" $dt)
    np_g=$("$py" -c "$gemm_py" 2048 numpy $dt 2>/dev/null) || np_g=n/a
    th_g=$("$py" -c "$gemm_py" 2048 torch $dt "$threads" 2>/dev/null) || th_g=n/a
    ref=$(awk -v a="$np_g" -v b="$th_g" 'BEGIN { if (a == "n/a") print b; else if (b == "n/a" || a + 0 > b + 0) print a; else print b }')
    dl_r[$dt]+="$dl "; np_r[$dt]+="$np_g "; th_r[$dt]+="$th_g "; q_r[$dt]+="$(ratio "$dl" "$ref") "
  done
done
for dt in float32 float64; do
  each=$(echo "${q_r[$dt]}" | xargs | sed 's/ /, /g')
  row "GEMM $dt 2048², $threads threads (GFLOP/s), median of $rounds interleaved rounds" \
    "$(echo "${dl_r[$dt]}" | median)" \
    "numpy $(echo "${np_r[$dt]}" | median) / torch $(echo "${th_r[$dt]}" | median)" \
    "$(echo "${q_r[$dt]}" | median) (rounds: $each)" "≥ 0.95"
done

# --- STREAM triad: the reference stream.c against dlrig's cpu.stream, same array size and threads.
echo "== stream" >&2
# STREAM_FIFO=1 (root): the STREAM runs (a few seconds each) under SCHED_FIFO priority 10, so on a
# machine shared with other work neither tool is preempted by it (the kernel's RT throttle still
# leaves the others 5 % of every second). Both tools get the same treatment.
fifo=()
[ "${STREAM_FIFO:-0}" = 1 ] && command -v chrt >/dev/null && fifo=(chrt -f 10)
"${fifo[@]}" "$build/dlrig" bench cpu.stream.triad --json --db "$work/side.db" >"$work/stream.json" 2>/dev/null || true
read -r dl_st elems < <("$py" -c "import json
d=json.load(open('$work/stream.json')); v=[r for r in d.get('results',[]) if r.get('id')=='cpu.stream.triad' and r.get('status')=='measured' and r['details'].get('numa_node') is None]
print('%.1f %d' % (v[0]['rate']['best'], v[0]['details']['elements']) if v else 'n/a 0')" 2>/dev/null || echo "n/a 0")
st=n/a; st_why=""
# stream.c: $STREAM_C (a local copy), else the official site. Never committed (its licence asks
# that results of modified versions be labelled).
src=${STREAM_C:-}
if [ -z "$src" ] && curl -sSfL --max-time 30 -o "$work/stream.c" https://www.cs.virginia.edu/stream/FTP/Code/stream.c 2>/dev/null; then
  src=$work/stream.c
fi
if [ -n "$src" ] && [ "${elems:-0}" -gt 0 ]; then
  if cc -O3 -march=native -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$elems" -DNTIMES=10 "$src" -o "$work/stream" 2>/dev/null; then
    st=$(OMP_NUM_THREADS=$threads "${fifo[@]}" "$work/stream" | awk '/^Triad:/ { printf "%.1f", $2 / 1000 }')
  else st_why=" (compile failed)"; fi
elif [ -z "$src" ]; then st_why=" (no stream.c: no network; set STREAM_C=PATH)"; fi
row "STREAM triad best of 10, $elems elements, $threads threads$([ ${#fifo[@]} -gt 0 ] && echo ", both SCHED_FIFO") (GB/s)" "$dl_st" "stream.c $st$st_why" "$(ratio "$dl_st" "$st")" "≥ 0.95"
# Like for like: dlrig without its huge-page advice, so both run on the pages the system gives
# (stream.c's static arrays get 4 KiB pages where THP is `madvise`); stream.c run again beside it.
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
dl_4k=$(DLRIG_STREAM_HUGE_PAGES=0 "${fifo[@]}" "$build/dlrig" bench cpu.stream.triad --json --db "$work/side.db" 2>/dev/null |
  "$py" -c "import json,sys
v=[r for r in json.load(sys.stdin).get('results',[]) if r.get('status')=='measured' and r['details'].get('numa_node') is None]
print('%.1f' % v[0]['rate']['best'] if v else 'n/a')" 2>/dev/null || echo n/a)
st2=n/a
[ -x "$work/stream" ] && st2=$(OMP_NUM_THREADS=$threads "${fifo[@]}" "$work/stream" | awk '/^Triad:/ { printf "%.1f", $2 / 1000 }')
sched=""
[ ${#fifo[@]} -gt 0 ] && sched=", both SCHED_FIFO"
row "STREAM triad as above, dlrig without MADV_HUGEPAGE (THP mode: ${thp:-unknown})$sched (GB/s)" "$dl_4k" "stream.c $st2" "$(ratio "$dl_4k" "$st2")" "—"

# --- Storage: fio and dlrig on the same 1 GiB file, O_DIRECT, queue depth 32.
echo "== storage" >&2
if command -v fio >/dev/null; then
  fio --name=prep --filename="$file" --size=1g --rw=write --bs=1M --direct=1 --end_fsync=1 \
      --randrepeat=0 --output-format=json >/dev/null 2>&1
  fio_seq=$(fio --name=seq --filename="$file" --size=1g --rw=read --bs=1M --direct=1 \
      --ioengine=libaio --iodepth=32 --runtime=10 --time_based --output-format=json 2>/dev/null |
      "$py" -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['read']['bw_bytes'])")
  fio_rand=$(fio --name=rand --filename="$file" --size=1g --rw=randread --bs=4k --direct=1 \
      --ioengine=libaio --iodepth=32 --runtime=10 --time_based --output-format=json 2>/dev/null |
      "$py" -c "import json,sys; print(round(json.load(sys.stdin)['jobs'][0]['read']['iops']))")
  out=$("$build/dlrig_perf_io" storage "$file" 32 5)
  dl_seq=$(sed -n 's/^seq_bytes_per_s //p' <<<"$out")
  dl_rand=$(sed -n 's/^rand_iops //p' <<<"$out")
  g() { awk -v v="$1" 'BEGIN { if (v == "n/a" || v == "") print "n/a"; else printf "%.2f", v / 1e9 }'; }
  row "sequential read 1 MiB, QD 32 (GB/s)" "$(g "$dl_seq")" "fio $(g "$fio_seq")" "$(ratio "$dl_seq" "$fio_seq")" "0.95–1.05"
  row "random read 4 KiB, QD 32 (IOPS)" "$dl_rand" "fio $fio_rand" "$(ratio "$dl_rand" "$fio_rand")" "0.90–1.10"
  echo "dlrig: $(sed -n 's/^verdict //p' <<<"$out")" >&2
else
  row "storage" "n/a" "fio not installed (scripts/deps.sh)" "n/a" ""
fi

# --- JPEG decode: no reference tool; dlrig's figure for the record.
echo "== decode" >&2
dec=$("$build/dlrig_perf_io" decode "$threads" 3)
row "JPEG decode 500×375, 1 / $threads threads (images/s)" \
  "$(sed -n 's/^images_per_s_1 //p' <<<"$dec") / $(sed -n 's/^images_per_s_all //p' <<<"$dec")" \
  "—" "—" "—"

echo
echo "Machine: $cpu, $threads threads, kernel $(uname -r), $fs; $(date -u +%Y-%m-%dT%H:%MZ);"\
  "load average (1, 5, 15 min) $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after"
echo
echo "| measurement | dlrig | reference | dlrig / reference | target |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"

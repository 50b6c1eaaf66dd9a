#!/usr/bin/env bash
# cpu.stream.triad at each vector width dlrig has (DLRIG_STREAM_VECTOR_BYTES=16, 32, 64: SSE2,
# AVX2, AVX-512F) beside the reference stream.c built for this CPU (-march=native) and for plain
# x86-64 (SSE2), same array size and threads, in ROUNDS interleaved rounds (default 3), so a
# machine whose speed drifts compares runs made next to each other. Prints a table of GB/s.
#   STREAM_C=stream.c [DLRIG=build/dlrig] [ROUNDS=3] perf/stream_widths.sh
set -uo pipefail
dlrig=${DLRIG:-build/dlrig}
src=${STREAM_C:?set STREAM_C to a copy of stream.c (https://www.cs.virginia.edu/stream/FTP/Code/stream.c)}
rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
threads=$(nproc)
best() { python3 -c "import json,sys
r=[r for r in json.load(sys.stdin)['results'] if r.get('status')=='measured' and r['details'].get('numa_node') is None]
print('%.1f %d %s' % (r[0]['rate']['best'], r[0]['details']['elements'], r[0]['details'].get('vector_bytes', 16)) if r else 'n/a 0 -')"; }
read -r _ elems _ < <("$dlrig" bench cpu.stream.triad --json --db "$work/s.db" 2>/dev/null | best)
[[ ${elems:-0} -gt 0 ]] || { echo "dlrig's cpu.stream.triad did not run" >&2; exit 1; }
cc -O3 -march=native -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$elems" -DNTIMES=10 "$src" -o "$work/native"
cc -O3 -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$elems" -DNTIMES=10 "$src" -o "$work/sse2"
declare -A got
for ((k = 1; k <= rounds; k++)); do
  for w in 16 32 64; do
    read -r rate _ used < <(DLRIG_STREAM_VECTOR_BYTES=$w "$dlrig" bench cpu.stream.triad --json --db "$work/s.db" 2>/dev/null | best)
    got["dlrig $w B (ran $used B)"]+="$rate "
  done
  for b in native sse2; do
    got["stream.c $b"]+="$(OMP_NUM_THREADS=$threads "$work/$b" | awk '/^Triad:/ { printf "%.1f", $2 / 1000 }') "
  done
done
echo "$(lscpu | sed -n 's/^Model name: *//p' | head -1), $threads threads, $elems elements per array, $(date -u +%FT%RZ)"
echo
echo "| triad, best of 10 (GB/s) | each round | median |"
echo "|---|---|---|"
for key in "${!got[@]}"; do
  med=$(echo "${got[$key]}" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "| $key | ${got[$key]} | $med |"
done | sort

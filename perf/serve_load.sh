#!/usr/bin/env bash
# Load on `dlrig serve`: wrk (Debian's package) scrapes /metrics over loopback for a few seconds
# and reports scrapes per second and the latency percentiles. dlrig serve runs on the fake NVML
# (one GPU, tests/data/nvml/watch-starving.json) with the fixture host, so each scrape does the
# whole collection (NVML readings, /proc, diagnoses) as it would on a GPU machine.
#
# Usage: perf/serve_load.sh [SECONDS [CONNECTIONS]]   (default 5 s, 8 connections)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
secs=${1:-5}
conns=${2:-8}
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/deps.sh)" >&2; exit 2; }
work=$(mktemp -d)
export DLRIG_NVML_LIBRARY=$build/tests/fake_nvml/libnvidia-ml-fake.so
export DLRIG_FAKE_NVML_SCENARIO=$root/tests/data/nvml/watch-starving.json
"$build/dlrig" serve --listen 127.0.0.1:0 --sysroot "$root/tests/data/training-rtx4090" \
  2>"$work/serve.err" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
port=""
for _ in $(seq 100); do
  port=$(sed -n 's#.*listening on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$work/serve.err")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.err" >&2; exit 2; }
wrk -t2 -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$port/metrics" >"$work/wrk.txt"
rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk.txt")
p50=$(awk '$1 == "50%" {print $2}' "$work/wrk.txt")
p99=$(awk '$1 == "99%" {print $2}' "$work/wrk.txt")
errors=$(awk '/Non-2xx|Socket errors/ {print}' "$work/wrk.txt")
bytes=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c 2>/dev/null || echo n/a)
echo "| duration | connections | scrapes/s | p50 | p99 | body | errors |"
echo "|---:|---:|---:|---:|---:|---:|---|"
echo "| ${secs} s | $conns | $rps | $p50 | $p99 | $bytes B | ${errors:-none} |"
echo
echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; wrk -t2 on the same machine"

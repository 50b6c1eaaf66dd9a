#!/usr/bin/env bash
# How long `dlrig info --json` takes: the median and 90th percentile of 20 runs, on the 8xH100
# fixture (with the fake NVML when it is built and the fixture has a scenario) and on this machine.
# Builds nothing: run scripts/build.sh first. Usage: bench/info.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
bin=build/dlrig
[ -x "$bin" ] || { echo "bench/info.sh: $bin not found; build first (scripts/build.sh)" >&2; exit 1; }
fixture=tests/data/server-8xh100
fake=build/tests/fake_nvml/libnvidia-ml-fake.so

# Wall time of one run in milliseconds (date +%s%N: nanoseconds).
time_ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 ))
}

# "median p90" in ms of RUNS runs of the command, after one warm-up run (page cache).
measure() {
  time_ms "$@" >/dev/null
  local samples=()
  for _ in $(seq "$runs"); do samples+=("$(time_ms "$@")"); done
  printf '%s\n' "${samples[@]}" | sort -n | awk -v n="$runs" '
    { v[NR] = $1 }
    END {
      med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      i = int(0.9 * n + 0.999999); if (i < 1) i = 1; if (i > n) i = n
      printf "%.1f %.1f\n", med / 1000, v[i] / 1000
    }'
}

rows=()
if [ -f "$fake" ] && [ -f "$fixture/nvml.json" ]; then
  what="server-8xh100 fixture, fake NVML"
  read -r med p90 < <(DLRIG_NVML_LIBRARY="$PWD/$fake" DLRIG_FAKE_NVML_SCENARIO="$PWD/$fixture/nvml.json" \
                      measure "$bin" info --json --sysroot "$fixture")
else
  what="server-8xh100 fixture, no NVML"
  read -r med p90 < <(DLRIG_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
                      measure "$bin" info --json --sysroot "$fixture")
fi
rows+=("$what|$med|$p90")
read -r med p90 < <(measure "$bin" info --json)
rows+=("live machine ($(hostname))|$med|$p90")

printf '%-40s  %10s  %10s\n' "dlrig info --json ($runs runs)" "median ms" "p90 ms"
printf '%-40s  %10s  %10s\n' "----------------------------------------" "----------" "----------"
for r in "${rows[@]}"; do
  IFS='|' read -r a b c <<<"$r"
  printf '%-40s  %10s  %10s\n' "$a" "$b" "$c"
done

#!/usr/bin/env bash
# How long `dlrig info --json` takes: the median and 90th percentile wall time of 20 runs and the
# median CPU time, on the 8xH100 fixture (with the fake NVML when it is built and the fixture has a scenario) and on
# this machine.
# Builds nothing: run scripts/build.sh first. Usage: perf/info.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
bin=build/dlrig
[ -x "$bin" ] || { echo "perf/info.sh: $bin not found; build first (scripts/build.sh)" >&2; exit 1; }
fixture=tests/data/server-8xh100
fake=build/tests/fake_nvml/libnvidia-ml-fake.so

# One run: "WALL_MS CPU_MS" (CPU = user + system). CPU time is what to compare on a loaded machine:
# wall time there includes waiting for a core.
one_run() {
  local TIMEFORMAT='%3R %3U %3S' t
  t=$({ time "$@" >/dev/null 2>&1; } 2>&1) || true
  awk '{ printf "%.0f %.0f\n", $1 * 1000, ($2 + $3) * 1000 }' <<<"$t"
}

# Median and 90th percentile of numbers on stdin.
stats() {
  sort -n | awk '{ v[NR] = $1 } END {
    n = NR; med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    i = int(0.9 * n + 0.999999); if (i < 1) i = 1; if (i > n) i = n
    printf "%.0f %.0f\n", med, v[i] }'
}

# "wall_median wall_p90 cpu_median" in ms of RUNS runs, after one warm-up run (page cache).
measure() {
  one_run "$@" >/dev/null
  local out wall cpu
  out=$(for _ in $(seq "$runs"); do one_run "$@"; done)
  wall=$(cut -d' ' -f1 <<<"$out" | stats)
  cpu=$(cut -d' ' -f2 <<<"$out" | stats)
  echo "$wall ${cpu%% *}"
}

rows=()
if [ -f "$fake" ] && [ -f "$fixture/nvml.json" ]; then
  what="server-8xh100 fixture, fake NVML"
  read -r med p90 cpu < <(DLRIG_NVML_LIBRARY="$PWD/$fake" DLRIG_FAKE_NVML_SCENARIO="$PWD/$fixture/nvml.json" \
                      measure "$bin" info --json --sysroot "$fixture")
else
  what="server-8xh100 fixture, no NVML"
  read -r med p90 cpu < <(DLRIG_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
                      measure "$bin" info --json --sysroot "$fixture")
fi
rows+=("$what|$med|$p90|$cpu")
read -r med p90 cpu < <(measure "$bin" info --json)
rows+=("live machine ($(hostname))|$med|$p90|$cpu")

printf '%-40s  %10s  %10s  %14s\n' "dlrig info --json ($runs runs)" "median ms" "p90 ms" "median CPU ms"
printf '%-40s  %10s  %10s  %14s\n' "----------------------------------------" "----------" "----------" "--------------"
for r in "${rows[@]}"; do
  IFS='|' read -r a b c d <<<"$r"
  printf '%-40s  %10s  %10s  %14s\n' "$a" "$b" "$c" "$d"
done

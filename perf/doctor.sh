#!/usr/bin/env bash
# How long `dlrig doctor --json` takes: the median and 90th percentile of 20 runs, on the 8xH100
# fixture (with the fake NVML when it is built and the fixture has a scenario), on a snapshot of
# that fixture saved to a file (--from: the checks alone, no probing), and on this machine.
# Target: under 25 ms median on the 8xH100 fixture. Builds nothing: build first.
# Usage: perf/doctor.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
bin=build/dlrig
[ -x "$bin" ] || { echo "perf/doctor.sh: $bin not found; build first" >&2; exit 1; }
fixture=tests/data/server-8xh100
fake=build/tests/fake_nvml/libnvidia-ml-fake.so

# Wall time of one run in microseconds (date +%s%N: nanoseconds). doctor exits 1 or 2 when it
# finds something: that is its answer, not a failed run.
time_us() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000 ))
}

# "median p90" in ms of RUNS runs of the command, after one warm-up run (page cache).
measure() {
  time_us "$@" >/dev/null
  local samples=()
  for _ in $(seq "$runs"); do samples+=("$(time_us "$@")"); done
  printf '%s\n' "${samples[@]}" | sort -n | awk -v n="$runs" '
    { v[NR] = $1 }
    END {
      med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      i = int(0.9 * n + 0.999999); if (i < 1) i = 1; if (i > n) i = n
      printf "%.1f %.1f\n", med / 1000, v[i] / 1000
    }'
}

if [ -f "$fake" ] && [ -f "$fixture/nvml.json" ]; then
  what="server-8xh100 fixture, fake NVML"
  export DLRIG_NVML_LIBRARY="$PWD/$fake" DLRIG_FAKE_NVML_SCENARIO="$PWD/$fixture/nvml.json"
else
  what="server-8xh100 fixture, no NVML"
  export DLRIG_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1
fi
rows=()
read -r med p90 < <(measure "$bin" doctor --json --sysroot "$fixture")
rows+=("$what|$med|$p90")

snap=$(mktemp /tmp/dlrig-bench-XXXXXX.json)
trap 'rm -f "$snap"' EXIT
"$bin" snapshot --sysroot "$fixture" >"$snap"
read -r med p90 < <(measure "$bin" doctor --json --from "$snap")
rows+=("server-8xh100 snapshot (--from)|$med|$p90")

unset DLRIG_NVML_LIBRARY DLRIG_FAKE_NVML_SCENARIO
read -r med p90 < <(measure "$bin" doctor --json)
rows+=("live machine ($(hostname))|$med|$p90")

printf '%-40s  %10s  %10s\n' "dlrig doctor --json ($runs runs)" "median ms" "p90 ms"
printf '%-40s  %10s  %10s\n' "----------------------------------------" "----------" "----------"
for r in "${rows[@]}"; do
  IFS='|' read -r a b c <<<"$r"
  printf '%-40s  %10s  %10s\n' "$a" "$b" "$c"
done

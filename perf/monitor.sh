#!/usr/bin/env bash
# Cost of sampling (dlrig watch / serve collect one sample per interval or scrape), on the fake
# NVML: one GPU (tests/data/nvml/watch-starving.json) and eight (server-8xh100), with the fixture
# host's /proc. The fake answers from a parsed JSON scenario, so these numbers include its own
# look-ups instead of the driver's: on a GPU machine, run it with DLRIG_NVML_LIBRARY=libnvidia-ml.so.1
# NVML=real to measure the real calls.
#
# Usage: perf/monitor.sh   (needs build/dlrig_perf_monitor and build/tests/fake_nvml)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
[ "${NVML:-fake}" = real ] || export DLRIG_NVML_LIBRARY=$build/tests/fake_nvml/libnvidia-ml-fake.so
n=${SAMPLES:-2000}
echo "| scenario | GPUs | samples | wall per sample | this process's CPU per sample |"
echo "|---|---:|---:|---:|---:|"
for s in nvml/watch-starving.json server-8xh100/nvml.json; do
  read -r gpus samples wall cpu < <(DLRIG_FAKE_NVML_SCENARIO=$root/tests/data/$s \
    "$build/dlrig_perf_monitor" "$n" "$root/tests/data/training-rtx4090")
  echo "| $s | $gpus | $samples | $wall ms | $cpu ms |"
done
echo
echo "Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"

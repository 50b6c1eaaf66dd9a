#!/bin/sh
# Builds the libFuzzer targets (clang, build-fuzz/) and runs each for SECONDS (default 30) on its
# seed corpus fuzz/corpus/NAME. The seeds are only read: new inputs the fuzzer finds go to a scratch
# folder, crashes to build-fuzz/crashes/. Exits non-zero at the first target that finds a crash.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 60 doctor snapshot_json
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-30}
[ $# -gt 0 ] && shift
targets=${*:-"procfs sysfs snapshot_json safetensors doctor collect_env recording results rendezvous jpeg"}
jobs=${DLRIG_FUZZ_BUILD_JOBS:-2}

CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDLRIG_ENABLE_FUZZ=ON -DDLRIG_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j"$jobs" --target dlrig_fuzz

mkdir -p build-fuzz/crashes
for t in $targets; do
  scratch=$(mktemp -d)
  echo "== fuzz_$t: ${seconds} s"
  build-fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix=build-fuzz/crashes/"$t"- -print_final_stats=1 \
    "$scratch" fuzz/corpus/"$t" 2>&1 | grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Done" || true
  rm -rf "$scratch"
  if ls build-fuzz/crashes/"$t"-* >/dev/null 2>&1; then
    echo "fuzz_$t: found a crash (build-fuzz/crashes/$t-*)" >&2
    exit 1
  fi
done

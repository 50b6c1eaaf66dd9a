#!/usr/bin/env bash
# Installs the dependencies, builds dlrig, runs the whole test suite with CTest, then runs each
# libFuzzer target briefly (DLRIG_FUZZ_SECONDS, default 30 s each; 0 skips) so a parser regression
# is caught at the next CI run, and as long the hostile command lines of fuzz/cli_args.py against
# the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
seconds=${DLRIG_FUZZ_SECONDS:-30}
[ "$seconds" = 0 ] || scripts/fuzz.sh "$seconds"
[ "$seconds" = 0 ] || fuzz/cli_args.py build/dlrig --seconds "$seconds"

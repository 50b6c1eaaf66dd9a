#!/bin/sh
# Builds the whole project and its tests with a sanitizer in build-SANITIZER/ (Debug at -O1) and
# runs the test suite there: `address` is AddressSanitizer with UndefinedBehaviorSanitizer (any
# undefined behaviour aborts), `thread` is ThreadSanitizer. Not part of scripts/test.sh: on the
# 2-core CI VM the address build takes about 50 minutes and its suite half an hour
# (docs/testing.md, "Sanitizers"). Extra arguments go to ctest.
#   scripts/sanitize.sh [address|thread] [CTEST ARGS...]   e.g. scripts/sanitize.sh address -R Bench
set -eu
cd "$(dirname "$0")/.."
kind=${1:-address}
[ $# -gt 0 ] && shift
case "$kind" in
address) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
thread) flags="-fsanitize=thread" ;;
*)
  echo "scripts/sanitize.sh: unknown sanitizer '$kind' (address or thread)" >&2
  exit 64
  ;;
esac
dir=build-$kind
jobs=${DLRIG_SANITIZE_BUILD_JOBS:-2}
common="-O1 -g -fno-omit-frame-pointer $flags"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DDLRIG_WERROR=OFF -DCMAKE_CXX_FLAGS="$common" \
  -DCMAKE_C_FLAGS="$common" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
  -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$dir" -j"$jobs"
# halt_on_error: the first report fails the test that caused it; the leak checker stays on.
# handle_segv=0 (both): a crash the tests cause on purpose (a child worker's handler) stays a SIGSEGV.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:handle_segv=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:handle_segv=0${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
cd "$dir"
ctest -j"$jobs" --output-on-failure --timeout 900 "$@"

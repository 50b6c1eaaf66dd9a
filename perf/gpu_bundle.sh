#!/usr/bin/env bash
# Packs build/dlrig (stripped) with the shared libraries it links (all but the C library's own) and
# pci.ids into OUT_DIR/bundle.tar.xz, for a machine without dlrig's build dependencies (a lent GPU
# machine, whose tree copy is limited in size):
#   perf/gpu_bundle.sh [BUILD_DIR] [OUT_DIR]   (defaults: build, .devrun)
# then, there: perf/gpu_session.sh OUT OUT_DIR. The C library there must be as new as here.
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-.devrun}
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/lib" "$OUT"
strip -o "$STAGE/dlrig" "$BUILD/dlrig"
# dlrig_perf_io (storage and JPEG decode beside fio in perf/bench_side_by_side.sh) when built.
[[ -x $BUILD/dlrig_perf_io ]] && strip -o "$STAGE/dlrig_perf_io" "$BUILD/dlrig_perf_io"
ldd "$BUILD/dlrig" | awk '/=> \//{print $3}' | while read -r lib; do
  case $(basename "$lib") in
  libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
  *) cp -L "$lib" "$STAGE/lib/" ;;
  esac
done
cp -L "${DLRIG_PCI_IDS:-/usr/share/misc/pci.ids}" "$STAGE/pci.ids"
tar cJf "$OUT/bundle.tar.xz" -C "$STAGE" $(cd "$STAGE" && ls)
ls -la "$OUT/bundle.tar.xz"

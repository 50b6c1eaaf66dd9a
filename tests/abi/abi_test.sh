#!/bin/sh
# dlrig's cuBLASLt and NCCL declarations against the toolkit's headers (ctest `vendor_abi`):
# compiles tests/abi/vendor_abi_check.cpp, whose static_asserts compare every constant, struct
# layout and function signature. Skipped (exit 77) where the headers are absent.
# CUDA_INCLUDE names the folder holding cublasLt.h and nccl.h (default /usr/local/cuda/include);
# CXX the compiler (default c++).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
inc=${CUDA_INCLUDE:-/usr/local/cuda/include}
for h in cublasLt.h nccl.h; do
  if [ ! -f "$inc/$h" ]; then
    echo "SKIP: no $h in $inc (set CUDA_INCLUDE)"; exit 77
  fi
done
exec "${CXX:-c++}" -std=c++20 -fsyntax-only -I"$root/src" -I"$inc" "$root/tests/abi/vendor_abi_check.cpp"

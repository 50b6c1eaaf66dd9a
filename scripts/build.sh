#!/usr/bin/env bash
# Installs the dependencies and builds dlrig into build/ (the binary is build/dlrig).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"

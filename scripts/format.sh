#!/usr/bin/env bash
# Formats every C++ file of the project with its .clang-format (Debian's clang-format), or with
# --check only reports the files that are not formatted (exit 1), as the `format` test does.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-i)
[ "${1:-}" = "--check" ] && mode=(--dry-run --Werror)
find src apps tests fuzz perf -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) \
  -not -path 'tests/data/*' -print0 | sort -z | xargs -0 clang-format "${mode[@]}"

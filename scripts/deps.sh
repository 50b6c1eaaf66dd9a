#!/usr/bin/env bash
# Installs dlrig's build and test dependencies from Debian's packages (idempotent).
# clang (with its libFuzzer runtime) builds the fuzz targets; clang-format checks the formatting.
# watch and serve: ncurses, cpp-httplib; their tests: prometheus (promtool and the server), tmux;
# perf/serve_load.sh: wrk.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev
      libgtest-dev libgmock-dev libsqlite3-dev libopenblas-dev pci.ids python3 ccache
      clang clang-format libclang-rt-dev libjpeg62-turbo-dev fio
      libncurses-dev libcpp-httplib-dev prometheus wrk tmux)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

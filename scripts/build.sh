#!/usr/bin/env bash
# Installs what is missing, then configures and builds AutoHAAP into build/
# (Release). Extra arguments go to scripts/setup.sh (e.g. --slurm).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh "$@"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2

#!/usr/bin/env bash
# Builds and runs the whole test suite. Run from anywhere; uses build/ in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${KARTA_JOBS:-2}

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure

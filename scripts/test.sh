#!/usr/bin/env bash
# Builds and runs the whole test suite: the normal build (unit, end-to-end, catalog and fuzz-corpus
# replay tests), then the same suite built with AddressSanitizer and UndefinedBehaviorSanitizer.
# Run from anywhere; uses build/ and build-asan/ in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${KARTA_JOBS:-2}

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure

echo "== build and test with AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKARTA_SANITIZE=ON -DKARTA_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-asan -j"$jobs"
# libjq and yaml-cpp are not instrumented; leaks inside them would be theirs, but none are expected.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure

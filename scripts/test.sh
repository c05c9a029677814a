#!/usr/bin/env bash
# Builds and runs the whole test suite: the normal build (unit, end-to-end, catalog and fuzz-corpus
# replay tests), then the same suite built with AddressSanitizer and UndefinedBehaviorSanitizer.
# Run from anywhere; uses build/ and build-asan/ in the repository.
#   scripts/test.sh           both halves
#   scripts/test.sh --quick   the normal build's tests only: the inner loop
# KARTA_JOBS (default 2) sets the parallel compile jobs and the tests ctest runs at once; tests that
# measure time run alone (RUN_SERIAL in tests/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${KARTA_JOBS:-2}
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac

timings=()
# Prints each half's time when the script ends, passed or not.
report() {
  local status=$?
  if ((${#timings[@]})); then
    echo "== times"
    printf '  %s\n' "${timings[@]}"
  fi
  exit "$status"
}
trap report EXIT

half() {  # NAME BUILD_DIR CMAKE_ARGS... : configure, build and test one build, timing it
  local name=$1 dir=$2 started=$SECONDS
  shift 2
  echo "== build and test ($name)"
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  local built=$SECONDS
  ctest --test-dir "$dir" --output-on-failure -j"$jobs"
  timings+=("$name: $((SECONDS - started)) s (build $((built - started)) s, tests $((SECONDS - built)) s)")
}

# Line tables only (-g1) rather than full debug information: enough for the sanitizers' and gdb's
# backtraces, and full -g cost a third of the build's compile time (kube/api_client.cpp: 52 s against 36 s).
half "RelWithDebInfo" build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
((quick)) && exit 0
# libjq and yaml-cpp are not instrumented; leaks inside them would be theirs, but none are expected.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
half "AddressSanitizer + UndefinedBehaviorSanitizer, Debug" build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1" \
  -DKARTA_SANITIZE=ON -DKARTA_BUILD_BENCHMARKS=OFF

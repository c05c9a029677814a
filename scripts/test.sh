#!/usr/bin/env bash
# Builds and runs the whole test suite (unit, end-to-end, catalog and fuzz-corpus replay tests) in the
# normal build, build/ (RelWithDebInfo): the README's test command, and the first part of CI.
# Run from anywhere.
#   scripts/test.sh              the normal build's whole suite
#   scripts/test.sh --sanitize   the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer and
#                                libstdc++'s assertions, in build-asan/ (CI's second part, .ci/run)
# KARTA_JOBS (default 2) sets the parallel compile jobs and the tests ctest runs at once; tests that
# measure time run alone (RUN_SERIAL in tests/CMakeLists.txt). Compiles go through ccache when it is
# installed (scripts/install-deps.sh installs it; CMakeLists.txt, KARTA_CCACHE).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${KARTA_JOBS:-2}
sanitize=0
case "${1:-}" in
  --sanitize) sanitize=1 ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
esac

timing=""
# Prints the build's and the tests' time when the script ends, passed or not.
report() {
  local status=$?
  [[ -n $timing ]] && echo "== time: $timing"
  exit "$status"
}
trap report EXIT

suite() {  # NAME BUILD_DIR CMAKE_ARGS... : configure, build and test one build, timing it
  local name=$1 dir=$2 started=$SECONDS
  shift 2
  echo "== build and test ($name)"
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  local built=$SECONDS
  timing="$name: build $((built - started)) s, tests running"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs"
  timing="$name: $((SECONDS - started)) s (build $((built - started)) s, tests $((SECONDS - built)) s)"
}

if ((sanitize)); then
  # libjq and yaml-cpp are not instrumented; leaks inside them would be theirs, but none are expected.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  suite "AddressSanitizer + UndefinedBehaviorSanitizer, Debug" build-asan -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-g1" -DKARTA_SANITIZE=ON -DKARTA_BUILD_BENCHMARKS=OFF
else
  # Line tables only (-g1) rather than full debug information: enough for the sanitizers' and gdb's
  # backtraces, and full -g cost a third of the build's compile time (kube/api_client.cpp: 52 s against 36 s).
  suite "RelWithDebInfo" build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
fi

#!/usr/bin/env bash
# The release build of karta-webhook, optimized from a profile of its admissions (GCC's profile-guided
# optimization; CMakeLists.txt, KARTA_PGO):
#   1. builds bench_admission with KARTA_PGO=generate (instrumented: it records its branches and calls);
#   2. runs it on every registered input (the demo JobSet, the unknown kind, RayCluster with 50 groups,
#      the 2.5 MB JobSet, the corpus samples: bench/bench_admission.cpp), recording the profile;
#   3. builds karta-webhook (and bench_admission, to measure what ships) with KARTA_PGO=use in the same
#      build directory.
# The demo admission took 4.5 us instead of 5.5 (bench/README.md, issue 24). The Dockerfile's build stage
# and scripts/run-dev.sh build with it. A profile is recorded afresh each time: it belongs to these sources
# and this compiler, never committed.
#
#   scripts/build-release.sh [BUILD_DIR]   # default build-release; the binary is BUILD_DIR/karta-webhook
#
# Environment:
#   KARTA_JOBS         parallel build jobs (default 2)
#   KARTA_CMAKE_ARGS   more arguments for cmake's configure step (word-split), e.g. -DKARTA_BUILD_TESTS=OFF
#   KARTA_PGO=0        build plain Release, without the profile (a faster build, a slower binary)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
dir=${1:-build-release}
jobs=${KARTA_JOBS:-2}
read -r -a extra <<<"${KARTA_CMAKE_ARGS:-}"

say() { printf 'build-release: %s\n' "$*" >&2; }
# Link-time optimization too (CMake's IPO: GCC's -flto): with the profile, the demo admission took 4.16 us
# instead of 4.43 and Milvus 23.3 instead of 25.4, best of alternated runs (bench/README.md, issue 24's
# thirteenth round).
configure() { cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON "${extra[@]}" "$@" >/dev/null; }

if [[ ${KARTA_PGO:-1} == 0 ]]; then
  configure -DKARTA_PGO=
  cmake --build "$dir" -j"$jobs" --target karta-webhook
  exit 0
fi

profile="$repo/$dir/pgo-profile"
say "1/3 instrumented build (KARTA_PGO=generate)"
configure -DKARTA_PGO=generate -DKARTA_PGO_DIR="$profile" -DKARTA_BUILD_BENCHMARKS=ON
cmake --build "$dir" -j"$jobs" --target bench_admission
rm -rf "$profile"
say "2/3 training: bench_admission's admissions of every registered input"
"$dir/bench/bench_admission" --benchmark_filter='^handle/' --benchmark_min_time=0.1 >/dev/null
count=$(find "$profile" -name '*.gcda' | wc -l)
((count > 0)) || { say "the training recorded no profile in $profile"; exit 1; }
say "3/3 optimized build (KARTA_PGO=use, $count profiled object files)"
configure -DKARTA_PGO=use -DKARTA_PGO_DIR="$profile" -DKARTA_BUILD_BENCHMARKS=ON
cmake --build "$dir" -j"$jobs" --target karta-webhook bench_admission
say "built $dir/karta-webhook"

#!/usr/bin/env bash
# The release build of karta-webhook, optimized from a profile of its admissions (GCC's profile-guided
# optimization; CMakeLists.txt, KARTA_PGO):
#   1. builds bench_admission with KARTA_PGO=generate (instrumented: it records its branches and calls);
#   2. runs it on every registered input (the demo JobSet, the unknown kind, RayCluster with 50 groups,
#      the 2.5 MB JobSet, the corpus samples: bench/bench_admission.cpp), recording the profile;
#   3. builds karta-webhook (and bench_admission, to measure what ships) with KARTA_PGO=use in the same
#      build directory.
# The demo admission took 4.5 us instead of 5.5 (bench/README.md, issue 24). The Dockerfile's build stage
# and scripts/run-dev.sh build with it. A profile belongs to the sources and the compiler it was recorded
# with, and is never committed.
#
#   scripts/build-release.sh [--rebuild] [--plan] [BUILD_DIR]   # default build-release; the binary is
#                                                                # BUILD_DIR/karta-webhook
#   --rebuild   the whole pipeline, whatever changed
#   --plan      print what a build would do (the line below), and build nothing
#
# What runs is decided on content, not modification times (a fresh clone or a branch switched back and
# forth has new ones everywhere): before building, the script lists the build's inputs, each file git
# tracks or would track (`git ls-files -co --exclude-standard`) with its SHA-256, and the compiler (its
# version line and the SHA-256 of its driver, cc1plus and lto1), CMake's version, the library packages'
# versions and the options (KARTA_CMAKE_ARGS, CXXFLAGS, LDFLAGS). After the training it records the
# profile's share of that list in BUILD_DIR/pgo-profile.inputs, after the optimized build the whole list
# and the binary's SHA-256 in BUILD_DIR/release-inputs. Next time, in one line on stderr:
#   - all the same as release-inputs: the binary is reused, CMake is not run;
#   - only files outside the profile's share changed (cli/main.cpp, the one source karta-webhook compiles
#     and bench_admission does not), or the last run stopped after the training: step 3 alone, against
#     the recorded profile (make rebuilds what changed);
#   - the profile's share changed (any other source or header, CMake file, catalog definition, the
#     training's inputs or this script), the compiler, CMake, a library or an option, or --rebuild:
#     all three steps, the first configure started afresh (`cmake --fresh`, so a new compiler is found).
# Files that are not build inputs count for neither (input_class below: documentation, tests, fuzz
# targets, manifests, the other scripts). Outside a git checkout (the image's build context has no .git)
# nothing is recorded and all three steps run.
#
# Environment:
#   KARTA_JOBS         parallel build jobs (default 2)
#   KARTA_CMAKE_ARGS   more arguments for cmake's configure step (word-split), e.g. -DKARTA_BUILD_TESTS=OFF
#   KARTA_PGO=0        build plain Release, without the profile (a faster build, a slower binary)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
rebuild=0 plan=0 dir=build-release
for arg in "$@"; do
  case $arg in
    --rebuild) rebuild=1 ;;
    --plan) plan=1 ;;
    -*) printf 'usage: scripts/build-release.sh [--rebuild] [--plan] [BUILD_DIR]\n' >&2; exit 2 ;;
    *) dir=$arg ;;
  esac
done
jobs=${KARTA_JOBS:-2}
read -r -a extra <<<"${KARTA_CMAKE_ARGS:-}"

say() { printf 'build-release: %s\n' "$*" >&2; }
# Link-time optimization too (CMake's IPO: GCC's -flto): with the profile, the demo admission took 4.16 us
# instead of 4.43 and Milvus 23.3 instead of 25.4, best of alternated runs (bench/README.md, issue 24's
# thirteenth round).
configure() { cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON "${extra[@]}" "$@" >/dev/null; }

built_record="$dir/release-inputs"
profile_record="$dir/pgo-profile.inputs"

if [[ ${KARTA_PGO:-1} == 0 ]]; then
  ((plan)) && { say "plain Release build (KARTA_PGO=0): CMake decides what to rebuild"; exit 0; }
  rm -f "$built_record"  # the binary built here is not the optimized one
  configure -DKARTA_PGO=
  cmake --build "$dir" -j"$jobs" --target karta-webhook
  exit 0
fi

# The class of a file of the checkout: `none` (no build input: changing it changes no binary), `binary`
# (compiled into karta-webhook but not into bench_admission, so not profiled) or `profile` (compiled into
# bench_admission or read by the training). A file no pattern names is a profile input: a new folder
# costs a needless retraining, never a stale binary.
input_class() {
  case $1 in
    tests/corpus/samples/* | examples/jobset-demo.yaml | examples/policy.yaml) class=profile ;;  # the training's inputs
    bench/bench_admission.cpp | bench/CMakeLists.txt | bench/*.cmake | scripts/build-release.sh) class=profile ;;
    cli/main.cpp) class=binary ;;
    *.md | .* | Dockerfile | docs/* | tests/* | fuzz/* | manifests/* | certs/* | scripts/* | examples/* | bench/*) class=none ;;
    *) class=profile ;;
  esac
}

# The library packages CMakeLists.txt finds (Debian's names, as scripts/install-deps.sh installs them).
library_packages=(libboost-dev libssl-dev nlohmann-json3-dev libsimdjson-dev libjemalloc-dev libyaml-cpp-dev
                  libjq-dev libonig-dev libre2-dev libspdlog-dev libfmt-dev libcli11-dev libbenchmark-dev)

# The inputs, one a line: `option ...` and `tool ...` lines, then `profile|binary SHA-256  PATH` in git's order.
list_inputs() {
  local cxx program
  printf 'option KARTA_CMAKE_ARGS=%s\noption CXXFLAGS=%s\noption LDFLAGS=%s\n' \
    "${KARTA_CMAKE_ARGS:-}" "${CXXFLAGS:-}" "${LDFLAGS:-}"
  printf 'tool %s\n' "$(cmake --version | head -n 1)"
  cxx=$(command -v "${CXX:-c++}") || { say "no C++ compiler: ${CXX:-c++}"; exit 1; }
  printf 'tool compiler %s: %s\n' "$(readlink -f "$cxx")" "$("$cxx" --version | head -n 1)"
  for program in "$cxx" "$("$cxx" -print-prog-name=cc1plus)" "$("$cxx" -print-prog-name=lto1)"; do
    [[ -f $program ]] && printf 'tool %s\n' "$(sha256sum "$(readlink -f "$program")")"
  done
  if command -v dpkg-query >/dev/null; then
    dpkg-query -W -f='tool package ${Package} ${Version}\n' "${library_packages[@]}" 2>/dev/null || true
  fi
  local -a profiled=() compiled=()
  local file
  while IFS= read -r -d '' file; do
    [[ -f $file ]] || continue  # deleted, not yet staged
    input_class "$file"
    case $class in
      profile) profiled+=("$file") ;;
      binary) compiled+=("$file") ;;
    esac
  done < <(git ls-files -z -co --exclude-standard)
  ((${#profiled[@]} == 0)) || printf '%s\0' "${profiled[@]}" | xargs -0 sha256sum | sed 's/^/profile /'
  ((${#compiled[@]} == 0)) || printf '%s\0' "${compiled[@]}" | xargs -0 sha256sum | sed 's/^/binary /'
}

# What differs between a record and the inputs now, in words: the first three changed files, or the tools.
changes() {
  local differing files count
  differing=$(diff <(sort "$1") <(sort "$2") | sed -n 's/^[<>] //p' || true)
  files=$(sed -n 's/^[a-z]* [0-9a-f]\{64\}  //p' <<<"$differing" | sort -u)
  if grep -q '^\(tool\|option\) ' <<<"$differing"; then
    printf 'the compiler, CMake, a library or an option'
  elif [[ -n $files ]]; then
    count=$(wc -l <<<"$files")
    printf '%s' "$(head -n 3 <<<"$files" | paste -sd ' ')"
    ((count <= 3)) || printf ' and %d more' $((count - 3))
  else
    printf '%s is not the binary it built' "$dir/karta-webhook"
  fi
}

profile="$repo/$dir/pgo-profile"
inputs=$(mktemp) recorded=$(mktemp)
trap 'rm -f "$inputs" "$recorded"' EXIT
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  step=all reason="no git checkout here, so what changed is not known"
else
  list_inputs >"$inputs"
  if ((rebuild)); then
    step=all reason="--rebuild"
  elif [[ ! -f $profile_record || -z $(find "$profile" -name '*.gcda' -print -quit 2>/dev/null) ]]; then
    step=all reason="no profile recorded in $dir"
  elif ! grep -v '^binary ' "$inputs" | cmp -s - "$profile_record"; then
    grep -v '^binary ' "$inputs" >"$recorded"
    step=all reason="changed since the profile was recorded: $(changes "$profile_record" "$recorded")"
  elif [[ ! -f $built_record || ! -f $dir/karta-webhook ]]; then
    step=optimize reason="the profile is up to date, the optimized build did not finish"
  else
    { cat "$inputs"; printf 'built %s\n' "$(sha256sum <"$dir/karta-webhook" | cut -d' ' -f1)"; } >"$recorded"
    if cmp -s "$recorded" "$built_record"; then
      step=reuse
    else
      step=optimize reason="the profile is up to date; changed since the last build: $(changes "$built_record" "$recorded")"
    fi
  fi
fi

case $step in
  reuse) say "reusing $dir/karta-webhook: no source, CMake file, profile input, compiler or option changed since it was built" ;;
  optimize) say "step 3 alone, the optimized build with the recorded profile: $reason" ;;
  all) say "all three steps: $reason" ;;
esac
if ((plan)) || [[ $step == reuse ]]; then exit 0; fi

# A record is removed before the step that would outdate it, and written only once that step finishes.
# The inputs were listed before building: a file edited during the build is found changed next time.
rm -f "$built_record"
if [[ $step == all ]]; then
  rm -f "$profile_record"
  say "1/3 instrumented build (KARTA_PGO=generate)"
  configure -DKARTA_PGO=generate -DKARTA_PGO_DIR="$profile" -DKARTA_BUILD_BENCHMARKS=ON --fresh
  cmake --build "$dir" -j"$jobs" --target bench_admission
  rm -rf "$profile"
  say "2/3 training: bench_admission's admissions of every registered input"
  "$dir/bench/bench_admission" --benchmark_filter='^handle/' --benchmark_min_time=0.1 >/dev/null
  count=$(find "$profile" -name '*.gcda' | wc -l)
  ((count > 0)) || { say "the training recorded no profile in $profile"; exit 1; }
  if [[ -s $inputs ]]; then grep -v '^binary ' "$inputs" >"$profile_record"; fi
fi
count=$(find "$profile" -name '*.gcda' | wc -l)
say "3/3 optimized build (KARTA_PGO=use, $count profiled object files)"
configure -DKARTA_PGO=use -DKARTA_PGO_DIR="$profile" -DKARTA_BUILD_BENCHMARKS=ON
cmake --build "$dir" -j"$jobs" --target karta-webhook bench_admission
if [[ -s $inputs ]]; then
  { cat "$inputs"; printf 'built %s\n' "$(sha256sum <"$dir/karta-webhook" | cut -d' ' -f1)"; } >"$built_record"
fi
say "built $dir/karta-webhook"

#!/usr/bin/env bash
# Instructions per admission, counted by valgrind's callgrind: a figure this shared machine's load cannot
# move (wall-clock times here spread by 15% between runs). For each input, `bench_admission --repeat=N`
# runs under callgrind once with FEW admissions and once with MANY, on the built-in catalog and
# examples/policy.yaml; the difference in instructions over the difference in admissions is what one
# admission costs (the start-up, loading the catalog, cancels out). Instructions are not time (a cache miss
# or a mispredicted branch costs more than an add), but a change that takes instructions away shows here.
#
#   scripts/count-instructions.sh                       # demo_jobset unknown_kind raycluster_50_groups
#   scripts/count-instructions.sh demo_jobset
#
# Environment:
#   BENCH   the bench_admission binary (default build-release/bench/bench_admission; build it in Release:
#           cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build build-release --target bench_admission)
#   FEW     admissions of the first run (default 10)
#   MANY    admissions of the second run (default 210; raycluster_50_groups uses a tenth of both)
# Needs valgrind (`apt-get install valgrind`; not among the test dependencies).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
bench=${BENCH:-build-release/bench/bench_admission}
few=${FEW:-10}
many=${MANY:-210}

die() { printf 'count-instructions: %s\n' "$*" >&2; exit 1; }
[[ -x "$bench" ]] || die "$bench is not an executable (or set BENCH)"
command -v valgrind >/dev/null || die "needs valgrind"
((many > few)) || die "MANY ($many) must be more than FEW ($few)"

work=$(mktemp -d /tmp/karta-count-instructions.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The total instructions of one run: callgrind's "Collected : N" summary line.
instructions() {
  local input=$1 count=$2 log="$work/$1-$2.log"
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --repeat="$count" --input="$input" \
    >"$work/out" 2>"$log" || die "$input, $count admissions: $(tail -n 5 "$log")"
  local total
  total=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$log")
  [[ -n "$total" ]] || die "$input, $count admissions: no 'Collected' line in callgrind's output"
  echo "$total"
}

inputs=("$@")
((${#inputs[@]})) || inputs=(demo_jobset unknown_kind raycluster_50_groups)
printf '%-22s %16s\n' input instructions/admission
for input in "${inputs[@]}"; do
  f=$few m=$many
  if [[ $input == raycluster_50_groups ]]; then f=$(((few + 9) / 10)) m=$(((many + 9) / 10)); fi
  a=$(instructions "$input" "$f")
  b=$(instructions "$input" "$m")
  printf '%-22s %16d\n' "$input" $(((b - a) / (m - f)))
done

#!/usr/bin/env bash
# Instructions per admission, counted by valgrind's callgrind: a figure this shared machine's load cannot
# move (wall-clock times here spread by 15% between runs). For each input, `bench_admission --repeat=N`
# runs under callgrind once with FEW admissions and once with MANY, on the built-in catalog and
# examples/policy.yaml; the difference in instructions over the difference in admissions is what one
# admission costs (the start-up, loading the catalog, cancels out). Instructions are not time (a cache miss
# or a mispredicted branch costs more than an add), but a change that takes instructions away shows here.
#
#   scripts/count-instructions.sh                       # demo_jobset unknown_kind raycluster_50_groups server
#   scripts/count-instructions.sh jobset_2.5MB          # also: the 2.5 MB JobSet (a tenth of FEW and MANY)
#   scripts/count-instructions.sh demo_jobset
#   scripts/count-instructions.sh sample:knativeservice-1   # a sample of the corpus (tests/corpus/samples)
#
# `server`: the whole server, per request: `karta-webhook serve --threads 1` under callgrind, and curl
# posting the demo JobSet review (bench/jobset-demo-review.json) FEW times, then MANY times, each over one
# TLS keep-alive connection. Counted on the serving thread alone, from just before each curl to just
# after it (callgrind_control zeroes and dumps the counts); the difference over the difference in
# requests is one request: TLS, HTTP, the admission, the response. The handshake, paid once by each
# curl, cancels out.
#
# Environment:
#   BENCH   the bench_admission binary (default build-release/bench/bench_admission; build it in Release:
#           cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build build-release --target bench_admission)
#   FEW     admissions of the first run (default 10)
#   MANY    admissions of the second run (default 210; raycluster_50_groups and jobset_2.5MB use a tenth of both)
#   KARTA_BINARY  the webhook binary for `server` (default build-release/karta-webhook)
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
server_pid=
trap '[[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT

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

# The serving thread's instructions while curl posts the demo review `count` times over one connection.
server_instructions() {
  local count=$1 config="$work/curl-$1.conf" dump
  : >"$config"
  for _ in $(seq "$count"); do
    printf 'url = "https://127.0.0.1:%s/mutate?timeout=10s"\noutput = "/dev/null"\n' "$server_port" >>"$config"
  done
  callgrind_control -z "$server_pid" >/dev/null 2>&1
  curl -sk --fail -H 'Content-Type: application/json' --data-binary @bench/jobset-demo-review.json -K "$config" ||
    die "server: curl failed"
  callgrind_control -d "server-$count" "$server_pid" >/dev/null 2>&1
  sleep 0.5
  dump=$(grep -lx "desc: Trigger: dump server-$count" "$work"/callgrind.out.*-01 | head -n 1)
  [[ -n "$dump" ]] || die "server: no dump of the serving thread for $count requests"
  sed -n 's/^summary: \([0-9]*\)$/\1/p' "$dump"
}

count_server() {
  local binary=${KARTA_BINARY:-build-release/karta-webhook}
  [[ -x "$binary" ]] || die "$binary is not an executable (or set KARTA_BINARY)"
  [[ $binary == /* ]] || binary=$repo/$binary
  command -v curl >/dev/null || die "server: needs curl"
  certs/generate.sh "$work/certs" >/dev/null 2>&1 || die "server: certs/generate.sh failed"
  server_port=$((20000 + RANDOM % 40000))
  (cd "$work" && exec valgrind --tool=callgrind --separate-threads=yes "$binary" serve \
    --tls-cert-file certs/tls.crt --tls-private-key-file certs/tls.key --bind-address 127.0.0.1 \
    --port "$server_port" --threads 1 --policy "$repo/examples/policy.yaml" --log-level warn) >"$work/server.log" 2>&1 &
  server_pid=$!
  local ready=
  for _ in $(seq 240); do
    curl -sk -o /dev/null --max-time 2 "https://127.0.0.1:$server_port/readyz" && ready=1 && break
    kill -0 "$server_pid" 2>/dev/null || die "server: the webhook exited: $(tail -n 5 "$work/server.log")"
    sleep 0.5
  done
  [[ -n "$ready" ]] || die "server: no /readyz 200 within 2 minutes"
  local f=$few m=$many a b
  a=$(server_instructions "$f")
  b=$(server_instructions "$m")
  kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true
  server_pid=
  printf '%-22s %16d   (per request, TLS and HTTP included)\n' server $(((b - a) / (m - f)))
}

inputs=("$@")
((${#inputs[@]})) || inputs=(demo_jobset unknown_kind raycluster_50_groups server)
printf '%-22s %16s\n' input instructions/admission
for input in "${inputs[@]}"; do
  if [[ $input == server ]]; then
    count_server
    continue
  fi
  f=$few m=$many
  if [[ $input == raycluster_50_groups || $input == jobset_2.5MB ]]; then f=$(((few + 9) / 10)) m=$(((many + 9) / 10)); fi
  a=$(instructions "$input" "$f")
  b=$(instructions "$input" "$m")
  printf '%-22s %16d\n' "$input" $(((b - a) / (m - f)))
done

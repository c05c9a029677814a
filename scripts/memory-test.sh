#!/usr/bin/env bash
# Memory of the webhook on this machine: resident size with the built-in catalog loaded, and its growth
# over REQUESTS admissions of the demo JobSet (bench/jobset-demo-review.json) over TLS keep-alive, the
# webhook serving with its default threads (one per available CPU).
#
#   scripts/memory-test.sh
#
# Environment:
#   KARTA_BINARY  the webhook binary (default build/karta-webhook; build it in Release)
#   REQUESTS      admissions counted after the warm-up (default 1000000)
#   IDLE_WAIT     seconds between /readyz 200 and the idle measurement (default 5): the webhook compiles
#                 the jq states admission runs on its reload thread after it is ready
#   WARMUP        admissions before the first measurement (default 100000): TLS sessions, parser buffers
#                 and the allocator's caches reach their working size; with 8 threads (4 per CPU on 2
#                 CPUs) that took about 300,000 admissions on 2026-11-30 (18.6 MiB after 48,000, then
#                 19.2, 19.6, 19.7, 20.0, 20.0, 19.8 MiB every 90,000 or so)
#
# Prints the resident size (VmRSS) at start, after the warm-up, after each wrk run until REQUESTS more
# admissions were answered, and the peak (VmHWM); fails when the resident size grew by more than 1 MiB
# after the warm-up, or when a request was not answered with 200. Needs wrk and curl (load-test.sh
# installs them).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
binary=${KARTA_BINARY:-build/karta-webhook}
requests=${REQUESTS:-1000000}
idle_wait=${IDLE_WAIT:-5}
warmup=${WARMUP:-100000}
body=bench/jobset-demo-review.json
lua=bench/wrk-post.lua

log() { printf 'memory-test: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
[[ -x "$binary" ]] || die "$binary is not an executable (or set KARTA_BINARY)"
command -v wrk >/dev/null && command -v curl >/dev/null || die "needs wrk and curl"

work=$(mktemp -d /tmp/karta-memory-test.XXXXXX)
pid=
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

certs/generate.sh "$work/certs" 2>/dev/null
port=$((20000 + RANDOM % 40000))
"$binary" serve --tls-cert-file "$work/certs/tls.crt" --tls-private-key-file "$work/certs/tls.key" \
  --bind-address 127.0.0.1 --port "$port" --policy examples/policy.yaml \
  --log-level warn >"$work/webhook.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  kill -0 "$pid" 2>/dev/null || die "the webhook exited: $(tail -5 "$work/webhook.log")"
  curl -sk -o /dev/null --max-time 1 "https://127.0.0.1:$port/readyz" && break
  sleep 0.1
done
url="https://127.0.0.1:$port/mutate"

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$pid/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }

# run_for SECONDS: one wrk run; prints the requests it completed, fails on errors.
run_for() {
  wrk -t2 -c8 -d"${1}s" --timeout 5s -s "$lua" "$url" -- "$body" >"$work/wrk.txt" 2>&1 || die "wrk failed: $(cat "$work/wrk.txt")"
  grep -q -E 'Non-2xx|Socket errors' "$work/wrk.txt" && die "errors under load: $(cat "$work/wrk.txt")"
  awk '/requests in/ {print $1}' "$work/wrk.txt"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "resident at /readyz 200, built-in catalog loaded: $(mib "$(rss_kib)")"
sleep "$idle_wait"
start=$(rss_kib)
echo "idle RSS with the built-in catalog (${idle_wait} s after ready, no request yet): $(mib "$start")"
done_warmup=0
while ((done_warmup < warmup)); do done_warmup=$((done_warmup + $(run_for 1))); done
warm=$(rss_kib)
echo "after the warm-up ($done_warmup admissions): $(mib "$warm")"
total=0
while ((total < requests)); do
  total=$((total + $(run_for 5)))
  echo "  after $total more admissions: $(mib "$(rss_kib)")"
done
final=$(rss_kib)
growth=$((final - warm))
echo "growth over $total admissions after the warm-up: $growth KiB; peak resident size $(mib "$(hwm_kib)")"
((growth <= 1024)) || die "resident size grew by $growth KiB"

#!/usr/bin/env bash
# Start-up time of `serve` with the built-in catalog: from the process's start to the first 200 of
# GET /readyz, over HTTPS on 127.0.0.1, RUNS times; prints each run, the median, and the webhook's own
# "loaded N definitions ... in X ms" line of the last run. curl asks every 5 ms (each try costs a TLS
# handshake, about a millisecond), so the figure is late by at most a few milliseconds.
#
#   scripts/startup-time.sh
#
# Environment:
#   KARTA_BINARY  the webhook binary (default build/karta-webhook; build it in Release)
#   RUNS          starts measured (default 5)
#   POLICY        the --policy file (default examples/policy.yaml)
# Needs curl and openssl (scripts/install-deps.sh installs them).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
binary=${KARTA_BINARY:-build/karta-webhook}
runs=${RUNS:-5}
policy=${POLICY:-examples/policy.yaml}

log() { printf 'startup-time: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
[[ -x "$binary" ]] || die "$binary is not an executable (or set KARTA_BINARY)"
command -v curl >/dev/null || die "needs curl"

work=$(mktemp -d /tmp/karta-startup-time.XXXXXX)
pid=
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
certs/generate.sh "$work/certs" 2>/dev/null

now_us() { local t; t=$(date +%s%N); echo $((t / 1000)); }
times=()
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$runs"); do
  port=$((20000 + RANDOM % 40000))
  started=$(now_us)
  "$binary" serve --tls-cert-file "$work/certs/tls.crt" --tls-private-key-file "$work/certs/tls.key" \
    --bind-address 127.0.0.1 --port "$port" --policy "$policy" --log-format text >"$work/webhook.log" 2>&1 &
  pid=$!
  ready=
  for _ in $(seq 2000); do
    kill -0 "$pid" 2>/dev/null || die "the webhook exited: $(tail -5 "$work/webhook.log")"
    if [[ "$(curl -sk -o /dev/null -w '%{http_code}' --max-time 1 "https://127.0.0.1:$port/readyz" || true)" == 200 ]]; then
      ready=$(now_us)
      break
    fi
    sleep 0.005
  done
  [[ -n "$ready" ]] || die "no 200 from /readyz within 10 s: $(tail -5 "$work/webhook.log")"
  ms=$(awk -v d=$((ready - started)) 'BEGIN {printf "%.1f", d / 1000}')
  times+=("$ms")
  echo "run $run: process start to /readyz 200: $ms ms"
  kill "$pid" && wait "$pid" 2>/dev/null || true
  pid=
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk -v n="$runs" 'NR == int((n + 1) / 2) {print}')
echo "the webhook's own log (last run): $(grep -o 'loaded [0-9]* definitions.*' "$work/webhook.log" | head -1)"
echo "process start to /readyz 200, median of $runs: $median ms"

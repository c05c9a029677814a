#!/usr/bin/env bash
# Load test on this machine: requests per second and p50/p99 latency of POST /mutate on the demo JobSet
# (bench/jobset-demo-review.json, examples/jobset-demo.yaml as an AdmissionReview) over TLS keep-alive,
# side by side with nginx answering the same response bytes as a fixed JSON over TLS: the ceiling for an
# HTTPS JSON endpoint here. Both listen on 127.0.0.1 only, with the same certificate, on free ports.
#
#   scripts/load-test.sh
#
# Environment:
#   KARTA_BINARY      the webhook binary (default build/karta-webhook; build it in Release)
#   DURATION          seconds of each wrk run (default 10)
#   ROUNDS            saturating rounds per server, alternating webhook and nginx (default 3)
#   CONNECTIONS       connections of the saturating runs (default 50)
#   LIGHT_CONNECTIONS connections of the light-load runs (default 4)
#   WRK_THREADS       wrk threads (default 2)
#   WEBHOOK_THREADS   the webhook's --threads (default: its own default, 4 per available CPU)
#   NGINX_WORKERS     nginx's worker_processes (default: the CPU count, its best here: 2 workers
#                     served 103,700 requests/s, 4 served 89,600, 8 served 98,400)
#
# Runs ROUNDS saturating rounds (-c CONNECTIONS), webhook then nginx in each, so that both see the same
# machine; each server's peak is its median round (on this shared 2-vCPU machine one nginx run in four or
# five comes out 15-20% slow, and a single pair of runs moved the ratio by as much). Then a light-load run
# of each. With wrk2 (which has
# -R) the light run is at half the webhook's peak rate; Debian's wrk has no -R, so the light run uses
# LIGHT_CONNECTIONS connections instead and its p99 is reported as the light-load latency.
# Installs wrk and nginx-light with apt-get when missing (needs root). Bounded in time (about
# (2 x ROUNDS + 2) x DURATION + 30 s); cleans up its processes and temporary files on exit.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
binary=${KARTA_BINARY:-build/karta-webhook}
duration=${DURATION:-10}
rounds=${ROUNDS:-3}
connections=${CONNECTIONS:-50}
light_connections=${LIGHT_CONNECTIONS:-4}
wrk_threads=${WRK_THREADS:-2}
webhook_threads=${WEBHOOK_THREADS:-}
nginx_workers=${NGINX_WORKERS:-$(nproc)}
body=bench/jobset-demo-review.json
lua=bench/wrk-post.lua

log() { printf 'load-test: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[[ -x "$binary" ]] || die "$binary is not an executable: build it (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target karta-webhook) or set KARTA_BINARY"
[[ -f "$body" && -f "$lua" ]] || die "missing $body or $lua"

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v curl >/dev/null || missing+=(curl)
if ((${#missing[@]})); then
  [[ $EUID -eq 0 ]] || die "missing ${missing[*]}: run as root to install them, or install them"
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; }
fi
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

work=$(mktemp -d /tmp/karta-load-test.XXXXXX)
webhook_pid=
nginx_pid=
cleanup() {
  local pid
  for pid in $webhook_pid $nginx_pid; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $webhook_pid $nginx_pid; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port nothing listens on (connecting is refused).
free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  die "no free port found"
}

wait_ready() {  # URL PID NAME
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || die "$3 exited; its log: $(cat "$work/$3.log" 2>/dev/null | tail -5)"
    curl -sk -o /dev/null --max-time 1 "$1" && return
    sleep 0.1
  done
  die "$3 did not answer $1 within 10 s"
}

certs/generate.sh "$work/certs" 2>/dev/null
chmod 755 "$work"

webhook_port=$(free_port)
"$binary" serve --tls-cert-file "$work/certs/tls.crt" --tls-private-key-file "$work/certs/tls.key" \
  --bind-address 127.0.0.1 --port "$webhook_port" ${webhook_threads:+--threads "$webhook_threads"} --policy examples/policy.yaml \
  --log-level warn --log-format json >"$work/webhook.log" 2>&1 &
webhook_pid=$!
wait_ready "https://127.0.0.1:$webhook_port/readyz" "$webhook_pid" webhook

# The webhook's own answer, checked, becomes nginx's fixed response.
status=$(curl -sk -o "$work/response.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary "@$body" "https://127.0.0.1:$webhook_port/mutate")
[[ "$status" == 200 ]] || die "POST /mutate answered $status: $(cat "$work/response.json")"
grep -q '"patchType":"JSONPatch"' "$work/response.json" || die "POST /mutate sent no patch: $(cat "$work/response.json")"
grep -q "'" "$work/response.json" && die "the response holds a single quote; cannot embed it in nginx.conf"

nginx_port=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes $nginx_workers;
pid $work/nginx/nginx.pid;
error_log $work/nginx.log warn;
daemon off;
$( [[ $EUID -eq 0 ]] && echo "user root;" )
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  server {
    listen 127.0.0.1:$nginx_port ssl;
    ssl_certificate $work/certs/tls.crt;
    ssl_certificate_key $work/certs/tls.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
      default_type application/json;
      return 200 '$(cat "$work/response.json")';
    }
  }
}
EOF
"$nginx_bin" -e "$work/nginx.log" -p "$work/nginx" -c "$work/nginx/nginx.conf" >"$work/nginx.out" 2>&1 &
nginx_pid=$!
wait_ready "https://127.0.0.1:$nginx_port/" "$nginx_pid" nginx
status=$(curl -sk -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$body" \
  "https://127.0.0.1:$nginx_port/mutate")
[[ "$status" == 200 ]] || die "nginx answered $status"

has_rate=false
wrk --help 2>&1 | grep -qE '^\s+-R, --rate' && has_rate=true

# run_wrk NAME URL CONNECTIONS [RATE]: writes $work/NAME.txt
run_wrk() {
  local name=$1 url=$2 conns=$3 rate=${4:-}
  local args=(-t "$wrk_threads" -c "$conns" -d "${duration}s" --timeout 5s --latency -s "$lua")
  [[ -n "$rate" ]] && args+=(-R "$rate")
  ((conns < wrk_threads)) && args[1]=$conns
  log "wrk ${args[*]} $url ($name)"
  timeout $((duration + 30)) wrk "${args[@]}" "$url" -- "$body" >"$work/$name.txt" 2>&1 ||
    die "wrk failed for $name: $(cat "$work/$name.txt")"
  sed 's/^/    /' "$work/$name.txt"
}

# Milliseconds from wrk's "812.00us", "1.23ms", "1.02s".
to_ms() {
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
    else if (v ~ /m$/) { sub(/m$/, "", v); printf "%.3f", v * 60000 }
    else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
    else printf "%s", v }'
}
rps() { awk '/^Requests\/sec:/ {print $2}' "$work/$1.txt"; }
pct() { to_ms "$(awk -v p="$2%" '$1 == p {print $2; exit}' "$work/$1.txt")"; }
errors() {
  local f="$work/$1.txt" non2xx socket
  non2xx=$(awk -F': ' '/Non-2xx or 3xx responses/ {print $2}' "$f")
  socket=$(sed -n 's/^ *Socket errors: //p' "$f")
  echo "non-2xx ${non2xx:-0}; socket errors: ${socket:-none}"
}

webhook_threads_used=${webhook_threads:-$("$binary" serve --help | sed -n 's/.*--threads .*=\([0-9]*\).*/\1/p')}
log "saturating runs: $rounds rounds of $connections connections, ${duration}s each, webhook with ${webhook_threads_used:-?} threads, nginx with $nginx_workers workers"
for round in $(seq "$rounds"); do
  run_wrk "webhook-peak-$round" "https://127.0.0.1:$webhook_port/mutate" "$connections"
  run_wrk "nginx-peak-$round" "https://127.0.0.1:$nginx_port/mutate" "$connections"
done
# median_round NAME: the round whose rate is the median of NAME's rounds (the lower middle one for an even count).
median_round() {
  for round in $(seq "$rounds"); do echo "$(rps "$1-peak-$round") $round"; done | sort -n | awk -v n="$rounds" 'NR == int((n + 1) / 2) {print $2}'
}
all_rounds() { for round in $(seq "$rounds"); do printf '%s ' "$(rps "$1-peak-$round")"; done; }
webhook_median=webhook-peak-$(median_round webhook)
nginx_median=nginx-peak-$(median_round nginx)
webhook_peak=$(rps "$webhook_median")
if $has_rate; then
  half=$(awk -v r="$webhook_peak" 'BEGIN {printf "%d", r / 2}')
  light_label="at half the webhook's peak rate ($half req/s, wrk -R)"
  run_wrk webhook-light "https://127.0.0.1:$webhook_port/mutate" "$connections" "$half"
  run_wrk nginx-light "https://127.0.0.1:$nginx_port/mutate" "$connections" "$half"
else
  light_label="with $light_connections connections (this wrk has no -R: light load by fewer connections)"
  run_wrk webhook-light "https://127.0.0.1:$webhook_port/mutate" "$light_connections"
  run_wrk nginx-light "https://127.0.0.1:$nginx_port/mutate" "$light_connections"
fi

webhook_log_errors=$(grep -c '"level":"error"' "$work/webhook.log" || true)

ratio=$(awk -v a="$webhook_peak" -v b="$(rps "$nginx_median")" 'BEGIN {printf "%.3f", a / b}')
cat <<EOF

==== load-test summary ($(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))
POST /mutate, demo JobSet ($(wc -c <"$body") B body, $(wc -c <"$work/response.json") B response), TLS keep-alive, wrk -t$wrk_threads
webhook threads: ${webhook_threads_used:-?}; nginx workers: $nginx_workers
saturating, $connections connections, ${duration}s, $rounds rounds each (req/s): webhook $(all_rounds webhook)| nginx $(all_rounds nginx)
median rounds:
  webhook  $(printf '%10s' "$webhook_peak") req/s   p50 $(pct "$webhook_median" 50) ms   p99 $(pct "$webhook_median" 99) ms   $(errors "$webhook_median")
  nginx    $(printf '%10s' "$(rps "$nginx_median")") req/s   p50 $(pct "$nginx_median" 50) ms   p99 $(pct "$nginx_median" 99) ms   $(errors "$nginx_median")
  ratio webhook/nginx: $ratio
light load $light_label:
  webhook  $(printf '%10s' "$(rps webhook-light)") req/s   p50 $(pct webhook-light 50) ms   p99 $(pct webhook-light 99) ms   $(errors webhook-light)
  nginx    $(printf '%10s' "$(rps nginx-light)") req/s   p50 $(pct nginx-light 50) ms   p99 $(pct nginx-light 99) ms   $(errors nginx-light)
runs with non-2xx answers or socket errors: $(grep -lE 'Non-2xx|Socket errors' "$work"/*-peak-*.txt "$work"/*-light.txt | wc -l) of $((2 * rounds + 2)); webhook log lines at level error: $webhook_log_errors
EOF

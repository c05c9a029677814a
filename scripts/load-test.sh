#!/usr/bin/env bash
# Load test on this machine, measured fairly: requests per second and latency of POST /mutate on the demo
# JobSet (bench/jobset-demo-review.json, examples/jobset-demo.yaml as an AdmissionReview) over TLS
# keep-alive, side by side with nginx answering the same response bytes as a fixed JSON over TLS: the
# ceiling for an HTTPS JSON endpoint here. Both listen on 127.0.0.1 only, with the same certificate.
#
#   scripts/load-test.sh
#
# Pinned: the server under test runs alone on SERVER_CPUS (taskset), wrk alone on CLIENT_CPUS, so the
# load generator never takes CPU from the server, nor the server's threads from wrk (sharing the CPUs
# flattered a server with many threads). The webhook runs with its default threads (one per CPU it may
# run on), nginx with one worker per SERVER_CPUS CPU, wrk with one thread per CLIENT_CPUS CPU.
#
# Environment:
#   KARTA_BINARY      the webhook binary (default build/karta-webhook; build it in Release)
#   PACED_CLIENT      the constant-rate client (default karta-paced-load beside KARTA_BINARY, built with it)
#   SERVER_CPUS       CPUs of the server under test, a taskset list (default 1)
#   CLIENT_CPUS       CPUs of wrk (default 0)
#   DURATION          seconds of each saturating run (default 10)
#   ROUNDS            saturating rounds per server, alternating webhook and nginx (default 3)
#   CONNECTIONS       connections of every run (default 32)
#   PACED_DURATION    seconds of each constant-rate run (default 10)
#   PACED_ROUNDS      constant-rate rounds per series (the webhook, nginx at its rate, nginx at half its own
#                     peak), alternating (default 3)
#   WEBHOOK_THREADS   the webhook's --threads (default: its own default)
#
# Prints, for every run, requests/s, p50/p99, non-2xx answers and socket errors; the pinned ratio of the
# medians (each server's median round: one nginx run in four or five comes out 15-20% slow on a shared
# machine), and beside it the ratio of each pair of rounds run back to back, with their median; then
# constant-rate runs at half the webhook's median peak with their p50, p99 and p99.9:
# karta-paced-load (bench/paced_load.cpp) sends request k at k/rate seconds on whichever connection is
# idle, timed to the microsecond, and counts latency from when each request was due. (wrk paces by whole
# milliseconds: each millisecond's requests left together and queued behind one another, so its tail
# measured those bursts as much as the server.) Its rounds alternate between the webhook and nginx, at the
# same rate, and each prints the host's steal time while it ran and the share of its CPU the server was
# busy; a third series runs nginx at half of its own peak, what "half the peak" gives the cheapest server
# here. Installs wrk and nginx-light with apt-get
# when missing (needs root). Bounded in time (about 2 x ROUNDS x DURATION + 3 x PACED_ROUNDS x (PACED_DURATION + 3) + 60 s); cleans
# up its processes and temporary files on exit.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
binary=${KARTA_BINARY:-build/karta-webhook}
duration=${DURATION:-10}
rounds=${ROUNDS:-3}
connections=${CONNECTIONS:-32}
paced_duration=${PACED_DURATION:-10}
paced_rounds=${PACED_ROUNDS:-3}
server_cpus=${SERVER_CPUS:-1}
client_cpus=${CLIENT_CPUS:-0}
webhook_threads=${WEBHOOK_THREADS:-}
body=bench/jobset-demo-review.json
lua=bench/wrk-post.lua
paced_client=${PACED_CLIENT:-$(dirname "$binary")/karta-paced-load}

log() { printf 'load-test: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[[ -x "$binary" ]] || die "$binary is not an executable: build it (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build --target karta-webhook) or set KARTA_BINARY"
[[ -x "$paced_client" ]] || die "$paced_client is not an executable: build it (cmake --build build --target karta-paced-load) or set PACED_CLIENT"
[[ -f "$body" && -f "$lua" ]] || die "missing $body or $lua"
command -v taskset >/dev/null || die "needs taskset (util-linux)"
(($(nproc) >= 2)) || die "needs at least 2 CPUs: one for the server under test, one for wrk"
server_cpu_count=$(taskset -c "$server_cpus" nproc) || die "SERVER_CPUS=$server_cpus is not a CPU list of this machine"
client_cpu_count=$(taskset -c "$client_cpus" nproc) || die "CLIENT_CPUS=$client_cpus is not a CPU list of this machine"
nginx_workers=$server_cpu_count
wrk_threads=$client_cpu_count
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

load_before=$(cut -d" " -f1-3 /proc/loadavg)
certs/generate.sh "$work/certs" 2>/dev/null
chmod 755 "$work"

webhook_port=$(free_port)
taskset -c "$server_cpus" "$binary" serve --tls-cert-file "$work/certs/tls.crt" --tls-private-key-file "$work/certs/tls.key" \
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
    # The webhook's TLS 1.3 suites, in its order and chosen by the server as it does
    # (server/tls_context.cpp): both give wrk the same suite, AES-128-GCM.
    ssl_prefer_server_ciphers on;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;
    location / {
      default_type application/json;
      return 200 '$(cat "$work/response.json")';
    }
  }
}
EOF
taskset -c "$server_cpus" "$nginx_bin" -e "$work/nginx.log" -p "$work/nginx" -c "$work/nginx/nginx.conf" >"$work/nginx.out" 2>&1 &
nginx_pid=$!
wait_ready "https://127.0.0.1:$nginx_port/" "$nginx_pid" nginx
status=$(curl -sk -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "@$body" \
  "https://127.0.0.1:$nginx_port/mutate")
[[ "$status" == 200 ]] || die "nginx answered $status"

# run_wrk NAME URL [SECONDS]: a saturating run, written to $work/NAME.txt
run_wrk() {
  local name=$1 url=$2 seconds=${3:-$duration}
  local args=(-t "$wrk_threads" -c "$connections" -d "${seconds}s" --timeout 5s --latency -s "$lua")
  log "taskset -c $client_cpus wrk ${args[*]} $url ($name)"
  timeout $((seconds + 30)) taskset -c "$client_cpus" wrk "${args[@]}" "$url" -- "$body" >"$work/$name.txt" 2>&1 ||
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

webhook_threads_used=${webhook_threads:-$(taskset -c "$server_cpus" "$binary" serve --help | sed -n 's/.*--threads [^=]*=\([0-9]*\).*/\1/p')}
# A short unmeasured run of each first: TLS sessions, the allocator's caches, and the jq states the
# webhook compiles off its admission threads once it is ready.
run_wrk webhook-warmup "https://127.0.0.1:$webhook_port/mutate" 3 >/dev/null
run_wrk nginx-warmup "https://127.0.0.1:$nginx_port/mutate" 3 >/dev/null
log "saturating runs: $rounds rounds of $connections connections, ${duration}s each; server on CPUs $server_cpus (webhook ${webhook_threads_used:-?} threads, nginx $nginx_workers workers), wrk on CPUs $client_cpus ($wrk_threads threads)"
for round in $(seq "$rounds"); do
  run_wrk "webhook-peak-$round" "https://127.0.0.1:$webhook_port/mutate"
  run_wrk "nginx-peak-$round" "https://127.0.0.1:$nginx_port/mutate"
done
# Rounds are the runs PREFIX-1 .. PREFIX-COUNT; FIGURE is a function of a run's name (rps, due_p99).
# round_figures PREFIX COUNT FIGURE: each round's figure, in order.
round_figures() { local round; for round in $(seq "$2"); do printf '%s ' "$("$3" "$1-$round")"; done; }
# median_run PREFIX COUNT FIGURE: the name of the round whose figure is the median (the lower middle one
# for an even count).
median_run() {
  local round
  for round in $(seq "$2"); do echo "$("$3" "$1-$round") $round"; done | sort -n |
    awk -v n="$2" -v prefix="$1" 'NR == int((n + 1) / 2) {print prefix "-" $2}'
}
webhook_median=$(median_run webhook-peak "$rounds" rps)
nginx_median=$(median_run nginx-peak "$rounds" rps)
webhook_peak=$(rps "$webhook_median")

# The constant-rate runs: half the webhook's peak, one schedule over all connections (karta-paced-load),
# against the webhook and nginx at the same rate in alternating rounds: on a shared VM the host's stalls
# (its steal time, printed) reach both, and nginx's figures say what this machine allows at that moment.
# Each server's round with the median p99 is reported, as for the saturating rounds.
half=$(awk -v r="$webhook_peak" 'BEGIN {printf "%d", r / 2}')
# The same test of nginx at half of its own peak: what "half the peak" allows on this machine to a server
# whose every request is the cheapest an HTTPS endpoint can be (bench/README.md, ninth round).
nginx_half=$(awk -v r="$(rps "$nginx_median")" 'BEGIN {printf "%d", r / 2}')
steal_ticks() { awk '/^cpu / {print $9}' /proc/stat; }
# cpu_ticks PID: the CPU time (user and system, clock ticks) of PID, all its threads, and its running
# children (nginx's workers).
cpu_ticks() {
  local total=0 p
  for p in "$1" $(pgrep -P "$1" || true); do total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo "$total"
}
# run_paced NAME URL RATE PID: $work/NAME.txt, with the share of CPU time the host took while it ran and
# the share of one CPU the server (PID) was busy.
run_paced() {
  local name=$1 url=$2 rate=$3 pid=$4 steal_before busy_before started
  log "constant rate ($name): $rate req/s over $connections connections, ${paced_duration}s; taskset -c $client_cpus $paced_client"
  steal_before=$(steal_ticks)
  busy_before=$(cpu_ticks "$pid")
  started=$(date +%s.%N)
  timeout $((paced_duration + 40)) taskset -c "$client_cpus" "$paced_client" --url "$url" --body "$body" --rate "$rate" \
    --connections "$connections" --duration "$paced_duration" --warmup 2 --cacert "$work/certs/ca.crt" \
    >"$work/$name.txt" 2>&1 || die "the constant-rate run $name failed: $(cat "$work/$name.txt")"
  awk -v ticks=$(($(steal_ticks) - steal_before)) -v busy=$(($(cpu_ticks "$pid") - busy_before)) -v hz="$(getconf CLK_TCK)" \
    -v cpus="$(nproc)" -v s="$started" -v e="$(date +%s.%N)" \
    'BEGIN {printf "host steal: %.1f%%\nserver busy: %.0f%% of a CPU\n", 100 * ticks / hz / cpus / (e - s), 100 * busy / hz / (e - s)}' \
    >>"$work/$name.txt"
  sed 's/^/    /' "$work/$name.txt"
}
for round in $(seq "$paced_rounds"); do
  run_paced "webhook-paced-$round" "https://127.0.0.1:$webhook_port/mutate" "$half" "$webhook_pid"
  run_paced "nginx-paced-$round" "https://127.0.0.1:$nginx_port/mutate" "$half" "$nginx_pid"
  run_paced "nginx-own-half-$round" "https://127.0.0.1:$nginx_port/mutate" "$nginx_half" "$nginx_pid"
done
# paced_ms NAME FROM P: milliseconds of percentile P (p50, p99, p999, max) counted from FROM (due, send)
paced_ms() {
  awk -v from="$2" -v p="$3" '$0 ~ "^paced latency us from " from ":" {for (i = 1; i <= NF; ++i) if ($i == p) printf "%.3f", $(i + 1) / 1000}' "$work/$1.txt"
}
due_p99() { paced_ms "$1" due p99; }
busy() { sed -n 's/^server busy: \([0-9]*%\).*/\1/p' "$work/$1.txt"; }
# paced_line SERIES WANT: the median round of the constant-rate series SERIES (webhook-paced, ...), asked
# for WANT req/s.
paced_line() {
  local series=$1 want=$2 name rate errors note
  name=$(median_run "$series" "$paced_rounds" due_p99)
  rate=$(awk '/^paced: / {print $(NF - 1)}' "$work/$name.txt")
  errors=$(sed -n 's/^paced errors: //p' "$work/$name.txt")
  note=$(awk -v got="$rate" -v want="$want" 'BEGIN {
    if (got > 1.1 * want || got < 0.9 * want) printf "   THE PACING DID NOT HOLD (served %.0f%% of the rate asked): these are not half-load figures", 100 * got / want }')
  printf '  %-14s  from due: p50 %s p99 %s p99.9 %s max %s ms | from send: p50 %s p99 %s ms | %s req/s served, server busy %s; errors: %s; %s%s\n' \
    "$series" "$(paced_ms "$name" due p50)" "$(paced_ms "$name" due p99)" "$(paced_ms "$name" due p999)" "$(paced_ms "$name" due max)" \
    "$(paced_ms "$name" send p50)" "$(paced_ms "$name" send p99)" "$rate" "$(busy "$name")" "$errors" "$(sed -n 's/^host //p' "$work/$name.txt")" "$note"
}
webhook_log_errors=$(grep -c '"level":"error"' "$work/webhook.log" || true)
# suite PORT: the TLS 1.3 suite the server there gives a client offering OpenSSL's default list.
suite() {
  command -v openssl >/dev/null || { echo "unknown (no openssl command)"; return; }
  openssl s_client -connect "127.0.0.1:$1" -tls1_3 </dev/null 2>/dev/null | sed -n 's/.*Cipher is \([A-Z0-9_]*\).*/\1/p' | head -n 1
}
ratio=$(awk -v a="$webhook_peak" -v b="$(rps "$nginx_median")" 'BEGIN {printf "%.3f", a / b}')
# The same ratio taken round by round: webhook round i over nginx round i, run one after the other, so
# each pair shares the host's state of the moment (its stalls drift over minutes); and their median.
pair_ratios=$(for round in $(seq "$rounds"); do
  awk -v a="$(rps "webhook-peak-$round")" -v b="$(rps "nginx-peak-$round")" 'BEGIN {printf "%.3f\n", a / b}'
done)
pair_median=$(sort -n <<<"$pair_ratios" | awk -v n="$rounds" 'NR == int((n + 1) / 2)')
cat <<EOF

==== load-test summary ($(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average before: $load_before)
POST /mutate, demo JobSet ($(wc -c <"$body") B body, $(wc -c <"$work/response.json") B response), TLS keep-alive
pinned: server on CPUs $server_cpus (webhook threads: ${webhook_threads_used:-?}; nginx workers: $nginx_workers), wrk -t$wrk_threads on CPUs $client_cpus
TLS 1.3 suite given to OpenSSL's default offer: webhook $(suite "$webhook_port"), nginx $(suite "$nginx_port")
saturating, $connections connections, ${duration}s, $rounds rounds each (req/s): webhook $(round_figures webhook-peak "$rounds" rps)| nginx $(round_figures nginx-peak "$rounds" rps)
median rounds:
  webhook  $(printf '%10s' "$webhook_peak") req/s   p50 $(pct "$webhook_median" 50) ms   p99 $(pct "$webhook_median" 99) ms   $(errors "$webhook_median")
  nginx    $(printf '%10s' "$(rps "$nginx_median")") req/s   p50 $(pct "$nginx_median" 50) ms   p99 $(pct "$nginx_median" 99) ms   $(errors "$nginx_median")
  pinned ratio webhook/nginx: $ratio
  the same, round by round (webhook round i / nginx round i, run back to back): $(tr '\n' ' ' <<<"$pair_ratios")(median $pair_median)
constant rate at half the webhook's peak, the same for both ($half req/s, $connections connections, ${paced_duration}s, $paced_rounds rounds each; p99 from due (ms): webhook $(round_figures webhook-paced "$paced_rounds" due_p99)| nginx $(round_figures nginx-paced "$paced_rounds" due_p99)
and nginx at half of its own peak ($nginx_half req/s; p99 from due (ms): $(round_figures nginx-own-half "$paced_rounds" due_p99))
server busy (share of its CPU) in each round: webhook $(round_figures webhook-paced "$paced_rounds" busy)| nginx $(round_figures nginx-paced "$paced_rounds" busy)| nginx at its own half $(round_figures nginx-own-half "$paced_rounds" busy)
median rounds (latency from when each request was due, and from its send):
$(paced_line webhook-paced "$half")
$(paced_line nginx-paced "$half")
$(paced_line nginx-own-half "$nginx_half")
constant-rate rounds with errors: $(grep -l '^paced errors:' "$work"/*-paced-*.txt "$work"/nginx-own-half-*.txt | xargs grep -L '^paced errors: connect 0 read 0 write 0 status 0 timeout 0$' | wc -l) of $((3 * paced_rounds))
saturating runs with non-2xx answers or socket errors: $(cat "$work"/*-peak-*.txt | grep -cE 'Non-2xx|Socket errors' || true) of $((2 * rounds)); webhook log lines at level error: $webhook_log_errors
load average after: $(cut -d' ' -f1-3 /proc/loadavg)
EOF

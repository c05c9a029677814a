#!/usr/bin/env bash
# The webhook's cost with the cluster's CRDs (issue 48): `serve` against an API double of its own
# (scripts/scale-api-double.py) holding N CRDs that no definition uses (renamed copies of
# tests/corpus/crds) beside the corpus CRDs the built-in catalog uses.
#
#   scripts/scale-test.sh N [--binary PATH] [--keep]
#
#   N              unrelated CRDs served (0, 200, 1000, ...)
#   --binary PATH  the webhook (default: $KARTA_BINARY, else build/karta-webhook, where the README's build
#                  puts it; scripts/build-release.sh puts the release one in build-release/)
#   --keep         keep the work directory (logs, certificates, the double's request log, wrk outputs)
#
# The double serves HTTPS on 127.0.0.1 with its own certificates (certs/generate.sh, openssl) and a bearer
# token; `serve` gets a kubeconfig naming it, its own serving certificate, --policy examples/policy.yaml,
# --log-format json --log-level info (as manifests/base/deployment.yaml), and runs pinned to WEBHOOK_CPUS
# (default 0); the double, wrk and the helpers run on CLIENT_CPUS (default 1). Prints, from the
# webhook's start:
#   - start to /readyz 200 (asked every 20 ms, each time on a new TLS connection);
#   - RSS idle (VmRSS once its CPU has stopped rising after ready, then 3 s idle), peak RSS (VmHWM at the end);
#   - one unrelated CRD event (a label of one copy; at N=0 the ADDED of one): the webhook's CPU from the
#     event until its CPU stops rising (not over 10% of a CPU in any 0.1 s for 1 s; at least 2 s), less its idle
#     rate over the same window; CPU is the sum of /proc/PID/task/*/schedstat (nanoseconds: an event
#     can cost less than the 10 ms tick of /proc/PID/stat); and whether it counted a cluster reload;
#   - one event of a CRD in W (a new property in jobsets.jobset.x-k8s.io's spec schema, generation + 1):
#     the time until /metrics' karta_reloads_total{source="cluster"} increments, and the CPU as above;
#   - POST /mutate of bench/jobset-demo-review.json (examples/jobset-demo.yaml as an AdmissionReview) at
#     RATE requests/s (default 40), sequentially, p50/p99: over TLS keep-alive (wrk -t1 -c1 with a
#     paced Lua script) and on a new TLS connection each (the helper's own client), each first without
#     events, then while EVENTS (default 20) unrelated CRD events arrive 0.5 s apart;
#   - a markdown row: | N | JSON MB (full form / sent until ready) | ready s | RSS idle MiB | peak MiB |
#     unrelated event CPU ms | W event time ms / CPU ms | mutate p50/p99 keep-alive | p50/p99 new conn |
#
# Environment: KARTA_BINARY, WEBHOOK_CPUS, CLIENT_CPUS, RATE, EVENTS, READY_TIMEOUT (s, default 300),
# LOG_LEVEL (the webhook's, default info). Needs python3 and python3-yaml, openssl, curl, wrk, taskset
# (scripts/install-deps.sh). Cleans up its processes on exit; exits non-zero, saying why, when the double
# or the webhook dies or /readyz never answers 200.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
usage() { sed -n '6,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
n=
binary=${KARTA_BINARY:-build/karta-webhook}
keep=0
while (($#)); do
  case $1 in
    --binary) (($# >= 2)) || usage; binary=$2; shift 2 ;;
    --binary=*) binary=${1#--binary=}; shift ;;
    --keep) keep=1; shift ;;
    -h | --help) usage ;;
    -*) usage ;;
    *) [[ -z "$n" && "$1" =~ ^[0-9]+$ ]] || usage; n=$1; shift ;;
  esac
done
[[ -n "$n" ]] || usage
webhook_cpus=${WEBHOOK_CPUS:-0}
client_cpus=${CLIENT_CPUS:-1}
rate=${RATE:-40}
events=${EVENTS:-20}
ready_timeout=${READY_TIMEOUT:-300}
log_level=${LOG_LEVEL:-info}
body=bench/jobset-demo-review.json
double=scripts/scale-api-double.py

log() { printf 'scale-test: %s\n' "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ -x "$binary" ]] || die "$binary is not an executable: build it, or give --binary PATH"
binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
for tool in python3 openssl curl wrk taskset; do command -v "$tool" >/dev/null || die "needs $tool (scripts/install-deps.sh)"; done
python3 -c 'import yaml' 2>/dev/null || die "needs PyYAML (python3-yaml; scripts/install-deps.sh)"
(($(nproc) >= 2)) || die "needs at least 2 CPUs: one for the webhook, one for the API double and the clients"
taskset -c "$webhook_cpus" true 2>/dev/null || die "WEBHOOK_CPUS=$webhook_cpus is not a CPU list of this machine"
taskset -c "$client_cpus" true 2>/dev/null || die "CLIENT_CPUS=$client_cpus is not a CPU list of this machine"

work=$(mktemp -d /tmp/karta-scale-test.XXXXXX)
double_pid=
webhook_pid=
cleanup() {
  local pid
  for pid in $webhook_pid $double_pid; do kill "$pid" 2>/dev/null || true; done
  for pid in $webhook_pid $double_pid; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if ((keep)); then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port nothing listens on.
free_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  die "no free port found"
}

certs/generate.sh "$work/api-certs" 2>/dev/null
certs/generate.sh "$work/certs" 2>/dev/null
(umask 077 && openssl rand -hex 24 >"$work/token")

log "starting the API double with N=$n unrelated CRDs (the first run parses the corpus: ~20 s; later ones read its JSON cache)"
taskset -c "$client_cpus" python3 "$double" serve --n "$n" --cert "$work/api-certs/tls.crt" --key "$work/api-certs/tls.key" \
  --token-file "$work/token" --port-file "$work/double.port" --request-log "$work/double-requests.log" \
  >"$work/double.log" 2>&1 &
double_pid=$!
for _ in $(seq 600); do
  [[ -s "$work/double.port" ]] && break
  kill -0 "$double_pid" 2>/dev/null || die "the API double exited: $(tail -5 "$work/double.log")"
  sleep 0.2
done
[[ -s "$work/double.port" ]] || die "the API double did not start within 120 s: $(tail -5 "$work/double.log")"
double_port=$(cat "$work/double.port")
sed 's/^/  /' "$work/double.log" >&2

cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: scale-double
    cluster:
      server: https://127.0.0.1:$double_port
      certificate-authority-data: $(openssl base64 -A -in "$work/api-certs/ca.crt")
users:
  - name: scale-test
    user:
      token: $(cat "$work/token")
contexts:
  - name: scale
    context: {cluster: scale-double, user: scale-test}
current-context: scale
EOF
chmod 600 "$work/kubeconfig"

port=$(free_port)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "starting taskset -c $webhook_cpus $binary serve --kubeconfig ... --port $port"
started_ns=$(date +%s%N)
taskset -c "$webhook_cpus" "$binary" serve --kubeconfig "$work/kubeconfig" --tls-cert-file "$work/certs/tls.crt" \
  --tls-private-key-file "$work/certs/tls.key" --bind-address 127.0.0.1 --port "$port" --policy examples/policy.yaml \
  --log-format json --log-level "$log_level" >"$work/webhook.log" 2>&1 &
webhook_pid=$!
ready_s=$(taskset -c "$client_cpus" python3 "$double" ready --port "$port" --cafile "$work/certs/ca.crt" \
  --pid "$webhook_pid" --since-ns "$started_ns" --timeout "$ready_timeout" --interval 0.02) ||
  die "the webhook did not become ready (above); its log's last lines:
$(tail -20 "$work/webhook.log")"
sent_until_ready=$(curl -s --cacert "$work/api-certs/ca.crt" -H "Authorization: Bearer $(cat "$work/token")" \
  "https://127.0.0.1:$double_port/control/stats")
log "ready after $ready_s s; RSS $(awk '/^VmRSS:/ {printf "%.1f MiB", $2 / 1024}' "/proc/$webhook_pid/status")"

taskset -c "$client_cpus" python3 "$double" measure --pid "$webhook_pid" --port "$port" --cafile "$work/certs/ca.crt" \
  --double-port "$double_port" --double-cafile "$work/api-certs/ca.crt" --token-file "$work/token" --body "$body" \
  --work "$work" --client-cpus "$client_cpus" --events "$events" --rate "$rate" >"$work/results.json" ||
  die "the measurements failed; the webhook's log's last lines:
$(tail -20 "$work/webhook.log" 2>/dev/null)"
kill -0 "$webhook_pid" 2>/dev/null || die "the webhook exited during the measurements: $(tail -20 "$work/webhook.log")"

warnings=$(grep -cE '"level":"(warning|error|critical)"' "$work/webhook.log" || true)
python3 - "$work/results.json" "$n" "$ready_s" "$sent_until_ready" "$load_before" "$warnings" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
n, ready_s, sent, load_before, warnings = sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5], sys.argv[6]
stats = r["double_stats"]
mb = lambda b: b / 1e6
mib = lambda k: k / 1024
lat = lambda key: "%.2f / %.2f" % tuple(r[key][:2])
print()
print("==== scale-test N=%s" % n)
print("CRDs at the end: %d (%d MB in full form at the start); bytes sent to the webhook until ready: %.1f MB; by the end: %.1f MB"
      % (stats["crds"], mb(stats["fullFormBytes"]), mb(sent.get("bytes sent", 0)), mb(stats.get("bytes sent", 0))))
print("requests the double answered:", ", ".join("%s %s" % (k, v) for k, v in sorted(stats.items())
                                                      if k not in ("bytes sent", "crds", "fullFormBytes", "resourceVersion")))
print("start to /readyz 200: %.2f s" % ready_s)
print("CPU after ready until it settled: %.0f ms; idle CPU %.2f ms/s" % (r["after_ready_cpu_ms"], r["idle_cpu_ms_per_s"]))
print("RSS idle: %.1f MiB; peak (VmHWM): %.1f MiB; RSS at the end: %.1f MiB" % (mib(r["rss_idle_kib"]), mib(r["peak_kib"]), mib(r["rss_end_kib"])))
print("unrelated CRD event, %s: %.1f ms CPU, busy for %.0f ms, cluster reloads +%d"
      % (r["unrelated_event_kind"], r["unrelated_cpu_ms"], r["unrelated_busy_ms"], r["unrelated_reloads"]))
print("CRD in W (jobsets.jobset.x-k8s.io, a new schema property): reload counted after %.0f ms, %.1f ms CPU, busy for %.0f ms"
      % (r["w_reload_ms"], r["w_cpu_ms"], r["w_busy_ms"]))
for mode, name in (("keepalive", "keep-alive (wrk -t1 -c1, paced)"), ("newconn", "new TLS connection per request")):
    for phase in ("quiet", "events"):
        key = mode + "_" + phase
        if key in r:
            p50, p99, count, errors = r[key]
            print("/mutate %s, %s: p50 %.2f ms, p99 %.2f ms, %d requests, %d errors; webhook CPU %.0f ms"
                  % (name, "no events" if phase == "quiet" else "20 unrelated events 0.5 s apart", p50, p99, count, errors, r[key + "_cpu_ms"]))
print("webhook CPU in all (utime+stime of /proc/PID/stat): %.2f s; cluster reloads counted: %d; log lines at warning or worse: %s"
      % (r["stat_cpu_s"], r["reloads_cluster_total"], warnings))
print("load average before: %s" % load_before)
print()
print("| N | JSON MB (full / sent until ready) | ready s | RSS idle MiB | peak MiB | unrelated event CPU ms | W event time ms / CPU ms | mutate p50/p99 ms keep-alive | p50/p99 ms new conn |")
print("|---|---|---|---|---|---|---|---|---|")
print("| %s | %.0f / %.0f | %.2f | %.0f | %.0f | %.1f | %.0f / %.0f | %s | %s |" % (
    n, mb(stats["fullFormBytes"]), mb(sent.get("bytes sent", 0)), ready_s, mib(r["rss_idle_kib"]), mib(r["peak_kib"]),
    r["unrelated_cpu_ms"], r["w_reload_ms"], r["w_cpu_ms"], lat("keepalive_events"), lat("newconn_events")))
EOF
if ((warnings > 0)); then
  log "the webhook's log lines at warning or worse (first 10):"
  grep -E '"level":"(warning|error|critical)"' "$work/webhook.log" | head -10 | cut -c1-400 >&2
fi

#!/usr/bin/env bash
# Makes a private CA and a serving certificate for karta-webhook, plus what manifests/overlays/plain
# needs to install them. See certs/README.md.
#
#   certs/generate.sh [OUTDIR]        OUTDIR defaults to certs/out (next to this script)
#
# Idempotent: an existing CA and serving certificate are kept while they are valid for at least 30 more
# days and (for the serving certificate) signed by that CA with the expected names; the derived files are
# rewritten byte for byte the same. Delete OUTDIR, or pass --force, to start over.
set -euo pipefail

readonly service=karta-webhook
readonly namespace=karta-system
readonly secret_name=karta-webhook-tls
readonly ca_days=3650
readonly cert_days=365
readonly renew_seconds=$((30 * 24 * 3600))
readonly dns_names=(
  "$service"
  "$service.$namespace"
  "$service.$namespace.svc"
  "$service.$namespace.svc.cluster.local"
  localhost
)
readonly ip_addresses=(127.0.0.1)

usage() {
  cat <<EOF
usage: $(basename "$0") [--force] [OUTDIR]

Writes into OUTDIR (default: $(dirname "$0")/out):
  ca.crt ca.key       the private CA (keep ca.key private; it is not installed in the cluster)
  tls.crt tls.key     the serving certificate for $service.$namespace.svc (also localhost, 127.0.0.1)
  secret.yaml         Secret $namespace/$secret_name (type kubernetes.io/tls: tls.crt, tls.key, ca.crt)
  ca-bundle.b64       base64 of ca.crt on one line: the webhooks' caBundle
  kustomization.yaml  a kustomize Component adding secret.yaml, used by manifests/overlays/plain

example:
  certs/generate.sh && kubectl apply -k manifests/overlays/plain
EOF
}

force=false
outdir=
for arg in "$@"; do
  case "$arg" in
    -h | --help) usage; exit 0 ;;
    -f | --force) force=true ;;
    -*) echo "generate.sh: unknown option $arg" >&2; usage >&2; exit 2 ;;
    *)
      if [[ -n "$outdir" ]]; then
        echo "generate.sh: more than one OUTDIR given" >&2
        exit 2
      fi
      outdir=$arg
      ;;
  esac
done
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
outdir=${outdir:-$script_dir/out}

command -v openssl >/dev/null || { echo "generate.sh: openssl is required" >&2; exit 1; }
mkdir -p "$outdir"
cd "$outdir"
# Private keys live here: never let git pick this directory up, whatever the repository's .gitignore says.
[[ -e .gitignore ]] || printf '*\n' >.gitignore

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

log() { printf 'generate.sh: %s\n' "$*" >&2; }

# Prints the public key of a certificate or of a private key, to check that they belong together.
cert_pubkey() { openssl x509 -in "$1" -noout -pubkey 2>/dev/null; }
key_pubkey() { openssl pkey -in "$1" -pubout 2>/dev/null; }

valid_for_a_while() { openssl x509 -in "$1" -noout -checkend "$renew_seconds" >/dev/null 2>&1; }

expected_sans() {
  local name ip
  {
    for name in "${dns_names[@]}"; do printf 'DNS:%s\n' "$name"; done
    for ip in "${ip_addresses[@]}"; do printf 'IP Address:%s\n' "$ip"; done
  } | sort
}

actual_sans() {
  openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null |
    tail -n +2 | tr ',' '\n' | sed 's/^[[:space:]]*//; /^$/d' | sort
}

new_ec_key() {
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1")
}

ca_ok() {
  [[ -s ca.crt && -s ca.key ]] || return 1
  valid_for_a_while ca.crt || return 1
  [[ "$(cert_pubkey ca.crt)" == "$(key_pubkey ca.key)" ]] || return 1
}

serving_ok() {
  [[ -s tls.crt && -s tls.key ]] || return 1
  valid_for_a_while tls.crt || return 1
  openssl verify -CAfile ca.crt tls.crt >/dev/null 2>&1 || return 1
  [[ "$(cert_pubkey tls.crt)" == "$(key_pubkey tls.key)" ]] || return 1
  [[ "$(actual_sans tls.crt)" == "$(expected_sans)" ]] || return 1
}

make_ca() {
  log "making a new CA in $outdir"
  cat >"$work/ca.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
x509_extensions = v3_ca
[dn]
CN = $service-ca
[v3_ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
EOF
  new_ec_key "$work/ca.key"
  openssl req -new -x509 -config "$work/ca.cnf" -key "$work/ca.key" -sha256 -days "$ca_days" \
    -set_serial "0x$(openssl rand -hex 16)" -out "$work/ca.crt"
  mv "$work/ca.key" ca.key
  mv "$work/ca.crt" ca.crt
}

make_serving() {
  log "making a new serving certificate in $outdir"
  local sans=() name ip
  for name in "${dns_names[@]}"; do sans+=("DNS:$name"); done
  for ip in "${ip_addresses[@]}"; do sans+=("IP:$ip"); done
  cat >"$work/tls.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = $service.$namespace.svc
[v3_server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = $(IFS=,; printf '%s' "${sans[*]}")
EOF
  new_ec_key "$work/tls.key"
  openssl req -new -config "$work/tls.cnf" -key "$work/tls.key" -sha256 -out "$work/tls.csr"
  openssl x509 -req -in "$work/tls.csr" -CA ca.crt -CAkey ca.key -sha256 -days "$cert_days" \
    -set_serial "0x$(openssl rand -hex 16)" -extfile "$work/tls.cnf" -extensions v3_server \
    -out "$work/tls.crt" 2>/dev/null
  mv "$work/tls.key" tls.key
  mv "$work/tls.crt" tls.crt
}

if $force || ! ca_ok; then
  make_ca
  rm -f tls.crt tls.key
fi
if $force || ! serving_ok; then
  make_serving
fi
serving_ok || { echo "generate.sh: the new serving certificate does not check out" >&2; exit 1; }

b64() { openssl base64 -A -in "$1"; }

# Writes through a temporary file so that a failure never leaves a half-written file behind.
write_file() {
  local target=$1
  cat >"$work/$target"
  if ! cmp -s "$work/$target" "$target"; then
    mv "$work/$target" "$target"
  fi
}

b64 ca.crt | write_file ca-bundle.b64

{
  cat <<EOF
# Generated by certs/generate.sh; do not edit, do not commit.
apiVersion: v1
kind: Secret
metadata:
  name: $secret_name
  namespace: $namespace
  labels:
    app.kubernetes.io/name: $service
    app.kubernetes.io/part-of: $service
type: kubernetes.io/tls
data:
  ca.crt: $(b64 ca.crt)
  tls.crt: $(b64 tls.crt)
  tls.key: $(b64 tls.key)
EOF
} | (umask 077 && write_file secret.yaml)

write_file kustomization.yaml <<EOF
# Generated by certs/generate.sh; do not edit, do not commit.
# Used by manifests/overlays/plain, which copies ca.crt from this Secret into the webhooks' caBundle.
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - secret.yaml
EOF

log "CA:          $outdir/ca.crt (expires $(openssl x509 -in ca.crt -noout -enddate | cut -d= -f2))"
log "serving:     $outdir/tls.crt (expires $(openssl x509 -in tls.crt -noout -enddate | cut -d= -f2))"
log "install:     kubectl apply -k manifests/overlays/plain"

#!/usr/bin/env bash
# Builds karta-webhook, makes development certificates (certs/out) and serves on port 8443 with the
# built-in catalog and examples/policy.yaml. Extra arguments go to `karta-webhook serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DKARTA_BUILD_TESTS=OFF -DKARTA_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-release -j"${KARTA_JOBS:-2}" --target karta-webhook
certs/generate.sh >/dev/null
exec build-release/karta-webhook serve --tls-cert-file certs/out/tls.crt --tls-private-key-file certs/out/tls.key \
  --policy examples/policy.yaml --log-format text "$@"

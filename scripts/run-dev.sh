#!/usr/bin/env bash
# Builds karta-webhook, makes development certificates (certs/out) and serves on port 8443 with the
# built-in catalog and examples/policy.yaml. Extra arguments go to `karta-webhook serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The release build, optimized from a profile of its admissions (scripts/build-release.sh).
KARTA_CMAKE_ARGS=-DKARTA_BUILD_TESTS=OFF scripts/build-release.sh build-release
certs/generate.sh >/dev/null
exec build-release/karta-webhook serve --tls-cert-file certs/out/tls.crt --tls-private-key-file certs/out/tls.key \
  --policy examples/policy.yaml --log-format text "$@"

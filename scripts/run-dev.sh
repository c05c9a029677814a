#!/usr/bin/env bash
# Builds karta-webhook, makes development certificates (certs/out) and serves on port 8443 with the
# built-in catalog and examples/policy.yaml. Extra arguments go to `karta-webhook serve`.
#
#   scripts/run-dev.sh [--rebuild | --plan] [SERVE ARGUMENTS...]
#   --rebuild   the whole release pipeline, whatever changed
#   --plan      print what the build would do, in one line, and neither build nor serve
#
# The release build, optimized from a profile of its admissions (scripts/build-release.sh), some ten minutes
# on 2 cores the first time. Started again on an unchanged checkout it reuses that binary and serves within
# seconds; after an edit it rebuilds what the edit needs, and records a new profile only when the profile's
# sources or the training's inputs changed (build-release.sh says how that is decided).
set -euo pipefail
cd "$(dirname "$0")/.."
build=()
while (($#)); do
  case $1 in
    --rebuild | --plan) build+=("$1"); shift ;;
    *) break ;;
  esac
done
KARTA_CMAKE_ARGS=-DKARTA_BUILD_TESTS=OFF scripts/build-release.sh "${build[@]}" build-release
if [[ " ${build[*]} " == *" --plan "* ]]; then exit 0; fi
certs/generate.sh >/dev/null
exec build-release/karta-webhook serve --tls-cert-file certs/out/tls.crt --tls-private-key-file certs/out/tls.key \
  --policy examples/policy.yaml --log-format text "$@"

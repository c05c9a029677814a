#!/usr/bin/env bash
# Installs everything karta-webhook needs to build, run and test on Debian 12, as root. Idempotent.
set -euo pipefail

packages=(
  cmake g++ make pkg-config git ca-certificates openssl   # toolchain; openssl makes certificates
  ccache                                                  # caches compiles across rebuilds and checkouts
  libboost-dev                                            # Boost.Beast + Asio: HTTPS server (header-only)
  libssl-dev                                              # OpenSSL: TLS
  nlohmann-json3-dev                                      # JSON model, JSON Patch values
  libsimdjson-dev                                         # simdjson: parses admission reviews
  libjemalloc-dev                                         # jemalloc: the server's allocator
  libyaml-cpp-dev                                         # YAML definitions, policy and manifests
  libjq-dev libonig-dev                                   # libjq 1.6: Karta's jq expressions
  libre2-dev                                              # RE2: the label policy's regular expressions
  libspdlog-dev                                           # logging
  libcli11-dev                                            # command line
  doctest-dev                                             # unit tests
  libbenchmark-dev                                        # Google Benchmark: the in-process benchmark
  jq                                                      # the jq CLI, used by tests as a reference
  prometheus                                              # promtool: tests check the alert rules and /metrics
  curl wrk nginx-light                                    # load-test.sh, memory-test.sh, startup-time.sh
  python3 python3-yaml                                    # scale-test.sh's API double (scale-api-double.py)
  autoconf automake libtool patch xz-utils                # tsan.sh builds libjq from Debian's source package
)
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi
# Tests apply patches with kubectl (the API server's JSON patch library) and render manifests with
# `kubectl kustomize`. Keep a kubectl that is already there; otherwise Debian's own.
if ! command -v kubectl >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kubernetes-client >/dev/null
fi

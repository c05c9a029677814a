# karta-webhook image: built on Debian 12, run on Debian 12 slim with only the shared libraries it needs.
#   docker build -t karta-webhook:0.1.0 .

FROM debian:12 AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        cmake g++ make \
        libboost-dev libssl-dev nlohmann-json3-dev libsimdjson-dev libjemalloc-dev \
        libyaml-cpp-dev libjq-dev libonig-dev libre2-dev libspdlog-dev libcli11-dev doctest-dev libbenchmark-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Tests are built and run by CI, not in the image. The release build is optimized from a profile of the
# admissions bench_admission runs (scripts/build-release.sh: Google Benchmark is a build dependency for it).
RUN KARTA_CMAKE_ARGS=-DKARTA_BUILD_TESTS=OFF scripts/build-release.sh build \
    && strip build/karta-webhook

FROM debian:12-slim AS runtime
# The runtime halves of the build's -dev packages; Boost (Beast, Asio), nlohmann-json and CLI11 are
# header-only; jemalloc, yaml-cpp and RE2 are linked in from their static archives, and spdlog is
# compiled in (third_party/spdlog_library.cpp).
# ca-certificates is for the API server's certificate.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates libssl3 libsimdjson14 libjq1 libonig5 libfmt9 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/karta-webhook /usr/local/bin/karta-webhook
# Reference copy of the built-in catalog (the binary embeds it): a starting point for --definitions.
COPY definitions/catalog/ /usr/share/karta-webhook/definitions/
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/karta-webhook"]
CMD ["serve", "--tls-cert-file", "/etc/karta-webhook/tls/tls.crt", "--tls-private-key-file", "/etc/karta-webhook/tls/tls.key", "--port", "8443"]

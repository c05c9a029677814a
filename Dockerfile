# karta-webhook image: built on Debian 12, run from an empty base holding only the binary, the shared
# libraries it loads (Debian 12's own packages, unpacked), the CA bundle and the user it runs as.
#   docker build --build-arg KARTA_COMMIT=$(git rev-parse HEAD) -t karta-webhook:0.1.0 .
#   podman build --build-arg KARTA_COMMIT=$(git rev-parse HEAD) -t karta-webhook:0.1.0 .
# scripts/image-test.sh builds it here with buildah and runs it as manifests/base/deployment.yaml does.

FROM debian:12 AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        cmake g++ make \
        libboost-dev libssl-dev nlohmann-json3-dev libsimdjson-dev libjemalloc-dev \
        libyaml-cpp-dev libjq-dev libonig-dev libre2-dev libspdlog-dev libcli11-dev doctest-dev libbenchmark-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The build context has no .git (.dockerignore): the commit `karta-webhook --version` names comes from
# here (cmake/build_commit.cmake reads the environment's KARTA_COMMIT; "unknown" when not given).
ARG KARTA_COMMIT=
# Tests are built and run by CI, not in the image. The release build is optimized from a profile of the
# admissions bench_admission runs (scripts/build-release.sh: Google Benchmark is a build dependency for it).
RUN KARTA_CMAKE_ARGS=-DKARTA_BUILD_TESTS=OFF scripts/build-release.sh build \
    && strip build/karta-webhook

# The runtime's files, gathered into /rootfs from Debian 12's packages without installing them (no
# maintainer scripts, no dpkg database, no shell): `apt-get download` fetches the same versions the build
# stage linked against, `dpkg-deb -x` unpacks them. What the binary loads (`readelf -d`: its NEEDED
# entries; jemalloc, yaml-cpp and RE2 are linked in from their static archives, CMakeLists.txt
# KARTA_STATIC_SMALL_LIBS, and spdlog is compiled in, third_party/spdlog_library.cpp; Boost.Beast/Asio,
# nlohmann-json and CLI11 are header-only), each package with the libraries it brings:
#   libssl3        libssl.so.3, libcrypto.so.3: TLS, the server's and the API client's
#   libsimdjson14  libsimdjson.so.14: parses admission reviews
#   libjq1         libjq.so.1: the definitions' jq expressions
#   libonig5       libonig.so.5: Oniguruma, libjq's regular expressions (libjq.so.1 needs it, not the binary)
#   libfmt9        libfmt.so.9: spdlog's formatting (Debian's spdlog is built against the shared fmt)
#   libstdc++6     libstdc++.so.6: the C++ runtime (also needed by libsimdjson and libfmt)
#   libgcc-s1      libgcc_s.so.1: unwinding, for exceptions
#   libc6          libc.so.6, libm.so.6 and the loader /lib64/ld-linux-x86-64.so.2
# scripts/image-test.sh runs the image's loader on the binary (`ld-linux-x86-64.so.2 --list`) and fails on
# any library not found, so a package dropped from this list fails the test.
FROM debian:12 AS runtime-files
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && mkdir /debs /rootfs \
    && cd /debs \
    && apt-get download libssl3 libsimdjson14 libjq1 libonig5 libfmt9 libstdc++6 libgcc-s1 libc6 \
    && for deb in /debs/*.deb; do dpkg-deb -x "$deb" /rootfs; done \
    # Documentation, translations, gdb's pretty-printers, and glibc's iconv modules: the binary runs in
    # the C locale (the image has no locale data) and converts no character sets.
    && rm -rf /rootfs/usr/share/doc /rootfs/usr/share/lintian /rootfs/usr/share/locale /rootfs/usr/share/gdb \
        /rootfs/usr/share/gcc /rootfs/usr/lib/x86_64-linux-gnu/gconv \
    # The CA bundle (update-ca-certificates made it when ca-certificates was installed here) for a
    # kubeconfig's API server with no CA of its own: OpenSSL's default paths, linked as Debian's openssl
    # package links them.
    && mkdir -p /rootfs/etc/ssl/certs /rootfs/usr/lib/ssl \
    && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
    && ln -s /etc/ssl/certs /rootfs/usr/lib/ssl/certs \
    && ln -s /etc/ssl/certs/ca-certificates.crt /rootfs/usr/lib/ssl/cert.pem \
    # The user the image runs as (USER below, the Deployment's runAsUser), named as distroless names it,
    # and the host lookup order Debian's base-files sets.
    && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
        >/rootfs/etc/passwd \
    && printf 'root:x:0:\nnonroot:x:65532:\n' >/rootfs/etc/group \
    && printf 'hosts: files dns\n' >/rootfs/etc/nsswitch.conf \
    && mkdir -p -m 1777 /rootfs/tmp \
    && mkdir -p -m 700 /rootfs/home/nonroot && chown 65532:65532 /rootfs/home/nonroot \
    # The kubectl plugin: kubectl runs `kubectl-karta` from the PATH for `kubectl karta`, and the binary
    # answers as the plugin when called by that name.
    && mkdir -p /rootfs/usr/local/bin \
    && ln -s karta-webhook /rootfs/usr/local/bin/kubectl-karta \
    && rm -rf /debs /var/lib/apt/lists/*

FROM scratch AS runtime
COPY --from=runtime-files /rootfs/ /
COPY --from=build /src/build/karta-webhook /usr/local/bin/karta-webhook
# Reference copy of the built-in catalog (the binary embeds it): a starting point for --definitions.
COPY definitions/catalog/ /usr/share/karta-webhook/definitions/
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/karta-webhook"]
CMD ["serve", "--tls-cert-file", "/etc/karta-webhook/tls/tls.crt", "--tls-private-key-file", "/etc/karta-webhook/tls/tls.key", "--port", "8443"]

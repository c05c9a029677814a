#!/usr/bin/env bash
# The ThreadSanitizer run (not part of scripts/test.sh: it needs a libjq built with -fsanitize=thread,
# and TSan sees only instrumented code). It downloads the source of Debian 12's jq package (the library
# the webhook links) from Debian's archive, checks its checksum, applies Debian's patches, builds it with
# ThreadSanitizer into build-tsan/jq, builds the tests with ThreadSanitizer against it, and runs the tests
# that use libjq and the server from several threads at once. Any report fails the run.
# Needs autoconf, automake, libtool, patch, xz-utils and curl: scripts/install-deps.sh installs them, and
# this script runs it (as root) when one is missing.
#   scripts/tsan.sh [TOPIC...]     # default: the threaded topics below
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
for tool in autoreconf automake libtoolize patch xz curl; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "== $tool is missing: scripts/install-deps.sh"
    scripts/install-deps.sh
    break
  fi
done
jobs=${KARTA_JOBS:-2}
root=$repo/build-tsan
mkdir -p "$root/jq-src"

archive=http://deb.debian.org/debian/pool/main/j/jq
debian=jq_1.6-2.1+deb12u2.debian.tar.xz
if [ ! -f "$root/jq/lib/libjq.so" ]; then
  echo "== libjq 1.6 (Debian 1.6-2.1+deb12u2) with ThreadSanitizer"
  cd "$root/jq-src"
  curl -sSfo jq_1.6.orig.tar.gz "$archive/jq_1.6.orig.tar.gz"
  curl -sSfo debian.tar.xz "$archive/${debian//+/%2B}"
  echo "3ba940b97571c866923f0409678033d33b5a98758dfc174fad8397ed908bc4d9  jq_1.6.orig.tar.gz" | sha256sum -c -
  echo "53989e73b541e157e695f0bb5ee2caa8  debian.tar.xz" | md5sum -c -
  rm -rf jq-jq-1.6 && tar xzf jq_1.6.orig.tar.gz && tar xJf debian.tar.xz -C jq-jq-1.6
  cd jq-jq-1.6
  while read -r patch; do patch -p1 -s < "debian/patches/$patch"; done < debian/patches/series
  autoreconf -fi >/dev/null 2>&1
  ./configure --prefix="$root/jq" --with-oniguruma=/usr --disable-docs --disable-maintainer-mode --disable-static \
    CFLAGS="-fsanitize=thread -O1 -g" LDFLAGS="-fsanitize=thread" >/dev/null
  make -j"$jobs" >/dev/null 2>&1 && make install >/dev/null
fi
cd "$repo"

echo "== tests with ThreadSanitizer"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DKARTA_SANITIZE_THREAD=ON -DKARTA_BUILD_BENCHMARKS=OFF \
  -DJQ_LIBRARY="$root/jq/lib/libjq.so" -DJQ_INCLUDE_DIR="$root/jq/include" >/dev/null
cmake --build build-tsan -j"$jobs" --target karta-tests karta-webhook
export LD_LIBRARY_PATH="$root/jq/lib"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
# Concurrent admissions, reloads and definition compiles over HTTPS; the jq state pool; the metrics
# shards; the watchers' threads against the local API server; the server's shutdown and drain.
# unit-catalog-compile: a jq pool growing from one state when runs contend; e2e-server-idle: the idle
# callback (which returns freed memory) from the thread that closed the last connection.
topics=${*:-e2e-concurrency unit-jq-program unit-catalog-compile unit-admission-service unit-kube-api-client \
             unit-kube-watcher e2e-cluster-watch e2e-http-protocol e2e-server-idle e2e-webhook-lifecycle e2e-webhook}
for topic in $topics; do
  echo "-- $topic"
  build-tsan/tests/karta-tests --no-intro=true --source-file="*/$topic.cpp"
done
echo "== ThreadSanitizer: no reports"

#!/usr/bin/env bash
# Builds the container image from the Dockerfile and runs it as manifests/base/deployment.yaml runs it,
# without a Docker engine: on Debian 12, as root, from the repository root.
#
#   scripts/image-test.sh
#
# 1. Installs what it needs: buildah (builds the Dockerfile, daemonless), podman (imports the base image),
#    debootstrap, python3-yaml, and the README's dependencies (scripts/install-deps.sh).
# 2. Makes the base image debian:12 from Debian's own packages, offline from any registry:
#    `debootstrap --variant=minbase bookworm` from the mirror apt already uses, with Debian's image's
#    sources (bookworm, -updates, -security), imported with `podman import`. The tree is kept in
#    $KARTA_IMAGE_CACHE (default /var/cache/karta-image-test) and imported again when the image is gone.
# 3. Builds the Dockerfile as written: `buildah bud --isolation chroot --network host --pull=never
#    --layers --build-arg KARTA_COMMIT=$(git rev-parse HEAD) -t karta-webhook:dev .` (the build stage is
#    scripts/build-release.sh, PGO; its layers are reused while its inputs are unchanged).
# 4. Builds, as the README's test command builds them (scripts/test.sh's build/), the reference binary
#    and karta-fake-api-server, the tests' local API server.
# 5. Runs the image's binary as the Deployment runs it: `podman run` fails in this sandbox (crun cannot
#    set rlimits), so the image is mounted (`buildah from` + `buildah mount`) and, in new mount, PID and
#    network namespaces (a pod's own; port 8443 is then free whatever the host serves), its root is bound
#    read-only (readOnlyRootFilesystem), the certificates are mounted at /etc/karta-webhook/tls, the
#    policy and definitions at their paths, the service account at /var/run/secrets/kubernetes.io/
#    serviceaccount, a 16 MiB tmpfs at /tmp (the emptyDir), and the binary is started by capsh, which
#    chroots, empties the capability bounding set (drop: ALL), sets no_new_privs
#    (allowPrivilegeEscalation: false) and becomes uid 65532, gid 65532, groups 65532 (runAsUser,
#    runAsGroup, fsGroup), with the Deployment's arguments, --in-cluster against the local API server.
#    (setpriv cannot chroot, and the image has no setpriv to run after a chroot.) Not reproduced: the
#    RuntimeDefault seccomp profile and the memory and CPU limits.
# Checks, each failing the script with a message: every library of the image's binary is found by the
# image's own loader (`ld-linux-x86-64.so.2 --list`: a package dropped from the Dockerfile fails here);
# `karta-webhook --version` names the commit and `kubectl-karta` is the plugin; the process has uid and gid
# 65532 and no capabilities; /healthz and /readyz answer 200; a /mutate of examples/jobset-demo.yaml,
# wrapped as an AdmissionReview, answers byte for byte what the reference binary answers; nothing in the
# image's root changed while it served. The last line gives the image's size and the binary's.
#
# Environment: KARTA_IMAGE (default karta-webhook:dev), KARTA_IMAGE_CACHE, KARTA_JOBS (the reference
# build's jobs, default 2).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
image=${KARTA_IMAGE:-karta-webhook:dev}
cache=${KARTA_IMAGE_CACHE:-/var/cache/karta-image-test}
jobs=${KARTA_JOBS:-2}
started=$SECONDS

say() { printf 'image-test: %s\n' "$*"; }
fail() {
  printf 'image-test: FAILED: %s\n' "$*" >&2
  exit 1
}
[[ $(id -u) == 0 ]] || fail "run as root (buildah, chroot and mounts need it)"
commit=$(git rev-parse HEAD 2>/dev/null) || fail "not a git checkout: the image's commit is git rev-parse HEAD"

# 1. Tools.
tools=(buildah podman debootstrap python3-yaml libcap2-bin util-linux curl openssl)
if ! dpkg -s "${tools[@]}" >/dev/null 2>&1; then
  say "installing ${tools[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi
scripts/install-deps.sh

# 2. The base image.
mirror() {  # the first Debian archive apt uses (deb822 or one-line sources)
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1 || true)
  [[ -n $uri ]] || uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\)[[:space:]]\+bookworm[[:space:]].*/\2/p' \
    /etc/apt/sources.list 2>/dev/null | head -n 1 || true)
  printf '%s\n' "${uri:-http://deb.debian.org/debian}"
}
base_tar=$cache/debian-12-minbase.tar
if ! buildah inspect --type image docker.io/library/debian:12 >/dev/null 2>&1; then
  mkdir -p "$cache"
  if [[ ! -s $base_tar ]]; then
    tree=$cache/rootfs.tmp
    rm -rf "$tree"
    say "debootstrap --variant=minbase bookworm from $(mirror) (a few minutes, once)"
    debootstrap --variant=minbase bookworm "$tree" "$(mirror)" >"$cache/debootstrap.log" 2>&1 ||
      fail "debootstrap failed: $cache/debootstrap.log"
    # As Debian's own image: its sources, no package lists or downloaded packages.
    rm -f "$tree/etc/apt/sources.list" "$tree"/var/cache/apt/archives/*.deb
    rm -rf "$tree"/var/lib/apt/lists/*
    cat >"$tree/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    tar --numeric-owner -C "$tree" -cf "$base_tar.tmp" . && mv "$base_tar.tmp" "$base_tar"
    rm -rf "$tree"
  fi
  say "importing $base_tar as debian:12"
  podman import -q "$base_tar" docker.io/library/debian:12 >/dev/null || fail "podman import of $base_tar failed"
fi

# 3. The image.
say "building $image from the Dockerfile (buildah bud, KARTA_COMMIT=$commit)"
build_log=$(mktemp)
work=$(mktemp -d)
container=
cleanup() {
  if [[ -n $container ]]; then
    buildah umount "$container" >/dev/null 2>&1 || true
    buildah rm "$container" >/dev/null 2>&1 || true
  fi
  rm -rf "$work" "$build_log"
}
trap cleanup EXIT
bud_started=$SECONDS
if ! buildah bud --isolation chroot --network host --pull=never --layers --build-arg "KARTA_COMMIT=$commit" \
  -t "$image" . >"$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  fail "buildah bud failed (the last lines of its output above)"
fi
say "built $image in $((SECONDS - bud_started)) s"

# 4. The reference binary and the local API server, in the README's test build (scripts/test.sh's build/).
say "building build/karta-webhook and build/tests/karta-fake-api-server (scripts/test.sh's build)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build build -j"$jobs" --target karta-webhook karta-fake-api-server >"$build_log" 2>&1 ||
  { tail -n 40 "$build_log" >&2; fail "the reference build failed"; }
reference=$repo/build/karta-webhook
fake_api_server=$repo/build/tests/karta-fake-api-server

# 5. The image, mounted.
container=$(buildah from --pull-never "$image")
root=$(buildah mount "$container")
binary=$root/usr/local/bin/karta-webhook
[[ -x $binary ]] || fail "$image has no /usr/local/bin/karta-webhook"

# Every library the binary needs, found by the image's own loader (scratch has no ldd).
libraries=$(chroot "$root" /lib64/ld-linux-x86-64.so.2 --list /usr/local/bin/karta-webhook 2>&1) ||
  fail "the image's loader cannot load its binary:"$'\n'"$libraries"
if grep -q 'not found' <<<"$libraries"; then
  fail "a library of the binary is missing from the image:"$'\n'"$(grep 'not found' <<<"$libraries")"
fi
say "ldd in the image: $(grep -c '=>' <<<"$libraries") libraries, all found ($(sed -n 's/^[[:space:]]*\(lib[^ ]*\) =>.*/\1/p' <<<"$libraries" | paste -sd ' '))"

# As the Deployment's user, without capabilities: what capsh does before it runs the binary.
as_deployment=("$(command -v capsh)" "--chroot=$root" --drop=all --no-new-privs --gid=65532 --groups=65532 --uid=65532 --caps=)
version=$(env -i PATH=/usr/local/bin:/usr/bin:/bin "${as_deployment[@]}" --shell=/usr/local/bin/karta-webhook -- --version) ||
  fail "karta-webhook --version failed in the image"
[[ $version == *"$commit"* ]] || fail "karta-webhook --version says \"$version\", not the commit $commit"
say "version: $version"
plugin=$(env -i PATH=/usr/local/bin:/usr/bin:/bin "${as_deployment[@]}" --shell=/usr/local/bin/kubectl-karta -- --help) ||
  fail "kubectl-karta --help failed in the image"
[[ $(readlink "$root/usr/local/bin/kubectl-karta") == karta-webhook && $plugin == *"kubectl karta"* ]] ||
  fail "kubectl-karta in the image is not the plugin link to karta-webhook"
say "kubectl-karta -> karta-webhook, on the image's PATH: $(head -n 1 <<<"$plugin")"

# The mount points a container runtime makes for the Deployment's volumes, then the image's root as it
# is before serving: every path with its type, mode, owner, size and the SHA-256 of each file.
mkdir -p "$root"/{proc,dev,tmp} "$root/etc/karta-webhook"/{tls,policy,definitions} \
  "$root/var/run/secrets/kubernetes.io/serviceaccount"
listing() {
  (cd "$root" && find . -xdev -printf '%y %m %U:%G %s %p\n' | sort &&
    find . -xdev -type f -print0 | sort -z | xargs -0 sha256sum)
}
listing >"$work/before"

# What the Deployment mounts: the TLS Secret, the policy (examples/policy.yaml, as an overlay would set
# it: the base ConfigMap's policy is empty and would give an empty patch), no extra definitions.
certs/generate.sh "$work/tls" >/dev/null 2>&1 || fail "certs/generate.sh failed"
chmod 0440 "$work/tls/tls.crt" "$work/tls/tls.key" && chgrp 65532 "$work/tls/tls.crt" "$work/tls/tls.key"  # defaultMode 0440, fsGroup
mkdir -p "$work/policy" "$work/definitions" "$work/api"
cp examples/policy.yaml "$work/policy/policy.yaml"
chmod -R a+rX "$work/policy" "$work/definitions"
chmod a+x "$work"
/usr/bin/python3 - examples/jobset-demo.yaml >"$work/review.json" <<'EOF'
import json, sys, yaml
obj = yaml.safe_load(open(sys.argv[1]))
group, _, version = obj["apiVersion"].rpartition("/")
gvk = {"group": group, "version": version, "kind": obj["kind"]}
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "kind": gvk, "requestKind": gvk,
    "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
    "name": obj["metadata"]["name"], "namespace": obj["metadata"].get("namespace", "default"),
    "operation": "CREATE", "userInfo": {"username": "kubernetes-admin", "groups": ["system:authenticated"]},
    "object": obj, "oldObject": None, "dryRun": False}}, separators=(",", ":")))
EOF

# The Deployment's arguments, read from manifests/base/deployment.yaml.
mapfile -t arguments < <(/usr/bin/python3 - manifests/base/deployment.yaml <<'EOF'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if doc and doc.get("kind") == "Deployment":
        print("\n".join(doc["spec"]["template"]["spec"]["containers"][0]["args"]))
EOF
)
[[ ${#arguments[@]} -gt 0 && ${arguments[0]} == serve ]] || fail "no serve arguments in manifests/base/deployment.yaml"
say "the Deployment's arguments: ${arguments[*]}"
printf '%s\n' "${arguments[@]}" >"$work/arguments"

# The pod: run inside new mount, PID and network namespaces by the script below.
cat >"$work/pod.sh" <<'POD'
set -euo pipefail
root=$1 work=$2 reference=$3 fake_api_server=$4 repo=$5
mapfile -t arguments <"$work/arguments"
fail() { printf 'image-test: FAILED: %s\n' "$*" >&2; exit 1; }
ip link set lo up
# The pod's root: the image, read-only, with the volumes mounted on it.
mount --bind "$root" "$root" && mount -o remount,bind,ro "$root"
mount -t proc proc "$root/proc"
mount -t tmpfs -o size=64k,mode=755 tmpfs "$root/dev"
for device in null zero random urandom; do : >"$root/dev/$device"; mount --bind "/dev/$device" "$root/dev/$device"; done
mount -t tmpfs -o size=16m,mode=1777 tmpfs "$root/tmp"
mount --bind -o ro "$work/tls" "$root/etc/karta-webhook/tls"
mount --bind -o ro "$work/policy" "$root/etc/karta-webhook/policy"
mount --bind -o ro "$work/definitions" "$root/etc/karta-webhook/definitions"
# The API server the pod reaches through KUBERNETES_SERVICE_HOST, and its service account.
"$fake_api_server" "$work/api" >"$work/api.log" 2>&1 &
api=$!
for _ in $(seq 100); do [[ -s $work/api/port ]] && break; sleep 0.1; done
[[ -s $work/api/port ]] || fail "karta-fake-api-server did not start: $(cat "$work/api.log")"
api_port=$(cat "$work/api/port")
chmod -R a+rX "$work/api/serviceaccount"
mount --bind -o ro "$work/api/serviceaccount" "$root/var/run/secrets/kubernetes.io/serviceaccount"

env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/nonroot HOSTNAME=karta-webhook \
  KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$api_port" \
  "$(command -v capsh)" --chroot="$root" --drop=all --no-new-privs --gid=65532 --groups=65532 --uid=65532 --caps= \
  --shell=/usr/local/bin/karta-webhook -- "${arguments[@]}" >"$work/webhook.log" 2>&1 &
webhook=$!
# The reference: the README's build of the same sources, same arguments, on another port, as root on
# the host's files.
reference_arguments=()
for argument in "${arguments[@]}"; do
  case $argument in
    --port=*) argument=--port=9443 ;;
    --tls-cert-file=*) argument=--tls-cert-file=$work/tls/tls.crt ;;
    --tls-private-key-file=*) argument=--tls-private-key-file=$work/tls/tls.key ;;
    --definitions=*) argument=--definitions=$work/definitions ;;
    --policy=*) argument=--policy=$work/policy/policy.yaml ;;
  esac
  reference_arguments+=("$argument")
done
mkdir -p /var/run/secrets/kubernetes.io && mount -t tmpfs tmpfs /var/run/secrets/kubernetes.io &&
  mkdir /var/run/secrets/kubernetes.io/serviceaccount &&
  mount --bind -o ro "$work/api/serviceaccount" /var/run/secrets/kubernetes.io/serviceaccount
env -i PATH=/usr/bin:/bin KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$api_port" \
  "$reference" "${reference_arguments[@]}" >"$work/reference.log" 2>&1 &
reference_pid=$!

curl_to() {  # PORT PATH [curl arguments]: the body, and the status on the last line
  local port=$1 path=$2
  shift 2
  curl -sS --max-time 10 --cacert "$work/tls/ca.crt" --resolve "karta-webhook.karta-system.svc:$port:127.0.0.1" \
    -w '\n%{http_code}' "$@" "https://karta-webhook.karta-system.svc:$port$path"
}
ready=0
for _ in $(seq 300); do
  kill -0 "$webhook" 2>/dev/null || fail "the image's webhook exited:"$'\n'"$(tail -n 20 "$work/webhook.log")"
  if [[ $(curl_to 8443 /readyz 2>/dev/null | tail -n 1) == 200 && $(curl_to 9443 /readyz 2>/dev/null | tail -n 1) == 200 ]]; then
    ready=1
    break
  fi
  sleep 0.2
done
((ready)) || fail "/readyz did not answer 200 within 60 s: $(curl_to 8443 /readyz 2>&1 | paste -sd ' ')"$'\n'"$(tail -n 20 "$work/webhook.log")"
for path in /healthz /readyz; do
  answer=$(curl_to 8443 "$path") || fail "GET $path failed"
  [[ $(tail -n 1 <<<"$answer") == 200 ]] || fail "GET $path answered $(tail -n 1 <<<"$answer")"
  echo "image-test: GET $path: 200 $(head -n 1 <<<"$answer")"
done
# The process as the Deployment's securityContext makes it.
# (env and capsh exec, so $webhook is karta-webhook; this PID namespace's proc is the one in the pod's root.)
[[ $(readlink "$root/proc/$webhook/exe") == "$root/usr/local/bin/karta-webhook" ]] ||
  fail "process $webhook is $(readlink "$root/proc/$webhook/exe"), not the image's karta-webhook"
status=$(grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' "$root/proc/$webhook/status")
for expected in $'Uid:\t65532\t65532\t65532\t65532' $'Gid:\t65532\t65532\t65532\t65532' $'CapPrm:\t0000000000000000' \
  $'CapEff:\t0000000000000000' $'CapBnd:\t0000000000000000' $'CapAmb:\t0000000000000000' $'NoNewPrivs:\t1'; do
  grep -qxF "$expected" <<<"$status" || fail "the webhook's process lacks \"$expected\":"$'\n'"$status"
done
echo "image-test: the webhook runs as uid 65532, gid 65532, groups $(sed -n 's/^Groups:[[:space:]]*//p' <<<"$status" | xargs), no capabilities, no_new_privs"
# The admission, from the image and from the reference.
image_answer=$(curl_to 8443 /mutate -H 'Content-Type: application/json' --data-binary @"$work/review.json") || fail "POST /mutate failed"
reference_answer=$(curl_to 9443 /mutate -H 'Content-Type: application/json' --data-binary @"$work/review.json") ||
  fail "POST /mutate to the reference failed"
[[ $(tail -n 1 <<<"$image_answer") == 200 ]] || fail "POST /mutate answered $(tail -n 1 <<<"$image_answer"): $image_answer"
printf '%s' "$(sed '$d' <<<"$image_answer")" >"$work/image-answer.json"
printf '%s' "$(sed '$d' <<<"$reference_answer")" >"$work/reference-answer.json"
cmp -s "$work/image-answer.json" "$work/reference-answer.json" ||
  fail "the image's /mutate answer differs from the reference binary's:"$'\n'"$(diff <(cat "$work/image-answer.json"; echo) <(cat "$work/reference-answer.json"; echo))"
patch=$(/usr/bin/python3 -c 'import base64, json, sys; print(base64.b64decode(json.load(open(sys.argv[1]))["response"]["patch"]).decode())' "$work/image-answer.json") ||
  fail "the /mutate answer holds no patch: $(cat "$work/image-answer.json")"
operations=$(/usr/bin/python3 -c 'import json, sys; print(len(json.loads(sys.argv[1])))' "$patch")
((operations > 0)) || fail "the /mutate answer's patch is empty"
echo "image-test: POST /mutate of examples/jobset-demo.yaml: 200, $operations patch operations, $(wc -c <"$work/image-answer.json") bytes, byte for byte the reference binary's answer"
kill -TERM "$webhook" "$reference_pid"
wait "$webhook" || true
wait "$reference_pid" || true
kill -TERM "$api" && wait "$api" || true
grep -q '^GET /apis/run.ai/v1alpha1/kartas' "$work/api/requests" ||
  fail "the webhook never listed the Kartas from its in-cluster API server"
if grep -qiE 'read-only file system|permission denied' "$work/webhook.log"; then
  fail "the webhook tried to write or read what it may not:"$'\n'"$(grep -iE 'read-only file system|permission denied' "$work/webhook.log")"
fi
echo "image-test: /tmp (the emptyDir) holds $(find "$root/tmp" -mindepth 1 | wc -l) entries after serving"
POD
unshare --mount --pid --net --fork --propagation private \
  bash "$work/pod.sh" "$root" "$work" "$reference" "$fake_api_server" "$repo" || fail "the pod's checks failed (above)"

listing >"$work/after"
diff "$work/before" "$work/after" >"$work/changes" ||
  fail "the image's root changed while it served:"$'\n'"$(head -n 20 "$work/changes")"
say "nothing in the image's root changed while it served"

megabytes() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
image_bytes=$(podman image inspect --format '{{.Size}}' "$image")  # uncompressed, as `podman images` shows it
binary_bytes=$(stat -c %s "$binary")
say "passed in $((SECONDS - started)) s"
echo "image $image: $(megabytes "$image_bytes") ($image_bytes bytes); binary /usr/local/bin/karta-webhook: $(megabytes "$binary_bytes") ($binary_bytes bytes)"

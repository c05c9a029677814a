#!/bin/sh
# Makes karta-webhook the `kubectl karta` plugin: a link named kubectl-karta in a directory on the PATH
# (default ~/.local/bin), as kubectl finds plugins. The binary is the one the README's commands built:
# the release build of scripts/run-dev.sh (build-release/) when there is one, else the test build of
# scripts/test.sh (build/); the script says which it linked.
# Usage: scripts/install-kubectl-plugin.sh [DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-"$HOME/.local/bin"}
binary=""
for candidate in "$root/build-release/karta-webhook" "$root/build/karta-webhook"; do
  if [ -x "$candidate" ]; then
    binary=$candidate
    break
  fi
done
if [ -z "$binary" ]; then
  echo "install-kubectl-plugin: karta-webhook is not built (neither $root/build-release/karta-webhook nor" \
       "$root/build/karta-webhook); run scripts/run-dev.sh (the release build) or scripts/test.sh first" >&2
  exit 1
fi
# A binary that does not run (a build that broke half way) is not linked.
if ! version=$("$binary" --version 2>/dev/null); then
  echo "install-kubectl-plugin: $binary does not run (\`$binary --version\` failed); build it again" >&2
  exit 1
fi
mkdir -p "$dir"
ln -sf "$binary" "$dir/kubectl-karta"
echo "kubectl-karta -> $binary ($version) in $dir"
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "note: $dir is not on PATH; add it (export PATH=\"$dir:\$PATH\") for kubectl to find the plugin" >&2 ;;
esac

#!/bin/sh
# Makes build/karta-webhook the `kubectl karta` plugin: a link named kubectl-karta in a directory on the
# PATH (default ~/.local/bin), as kubectl finds plugins. Usage: scripts/install-kubectl-plugin.sh [DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
binary="$root/build/karta-webhook"
dir=${1:-"$HOME/.local/bin"}
if [ ! -x "$binary" ]; then
  echo "install-kubectl-plugin: $binary is not built; run: cmake -S . -B build && cmake --build build" >&2
  exit 1
fi
mkdir -p "$dir"
ln -sf "$binary" "$dir/kubectl-karta"
echo "kubectl-karta -> $binary in $dir"
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "note: $dir is not on PATH; add it (export PATH=\"$dir:\$PATH\") for kubectl to find the plugin" >&2 ;;
esac

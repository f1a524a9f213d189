#!/usr/bin/env bash
# Neovim (Debian's package, headless) against `patchgen server` on a copy of
# the demo project: scripts/nvim-smoke.lua opens the toy config with a
# misspelt target and checks diagnostics and hover through Neovim's own LSP
# client. CI runs it after the example (.ci/run).
# usage: scripts/nvim-smoke.sh
# env:   PATCHGEN (default: target/release/patchgen), PATCHGEN_CACHE (see scripts/test-env.sh)
# Installs neovim with apt-get when it is missing and this runs as root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "nvim-smoke: $*" >&2; exit 1; }
if ! command -v nvim >/dev/null; then
  [ "$(id -u)" = 0 ] || die "nvim not found (apt-get install neovim)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim; } >&2 || die "apt-get could not install neovim"
fi
eval "$("$repo/scripts/test-env.sh")"
# ruff (the normaliser) on PATH: generation and the server's regenerate action run it.
export PATH="$(dirname "$PATCHGEN_TEST_RUFF"):$PATH"
bin=${PATCHGEN:-$repo/target/release/patchgen}
[ -x "$bin" ] || die "$bin is not built (cargo build --release)"
wheel=$(ls "${PATCHGEN_CACHE:-$repo/.cache}"/wheels/transformers-5.9.0-*.whl | head -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$repo/examples/demo" "$work/demo"
cfg=demo/toy/toy_gpu_patch_gen_config.py
sed -i 's/"ToyRMSNorm.forward"/"ToyRMSNorm.forwrad"/' "$work/demo/$cfg"
grep -q '"ToyRMSNorm.forwrad"' "$work/demo/$cfg" || die "the demo config has no ToyRMSNorm.forward target to misspell"
cd "$work/demo"
# The generated files, as the (misspelt) config writes them.
PYTHONPATH="$wheel:$work/demo/upstream" "$bin" generate --all --diff >/dev/null || die "patchgen generate failed"
gen=demo/toy/generated/patched_modeling_toy.py
[ -f "$gen" ] || die "$gen was not generated"
nvim --version | head -n 1
if nvim --version | head -n 1 | grep -Eq 'v0\.(7|8)\.'; then run=(-c 'luafile '"$repo"'/scripts/nvim-smoke.lua'); else run=(-l "$repo/scripts/nvim-smoke.lua"); fi
CONFIG=$cfg TARGET=ToyAttention.forward WANT=PG102 GENERATED=$gen PATCHGEN=$bin PYTHONPATH="$wheel:$work/demo/upstream" \
  timeout 120 nvim --headless -u NONE "${run[@]}"

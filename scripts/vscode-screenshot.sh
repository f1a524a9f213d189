#!/usr/bin/env bash
# VS Code itself against patchgen: code-server (VS Code in the browser, from
# npm) with the patchgen .vsix installed, driven by headless Chromium
# (scripts/vscode-drive.js): open the demo's toy config, type a misspelt
# patch target, wait for patchgen's squiggle, open its hover, screenshot.
#
# usage: scripts/vscode-screenshot.sh [OUT.png]   (default: docs/images/vscode-misspelt-target.png)
# env:   PATCHGEN        the binary (default: target/release/patchgen, built when missing)
#        PATCHGEN_CACHE  tools cache (default: <repo>/.cache): code-server, puppeteer-core,
#                        ruff and the transformers wheel (scripts/test-env.sh installs the last two)
# Needs (Debian): nodejs 20 + npm, chromium, ripgrep, g++/make/python3 and the
# headers code-server's native modules build against (libkrb5-dev, libsecret-1-dev,
# libx11-dev, libxkbfile-dev); installed with apt-get when missing and run as root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/docs/images/vscode-misspelt-target.png}
cache=${PATCHGEN_CACHE:-$repo/.cache}
tools="$cache/vscode-tools"
code_server_version=4.100.3   # the last code-server for node 20 (Debian 12's nodejs)
puppeteer_version=24.10.0
die() { echo "vscode-screenshot: $*" >&2; exit 1; }

need_apt=()
for p in chromium:chromium rg:ripgrep g++:g++ make:make; do
  command -v "${p%%:*}" >/dev/null || need_apt+=("${p#*:}")
done
for h in krb5-config:libkrb5-dev; do command -v "${h%%:*}" >/dev/null || need_apt+=("${h#*:}"); done
for d in libsecret-1-dev libx11-dev libxkbfile-dev; do dpkg -s "$d" >/dev/null 2>&1 || need_apt+=("$d"); done
if [ ${#need_apt[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing Debian packages: ${need_apt[*]} (install them, or run as root)"
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >&2
fi
command -v npm >/dev/null || die "npm is required (node 20)"

# code-server from npm. Its install scripts fetch a ripgrep binary from
# GitHub (unreachable here): install without scripts, put Debian's ripgrep
# where VS Code looks, build the native modules from source, link as its
# postinstall would.
cs="$tools/code-server"
csbin="$cs/node_modules/.bin/code-server"
if [ ! -f "$cs/.ready" ]; then
  echo "vscode-screenshot: installing code-server $code_server_version into $cs" >&2
  rm -rf "$cs" && mkdir -p "$cs"
  (
    cd "$cs"
    npm install --no-audit --no-fund --loglevel=error --ignore-scripts "code-server@$code_server_version"
    npm rebuild --loglevel=error argon2
    cd node_modules/code-server/lib/vscode
    npm install --no-audit --no-fund --loglevel=error --ignore-scripts
    mkdir -p node_modules/@vscode/ripgrep/bin && cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
    for m in kerberos @parcel/watcher @vscode/spdlog native-watchdog node-pty; do
      (cd "node_modules/$m" && npx --yes node-gyp rebuild --loglevel=error)
    done
    ln -sfn node_modules node_modules.asar
    (cd bin/remote-cli && ln -sfn code-linux.sh code-server)
    (cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
    cd extensions && npm install --no-audit --no-fund --loglevel=error --ignore-scripts
  ) >&2 || die "could not install code-server"
  touch "$cs/.ready"
fi
if [ ! -d "$tools/puppeteer/node_modules/puppeteer-core" ]; then
  mkdir -p "$tools/puppeteer"
  (cd "$tools/puppeteer" && npm install --no-audit --no-fund --loglevel=error "puppeteer-core@$puppeteer_version") >&2
fi

# patchgen, the .vsix, ruff and the wheel.
eval "$("$repo/scripts/test-env.sh")"
bin=${PATCHGEN:-$repo/target/release/patchgen}
if [ ! -x "$bin" ]; then
  (cd "$repo" && . scripts/toolchain.sh && cargo build --release --quiet) || die "cargo build failed"
fi
vsix=$("$repo/scripts/package-vscode.sh" "$tools/patchgen.vsix")
wheel=$(ls "$cache"/wheels/transformers-5.9.0-*.whl | head -n 1)
ruff_dir=$(dirname "$(command -v ruff 2>/dev/null || echo "$cache/ruff-0.13.2/bin/ruff")")

work=$(mktemp -d)
cleanup() { [ -n "${cs_pid:-}" ] && kill "$cs_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cp -r "$repo/examples/demo" "$work/demo"
mkdir -p "$work/ud/User" "$work/ext"
cat > "$work/ud/User/settings.json" <<JSON
{
  "patchgen.path": "$bin",
  "patchgen.pythonPath": ["$wheel", "$work/demo/upstream"],
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "extensions.ignoreRecommendations": true,
  "telemetry.telemetryLevel": "off",
  "workbench.colorTheme": "Default Light Modern"
}
JSON
"$csbin" --extensions-dir "$work/ext" --user-data-dir "$work/ud" --install-extension "$vsix" >&2
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
PATH="$ruff_dir:$PATH" "$csbin" --auth none --bind-addr "127.0.0.1:$port" --disable-telemetry \
  --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  --extensions-dir "$work/ext" --user-data-dir "$work/ud" "$work/demo" >"$work/code-server.log" 2>&1 &
cs_pid=$!
for _ in $(seq 60); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/healthz')" 2>/dev/null && break
  sleep 1
done
mkdir -p "$(dirname "$out")"
NODE_PATH="$tools/puppeteer/node_modules" node "$repo/scripts/vscode-drive.js" \
  "http://127.0.0.1:$port/?folder=$work/demo" demo/toy/toy_gpu_patch_gen_config.py \
  ToyRMSNorm.forward ToyRMSNorm.forwrad "$out"

#!/usr/bin/env bash
# Packages the VS Code extension (editors/vscode) into editors/vscode/patchgen.vsix
# with @vscode/vsce from the npm registry (the versions pinned in its
# package-lock.json). Needs node 20+ and npm.
# usage: scripts/package-vscode.sh [OUT.vsix]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
ext="$repo/editors/vscode"
out=${1:-$ext/patchgen.vsix}
command -v npm >/dev/null || { echo "package-vscode: npm is required (node 20+)" >&2; exit 1; }
cd "$ext"
npm ci --no-audit --no-fund --loglevel=error >&2
npx --no-install vsce package --allow-missing-repository --skip-license --out "$out" >&2
echo "$out"

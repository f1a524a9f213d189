#!/usr/bin/env bash
# Installs what the test suite needs into a local cache and prints the
# environment to use it (source-able `export` lines):
#   - ruff 0.13.2 (the normaliser VeOmni pins) in $CACHE/ruff-0.13.2
#   - the transformers 5.9.0 wheel in $CACHE/wheels (tests read it directly)
# usage: eval "$(scripts/test-env.sh)"
# env: PATCHGEN_CACHE (default: <repo>/.cache)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${PATCHGEN_CACHE:-$repo/.cache}
ruff_version=0.13.2
tf_version=5.9.0

die() { echo "test-env: $*" >&2; exit 1; }
command -v python3 >/dev/null || die "python3 is required to install ruff and download the transformers wheel"
mkdir -p "$cache/wheels"

ruff="$cache/ruff-$ruff_version/bin/ruff"
if [ ! -x "$ruff" ]; then
  echo "test-env: installing ruff $ruff_version into $cache/ruff-$ruff_version" >&2
  python3 -m venv "$cache/ruff-$ruff_version" >&2 || die "python3 -m venv failed (install python3-venv)"
  "$cache/ruff-$ruff_version/bin/pip" install --quiet --disable-pip-version-check "ruff==$ruff_version" >&2 \
    || die "pip could not install ruff==$ruff_version"
fi
"$ruff" --version | grep -q "$ruff_version" || die "$ruff is not ruff $ruff_version"

wheel=$(ls "$cache/wheels"/transformers-"$tf_version"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  echo "test-env: downloading the transformers $tf_version wheel into $cache/wheels" >&2
  python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$cache/wheels" "transformers==$tf_version" >&2 \
    || die "pip could not download transformers==$tf_version"
  wheel=$(ls "$cache/wheels"/transformers-"$tf_version"-*.whl | head -n 1)
fi
[ -f "$wheel" ] || die "no transformers wheel in $cache/wheels"

echo "export PATCHGEN_TEST_RUFF='$ruff'"
echo "export PATCHGEN_TEST_TRANSFORMERS='$wheel'"

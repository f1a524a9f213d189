#!/usr/bin/env bash
# Installs what the test suite needs into a local cache and prints the
# environment to use it (source-able `export` lines):
#   - ruff 0.13.2 (the normaliser VeOmni pins) in $CACHE/ruff-0.13.2
#   - the transformers 5.9.0 and 5.16.1 wheels in $CACHE/wheels (tests read them directly)
#   - a venv with numpy + safetensors in $CACHE/py-oracles (moe tests build and read
#     checkpoints with it: the independent implementation), and moto's S3 server
#     (tests/moe_remote.rs starts it on 127.0.0.1), and azure-storage-blob (the
#     independent Azure client of the az:// test), and sarif-pydantic (an independent
#     SARIF 2.1.0 object model: tests/report_formats.rs validates `--format sarif` with it)
#   - Azurite, Microsoft's Azure Blob Storage emulator, from the npm registry in
#     $CACHE/azurite (needs node and npm; without them the az:// test is skipped
#     with a message, except under CI=true where this script fails)
# usage: eval "$(scripts/test-env.sh)"
# env: PATCHGEN_CACHE (default: <repo>/.cache)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${PATCHGEN_CACHE:-$repo/.cache}
ruff_version=0.13.2
tf_version=5.9.0
tf_next_version=5.16.1
oracle_numpy=2.2.6
oracle_safetensors=0.6.2
oracle_moto=5.2.5
oracle_azure_blob=12.26.0
oracle_sarif_pydantic=0.6.2
azurite_version=3.35.0

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

# The transformers wheel of version $1 in $cache/wheels, downloaded when missing.
wheel_of() {
  local w
  w=$(ls "$cache/wheels"/transformers-"$1"-*.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$w" ]; then
    echo "test-env: downloading the transformers $1 wheel into $cache/wheels" >&2
    python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$cache/wheels" "transformers==$1" >&2 \
      || die "pip could not download transformers==$1"
    w=$(ls "$cache/wheels"/transformers-"$1"-*.whl | head -n 1)
  fi
  [ -f "$w" ] || die "no transformers $1 wheel in $cache/wheels"
  printf '%s' "$w"
}
wheel=$(wheel_of "$tf_version")
wheel_next=$(wheel_of "$tf_next_version")

oracles="$cache/py-oracles"
if ! "$oracles/bin/python" -c "import numpy, safetensors" 2>/dev/null; then
  echo "test-env: installing numpy $oracle_numpy + safetensors $oracle_safetensors into $oracles" >&2
  python3 -m venv "$oracles" >&2 || die "python3 -m venv failed (install python3-venv)"
  "$oracles/bin/pip" install --quiet --disable-pip-version-check "numpy==$oracle_numpy" "safetensors==$oracle_safetensors" >&2 \
    || die "pip could not install numpy and safetensors"
fi
if ! "$oracles/bin/python" -c "import moto.server" 2>/dev/null; then
  echo "test-env: installing moto[server] $oracle_moto into $oracles" >&2
  "$oracles/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$oracle_moto" >&2 \
    || die "pip could not install moto[server]"
fi
if ! "$oracles/bin/python" -c "import azure.storage.blob" 2>/dev/null; then
  echo "test-env: installing azure-storage-blob $oracle_azure_blob into $oracles" >&2
  "$oracles/bin/pip" install --quiet --disable-pip-version-check "azure-storage-blob==$oracle_azure_blob" >&2 \
    || die "pip could not install azure-storage-blob"
fi
if ! "$oracles/bin/python" -c "import sarif_pydantic" 2>/dev/null; then
  echo "test-env: installing sarif-pydantic $oracle_sarif_pydantic into $oracles" >&2
  "$oracles/bin/pip" install --quiet --disable-pip-version-check "sarif-pydantic==$oracle_sarif_pydantic" >&2 \
    || die "pip could not install sarif-pydantic"
fi
azurite="$cache/azurite/node_modules/.bin/azurite-blob"
if [ ! -x "$azurite" ]; then
  if command -v npm >/dev/null && command -v node >/dev/null; then
    echo "test-env: installing azurite $azurite_version into $cache/azurite" >&2
    mkdir -p "$cache/azurite"
    (cd "$cache/azurite" && npm install --silent --no-audit --no-fund "azurite@$azurite_version" >&2) \
      || die "npm could not install azurite@$azurite_version"
  elif [ "${CI:-}" = true ]; then
    die "node and npm are needed to install azurite (the az:// test's Azure emulator)"
  else
    echo "test-env: no node/npm: the az:// test will be skipped" >&2
    azurite=
  fi
fi

echo "export PATCHGEN_TEST_RUFF='$ruff'"
echo "export PATCHGEN_TEST_TRANSFORMERS='$wheel'"
echo "export PATCHGEN_TEST_TRANSFORMERS_5_16='$wheel_next'"
echo "export PATCHGEN_TEST_PYTHON='$oracles/bin/python'"
echo "export PATCHGEN_TEST_AZURITE='$azurite'"

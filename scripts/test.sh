#!/usr/bin/env bash
# The test suite, on a fresh machine: installs ruff 0.13.2 and the
# transformers 5.9.0 wheel into a local cache, then runs every test.
# Extra arguments go to `cargo test` (e.g. a test name filter).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=scripts/toolchain.sh
. scripts/toolchain.sh
env_lines=$(scripts/test-env.sh)
eval "$env_lines"
exec cargo test --workspace --profile testing "$@"

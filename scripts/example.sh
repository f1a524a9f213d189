#!/usr/bin/env bash
# Walk-through of patchgen on examples/demo, from a fresh machine.
#
# Needs only python3 (with pip and venv) and cargo. It
#   1. installs ruff 0.13.2 into $CACHE/ruff-0.13.2 (a virtualenv), if missing;
#   2. downloads the transformers 5.9.0 wheel into $CACHE/wheels, if missing
#      (patchgen reads upstream modules straight out of the .whl);
#   3. builds patchgen (cargo build --release);
#      (after generating: `patchgen explain` names the cause of every hunk);
#   4. in a temporary copy of examples/demo (the repository stays clean):
#      generates every config with its .diff, runs the drift gate, then
#      edits a generated file and shows `--check` catching it and `--fix`
#      repairing it; then writes llama's reference sources from the wheel
#      (`patchgen reference`) and scaffolds mistral from llama (`patchgen new`);
#      then `patchgen lint` passes on the demo (exit 0) and catches a misspelt
#      override target (exit 1), and `patchgen server` shows the same finding
#      to an editor (scripts/lsp-demo.py, a minimal LSP client) and clears it
#      when the fix is typed; then `patchgen survey` and `patchgen bump`
#      move the toy config from toylib 1.0.0 to 2.0.0 (one hunk carried,
#      one conflict written with git's markers).
#
# Environment:
#   PATCHGEN_CACHE   cache directory (default: <repo>/.cache); the layout
#                    ($CACHE/ruff-0.13.2/bin/ruff, $CACHE/wheels/*.whl) is
#                    shared with scripts/test-env.sh
#   PYTHON           the Python used to install ruff and fetch the wheel
#                    (default: python3)
#   RUSTUP_HOME      kept when set; when HOME does not hold the Rust
#                    toolchain, the account's real home is tried instead
set -Eeuo pipefail

RUFF_VERSION=0.13.2
TRANSFORMERS_VERSION=5.9.0

die() {
    printf '\nexample.sh: error: %s\n' "$*" >&2
    exit 1
}
trap 'die "command failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PATCHGEN_CACHE:-$REPO/.cache}
mkdir -p "$CACHE" || die "cannot create the cache directory $CACHE"
CACHE=$(cd "$CACHE" && pwd)
RUFF_VENV=$CACHE/ruff-$RUFF_VERSION
WHEELS=$CACHE/wheels
PYTHON=${PYTHON:-python3}

# A path as shown to the reader: relative to the repository when inside it.
show() {
    case $1 in
        "$REPO"/*) printf '%s' "${1#"$REPO"/}" ;;
        *) printf '%s' "$1" ;;
    esac
}

# ── Tools ────────────────────────────────────────────────────────────────────
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found: install Python 3 (with pip and venv)"
"$PYTHON" -m pip --version >/dev/null 2>&1 || die "$PYTHON has no pip: install pip (e.g. the python3-pip package)"

# cargo with an empty or different HOME: see scripts/toolchain.sh.
# shellcheck source=scripts/toolchain.sh
. "$REPO/scripts/toolchain.sh"

# 1. ruff, pinned: its formatting is part of the generated files.
RUFF=$RUFF_VENV/bin/ruff
if [ "$("$RUFF" --version 2>/dev/null || true)" != "ruff $RUFF_VERSION" ]; then
    echo "Installing ruff $RUFF_VERSION into $(show "$RUFF_VENV") ..."
    "$PYTHON" -m venv "$RUFF_VENV" ||
        die "'$PYTHON -m venv' failed: install venv support (e.g. the python3-venv package)"
    "$RUFF_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "ruff==$RUFF_VERSION" ||
        die "pip could not install ruff==$RUFF_VERSION"
    [ "$("$RUFF" --version 2>/dev/null || true)" = "ruff $RUFF_VERSION" ] ||
        die "$RUFF is not ruff $RUFF_VERSION after installing it"
fi

# 2. The transformers wheel (never installed: patchgen reads it as a zip).
find_wheel() {
    local w
    for w in "$WHEELS"/transformers-"$TRANSFORMERS_VERSION"-*.whl; do
        [ -f "$w" ] && { printf '%s' "$w"; return 0; }
    done
    return 1
}
if ! WHEEL=$(find_wheel); then
    echo "Downloading the transformers $TRANSFORMERS_VERSION wheel into $(show "$WHEELS") ..."
    mkdir -p "$WHEELS"
    tmp=$(mktemp -d "$WHEELS/.download.XXXXXX")
    "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        "transformers==$TRANSFORMERS_VERSION" -d "$tmp" ||
        { rm -rf "$tmp"; die "pip could not download transformers==$TRANSFORMERS_VERSION"; }
    mv "$tmp"/transformers-"$TRANSFORMERS_VERSION"-*.whl "$WHEELS"/ ||
        { rm -rf "$tmp"; die "pip did not produce a transformers-$TRANSFORMERS_VERSION wheel"; }
    rm -rf "$tmp"
    WHEEL=$(find_wheel) || die "no transformers-$TRANSFORMERS_VERSION-*.whl in $WHEELS"
fi

# 3. patchgen itself.
echo "Building patchgen (cargo build --release; the first build takes a few minutes) ..."
build_log=$(mktemp)
if ! cargo build --release --quiet --manifest-path "$REPO/Cargo.toml" >"$build_log" 2>&1; then
    cat "$build_log" >&2
    rm -f "$build_log"
    die "cargo build --release failed"
fi
rm -f "$build_log"
target_dir=$(cd "$REPO" && cargo metadata --format-version 1 --no-deps |
    "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])') ||
    die "cannot find cargo's target directory"
PATCHGEN=$target_dir/release/patchgen
[ -x "$PATCHGEN" ] || die "$PATCHGEN was not built"

# 4. The demo, in a temporary copy.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/patchgen-demo.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp -R "$REPO/examples/demo" "$WORK/demo"
find "$WORK/demo" -depth -type d \( -name generated -o -name __pycache__ \) -exec rm -rf {} +
cd "$WORK/demo"

# ruff from the cache first on PATH; upstream modules from the wheel and the
# demo's own toy library (upstream/toylib).
export PATH="$RUFF_VENV/bin:$PATH"
export PYTHONPATH="$WHEEL:$WORK/demo/upstream"

echo
echo "patchgen $("$PATCHGEN" --version | cut -d' ' -f2), ruff $RUFF_VERSION, $(basename "$WHEEL")"
echo "In a temporary copy of examples/demo, with PYTHONPATH=<that wheel>:upstream"

# Echo a command, then run it; its exit code is returned.
run() {
    echo
    echo "\$ $*"
    local rc=0
    "$@" || rc=$?
    return "$rc"
}
# patchgen prints absolute paths: show them relative to the demo directory.
patchgen() {
    local rc
    "$PATCHGEN" "$@" 2>&1 | sed "s#$WORK/demo/##g"
    rc=${PIPESTATUS[0]}
    return "$rc"
}

run patchgen --list
run patchgen --all --diff || die "patchgen --all --diff failed"

run cat demo/toy/generated/patched_modeling_toy.diff
run head -n 30 demo/llama/generated/patched_modeling_llama.diff
echo "[... $(($(wc -l <demo/llama/generated/patched_modeling_llama.diff) - 30)) more lines]"

run patchgen --check || die "patchgen --check reported drift right after generation"

# Provenance: which patch, import, header or ruff rule made each hunk of the
# toy's .diff, and where one generated line came from.
run patchgen explain demo.toy.toy_gpu_patch_gen_config || die "patchgen explain failed"
run patchgen explain demo/toy/generated/patched_modeling_toy.py:1 || die "patchgen explain FILE:LINE failed"

# Drift: a hand edit to a generated file.
echo
echo "\$ echo '# hand edit' >> demo/toy/generated/patched_modeling_toy.py"
echo '# hand edit' >>demo/toy/generated/patched_modeling_toy.py

rc=0
run patchgen --check || rc=$?
echo "(exit $rc)"
[ "$rc" -eq 1 ] || die "expected patchgen --check to exit 1 on a drifted file, got $rc"

run patchgen --check --fix || true
rc=0
run patchgen --check || rc=$?
echo "(exit $rc)"
[ "$rc" -eq 0 ] || die "patchgen --check still reports drift after --fix (exit $rc)"

# Reference sources: the model's upstream files straight from the (cached)
# wheel, checked against its RECORD, where the protocol keeps them.
export PATCHGEN_CACHE="$CACHE"
run patchgen reference llama --pin "$TRANSFORMERS_VERSION" --no-download ||
    die "patchgen reference failed"

# A new model's first config, by reuse of the closest sibling (llama here),
# with its toy config and its rows in the test tables (the demo has none: `new` says so).
run patchgen new mistral --like llama || die "patchgen new failed"
run cat demo/mistral/mistral_gpu_patch_gen_config.py
run patchgen --check || die "patchgen --check reported drift after patchgen new"

# Lint: the demo's configs are clean (exit 0) ...
rc=0
run patchgen lint || rc=$?
echo "(exit $rc)"
[ "$rc" -eq 0 ] || die "expected patchgen lint to pass on the demo, got exit $rc"

# ... until a patch targets a method name upstream does not have.
echo
echo "\$ sed -i 's/ToyRMSNorm.forward/ToyRMSNorm.forwrad/' demo/toy/toy_gpu_patch_gen_config.py"
sed -i 's/ToyRMSNorm.forward/ToyRMSNorm.forwrad/' demo/toy/toy_gpu_patch_gen_config.py
rc=0
run patchgen lint || rc=$?
echo "(exit $rc)"
[ "$rc" -eq 1 ] || die "expected patchgen lint to exit 1 on the misspelt override, got $rc"
echo
echo "\$ patchgen rule PG102 | head -n 3"
"$PATCHGEN" rule PG102 | sed -n 1,3p

# The editor's view: `patchgen server` (LSP over stdio) driven by a tiny
# client: the misspelt target is flagged as the buffer is opened, the fix is
# typed (not saved) and the finding goes; hover shows the upstream signature.
echo
echo "\$ scripts/lsp-demo.py patchgen demo/toy/toy_gpu_patch_gen_config.py ToyRMSNorm.forwrad ToyRMSNorm.forward"
"$PYTHON" "$REPO/scripts/lsp-demo.py" "$PATCHGEN" demo/toy/toy_gpu_patch_gen_config.py \
    ToyRMSNorm.forwrad ToyRMSNorm.forward | sed "s#$WORK/demo/##g"
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the patchgen server session failed"

# A pin bump (docs/bump.md): toylib 1.0.0 (upstream/) → 2.0.0 (upstream-2.0/)
# added `**kwargs` to ToyAttention.forward (a line the patch kept: carried)
# and a dropout after the softmax (lines the patch replaced: a conflict).
echo
echo "\$ sed -i 's/ToyRMSNorm.forwrad/ToyRMSNorm.forward/' demo/toy/toy_gpu_patch_gen_config.py"
sed -i 's/ToyRMSNorm.forwrad/ToyRMSNorm.forward/' demo/toy/toy_gpu_patch_gen_config.py
run patchgen survey --package toylib --from upstream --to upstream-2.0 demo.toy.toy_gpu_patch_gen_config || true
rc=0
run patchgen bump --package toylib --from upstream --to upstream-2.0 demo.toy.toy_gpu_patch_gen_config || rc=$?
echo "(exit $rc)"
[ "$rc" -eq 1 ] || die "expected patchgen bump to leave one conflict (exit 1), got $rc"
grep -q '^<<<<<<< config$' demo/toy/toy_gpu_patch_gen_config.py || die "bump wrote no conflict marker"
run sed -n '/^def toy_attention_forward/,/^    return/p' demo/toy/toy_gpu_patch_gen_config.py
rc=0
run patchgen --check demo.toy.toy_gpu_patch_gen_config || rc=$?
[ "$rc" -ne 0 ] || die "expected --check to stop at the unresolved conflict"

# MoE checkpoints: a tiny qwen3_moe-like checkpoint with per-expert keys
# (written here with the standard library: an 8-byte header length, the
# JSON header, the bytes), inspected from its headers, converted to the v5
# fused layout and inspected again.
"$PYTHON" - "$WORK/ckpt" <<'PY'
import json, os, struct, sys
out = sys.argv[1]
os.makedirs(out)
H, I, E, L = 8, 6, 4, 2
tensors, data = {}, bytearray()
def add(name, shape):
    n = 1
    for d in shape:
        n *= d
    start = len(data)
    data.extend(struct.pack(f"<{n}f", *[(len(tensors) + k) / 64 for k in range(n)]))
    tensors[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [start, len(data)]}
add("model.embed_tokens.weight", (16, H))
for l in range(L):
    add(f"model.layers.{l}.mlp.gate.weight", (E, H))
    for j in range(E):
        add(f"model.layers.{l}.mlp.experts.{j}.gate_proj.weight", (I, H))
        add(f"model.layers.{l}.mlp.experts.{j}.up_proj.weight", (I, H))
        add(f"model.layers.{l}.mlp.experts.{j}.down_proj.weight", (H, I))
header = json.dumps({"__metadata__": {"format": "pt"}, **tensors}).encode()
header += b" " * (-len(header) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + data)
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump({"model_type": "qwen3_moe", "num_experts": E, "hidden_size": H, "moe_intermediate_size": I,
               "num_hidden_layers": L}, f)
PY
# From here on, paths are shown relative to the temporary directory.
patchgen() {
    local rc
    "$PATCHGEN" "$@" 2>&1 | sed "s#$WORK/##g"
    rc=${PIPESTATUS[0]}
    return "$rc"
}
cd "$WORK"
echo
echo "A tiny per-expert MoE checkpoint in ckpt/ (qwen3_moe-like, hidden=8, I=6, 4 experts, 2 layers)"
run patchgen moe inspect ckpt || die "patchgen moe inspect failed"
run patchgen moe convert ckpt ckpt-fused --verify || die "patchgen moe convert failed"
run patchgen moe inspect ckpt-fused || die "patchgen moe inspect failed on the converted checkpoint"

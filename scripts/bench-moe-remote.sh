#!/usr/bin/env bash
# Benchmark `patchgen moe convert` from a remote source (issue 21): a
# synthetic per-expert checkpoint (qwen3_moe-like, F16, as
# scripts/bench-moe.sh builds it) served on 127.0.0.1 by the Hub stand-in
# of the tests (tests/moe/hub_server.py), converted hf:// -> local disk,
# against the local conversion of the same files and against `curl`
# downloading the same shards (the transport's own speed), alternating.
# Prints a markdown table: wall time, throughput, peak RSS (GNU time %M).
#
# usage: scripts/bench-moe-remote.sh [--runs N] [--size-gb G] [--work DIR] [--out DIR]
#   --out DIR  where outputs are written (default: under --work; /dev/shm takes
#              the disk, and other sessions' fsyncs, out of the comparison)
# env: PATCHGEN_BIN (default: target/testing/patchgen), PYTHON (default: the
#      test venv of scripts/test-env.sh)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=3 size=1.1 work= out=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --size-gb) size=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "bench-moe-remote: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "${PYTHON:-}" ]; then
  eval "$("$repo/scripts/test-env.sh")"
  PYTHON=$PATCHGEN_TEST_PYTHON
fi
bin=${PATCHGEN_BIN:-$repo/target/testing/patchgen}
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/bench-moe-remote.XXXXXX")
fi
out=${out:-$work}/bench-moe-remote-out.$$
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work" "$out"' EXIT
src=$work/hub/org/bench
mkdir -p "$src"
echo "building a ${size} GB per-expert checkpoint in $src ..." >&2
"$PYTHON" - "$src" "$size" <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
out, size_gb = sys.argv[1], float(sys.argv[2])
H, I, E = 1024, 768, 64
layers = max(1, round(size_gb * 1e9 / (E * 3 * H * I * 2)))
base = np.arange(H * I, dtype=np.uint16)
weight_map, names = {}, []
for L in range(layers):
    part = {}
    for j in range(E):
        for proj, shape in (("gate_proj", (I, H)), ("up_proj", (I, H)), ("down_proj", (H, I))):
            part[f"model.layers.{L}.mlp.experts.{j}.{proj}.weight"] = (base + np.uint16((L * E + j) % 60000)).view(np.float16).reshape(shape)
    part[f"model.layers.{L}.mlp.gate.weight"] = np.ones((E, H), dtype=np.float32)
    fname = f"model-{L + 1:05d}-of-{layers:05d}.safetensors"
    save_file(part, os.path.join(out, fname), metadata={"format": "pt"})
    weight_map.update({k: fname for k in part})
with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump({"model_type": "qwen3_moe", "num_experts": E, "hidden_size": H, "moe_intermediate_size": I,
               "num_hidden_layers": layers}, f)
PY
bytes=$(du -sb "$src" | cut -f1)
coproc SRV { exec "$PYTHON" "$repo/tests/moe/hub_server.py" "$work/hub"; }
server=$SRV_PID
read -r _ port <&"${SRV[0]}"
export HF_ENDPOINT=http://127.0.0.1:$port
declare -a t_l t_r t_c
rss_l=0 rss_r=0
shards=$(cd "$src" && ls | grep safetensors$)
for r in $(seq 1 "$runs"); do
  for kind in local remote curl; do
    rm -rf "$out"; sync
    if [ "$kind" = curl ]; then
      mkdir -p "$out"
      a=$(date +%s.%N)
      for f in $shards; do curl -sf -o "$out/$f" "$HF_ENDPOINT/org/bench/resolve/main/$f"; done
      b=$(date +%s.%N)
      t_c+=("$(echo "$b - $a" | bc)")
      continue
    fi
    from=$src; [ "$kind" = remote ] && from=hf://org/bench
    /usr/bin/time -f '%e %M' -o "$work/t" "$bin" moe convert "$from" "$out" >/dev/null
    read -r e m < <(tail -n 1 "$work/t")
    if [ "$kind" = local ]; then t_l+=("$e"); [ "$m" -gt "$rss_l" ] && rss_l=$m
    else t_r+=("$e"); [ "$m" -gt "$rss_r" ] && rss_r=$m; fi
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ml=$(median "${t_l[@]}"); mr=$(median "${t_r[@]}"); mc=$(median "${t_c[@]}")
rate() { echo "scale=1; $bytes / $1 / 1000000" | bc; }
cat <<MD
| measurement (median of $runs, load avg $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores) | time | throughput | peak RSS |
| --- | --- | --- | --- |
| checkpoint | $(echo "scale=2; $bytes / 1000000000" | bc) GB, $(ls "$src" | grep -c safetensors$) shards | | |
| \`moe convert DIR out\` (local) | ${ml} s | $(rate "$ml") MB/s | $((rss_l / 1024)) MB |
| \`moe convert hf://org/bench out\` (127.0.0.1) | ${mr} s | $(rate "$mr") MB/s ($(echo "scale=0; 100 * $ml / $mr" | bc) % of local, $(echo "scale=0; 100 * $mc / $mr" | bc) % of curl) | $((rss_r / 1024)) MB |
| \`curl\` of the same shards, one after the other (no fsync) | ${mc} s | $(rate "$mc") MB/s | |
MD

#!/usr/bin/env bash
# Benchmark `patchgen moe` (issue 13) and print a markdown table:
#   convert   a synthetic per-expert checkpoint (qwen3_moe-like, F16) of
#             --size-gb GB on local disk → v5 fused, against `cp -r` of the
#             same checkpoint, side by side in one run, alternating
#             (cp, convert, cp, convert, ...); convert is durable when it
#             returns (every file it writes, its directory and the rename
#             fsynced), so cp is also timed with a final `sync`;
#   RSS       peak resident set of convert (GNU time %M);
#   inspect   an index of 1,003 shards and 100,224 tensors (headers only).
#
# usage: scripts/bench-moe.sh [--runs N] [--size-gb G] [--work DIR] [--no-build] [--jobs J]
#   --runs N     alternating pairs (default 3)
#   --size-gb G  checkpoint size (default 2.1)
#   --work DIR   scratch directory on local disk (default: a fresh one under
#                ${TMPDIR:-/tmp}, removed after)
#   --jobs J     also time `convert --jobs J` (default 2)
# env: PATCHGEN_BIN  the binary (default: target/release/patchgen)
#      PYTHON  a python with numpy + safetensors (default: the test venv of
#              scripts/test-env.sh, installed when missing)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runs=3 size=2.1 work= build=1 jobs=2
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --size-gb) size=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-build) build=; shift ;;
    *) echo "bench-moe: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "${PYTHON:-}" ]; then
  eval "$("$repo/scripts/test-env.sh")"
  PYTHON=$PATCHGEN_TEST_PYTHON
fi
if [ -n "$build" ]; then
  (cd "$repo" && cargo build --release --quiet)
fi
bin=${PATCHGEN_BIN:-$repo/target/release/patchgen}
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/bench-moe.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"

echo "building a ${size} GB per-expert checkpoint in $work/src ..." >&2
"$PYTHON" - "$work/src" "$size" <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
out, size_gb = sys.argv[1], float(sys.argv[2])
os.makedirs(out, exist_ok=True)
H, I, E = 1024, 768, 64
per_layer = E * 3 * H * I * 2
layers = max(1, round(size_gb * 1e9 / per_layer))
shard_limit = 500_000_000
base = np.arange(H * I, dtype=np.uint16)
weight_map, shard, shard_bytes, k, total = {}, {}, 0, 0, 0
names = []
def flush():
    global shard, shard_bytes, k
    if shard:
        k += 1
        fname = f"part-{k}.safetensors"
        save_file(shard, os.path.join(out, fname), metadata={"format": "pt"})
        weight_map.update({n: fname for n in shard})
        shard, shard_bytes = {}, 0
for L in range(layers):
    for j in range(E):
        for proj, shape in (("gate_proj", (I, H)), ("up_proj", (I, H)), ("down_proj", (H, I))):
            a = (base + np.uint16((L * E + j) % 60000)).view(np.float16).reshape(shape)
            if shard_bytes + a.nbytes > shard_limit:
                flush()
            shard[f"model.layers.{L}.mlp.experts.{j}.{proj}.weight"] = a
            shard_bytes += a.nbytes
            total += a.nbytes
    a = np.ones((E, H), dtype=np.float32)
    shard[f"model.layers.{L}.mlp.gate.weight"] = a
    shard_bytes += a.nbytes
    total += a.nbytes
flush()
n = k
for i in range(1, n + 1):
    os.rename(os.path.join(out, f"part-{i}.safetensors"), os.path.join(out, f"model-{i:05d}-of-{n:05d}.safetensors"))
weight_map = {k2: f"model-{int(v.split('-')[1].split('.')[0]):05d}-of-{n:05d}.safetensors" for k2, v in weight_map.items()}
with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump({"model_type": "qwen3_moe", "num_experts": E, "hidden_size": H, "moe_intermediate_size": I,
               "num_hidden_layers": layers}, f)
PY
bytes=$(du -sb "$work/src" | cut -f1)

now() { date +%s.%N; }
declare -a t_cp t_cps t_cv t_cvj c_cv
rss=0
for r in $(seq 1 "$runs"); do
  rm -rf "$work/cp" "$work/out" "$work/outj"; sync
  a=$(now); cp -r "$work/src" "$work/cp"; b=$(now); sync; c=$(now)
  t_cp+=("$(echo "$b - $a" | bc)"); t_cps+=("$(echo "$c - $a" | bc)")
  rm -rf "$work/cp"; sync
  a=$(now)
  /usr/bin/time -f '%M %U %S' -o "$work/rss" "$bin" moe convert "$work/src" "$work/out" >/dev/null
  b=$(now)
  t_cv+=("$(echo "$b - $a" | bc)")
  read -r m u s < <(tail -n 1 "$work/rss"); [ "$m" -gt "$rss" ] && rss=$m
  c_cv+=("$(echo "$u + $s" | bc)")
  rm -rf "$work/out"; sync
  a=$(now); "$bin" moe convert "$work/src" "$work/outj" --jobs "$jobs" >/dev/null; b=$(now)
  t_cvj+=("$(echo "$b - $a" | bc)")
  rm -rf "$work/outj"; sync
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mcp=$(median "${t_cp[@]}"); mcps=$(median "${t_cps[@]}"); mcv=$(median "${t_cv[@]}"); mcvj=$(median "${t_cvj[@]}")
rate() { echo "scale=1; $bytes / $1 / 1000000" | bc; }

echo "building an index of 1,003 shards, 100,224 tensors (headers only) ..." >&2
"$PYTHON" - "$work/many" <<'PY'
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
names = [f"model.layers.{L}.mlp.experts.{j}.{p}.weight" for L in range(261) for j in range(128)
         for p in ("gate_proj", "up_proj", "down_proj")]
g = np.zeros((3, 2), dtype=np.float16)
d = np.zeros((2, 3), dtype=np.float16)
weight_map = {}
per = 100
n = (len(names) + per - 1) // per
for k in range(n):
    fname = f"model-{k + 1:05d}-of-{n:05d}.safetensors"
    part = {x: (d if x.endswith("down_proj.weight") else g) for x in names[k * per:(k + 1) * per]}
    save_file(part, os.path.join(out, fname), metadata={"format": "pt"})
    weight_map.update({x: fname for x in part})
with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": 12 * len(names)}, "weight_map": weight_map}, f, indent=1)
PY
sync
declare -a t_in c_in
for r in $(seq 1 "$runs"); do
  /usr/bin/time -f '%e %U %S' -o "$work/t" "$bin" moe inspect "$work/many" >/dev/null || true
  read -r e u s < <(tail -n 1 "$work/t")
  t_in+=("$e"); c_in+=("$(echo "$u + $s" | bc)")
done
min=$(median "${t_in[@]}"); cin=$(median "${c_in[@]}")
# The floor of inspect (issue 23): reading every shard's bytes once (`cat`),
# in the same run.
declare -a t_cat
for r in $(seq 1 "$runs"); do
  a=$(now); cat "$work/many"/*.safetensors >/dev/null; b=$(now)
  t_cat+=("$(echo "$b - $a" | bc)")
done
mcat=$(median "${t_cat[@]}")
shards=$(ls "$work/many" | grep -c safetensors$)
tensors=$(grep -c '"model\.' "$work/many/model.safetensors.index.json" || true)

cat <<MD
| measurement (median of $runs, load avg $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores) | time | throughput |
| --- | --- | --- |
| checkpoint | $(echo "scale=2; $bytes / 1000000000" | bc) GB, $(ls "$work/src" | grep -c safetensors$) shards | |
| \`cp -r\` | ${mcp} s | $(rate "$mcp") MB/s |
| \`cp -r && sync\` | ${mcps} s | $(rate "$mcps") MB/s |
| \`moe convert\` (durable; CPU $(median "${c_cv[@]}") s) | ${mcv} s | $(rate "$mcv") MB/s ($(echo "scale=0; 100 * $mcps / $mcv" | bc) % of cp+sync, $(echo "scale=0; 100 * $mcp / $mcv" | bc) % of cp) |
| \`moe convert --jobs $jobs\` | ${mcvj} s | $(rate "$mcvj") MB/s |
| peak RSS of \`moe convert\` | $((rss / 1024)) MB | |
| \`moe inspect\`, $shards shards, $tensors tensors | ${min} s wall, ${cin} s CPU (user+sys) | |


| figure (issue 23) | value | goal | floor | ratio to floor | goal met |
| --- | --- | --- | --- | --- | --- |
| \`moe convert\` throughput | $(rate "$mcv") MB/s | ≥ 100 % of cp+sync | \`cp -r && sync\` $(rate "$mcps") MB/s | $(echo "scale=2; $mcps / $mcv" | bc) | $(echo "$mcps >= $mcv" | bc | sed 's/1/yes/;s/0/no/') |
| peak RSS of \`moe convert\` | $((rss / 1024)) MB | ≤ 64 MB | | | $([ $((rss / 1024)) -le 64 ] && echo yes || echo no) |
| \`moe inspect\`, $shards shards | ${min} s | ≤ 0.100 s | \`cat\` of the shards ${mcat} s | $(echo "scale=2; $min / $mcat" | bc) | $(echo "$min <= 0.100" | bc | sed 's/1/yes/;s/0/no/') |
MD

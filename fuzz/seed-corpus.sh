#!/usr/bin/env bash
# Build fuzz/corpus/<target>/ from the hand-written seeds in fuzz/seeds/ and
# the main crate's test fixtures (copied at run time, never committed).
set -euo pipefail
fuzz=$(cd "$(dirname "$0")" && pwd)
fixtures="$fuzz/../tests/fixtures"
for t in eval_config generate getblock safetensors_header server_frames index_file remote_url; do
  mkdir -p "$fuzz/corpus/$t"
  cp "$fuzz/seeds/$t/"* "$fuzz/corpus/$t/" 2>/dev/null || true
done

n=0
for case in "$fixtures"/*/; do
  name=$(basename "$case")
  configs=$(find "$case/pkg" -name '*_patch_gen_config.py' 2>/dev/null | sort || true)
  [ -n "$configs" ] || continue
  for c in $configs; do
    n=$((n + 1))
    base="$name-$(basename "$c" .py)"
    # Imports of sibling config modules point at the fuzz harness's second
    # in-memory module, `pkg.b_patch_gen_config`.
    sed -E 's/pkg\.[a-z0-9_]+\.[a-z0-9_]+_patch_gen_config/pkg.b_patch_gen_config/g' "$c" \
      > "$fuzz/corpus/eval_config/$base.py"
    cp "$c" "$fuzz/corpus/getblock/$base.py"
  done
  # Pairs: each config that imports another, with the imported one second.
  for c in $configs; do
    dep=$(grep -oE 'pkg\.[a-z0-9_]+\.[a-z0-9_]+_patch_gen_config' "$c" | head -n1 || true)
    [ -n "$dep" ] || continue
    depfile="$case/pkg/$(echo "$dep" | sed 's/^pkg\.//; s/\./\//g').py"
    [ -f "$depfile" ] || continue
    out="$fuzz/corpus/eval_config/$name-pair-$(basename "$c" .py)"
    { sed -E 's/pkg\.[a-z0-9_]+\.[a-z0-9_]+_patch_gen_config/pkg.b_patch_gen_config/g' "$c"
      printf '\0'
      cat "$depfile"; } > "$out"
  done
  # Upstream modules alone, and `config NUL upstream` for the case's first config.
  first=$(echo "$configs" | head -n1)
  for u in $(find "$case/upstream" -name '*.py' -size +0 2>/dev/null | sort || true); do
    rel=$(echo "${u#"$case"/upstream/}" | tr '/' '_')
    cp "$u" "$fuzz/corpus/generate/$name-$rel"
    cp "$u" "$fuzz/corpus/getblock/$name-$rel"
    case "$u" in
      */modeling_*.py)
        { sed -E 's/pkg\.[a-z0-9_]+\.[a-z0-9_]+_patch_gen_config/pkg.b_patch_gen_config/g' "$first"
          printf '\0'
          cat "$u"; } > "$fuzz/corpus/generate/$name-pair-$rel" ;;
    esac
  done
done
for t in eval_config generate getblock safetensors_header server_frames index_file remote_url; do
  echo "corpus/$t: $(ls "$fuzz/corpus/$t" | wc -l) files"
done

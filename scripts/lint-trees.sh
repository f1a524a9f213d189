#!/usr/bin/env bash
# Lint many VeOmni trees of a git mirror with `patchgen lint`, at each tree's own
# transformers pin and at a second upstream (the pin-bump preview), and print one
# TSV row per tree with the finding counts per rule (docs/lint-veomni.md,
# "PG106–PG108 and `lint --fix`").
#
# usage: scripts/lint-trees.sh MIRROR LIST [RULES]
#   MIRROR  a bare git directory (e.g. /work/.mirror/ByteDance-Seed+VeOmni/repo)
#   LIST    one tree a line: `<commit> [...] [<ref>[,<ref>...]]` — the first field
#           is the commit to `git archive`, the last (its first comma-separated
#           item) names it; `#` lines are skipped, so docs/veomni-corpus.txt works
#           as is (its `-` trees, without a [tool.patchgen] table, are skipped)
#   RULES   the --select list (default PG106,PG107,PG108)
# env:
#   PATCHGEN   the binary (default: `patchgen` on PATH)
#   WHEELS     colon-separated directories holding transformers-<pin>-py3-none-any.whl
#              (default: <repo>/.cache/wheels:/tmp/wheels); a tree whose pin has no
#              wheel there is reported as `no-wheel` (fetch it with
#              `pip download transformers==X --no-deps -d /tmp/wheels`)
#   UPSTREAM   the second upstream (default: the 5.16.1 wheel of the first WHEELS dir
#              that has one)
#   OUT        where the JSON reports go, <short>.pin.json and <short>.next.json
#              (default /tmp/lint-trees/out); trees are extracted under $OUT/../work
#              and deleted after each tree
# output (stdout), tab-separated:
#   short  label  pin  configs  PG106 PG107 PG108 PG000 at the pin  the same at UPSTREAM
# configs counts the tree's *_patch_gen_config.py files (the JSON's `configs` is the number
# linted: an optional source that is not installed is skipped); PG000 counts configs lint
# could not read (an upstream module missing at that version), not rule findings.
# The pin is the tree's first uncommented `"transformers==X"` in pyproject.toml (VeOmni
# pins it in the `transformers-stable` dependency group). Counts are diagnostics of
# the JSON report (the lint merges a line several configs share into one finding).
set -euo pipefail

[ $# -ge 2 ] || { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
mirror=$1 list=$2 rules=${3:-PG106,PG107,PG108}
repo=$(cd "$(dirname "$0")/.." && pwd)
patchgen=${PATCHGEN:-patchgen}
wheels=${WHEELS:-$repo/.cache/wheels:/tmp/wheels}
out=${OUT:-/tmp/lint-trees/out}
work=$(dirname "$out")/work
mkdir -p "$out" "$work"
git="git --git-dir=$mirror"

wheel_for() { # version -> wheel path or empty
  local d IFS=:
  for d in $wheels; do
    [ -f "$d/transformers-$1-py3-none-any.whl" ] && { echo "$d/transformers-$1-py3-none-any.whl"; return; }
  done
}
upstream=${UPSTREAM:-$(wheel_for 5.16.1)}
[ -n "$upstream" ] || { echo "lint-trees: no transformers 5.16.1 wheel in $wheels (set UPSTREAM)" >&2; exit 2; }

count() { # json code
  jq --arg c "$2" '[.diagnostics[] | select(.code == $c)] | length' "$1"
}

printf 'short\tlabel\tpin\tconfigs\tpin:PG106\tpin:PG107\tpin:PG108\tpin:PG000\tnext:PG106\tnext:PG107\tnext:PG108\tnext:PG000\n'
grep -v '^#' "$list" | while read -r line; do
  [ -n "$line" ] || continue
  commit=${line%% *}
  label=${line##* }; label=${label%%,*}
  [ "$label" = "$commit" ] && label=-
  short=${commit:0:8}
  pyproject=$($git show "$commit:pyproject.toml" 2>/dev/null || true)
  if ! grep -q '^\[tool\.patchgen\]' <<<"$pyproject"; then
    printf '%s\t%s\tno-[tool.patchgen]\n' "$short" "$label"; continue
  fi
  pin=$(grep -vE '^\s*#' <<<"$pyproject" | grep -oE '"transformers==[0-9.]+"' | head -1 | tr -d '"')
  pin=${pin#transformers==}
  configs=$($git ls-tree -r --name-only "$commit" -- veomni/models/transformers | grep -c '_patch_gen_config\.py$' || true)
  wheel=$(wheel_for "${pin:-none}")
  if [ -z "$wheel" ]; then
    printf '%s\t%s\t%s\t%s\tno-wheel\n' "$short" "$label" "${pin:--}" "$configs"; continue
  fi
  tree=$work/$short
  rm -rf "$tree"; mkdir -p "$tree"
  $git archive "$commit" | tar -x -C "$tree"
  (cd "$tree" && PYTHONPATH=$wheel "$patchgen" lint --select "$rules" --format json >"$out/$short.pin.json" 2>"$out/$short.pin.err" || true)
  (cd "$tree" && PYTHONPATH=$wheel "$patchgen" lint --select "$rules" --upstream "$upstream" --format json >"$out/$short.next.json" 2>"$out/$short.next.err" || true)
  rm -rf "$tree"
  row="$short\t$label\t$pin\t$configs"
  for kind in pin next; do
    if ! jq -e .diagnostics "$out/$short.$kind.json" >/dev/null 2>&1; then
      row="$row\terror\t-\t-\t-"; continue
    fi
    for code in PG106 PG107 PG108 PG000; do row="$row\t$(count "$out/$short.$kind.json" $code)"; done
  done
  printf '%b\n' "$row"
done

#!/usr/bin/env bash
# Benchmark the drift check on an extracted VeOmni tree (issue 4) and print
# a markdown table. Every figure is the median of N cold-process runs.
#
# usage: scripts/bench.sh TREE [--runs N] [--scale K] [--work DIR] [--no-build] [--priority] [--new-model M] [--warm-each]
#   TREE        a VeOmni checkout whose generated files are up to date
#               (never written to: everything runs on copies under --work)
#   --runs N    runs per measurement (default 7, at least 5)
#   --scale K   the synthetic tree has K copies of every config (default 10)
#   --work DIR  scratch directory (default: a fresh temporary one under
#               /dev/shm when it is writable, else under $TMPDIR; removed
#               after). ruff writes its fixes into the files it is given, so
#               T_ruff depends on the file system; patchgen runs ruff in a
#               mirror on tmpfs, and tmpfs here keeps the comparison fair.
#   --no-build  use the existing target/release/patchgen and bench binary
#   --priority  run in a new session with autogroup nice -20 (needs root or
#               CAP_SYS_NICE; for shared machines: other sessions' load then
#               disturbs the figures much less)
#   --new-model M  the dense model `patchgen new` scaffolds for T_new
#               (default mistral: in transformers, not in VeOmni)
#   --warm-each run every measure once untimed right before its timed run
#               (prepare, run, prepare again, run timed): on this machine the
#               first run after another program is slower, and without it
#               T_check, first in each round after the 10x measures, pays
#               that alone (docs/performance.md, seventh round)
# env:
#   BUMP_FROM, BUMP_TO  the versions T_bump moves between (default 5.9.0, 5.16.1)
#   RUFF          ruff binary (default: `ruff` on PATH, else
#                 ~/.cache/patchgen-dev/ruff-0.13.2/bin/ruff)
#   TRANSFORMERS  transformers source (directory or wheel) for PYTHONPATH
#                 (default: ~/.cache/patchgen-dev/transformers-5.9.0 if present,
#                 else PYTHONPATH as set)
#
# Measures:
#   T_check     `patchgen --check --no-cache` from the tree root (wall time)
#   T_check/pf  the same with PATCHGEN_RUFF_MODE=per-file (ruff per file via stdin)
#   cache       (issue 15) T_cold_cache: `patchgen --check` with the cache
#               removed first (a cold check that fills the cache; its paired
#               ratio to T_check is the cost of maintaining it); T_warm:
#               `--check` with nothing changed; T_warm_one: `--check` after
#               one config (imported by no other) gained or lost a first-line
#               comment; T_one_cold: `--check --no-cache <that config>`;
#               T_warm_x: warm on the Kx tree
#   T_gen       evaluation + generation of every config, no ruff
#               (`benches/pipeline.rs --once`: a whole process)
#   T_ruff      ruff alone, in one batch, on copies of the files placed at
#               their real paths in a copy of the tree (same settings):
#               `ruff check --fix --quiet --no-cache --ignore E402,B007 FILES;
#                ruff format --quiet --no-cache FILES`, on
#               (raw) the un-normalised generated texts (what --check must fix),
#               (checked-in) the checked-in generated files (already normalised)
#   T_lint      `patchgen lint --no-cache` (default rules, no ruff) from the tree root;
#               exit 1 (findings) counts as success; T_lint_warm: `patchgen lint`
#               with its cache filled
#   T_new       `patchgen new M` on a fresh copy of the tree (issue 23)
#   T_bump      `patchgen bump --from $BUMP_FROM --to $BUMP_TO --no-regenerate
#               --allow-dirty --no-download` on a fresh copy of the tree (issue 35:
#               every patch ported, configs written; goal < 5 s; the wheels must
#               be in the wheel cache; exit 1, conflicts left, counts as success)
#   T_noop      `patchgen --version`: a process that does nothing (the floor
#               of every warm figure)
#   RSS         peak resident set of `patchgen --check` (GNU time %M)
#   scaling     the same on a tree with K copies of every config directory
#               (`<model>` → `<model>_cN`, dotted imports rewritten), whose
#               outputs are generated once with `patchgen --all --diff`
set -euo pipefail

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
tree=""; runs=7; scale=10; work=""; build=1; priority=0; new_model=mistral; warm_each=0
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        --priority) priority=1; shift ;;
        --new-model) new_model=$2; shift 2 ;;
        --warm-each) warm_each=1; shift ;;
        -h|--help) usage ;;
        -*) echo "bench: unknown option $1" >&2; usage ;;
        *) tree=$1; shift ;;
    esac
done
[ -n "$tree" ] || usage
[ "$runs" -ge 5 ] || { echo "bench: --runs must be at least 5" >&2; exit 2; }
tree=$(cd "$tree" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)

if [ "$priority" = 1 ] && [ -z "${BENCH_PRIORITY_SET:-}" ]; then
    args=("$tree" --runs "$runs" --scale "$scale")
    [ -n "$work" ] && args+=(--work "$work")
    [ "$build" = 0 ] && args+=(--no-build)
    args+=(--new-model "$new_model")
    [ "$warm_each" = 1 ] && args+=(--warm-each)
    # shellcheck disable=SC2016
    exec setsid bash -c 'echo -20 > /proc/$$/autogroup 2>/dev/null || echo "bench: cannot raise the autogroup priority" >&2
        export BENCH_PRIORITY_SET=1; exec nice -n -20 "$0" "$@"' "$0" "${args[@]}" --priority </dev/null
fi

cd "$repo"
# shellcheck source=scripts/toolchain.sh
. scripts/toolchain.sh

ruff=${RUFF:-$(command -v ruff || true)}
[ -n "$ruff" ] || ruff="$HOME/.cache/patchgen-dev/ruff-0.13.2/bin/ruff"
[ -x "$ruff" ] || { echo "bench: no ruff (set RUFF=/path/to/ruff)" >&2; exit 2; }
ruff=$(cd "$(dirname "$ruff")" && pwd)/$(basename "$ruff")
PATH="$(dirname "$ruff"):$PATH"
export PATH
tf=${TRANSFORMERS:-}
[ -z "$tf" ] && [ -d "$HOME/.cache/patchgen-dev/transformers-5.9.0" ] && tf="$HOME/.cache/patchgen-dev/transformers-5.9.0"
[ -n "$tf" ] && export PYTHONPATH="$tf${PYTHONPATH:+:$PYTHONPATH}"

if [ "$build" = 1 ]; then
    echo "bench: building (release)" >&2
    cargo build --release --quiet
fi
bench_bin=$(cargo bench --bench pipeline --no-run --message-format=json 2>/dev/null \
    | grep '"kind":\["bench"\]' | grep '"name":"pipeline"' \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
patchgen="${CARGO_TARGET_DIR:-$repo/target}/release/patchgen"
if [ ! -x "$patchgen" ] || [ ! -x "$bench_bin" ]; then
    echo "bench: binaries missing (drop --no-build)" >&2
    exit 2
fi

own_work=0
if [ -z "$work" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then work=$(mktemp -d -p /dev/shm); else work=$(mktemp -d); fi
    own_work=1
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
cleanup() { if [ "$own_work" = 1 ]; then rm -rf "$work"; fi; }
trap cleanup EXIT

# ---------------------------------------------------------------- trees
echo "bench: preparing trees in $work" >&2
rm -rf "$work/tree" "$work/raw" "$work/ruff1"
cp -a "$tree" "$work/tree"
(cd "$work/tree" && "$patchgen" --check --no-cache >/dev/null) \
    || { echo "bench: patchgen --check fails on $tree: benchmark a tree whose outputs are up to date" >&2; exit 1; }
"$bench_bin" "$work/tree" --once --dump "$work/raw" >/dev/null
cp -a "$work/tree" "$work/ruff1"

# The synthetic tree: every directory holding configs copied (scale-1) times
# under another name, with dotted references to it rewritten.
search_root=$(sed -n '/^\[tool\.patchgen\]/,/^\[/s/^search_root *= *"\(.*\)"/\1/p' "$tree/pyproject.toml")
prefix=$(sed -n '/^\[tool\.patchgen\]/,/^\[/s/^package_prefix *= *"\(.*\)"/\1/p' "$tree/pyproject.toml")
rm -rf "$work/tree$scale" "$work/raw$scale" "$work/ruff$scale"
cp -a "$work/tree" "$work/tree$scale"
model_dirs=$(cd "$work/tree/$search_root" && find . -name '*_patch_gen_config.py' ! -name '_*' -printf '%h\n' | sed 's|^\./||' | sort -u)
for d in $model_dirs; do
    for i in $(seq 1 $((scale - 1))); do
        new="${d}_c$i"
        cp -a "$work/tree/$search_root/$d" "$work/tree$scale/$search_root/$new"
        rm -rf "$work/tree$scale/$search_root/$new/generated"
        mod_old="$prefix.$(echo "$d" | tr / .)"
        mod_new="$prefix.$(echo "$new" | tr / .)"
        find "$work/tree$scale/$search_root/$new" -name '*.py' -print0 \
            | xargs -0 perl -pi -e "s/\\Q$mod_old\\E(?![\\w])/$mod_new/g"
    done
done
(cd "$work/tree$scale" && "$patchgen" --all --diff --no-cache >/dev/null 2>&1)
(cd "$work/tree$scale" && "$patchgen" --check --no-cache >/dev/null) \
    || { echo "bench: the ${scale}x tree does not check clean after --all --diff" >&2; exit 1; }
(cd "$work/tree$scale" && PATCHGEN_RUFF_MODE=per-file "$patchgen" --check --no-cache >/dev/null) \
    || { echo "bench: the ${scale}x tree: batched and per-file ruff disagree" >&2; exit 1; }
"$bench_bin" "$work/tree$scale" --once --dump "$work/raw$scale" >/dev/null
cp -a "$work/tree$scale" "$work/ruff$scale"

# The config edited for T_warm_one: the first one no other config imports.
one_cfg=""; one_mod=""
for f in $(cd "$work/tree/$search_root" && find . -name '*_patch_gen_config.py' ! -name '_*' | sed 's|^\./||' | sort); do
    mod="$prefix.$(echo "${f%.py}" | tr / .)"
    if ! grep -rqF --include='*_patch_gen_config.py' "$mod" "$work/tree/$search_root"; then
        one_cfg="$work/tree/$search_root/$f"; one_mod=$mod; break
    fi
done
[ -n "$one_cfg" ] || { echo "bench: every config is imported by another" >&2; exit 1; }
# toggle_first_line FILE: add or remove a first-line comment (no change to the output)
toggle_first_line() {
    if head -n1 "$1" | grep -qx '# bench toggle'; then sed -i '1d' "$1"; else sed -i '1i # bench toggle' "$1"; fi
}
export -f toggle_first_line

configs1=$(find "$work/raw" -type f | wc -l)
configs10=$(find "$work/raw$scale" -type f | wc -l)

# ---------------------------------------------------------------- timing
# the median of a list of numbers, one per line
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit} if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# Every measure runs once per round, rounds repeated (one warm-up round,
# then $runs timed), so that a change in the machine's load hits all
# measures alike. add NAME DIR PREPARE CMD: CMD (a string, evaluated) runs in
# DIR after PREPARE; its wall time is taken with bash's $EPOCHREALTIME.
names=(); dirs=(); preps=(); cmds=()
add() { names+=("$1"); dirs+=("$2"); preps+=("$3"); cmds+=("$4"); }
declare -A times=()
run_all() {
    local round k t0 t1
    for round in $(seq 0 "$runs"); do
        for k in "${!names[@]}"; do
            cd "${dirs[$k]}"
            if [ -n "${preps[$k]}" ]; then eval "${preps[$k]}"; fi
            if [ "$warm_each" = 1 ]; then
                eval "${cmds[$k]}" >/dev/null 2>&1 || { echo "bench: ${names[$k]} failed: ${cmds[$k]}" >&2; exit 1; }
                cd "${dirs[$k]}"
                if [ -n "${preps[$k]}" ]; then eval "${preps[$k]}"; fi
            fi
            t0=$EPOCHREALTIME
            eval "${cmds[$k]}" >/dev/null 2>&1 || { echo "bench: ${names[$k]} failed: ${cmds[$k]}" >&2; exit 1; }
            t1=$EPOCHREALTIME
            cd "$repo"
            if [ "$round" != 0 ]; then
                times[${names[$k]}]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) * 1000}') "
            fi
        done
    done
}
# NAME median min max
summary() {
    local sorted
    # shellcheck disable=SC2086  # a space-separated list
    sorted=$(printf '%s\n' ${times[$1]} | sort -n)
    echo "$1 $(echo "$sorted" | median) $(echo "$sorted" | head -n1) $(echo "$sorted" | tail -n1)"
}

ruff_batch() {  # ruff_batch FILES...: the floor, as patchgen runs it
    "$ruff" check --fix --quiet --no-cache --ignore E402,B007 -- "$@" || true
    "$ruff" format --quiet --no-cache -- "$@"
}
export -f ruff_batch
export ruff

files1=$(cd "$work/raw" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
files10=$(cd "$work/raw$scale" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
put_raw1="(cd '$work/raw' && cp --parents $files1 '$work/ruff1/')"
put_checked1="(cd '$tree' && cp --parents $files1 '$work/ruff1/')"
put_raw10="(cd '$work/raw$scale' && cp --parents $files10 '$work/ruff$scale/')"

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)
echo "bench: measuring ($runs runs each; load $load_before)" >&2
# shellcheck disable=SC2016  # the commands are evaluated later
add T_check "$work/tree" "" '"$patchgen" --check --no-cache'
# shellcheck disable=SC2016
add T_check_pf "$work/tree" "" 'PATCHGEN_RUFF_MODE=per-file "$patchgen" --check --no-cache'
# shellcheck disable=SC2016
add T_cold_cache "$work/tree" "rm -rf .patchgen_cache" '"$patchgen" --check'
# shellcheck disable=SC2016
add T_warm "$work/tree" "" '"$patchgen" --check'
# shellcheck disable=SC2016
add T_one_cold "$work/tree" "" '"$patchgen" --check --no-cache "$one_mod"'
# shellcheck disable=SC2016
add T_warm_one "$work/tree" 'toggle_first_line "$one_cfg"' '"$patchgen" --check'
# shellcheck disable=SC2016
add T_gen "$work/tree" "" '"$bench_bin" "$work/tree" --once'
add T_ruff_raw "$work/ruff1" "$put_raw1" "bash -c 'ruff_batch \"\$@\"' _ $files1"
# shellcheck disable=SC2016
add T_lint "$work/tree" "" '"$patchgen" lint --no-cache || [ $? -eq 1 ]'
add T_ruff_checked "$work/ruff1" "$put_checked1" "bash -c 'ruff_batch \"\$@\"' _ $files1"
# (T_warm_one edits a config every round: the cache is filled again, untimed, first.)
# shellcheck disable=SC2016
add T_lint_warm "$work/tree" '"$patchgen" lint >/dev/null 2>&1 || true' '"$patchgen" lint || [ $? -eq 1 ]'
# shellcheck disable=SC2016
add T_noop "$work/tree" "" '"$patchgen" --version'
# shellcheck disable=SC2016
add T_new "$work" 'rm -rf "$work/newtree" && cp -a "$work/tree" "$work/newtree"' 'cd "$work/newtree" && { "$patchgen" new "$new_model" || [ $? -eq 1 ]; }'
# shellcheck disable=SC2016
# The wheels bump reads come from the repository's cache (scripts/test-env.sh fills it)
# unless PATCHGEN_CACHE says otherwise: the scratch tree has no .cache of its own.
bump_cache=${PATCHGEN_CACHE:-$repo/.cache}
export bump_cache
add T_bump "$work" 'rm -rf "$work/bumptree" && cp -a "$work/tree" "$work/bumptree"' 'cd "$work/bumptree" && { PATCHGEN_CACHE="$bump_cache" "$patchgen" bump --from "${BUMP_FROM:-5.9.0}" --to "${BUMP_TO:-5.16.1}" --no-regenerate --allow-dirty --no-download || [ $? -eq 1 ]; }'
# shellcheck disable=SC2016
add T_check_x "$work/tree$scale" "" '"$patchgen" --check --no-cache'
# shellcheck disable=SC2016
add T_check_pf_x "$work/tree$scale" "" 'PATCHGEN_RUFF_MODE=per-file "$patchgen" --check --no-cache'
# shellcheck disable=SC2016
add T_warm_x "$work/tree$scale" "" '"$patchgen" --check'
# shellcheck disable=SC2016
add T_gen_x "$work/tree$scale" "" '"$bench_bin" "$work/tree$scale" --once'
add T_ruff_raw_x "$work/ruff$scale" "$put_raw10" "bash -c 'ruff_batch \"\$@\"' _ $files10"
# shellcheck disable=SC2016
add T_lint_x "$work/tree$scale" "" '"$patchgen" lint --no-cache || [ $? -eq 1 ]'
run_all
results=()
for name in "${names[@]}"; do results+=("$(summary "$name")"); done

rss=()
cpu=()
if [ -x /usr/bin/time ]; then
    for i in $(seq 1 "$runs"); do
        out=$( (cd "$work/tree" && /usr/bin/time -f '%M %U %S' "$patchgen" --check --no-cache 2>&1 >/dev/null) | tail -n 1)
        rss+=("$(echo "$out" | cut -d' ' -f1)")
        cpu+=("$(echo "$out" | awk '{printf "%d", ($2 + $3) * 1000}')")
    done
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)

# ---------------------------------------------------------------- report
get() { printf '%s\n' "${results[@]}" | awk -v n="$1" -v f="$2" '$1 == n {print $f}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
# paired A B: the median over rounds of A's time / B's time in the same
# round (a change of load between rounds cancels out)
# shellcheck disable=SC2086  # space-separated lists
paired() { paste -d' ' <(printf '%s\n' ${times[$1]}) <(printf '%s\n' ${times[$2]}) | awk '{print $1 / $2}' | median | awk '{printf "%.2f", $1}'; }
row() { echo "| $1 | $(get "$2" 2) | $(get "$2" 3) – $(get "$2" 4) | $3 |"; }
cpu_model=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo 2>/dev/null | head -n1)
echo
echo "Machine: $(nproc) CPUs (${cpu_model:-unknown}), $(uname -sr); ruff $("$ruff" --version | cut -d' ' -f2); patchgen $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" diff --quiet 2>/dev/null || echo '+changes')"
echo "Tree: $tree ($configs1 configs; ${scale}x tree: $configs10 configs; copies in $(df --output=fstype "$work" 2>/dev/null | tail -n1)). Load average before/after: $load_before / $load_after$([ "$priority" = 1 ] && echo '; run at autogroup nice -20')."
echo "Command: scripts/bench.sh $tree --runs $runs --scale $scale$([ "$priority" = 1 ] && echo ' --priority')$([ "$warm_each" = 1 ] && echo ' --warm-each')"
echo
echo "| measure | median ms | min – max ms | note |"
echo "|---|---:|---:|---|"
row "T_check (\`patchgen --check --no-cache\`)" T_check "batched ruff (default)"
row "T_check, per-file ruff" T_check_pf "\`PATCHGEN_RUFF_MODE=per-file\`"
row "T_gen (evaluate + generate, no ruff)" T_gen "target ≤ 50 ms"
row "T_ruff on the raw generated texts" T_ruff_raw "what --check has to run"
row "T_ruff on the checked-in files" T_ruff_checked "already normalised: nothing to fix"
row "T_check, ${scale}x configs" T_check_x ""
row "T_check, ${scale}x, per-file ruff" T_check_pf_x ""
row "T_gen, ${scale}x configs" T_gen_x ""
row "T_ruff raw, ${scale}x configs" T_ruff_raw_x ""
row "T_cold_cache (\`--check\`, cache removed first)" T_cold_cache "paired ratio to T_check: $(paired T_cold_cache T_check) (target ≤ 1.05)"
row "T_warm (\`--check\`, nothing changed)" T_warm "target ≤ 30 ms"
row "T_one_cold (\`--check --no-cache $one_mod\`)" T_one_cold ""
row "T_warm_one (one config edited)" T_warm_one "target ≤ T_one_cold + 30 = $(awk -v a="$(get T_one_cold 2)" 'BEGIN {printf "%.0f", a + 30}') ms"
row "T_warm, ${scale}x configs" T_warm_x "target ≤ 60 ms"
row "T_lint (\`patchgen lint\`, default rules)" T_lint "target ≤ 150 ms; no ruff"
row "T_lint, ${scale}x configs" T_lint_x ""
if [ ${#rss[@]} -gt 0 ]; then
    rss_med=$(printf '%s\n' "${rss[@]}" | median)
    cpu_med=$(printf '%s\n' "${cpu[@]}" | median)
    echo "| peak RSS of \`patchgen --check\` | $(awk -v k="$rss_med" 'BEGIN {printf "%.1f MB", k / 1024}') | | target ≤ 200 MB |"
    echo "| CPU time (user+sys) of \`patchgen --check\` | $cpu_med | | incl. ruff |"
fi
echo
# Issue 23: every figure against its goal and against its floor measured
# in the same rounds (the ratio is the median of the per-round ratios).
goal_row() {  # goal_row LABEL MEASURE GOAL_TEXT GOAL_MS_OR_RATIO KIND FLOOR_MEASURE
    local med floor_med r met
    med=$(get "$2" 2); floor_med=$(get "$6" 2); r=$(paired "$2" "$6")
    if [ "$5" = ratio ]; then met=$(awk -v r="$r" -v g="$4" 'BEGIN {print (r <= g) ? "yes" : "no"}')
    else met=$(awk -v m="$med" -v g="$4" 'BEGIN {print (m <= g) ? "yes" : "no"}'); fi
    echo "| $1 | $med | $3 | \`$6\` $floor_med | $r | $met |"
}
echo "| figure | median ms | goal | floor (median ms) | ratio to floor | goal met |"
echo "|---|---:|---|---|---:|---|"
goal_row "cold \`--check --no-cache\`" T_check "≤ 1.10 × T_ruff_raw" 1.10 ratio T_ruff_raw
goal_row "warm \`--check\`" T_warm "≤ 15 ms" 15 ms T_noop
goal_row "warm \`--check\`, ${scale}x configs" T_warm_x "≤ 60 ms" 60 ms T_noop
goal_row "one config edited" T_warm_one "≤ 80 ms" 80 ms T_one_cold
goal_row "\`lint\`, cold" T_lint "≤ 60 ms" 60 ms T_gen
goal_row "\`lint\`, warm" T_lint_warm "≤ 15 ms" 15 ms T_noop
goal_row "\`new $new_model\`" T_new "≤ 150 ms" 150 ms T_one_cold
goal_row "\`bump\` ${BUMP_FROM:-5.9.0} → ${BUMP_TO:-5.16.1}, before regeneration" T_bump "< 5000 ms" 5000 ms T_noop
echo
echo "Ratios (medians): T_check / T_ruff(raw) = $(ratio "$(get T_check 2)" "$(get T_ruff_raw 2)"), paired by round $(paired T_check T_ruff_raw) (target ≤ 1.3; docs/performance.md on why the raw texts);" \
    "T_check / T_ruff(checked-in) = $(ratio "$(get T_check 2)" "$(get T_ruff_checked 2)");" \
    "per-file / batched = $(ratio "$(get T_check_pf 2)" "$(get T_check 2)");" \
    "${scale}x / 1x T_check = $(ratio "$(get T_check_x 2)" "$(get T_check 2)") (target ≤ $scale)."

#!/usr/bin/env bash
# No stale table: reruns every example's quick preset and compares what it prints, digit for digit,
# with the committed expected output (examples/<name>/testdata/quick.golden), and the quick tables of
# the examples' RESULTS.md with the tables rendered from those outputs.
#
#   bash scripts/golden.sh                     # check every example (CI); exit 1 on any difference
#   bash scripts/golden.sh synthetic fewshot   # only these
#   bash scripts/golden.sh -update             # rerun and rewrite the golden files and the RESULTS.md quick tables
#
# When a change moves the numbers (a new summation order, a fixed bug), run the update mode and commit
# the golden files and RESULTS.md with the change, after rerunning the full-scale tables the quick
# ones stand for.
#
# Each preset runs in a fresh temporary folder: its results/ and, for fewshot, a fresh feature cache
# (-cache), so no earlier run's state enters the numbers. fewshot reads the Quick, Draw! drawings
# (scripts/fetch-quickdraw.sh); without them it is skipped with a message (CI fetches them first).
# Lines that carry timings (progress, "trained in 7 s", estimates) are dropped before comparing;
# everything else printed on stdout is compared. The presets run with GOMAXPROCS=1, two at a time.
# The numbers depend on the floating-point summation order of the kernels this CPU selects
# (ops' AVX2/FMA and AVX-512 paths): the golden files name the CPU flags they were recorded with,
# and a failure prints this machine's.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

update=0
names=()
for a in "$@"; do
  case $a in
  -update) update=1 ;;
  synthetic | quadrant | theorem2 | fewshot | regression) names+=("$a") ;;
  *) echo "golden.sh: unknown argument $a (want -update, synthetic, quadrant, theorem2, fewshot or regression)" >&2; exit 2 ;;
  esac
done
[ ${#names[@]} -gt 0 ] || names=(synthetic quadrant theorem2 fewshot regression)

# The quick preset of each example: its flags, and the result files (under its folder's results/)
# whose contents are part of the golden output.
declare -A flags=(
  [synthetic]="-sweep all -quick"
  [quadrant]="-quick"
  [theorem2]="-quick"
  [fewshot]="-quick"
  [regression]="-quick"
)
# stderr lines (a grep -E pattern) that are part of the golden output: numbers the RESULTS tables
# quote that the example prints only with its progress.
declare -A errlines=(
  [fewshot]='^cnn: epoch [0-9]+/[0-9]+: '
)
declare -A files=(
  [synthetic]="results/synthetic-quick/fig2.csv results/synthetic-quick/fig3.csv results/synthetic-quick/fig4.csv"
)

cpuflags() {
  local f=""
  for x in avx2 fma avx512f; do grep -qw $x /proc/cpuinfo 2>/dev/null && f="$f $x"; done
  echo "${f# }"
}

# filter drops the parts of an example's stdout that carry timings.
filter() {
  sed -E \
    -e '/^estimated time: /d' \
    -e '/^fig[0-9]: [0-9]+\/[0-9]+ runs -> /d' \
    -e 's/  \([0-9.hmsµ]+; sweep [0-9]+\/[0-9]+, elapsed [^)]*\)$//' \
    -e 's/, trained in [0-9.]+ ?[a-zµ]*s$//' \
    -e 's/^(wrote .*) in [0-9.]+ s$/\1/' \
    -e '/^ *\([a-z]+ done in [0-9.]+ s\)$/d' \
    -e 's/^done in [0-9.]+ s; /done; /' \
    -e 's#^((cnn|pca) features )\(([^)]*/)?(((cnn|pca)-[0-9a-f]+))\)#\1(\4)#'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== golden: building the examples"
for n in "${names[@]}"; do
  go build -o "$tmp/bin/$n" "./examples/$n" || exit 1
done

quickdraw="${GDATTN_QUICKDRAW:-${GDATTN_CACHE:-$HOME/.cache/gdattn}/quickdraw}"

# run produces $tmp/<name>.out: the filtered stdout and the result files.
run() {
  local n=$1 dir="$tmp/run-$n"
  mkdir -p "$dir"
  local extra=()
  if [ "$n" = fewshot ]; then
    extra=(-cache "$dir/feature-cache" -quickdraw "$quickdraw")
  fi
  local start=$SECONDS
  # shellcheck disable=SC2086
  if ! (cd "$dir" && GOMAXPROCS=1 "$tmp/bin/$n" ${flags[$n]} "${extra[@]}" > stdout.txt 2> stderr.txt); then
    echo "golden: $n ${flags[$n]} failed:" >&2; tail -20 "$dir/stderr.txt" >&2
    return 1
  fi
  {
    echo "# examples/$n ${flags[$n]}: stdout without timings, then its result files (scripts/golden.sh)"
    echo "# recorded on a CPU with: $(cpuflags)"
    if [ -n "${errlines[$n]:-}" ]; then
      grep -E "${errlines[$n]}" "$dir/stderr.txt"
    fi
    filter < "$dir/stdout.txt"
    for f in ${files[$n]:-}; do
      echo "== $f"
      cat "$dir/$f"
    done
  } > "$tmp/$n.out"
  echo "== golden: $n done in $((SECONDS - start)) s"
}

runnable=()
for n in "${names[@]}"; do
  if [ "$n" = fewshot ] && [ ! -d "$quickdraw" ]; then
    echo "== golden: skipping fewshot: no Quick, Draw! drawings in $quickdraw (bash scripts/fetch-quickdraw.sh)"
    continue
  fi
  runnable+=("$n")
done

# two at a time (CI has 2 cores); each run is single-threaded and deterministic.
pids=()
status=0
for n in "${runnable[@]}"; do
  run "$n" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
[ $status = 0 ] || { echo "golden: a quick preset failed" >&2; exit 1; }

# The RESULTS.md quick tables: the lines between "<!-- golden:NAME:TABLE -->" and
# "<!-- golden:end -->" (the whole table, header included: a comment inside a markdown table
# would end it) are rendered from the golden output by render NAME TABLE.
render() {
  local n=$1 table=$2 src=$3
  case "$n:$table" in
  synthetic:fig2 | synthetic:fig4)
    # | L | one cell per series, in the CSV's order: top-1 mean ± std / NLL mean ± std |
    if [ "$table" = fig2 ]; then
      echo "| L | RBF: GD (one step) | RBF: Trained TF (1 layer) | softmax: GD (one step) | softmax: Trained TF (1 layer) |"
      echo "| --- | --- | --- | --- | --- |"
    else
      echo "| L | GD (2 blocks) | Trained TF (2 layers, cross-attn) |"
      echo "| --- | --- | --- |"
    fi
    awk -v sec="== results/synthetic-quick/$table.csv" '
      $0 == sec { on = 1; next }
      /^== / { on = 0 }
      on && !/^panel,/ {
        n = split($0, f, ",")
        x = f[n-6]; key = x
        cell = sprintf("%.3f ± %.3f / %.3f ± %.3f", f[n-4], f[n-3], f[n-2], f[n-1])
        if (!(x in row)) { xs[++nx] = x; row[x] = "" }
        row[x] = row[x] " | " cell
      }
      END { for (i = 1; i <= nx; i++) print "| " xs[i] row[xs[i]] " |" }' "$src"
    ;;
  synthetic:fig3)
    # | epoch | K=1 ... K=6: top-1 mean / NLL mean |, at epochs 1, 5, 10 and 20
    echo "| epoch | K=1 | K=2 | K=3 | K=4 | K=5 | K=6 |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    awk '
      $0 == "== results/synthetic-quick/fig3.csv" { on = 1; next }
      /^== / { on = 0 }
      on && !/^panel,/ {
        n = split($0, f, ",")
        x = f[n-6]
        if (x != 1 && x != 5 && x != 10 && x != 20) next
        if (!(x in row)) { xs[++nx] = x; row[x] = "" }
        row[x] = row[x] sprintf(" | %.3f / %.3f", f[n-4], f[n-2])
      }
      END { for (i = 1; i <= nx; i++) print "| " xs[i] row[xs[i]] " |" }' "$src"
    ;;
  fewshot:quick)
    # | features | lp | gd1 | gd2 | tf |: top-1 mean ± std of each model, from the
    # "<cnn|pca> features (...)" sections' "  <model> top-1 m ± s" lines; the CNN's validation
    # top-1 from its last "cnn: epoch" line
    echo "| features | linear probing | GD, 1 block | GD, 2 blocks | Trained TF |"
    echo "| --- | --- | --- | --- | --- |"
    awk '
      /^cnn: epoch / { for (i = 1; i < NF; i++) if ($i == "top-1") val = $(i+1) }
      /^(cnn|pca) features / { feat = $1; if (!(feat in row)) { fs[++nf] = feat; row[feat] = "" }; next }
      feat != "" && $1 ~ /^(lp|gd1|gd2|tf)$/ && $2 == "top-1" { row[feat] = row[feat] sprintf(" | %s ± %s", $3, $5) }
      END {
        for (i = 1; i <= nf; i++) {
          label = fs[i] == "cnn" ? sprintf("CNN (val top-1 %.3f)", val) : "pixels (PCA)"
          print "| " label row[fs[i]] " |"
        }
      }' "$src"
    ;;
  *) echo "golden.sh: no renderer for $n:$table" >&2; return 1 ;;
  esac
}

# tables lists the RESULTS.md quick tables of an example ("" if none).
tables() {
  case $1 in
  synthetic) echo "fig2 fig3 fig4" ;;
  fewshot) echo "quick" ;;
  *) echo "" ;;
  esac
}

# splice replaces (update) or compares (check) the marked block of table in RESULTS.md.
splice() {
  local n=$1 table=$2 src=$3 md="examples/$1/RESULTS.md"
  local begin="<!-- golden:$n:$table -->" end="<!-- golden:end -->"
  if ! grep -qF "$begin" "$md"; then
    echo "golden: $md has no $begin block" >&2; return 1
  fi
  render "$n" "$table" "$src" > "$tmp/$n-$table.rows" || return 1
  awk -v begin="$begin" -v end="$end" -v rows="$tmp/$n-$table.rows" '
    $0 == begin { print; while ((getline l < rows) > 0) print l; skip = 1; next }
    skip && $0 == end { skip = 0 }
    !skip { print }' "$md" > "$tmp/$n-RESULTS.md"
  if [ $update = 1 ]; then
    cp "$tmp/$n-RESULTS.md" "$md"
  elif ! diff -u "$md" "$tmp/$n-RESULTS.md" > "$tmp/$n-$table.diff"; then
    echo "golden: $md's quick table $table does not match the golden output (- committed, + rendered):" >&2
    cat "$tmp/$n-$table.diff" >&2
    return 1
  fi
}

for n in "${runnable[@]}"; do
  golden="examples/$n/testdata/quick.golden"
  if [ $update = 1 ]; then
    mkdir -p "examples/$n/testdata"
    cp "$tmp/$n.out" "$golden"
    echo "== golden: wrote $golden"
  elif [ ! -f "$golden" ]; then
    echo "golden: $golden is missing (bash scripts/golden.sh -update $n)" >&2; status=1; continue
  elif [ "$(sed -n 's/^# recorded on a CPU with: //p' "$golden")" != "$(cpuflags)" ]; then
    # Another CPU selects other kernels (the portable GEMM without AVX2/FMA, say), whose summation
    # order may move the last digits: say so loudly instead of failing on a difference that is not
    # a stale table.
    echo "== golden: NOT CHECKED $n: $golden was recorded on a CPU with [$(sed -n 's/^# recorded on a CPU with: //p' "$golden")], this one has [$(cpuflags)]"
    continue
  elif ! diff -u <(grep -v '^# ' "$golden") <(grep -v '^# ' "$tmp/$n.out") > "$tmp/$n.diff"; then
    echo "golden: examples/$n ${flags[$n]} prints other numbers than $golden (- golden, + now):" >&2
    cat "$tmp/$n.diff" >&2
    echo "golden: golden recorded on: $(grep '^# recorded on' "$golden"); this CPU: $(cpuflags)" >&2
    echo "golden: if the change is intended, run bash scripts/golden.sh -update $n and commit the golden file and RESULTS.md" >&2
    status=1
    continue
  fi
  for t in $(tables "$n"); do
    splice "$n" "$t" "$golden" || status=1
  done
done
[ $status = 0 ] && echo "== golden: ${runnable[*]}: every quick preset reprints its golden output and tables"
exit $status

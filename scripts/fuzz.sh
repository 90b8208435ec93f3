#!/usr/bin/env bash
# Fuzz every Go fuzz target of the repository for a bounded time each.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 10)
#
# Targets are found by grep: every `func FuzzX(f *testing.F)` in a *_test.go
# file of the repository (tracked, or untracked and not ignored), so new
# targets need no edit here. Each runs alone:
#
#   go test -run '^$' -fuzz '^FuzzX$' -fuzztime Ns ./pkg
#
# and the script prints its execution total. A finding (a crash, a failed
# property, a hang) fails the script once every target has run; Go writes the
# failing input to pkg/testdata/fuzz/FuzzX/, where plain `go test` replays it:
# fix the defect and commit that file with the fix.
#
# Environment: FUZZ_MINIMIZE (default 2s) bounds the minimisation of each new
# input, which would otherwise take up to a minute of the budget;
# FUZZ_PARALLEL (default: all CPUs) sets the number of fuzzing workers.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-10}"
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: SECONDS_PER_TARGET must be a positive integer, got '$secs'" >&2
  exit 2
fi
minimize="${FUZZ_MINIMIZE:-2s}"
parallel=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
  parallel=(-parallel "$FUZZ_PARALLEL")
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files=$(git ls-files --cached --others --exclude-standard -- '*_test.go')
else
  files=$(find . -name '*_test.go' -not -path '*/testdata/*' | sed 's|^\./||')
fi

# "pkg FuzzX" lines, sorted for a stable order.
targets=$(for f in $files; do
  [ -f "$f" ] || continue
  case "$f" in */testdata/*) continue ;; esac
  sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\([A-Za-z_][A-Za-z0-9_]* \*testing\.F\).*/\1/p' "$f" |
    while read -r name; do echo "./$(dirname "$f") $name"; done
done | sort -u)

if [ -z "$targets" ]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 1
fi

n=$(echo "$targets" | wc -l)
echo "== fuzz: $n targets, ${secs}s each"
failed=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while read -r pkg name; do
  start=$(date +%s)
  if go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -fuzzminimizetime "$minimize" "${parallel[@]}" "$pkg" >"$log" 2>&1; then
    status=ok
  elif grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"; then
    # Go's fuzzing engine reports its own -fuzztime deadline as a failure when the time runs out
    # while a worker is inside a slow input (FuzzReadCheckpoint writes and syncs a checkpoint per
    # input: on a loaded disk a few take a second); no input failed and none was written.
    status=ok
  else
    status=FAIL
    failed+=("$pkg $name")
  fi
  # The last progress line holds the totals: "fuzz: elapsed: 10s, execs: 12345 (1234/sec),
  # new interesting: 3 (total: 20)" (its rate is that of the last interval only: dropped).
  totals=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -n 1 |
    sed -E 's/^fuzz: elapsed: ([^,]*), execs: ([0-9]+) \([0-9]+\/sec\), new interesting: ([0-9]+) \(total: ([0-9]+)\).*/\2 execs in \1, \3 new inputs (corpus \4)/' || true)
  printf '%-4s %-12s %-24s %s [%ss]\n' "$status" "$pkg" "$name" "${totals:-no executions reported}" "$(($(date +%s) - start))"
  if [ "$status" = FAIL ]; then
    sed 's/^/     | /' "$log" | tail -n 40
  fi
done <<<"$targets"

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} of $n targets found a failure:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  echo "the failing inputs are under <pkg>/testdata/fuzz/<target>/; 'go test <pkg>' replays them" >&2
  exit 1
fi
echo "fuzz.sh: all $n targets ran ${secs}s without a finding"

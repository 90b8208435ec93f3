#!/usr/bin/env bash
# Reruns every gdattn-vs-PyTorch table of docs/performance.md and bench/results against the PyTorch peer,
# which must run on an optimised BLAS (bench/peer refuses one below 50 GFLOP/s):
#
#   apt-get install -y python3-torch python3-numpy libopenblas0-pthread   # once
#   bash bench/peer-tables.sh                      # every table, into bench/results
#   bash bench/peer-tables.sh synthetic sweep      # only these sections
#   OUT=/tmp/peer bash bench/peer-tables.sh        # somewhere else
#
# Sections (each one bench/peer run, one file; "-2threads" files run two threads per side,
# read their wall-time columns; the one-thread files, their CPU-time columns):
#   synthetic          peer.md                   the four synthetic workloads, N = 10, all three PyTorch impls, float64 check
#   sweep              peer-sweepN.md            GD 1 block and TF 1 layer at N = 50, 125, 250 (idiomatic and fast PyTorch)
#   language           peer-language.md          language `small` preset: GD, GD + FF, GPT
#   paper              peer-language-paper.md    language `paper` preset (PAPER_REPS repetitions, idiomatic and fast)
#   float64            peer-float64.md           the synthetic workloads in float64
#   infer              peer-infer.md             the synthetic workloads, forward only
#   synthetic-2threads peer-2threads.md          as synthetic, two threads each side
#   sweep-2threads     peer-sweepN-2threads.md
#   language-2threads  peer-language-2threads.md
#   paper-2threads     peer-language-paper-2threads.md
#
# The peer binary is built once, from the checked-out tree, with go build (so every table's header
# names the commit it measured, "(modified)" when the tree had uncommitted changes), before any
# section runs; each file records the date, CPU, load, the peer's BLAS library and sgemm rate.
# On a shared machine run it niced (nice -n 10 bash bench/peer-tables.sh) and read the CPU-time
# ratios: other jobs' load lengthens wall times, hardly CPU times. REPS (default 3) sets -reps;
# PAPER_REPS (default 1: a `paper` step takes seconds per side) sets it for paper and paper-2threads.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results}
reps=${REPS:-3}
paper_reps=${PAPER_REPS:-1}
mkdir -p "$out"
bin=$(mktemp -d)/peer
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -buildvcs=auto -o "$bin" ./bench/peer || exit 1
branch=$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit (modified)"

all="synthetic sweep language float64 infer synthetic-2threads sweep-2threads language-2threads paper paper-2threads"
sections=${*:-$all}
syn=synthetic/gd-1,synthetic/gd-2,synthetic/tf-1,synthetic/tf-2
lang=language/gd-small,language/gdff-small,language/gpt-small
paper=language/gd-paper,language/gdff-paper,language/gpt-paper
status=0

run() { # file, then bench/peer's flags
  local file=$1; shift
  echo "== $(date -u '+%F %T UTC') $file: peer $*"
  local tmp="$out/.$file.tmp"
  if "$bin" -peer bench/peer/peer.py "$@" -out "$tmp"; then
    { echo "<!-- bench/peer-tables.sh on branch $branch, commit $commit; the date, CPU, load and the peer's BLAS are in the header below. -->"
      cat "$tmp"; } > "$out/$file"
    rm -f "$tmp"
  else
    echo "== $file failed" >&2; rm -f "$tmp"; status=1
  fi
}

for s in $sections; do
  case $s in
  synthetic) run peer.md -reps "$reps" -workloads $syn ;;
  sweep) run peer-sweepN.md -reps "$reps" -workloads synthetic/gd-1,synthetic/tf-1 -N 50,125,250 -impl idiomatic,fast -min-steps 3 -min-time 1s ;;
  language) run peer-language.md -reps "$reps" -workloads $lang -min-steps 5 -min-time 1s ;;
  paper) run peer-language-paper.md -lm-paper -reps "$paper_reps" -workloads $paper -nocheck -impl idiomatic,fast -warmup 1 -min-steps 1 -min-time 0s ;;
  float64) run peer-float64.md -reps "$reps" -workloads $syn -dtype float64 -nocheck ;;
  infer) run peer-infer.md -reps "$reps" -workloads $syn -mode infer -nocheck ;;
  synthetic-2threads) run peer-2threads.md -reps "$reps" -threads 2 -workloads $syn -nocheck ;;
  sweep-2threads) run peer-sweepN-2threads.md -reps "$reps" -threads 2 -workloads synthetic/gd-1,synthetic/tf-1 -N 50,125,250 -impl idiomatic,fast -nocheck -min-steps 3 -min-time 1s ;;
  language-2threads) run peer-language-2threads.md -reps "$reps" -threads 2 -workloads $lang -nocheck -min-steps 5 -min-time 1s ;;
  paper-2threads) run peer-language-paper-2threads.md -lm-paper -reps "$paper_reps" -threads 2 -workloads $paper -nocheck -impl idiomatic,fast -warmup 1 -min-steps 1 -min-time 0s ;;
  *) echo "peer-tables.sh: unknown section $s (want: $all)" >&2; exit 2 ;;
  esac
done
echo "== done $(date -u '+%F %T UTC'): $out"
exit $status

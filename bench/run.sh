#!/usr/bin/env bash
# Re-runs every gdattn performance measurement; tables and plots go to
# bench/out/ (ignored by git), the plots also to bench/figures/ unless -quick.
#
#   bash bench/run.sh          # everything, the language `paper` preset included (about 1 h, quiet machine)
#   bash bench/run.sh -quick   # a few minutes: few iterations, quick scaling, 3 peer repetitions, no `paper`
#
# Needs Debian's python3-torch on an optimised BLAS for the peer comparison (apt-get install -y
# python3-torch python3-numpy libopenblas0-pthread; bench/peer refuses a reference-BLAS peer); without
# it that step fails and the others still run. bench/peer-tables.sh reruns every published peer table. Every table records `uptime`:
# on a loaded machine only the ratios of one interleaved run and the CPU-time columns mean much.
set -uo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
quick=0
[ "${1:-}" = "-quick" ] && quick=1
benchtime=1s reps=5 scal=""
if [ $quick = 1 ]; then benchtime=3x reps=3 scal=-quick; fi
status=0

# GOMAXPROCS is set in the environment, not with go test -cpu: a benchmark whose first
# iteration outlasts -benchtime keeps that iteration's result, which ran before -cpu
# took effect (with whatever GOMAXPROCS the previous benchmark left).
echo "== go test -bench, GOMAXPROCS=1"
{ echo "# $(date -u '+%F %T UTC'); $(uptime)"; GOMAXPROCS=1 go test ./bench -run '^$' -bench . -benchmem -benchtime $benchtime -timeout 3h; } \
  | tee "$out/gotest.txt" || status=1
go run ./bench/benchtab < "$out/gotest.txt" > "$out/benchmarks.md" || status=1

if [ $quick = 0 ]; then
  echo "== go test -bench, language paper preset, GOMAXPROCS=1 and 2"
  for p in 1 2; do
    echo "# $(date -u '+%F %T UTC'); $(uptime)"
    GOMAXPROCS=$p go test ./bench -run '^$' -bench 'LM.*/preset=paper' -bench_paper -benchmem -timeout 3h
  done | tee "$out/gotest-paper.txt" || status=1
  go run ./bench/benchtab < "$out/gotest-paper.txt" > "$out/benchmarks-paper.md" || status=1
fi

echo "== gdattn vs PyTorch"
go run ./bench/peer -reps $reps -out "$out/peer.md" || status=1
if [ $quick = 0 ]; then
  go run ./bench/peer -reps $reps -threads 2 -nocheck -out "$out/peer-2threads.md" || status=1
  go run ./bench/peer -reps $reps -dtype float64 -nocheck -out "$out/peer-float64.md" || status=1
  go run ./bench/peer -reps $reps -mode infer -nocheck -out "$out/peer-infer.md" || status=1
  tasks=quadrant/gd-1,quadrant/tf-1,fewshot/gd-1,fewshot/tf-1
  go run ./bench/peer -reps 3 -workloads $tasks -check-workloads $tasks -out "$out/peer-tasks.md" || status=1
fi

echo "== scaling in N and C"
go run ./bench/scaling $scal -out "$out" || status=1
if [ $quick = 0 ]; then
  mkdir -p bench/figures && cp "$out"/scaling-N.png "$out"/scaling-C.png bench/figures/ || status=1
fi
echo "== done: $out ($(uptime))"
exit $status

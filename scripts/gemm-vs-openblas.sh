#!/usr/bin/env bash
# Compare package gemm with OpenBLAS on the products of bench/results/gemm.md:
# square 512³ and 1024³ and the paper preset's tied output layer (logits, dh,
# dW), float32 and float64, alternating the two REPS times per product.
#
#   scripts/gemm-vs-openblas.sh [REPS] [THREADS]     (defaults 3 and 1)
#
# Needs gcc and OpenBLAS's shared library (Debian: apt-get install
# libopenblas0-pthread). One thread: GOMAXPROCS=1 and
# OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1; both sides are timed in process CPU
# time (GFLOP/cpu-s, robust to other jobs on a shared machine) and wall time.
# Prints one line per product and dtype with the median of each and
# gemm / OpenBLAS. With THREADS above 1 it also times gemm on one thread,
# interleaved, and prints gemm's wall-time speedup over it.
set -euo pipefail
reps=${1:-3}
threads=${2:-1}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib=""
for l in /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0 /usr/lib/x86_64-linux-gnu/libopenblas.so.0 /usr/lib/libopenblas.so.0; do
  if [ -e "$l" ]; then lib=$l; break; fi
done
if [ -z "$lib" ]; then
  echo "gemm-vs-openblas.sh: no libopenblas.so.0 found (apt-get install libopenblas0-pthread)" >&2
  exit 1
fi
gcc -O2 -o "$tmp/openblas" scripts/gemm-openblas.c "$lib"
go test -c -o "$tmp/gemm.test" ./gemm
export GOMAXPROCS=$threads OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
printf '%-14s %-8s %14s %14s %8s %12s %12s' product dtype "gemm cpu" "OpenBLAS cpu" ratio "gemm wall" "OpenBLAS wall"
[ "$threads" = 1 ] && echo || printf ' %12s %8s\n' "gemm wall 1T" speedup
while read -r name tA tB m n k n1; do
  for dt in float32 float64; do
    : >"$tmp/g.cpu"; : >"$tmp/g.wall"; : >"$tmp/o.cpu"; : >"$tmp/o.wall"; : >"$tmp/g1.wall"
    for ((r = 0; r < reps; r++)); do
      out=$("$tmp/gemm.test" -test.run '^$' -test.bench "^BenchmarkGemm/$name/$dt\$" -test.benchtime "${n1}x")
      echo "$out" | awk '/GFLOP\/cpu-s/ {for (i=1;i<=NF;i++) if ($(i+1)=="GFLOP/cpu-s") print $i}' >>"$tmp/g.cpu"
      echo "$out" | awk '/GFLOP\/s/ {for (i=1;i<=NF;i++) if ($(i+1)=="GFLOP/s") print $i}' >>"$tmp/g.wall"
      read -r oc ow < <("$tmp/openblas" "$tA" "$tB" "$m" "$n" "$k" "$n1" "$dt")
      echo "$oc" >>"$tmp/o.cpu"; echo "$ow" >>"$tmp/o.wall"
      if [ "$threads" != 1 ]; then
        GOMAXPROCS=1 "$tmp/gemm.test" -test.run '^$' -test.bench "^BenchmarkGemm/$name/$dt\$" -test.benchtime "${n1}x" |
          awk '/GFLOP\/s/ {for (i=1;i<=NF;i++) if ($(i+1)=="GFLOP/s") print $i}' >>"$tmp/g1.wall"
      fi
    done
    gc=$(median <"$tmp/g.cpu"); oc=$(median <"$tmp/o.cpu")
    gw=$(median <"$tmp/g.wall"); ow=$(median <"$tmp/o.wall")
    printf '%-14s %-8s %14s %14s %8s %12s %12s' "$name" "$dt" "$gc" "$oc" "$(awk -v a="$gc" -v b="$oc" 'BEGIN {printf "%.0f%%", 100*a/b}')" "$gw" "$ow"
    if [ "$threads" = 1 ]; then
      echo
    else
      g1=$(median <"$tmp/g1.wall")
      printf ' %12s %8s\n' "$g1" "$(awk -v a="$gw" -v b="$g1" 'BEGIN {printf "%.2fx", a/b}')"
    fi
  done
done <<'SHAPES'
square512 0 0 512 512 512 20
square1024 0 0 1024 1024 1024 5
logits-paper 0 1 1024 50258 512 1
dh-paper 0 0 1024 512 50258 1
dW-paper 1 0 50258 512 1024 1
SHAPES

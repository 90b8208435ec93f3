#!/usr/bin/env bash
# fake-cuda.sh: build graph/cuda's fake CUDA driver (testdata/fakecuda.c: a CPU stand-in
# for libcuda.so.1 and cuBLAS that runs the kernels compiled as C, the same library
# TestGPUBackendOnFakeDriver builds) into DIR as libcuda.so.1 and libcublas.so.13, so that
# -tags gdcuda binaries built for a GPU run end to end without one:
#
#   scripts/fake-cuda.sh DIR
#   LD_LIBRARY_PATH=DIR GDATTN_CUBLAS=DIR/libcublas.so.13 ./cuda.test ...
#
# scripts/gpu-rehearse.sh uses it to rehearse scripts/gpu-device.sh. Needs gcc.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:?usage: scripts/fake-cuda.sh DIR}
mkdir -p "$DIR"
src=graph/cuda
# The fake looks kernels up by name in a table whose order is the dispatch order of
# emu_kernels.c (case i: calls kernel i of the generated kernel table).
{
  echo "const char *fake_kernel_names[] = {"
  # Each case's call names the kernel and reads its parameters as a[0], a[1], ...: the
  # parameter counts (fake_kernel_nparams) are what a graph capture copies.
  awk 'BEGIN { n = 0 } /^    case [0-9]+:$/ { getline; np[n] = gsub(/a\[[0-9]+\]/, "&"); sub(/^ +/, ""); sub(/\(.*/, "");
                           printf "\t\"%s\",\n", $0; n++ }
       END { print "};"; printf "const int fake_kernel_count = %d;\nconst int fake_kernel_nparams[] = {", n;
             for (i = 0; i < n; i++) printf "%d,", np[i]; print "};" }' "$src/emu_kernels.c"
} > "$DIR/names.c"
${CC:-gcc} -shared -fPIC -O2 -std=gnu11 -I"$src" -pthread -o "$DIR/libcuda.so.1" \
  "$src/testdata/fakecuda.c" "$src/emu_kernels.c" "$DIR/names.c" -lm
ln -f "$DIR/libcuda.so.1" "$DIR/libcublas.so.13"
echo "fake-cuda: built $DIR/libcuda.so.1 and $DIR/libcublas.so.13 ($(grep -c '^	"' "$DIR/names.c") kernels)"

#!/usr/bin/env bash
# gpu-rehearse.sh: rehearse scripts/gpu-device.sh end to end on a machine without a GPU, so
# that a GPU session's device minutes go to measuring, not debugging:
#
#   scripts/gpu-rehearse.sh fake       the real -tags gdcuda bundle (scripts/gpu-bundle.sh)
#                                      against graph/cuda's fake CUDA driver and cuBLAS
#                                      (scripts/fake-cuda.sh): the GPU backend's own code runs
#   scripts/gpu-rehearse.sh emulator   a -tags cudaemu bundle on graph/cuda's CPU emulator
#
# Then it writes the report (go run ./bench/gpu report) and checks that every stage left its
# files. Environment: OUT (default: a new temporary directory), and anything
# gpu-device.sh reads (TOTAL, STAGES, PYTHON, TORCH_DEVICE, TIME_WORKLOADS,
# COMPILE_WORKLOADS, LIMIT_<STAGE>, CURVE_BUDGET, ...). The machine's python3 may lack PyTorch or CUDA: the peer stage then
# reports that in one line and the run goes on. Needs Go, gcc, xz. Takes about TOTAL (470 s)
# plus the bundle build; the kernels run serially on the CPU, so the larger workloads are cut
# by their stage's time limit, which is part of what is rehearsed.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-fake}
work=$(mktemp -d "${TMPDIR:-/tmp}/gdattn-rehearse.XXXXXX")
export OUT=${OUT:-$work/out}
case "$mode" in
fake)
  bash scripts/gpu-bundle.sh "$work/bundle"
  bash scripts/fake-cuda.sh "$work/fake"
  export LD_LIBRARY_PATH="$work/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GDATTN_CUBLAS="$work/fake/libcublas.so.13"
  export DEVICE=cuda
  ;;
emulator)
  BUNDLE_TAGS=cudaemu bash scripts/gpu-bundle.sh "$work/bundle"
  export DEVICE=emulator
  ;;
*)
  echo "usage: scripts/gpu-rehearse.sh fake|emulator" >&2
  exit 2
  ;;
esac
export BUNDLE="$work/bundle/gpu-bundle.tar.xz" GPU_COMMAND="scripts/gpu-rehearse.sh $mode (a rehearsal: no GPU)"
echo "gpu-rehearse: OUT=$OUT"
/usr/bin/time -f 'gpu-rehearse: gpu-device.sh took %e s wall, %U s user, %S s system' bash scripts/gpu-device.sh
# gpu-device.sh packs its results (the device tool returns only a few files); unpack them
# beside device.log and stages.tsv, as after a real call.
missing=0
if [ -s "$OUT/gpu-run.tar.gz" ]; then
  tar -xzf "$OUT/gpu-run.tar.gz" -C "$OUT"
else
  echo "gpu-rehearse: gpu-device.sh left no $OUT/gpu-run.tar.gz" >&2
  missing=1
fi
go run ./bench/gpu report -in "$OUT" -out "$OUT/gpu.md"
declare -A files=([info]="info.txt" [tests]="tests.log" [exact]="exact.jsonl" [parity]="parity.jsonl"
  [time]="time-gdattn.jsonl" [peer]="time-torch.jsonl" [curve]="curve-device.jsonl curve-cpu.jsonl"
  [profile]="profile.jsonl")
for st in ${STAGES:-info tests exact parity time peer time time profile}; do
  for f in stages.tsv device.log ${files[$st]:-}; do
    if [ ! -s "$OUT/$f" ]; then
      echo "gpu-rehearse: stage $st left no $OUT/$f (or an empty one)" >&2
      missing=1
    fi
  done
done
cat "$OUT/stages.tsv"
echo "gpu-rehearse: report in $OUT/gpu.md"
rm -rf "$work/bundle" "$work/fake"
exit $missing

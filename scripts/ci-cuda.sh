#!/usr/bin/env bash
# ci-cuda.sh: the CI checks of the GPU device layer (package graph/cuda) on a machine
# without a GPU. Needs the Go toolchain and a C compiler (gcc; no g++, no CUDA, no nvcc):
#   - vet and build everything with -tags gdcuda (cgo + libdl; libcuda and cuBLAS are
#     loaded at run time, so nothing CUDA is needed to build),
#   - go test -tags gdcuda: the GPU tests skip with the reason ("cuda: no CUDA device
#     found: ..."); the PTX/kernel-table consistency tests run, and the GPU backend and
#     the executor's GPU tests run on a fake libcuda.so.1/cuBLAS (testdata/fakecuda.c),
#   - the same on a threaded fake driver under ThreadSanitizer (TestGPUKernelRaces,
#     about a minute; needs gcc's libtsan): data races between a kernel's work items,
#     and TestGPUKernelRacesCaught: a deliberate race (two work items of scatter_rows
#     writing one element) must be reported,
#   - go test -tags cudaemu: the kernels compiled as C and run by the CPU emulator,
#   - bench/gpu's exact and parity stages on the emulator (the device run's checks,
#     scripts/gpu-device.sh), failing on a result out of tolerance,
#   - build-ptx.sh --check: kernels/gdattn.ptx (for compute_70) and the generated kernel
#     table are up to date with kernels/*.cu (no nvcc needed).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v "${CC:-gcc}" >/dev/null; then
  echo "ci-cuda: no C compiler (${CC:-gcc}); the cuda and cudaemu builds need cgo" >&2
  exit 1
fi
export CGO_ENABLED=1

echo "== go vet -tags gdcuda ./graph/cuda/..."
go vet -tags gdcuda ./graph/cuda/...
echo "== go vet -tags cudaemu ./graph/cuda/..."
go vet -tags cudaemu ./graph/cuda/...
echo "== go build -tags gdcuda ./..."
go build -tags gdcuda ./...
echo "== go test -tags gdcuda ./graph/cuda (GPU tests skip without a device)"
log=$(mktemp)
if ! go test -tags gdcuda -count=1 -v ./graph/cuda >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
grep -B1 -E -- '^--- SKIP' "$log" | grep -vE '^(--|=== RUN.*)$' | head -20 || true
tail -1 "$log"; rm -f "$log"
echo "== go test -tags gdcuda -run TestGPUKernelRaces ./graph/cuda (kernels in 4 threads under ThreadSanitizer; and a deliberate race caught)"
GDATTN_FAKE_TSAN=1 go test -tags gdcuda -count=1 -run TestGPUKernelRaces -timeout 20m ./graph/cuda
echo "== go test -tags cudaemu ./graph/cuda/..."
go test -tags cudaemu -count=1 ./graph/cuda/...
echo "== bench/gpu on the emulator: the device run's exactness and parity stages (scripts/gpu-device.sh)"
go run -tags cudaemu ./bench/gpu exact -device emulator -kmax 3 > /dev/null
go run -tags cudaemu ./bench/gpu parity -device emulator -steps 2 -workloads synthetic/gd-2,synthetic/tf-2 > /dev/null
echo "== scripts/build-ptx.sh --check"
bash scripts/build-ptx.sh --check

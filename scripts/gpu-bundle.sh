#!/usr/bin/env bash
# gpu-bundle.sh: build, on a machine with Go and gcc but no GPU, everything scripts/gpu-device.sh
# needs on a GPU machine that has only the NVIDIA driver, CUDA, and Python with PyTorch (no
# Go toolchain, no compiler, no network), as one compressed file small enough for the device
# tool's carry (which takes at most 64 MiB together with the working tree):
#
#   scripts/gpu-bundle.sh [DIR]        (default: results/gpu-bundle, git-ignored)
#
# DIR/gpu-bundle.tar.xz holds
#   cuda.test             go test -c -tags gdcuda ./graph/cuda (the device self-test, the
#                         executor's tests on every model), stripped
#   gpu                   go build -tags gdcuda ./bench/gpu (the exactness, parity, timing and
#                         training-curve stages), stripped
#   data/tinystories.txt  the language corpus (from ../shared/data), for the curve stage
#   kernels/              graph/cuda/kernels' CUDA C sources, which tests of cuda.test read
#                         (cuda.test runs beside them; the fake-driver tests, which need
#                         emu_kernels.c and gcc, still skip)
#   BUILD-INFO            commit, Go version, build tags, the glibc the binaries need
# and DIR/BUILD-INFO is a copy of the last, readable without unpacking. The Python side
# (bench/peer/peer.py, cuda_suite.py) and the scripts come with the working tree.
#
# BUNDLE_TAGS=cudaemu builds the binaries for graph/cuda's CPU emulator instead (run with
# DEVICE=emulator): scripts/gpu-rehearse.sh uses it to rehearse the device script here.
# The binaries are linked dynamically against glibc (cgo): the target's glibc must be at
# least the version BUILD-INFO lists.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-results/gpu-bundle}
TAGS=${BUNDLE_TAGS:-gdcuda}
case "$TAGS" in gdcuda|cudaemu) ;; *) echo "gpu-bundle: BUNDLE_TAGS=$TAGS: want gdcuda or cudaemu" >&2; exit 2 ;; esac
CORPUS=${CORPUS:-../shared/data/tinystories/tinystories.txt}
export CGO_ENABLED=1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$DIR" "$stage/data"

ldflags='-s -w' # no symbol table, no DWARF: a third of the size (Go's panics still print function names)
echo "gpu-bundle: go test -c -tags $TAGS ./graph/cuda"
go test -c -tags "$TAGS" -ldflags="$ldflags" -o "$stage/cuda.test" ./graph/cuda
echo "gpu-bundle: go build -tags $TAGS ./bench/gpu"
go build -tags "$TAGS" -ldflags="$ldflags" -o "$stage/gpu" ./bench/gpu
mkdir -p "$stage/kernels"
cp graph/cuda/kernels/*.cu graph/cuda/kernels/*.h "$stage/kernels/"
if [ -f "$CORPUS" ]; then
  cp "$CORPUS" "$stage/data/tinystories.txt"
else
  echo "gpu-bundle: warning: no corpus at $CORPUS: the curve stage will be skipped" >&2
fi

# The newest glibc symbol version any binary needs.
need=$(for f in "$stage/cuda.test" "$stage/gpu"; do
  objdump -T "$f" 2>/dev/null | grep -oE 'GLIBC_[0-9]+\.[0-9]+'; done | sort -t. -k2,2n -u | tail -1)
{
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "go: $(go version)"
  echo "tags: $TAGS"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(ldd --version | head -1)"
  echo "needs: ${need:-unknown} or newer (newest versioned glibc symbol the binaries import)"
} > "$stage/BUILD-INFO"
cp "$stage/BUILD-INFO" "$DIR/BUILD-INFO"
rm -f "$DIR/gpu-bundle.tar.xz" "$DIR"/*.test "$DIR/run-on-gpu.sh" # and an older bundle's loose files
tar -C "$stage" -cf - . | xz -T0 -6 > "$DIR/gpu-bundle.tar.xz.tmp"
mv "$DIR/gpu-bundle.tar.xz.tmp" "$DIR/gpu-bundle.tar.xz"
echo "gpu-bundle: wrote $DIR/gpu-bundle.tar.xz ($(du -h "$DIR/gpu-bundle.tar.xz" | cut -f1); unpacked $(du -sh "$stage" | cut -f1))"
cat "$DIR/BUILD-INFO"

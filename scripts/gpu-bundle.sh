#!/usr/bin/env bash
# gpu-bundle.sh: cross-build, on a machine with Go and gcc but no GPU, everything needed
# to run gdattn on a GPU machine that has only the NVIDIA driver and the CUDA libraries
# (no Go toolchain, no compiler):
#   cuda.test            go test -c -tags gdcuda ./graph/cuda (the device self-test, the
#                        executor's tests)
#   <pkg>.test           the same for every other package with tests built by -tags gdcuda
#   language, synthetic  go build -tags gdcuda ./examples/language ./examples/synthetic
#   data/tinystories.txt the language corpus, when ../shared/data has it
#   peer.py              bench/peer's PyTorch models, timed on the GPU by run-on-gpu.sh
#   run-on-gpu.sh        runs the tests (GDATTN_REQUIRE_GPU=1: no skipping), trains the
#                        language model's paper preset for a few steps, and times gdattn's
#                        executor and PyTorch eager (peer.py --device cuda) on the same GPU
#   BUILD-INFO           commit, Go version, and the glibc the binaries need
#
#   scripts/gpu-bundle.sh [DIR]      (default: results/gpu-bundle, git-ignored)
#
# Then copy DIR to the GPU machine and run DIR/run-on-gpu.sh there. The binaries are
# dynamically linked against glibc (cgo): the target's glibc must be at least the version
# BUILD-INFO lists (this build machine's glibc is an upper bound on it).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-results/gpu-bundle}
mkdir -p "$DIR/data"
export CGO_ENABLED=1

echo "gpu-bundle: go test -c -tags gdcuda ./graph/cuda"
go test -c -tags gdcuda -o "$DIR/cuda.test" ./graph/cuda
for pkg in $(go list -tags gdcuda ./... | grep -v '/graph/cuda$'); do
  dir=$(go list -tags gdcuda -f '{{.Dir}}' "$pkg")
  if grep -lqsE '^//go:build .*\bgdcuda\b' "$dir"/*_test.go; then
    name=$(basename "$pkg")
    echo "gpu-bundle: go test -c -tags gdcuda $pkg"
    go test -c -tags gdcuda -o "$DIR/$name.test" "$pkg"
  fi
done
for ex in language synthetic; do
  echo "gpu-bundle: go build -tags gdcuda ./examples/$ex"
  go build -tags gdcuda -o "$DIR/$ex" "./examples/$ex"
done
cp bench/peer/peer.py "$DIR/peer.py"
if [ -f ../shared/data/tinystories/tinystories.txt ]; then
  cp ../shared/data/tinystories/tinystories.txt "$DIR/data/tinystories.txt"
fi

# The newest glibc symbol version any binary needs.
need=$(for f in "$DIR"/*.test "$DIR"/language "$DIR"/synthetic; do
  objdump -T "$f" 2>/dev/null | grep -oE 'GLIBC_[0-9]+\.[0-9]+' ; done | sort -t. -k2,2n -u | tail -1)
{
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "go: $(go version)"
  echo "built on: $(ldd --version | head -1)"
  echo "needs: ${need:-unknown} or newer (newest versioned glibc symbol the binaries import)"
} > "$DIR/BUILD-INFO"

cat > "$DIR/run-on-gpu.sh" <<'RUN'
#!/usr/bin/env bash
# run-on-gpu.sh: run the gdattn GPU bundle (built by scripts/gpu-bundle.sh) on a machine
# with an NVIDIA GPU, its driver (libcuda.so.1) and cuBLAS (libcublas.so.13, .12 or .11).
#   STEPS=20 ./run-on-gpu.sh     (logs go to ./logs)
# Environment: STEPS (language training steps, default 20), CHECK_STEPS (steps of the
# CPU-vs-GPU loss agreement check, default 1; 0 skips it), GDATTN_CUBLAS (path of
# libcublas.so.* when it is not on the loader path), LANGUAGE_ARGS (extra flags for
# "language train").
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p logs
cat BUILD-INFO
echo "this machine: $(ldd --version | head -1)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || echo "nvidia-smi not found"

# cuBLAS off the loader path (e.g. /usr/local/cuda-13.0/lib64, a pip nvidia-cublas wheel):
# point GDATTN_CUBLAS at it.
if [ -z "${GDATTN_CUBLAS:-}" ] && ! ldconfig -p 2>/dev/null | grep -qE 'libcublas\.so\.1[123]'; then
  found=$(find /usr/local /usr/lib /opt /usr/lib64 "$HOME" -maxdepth 8 -name 'libcublas.so.1[123]' 2>/dev/null | sort -r | head -1)
  if [ -n "$found" ]; then
    export GDATTN_CUBLAS=$found
    export LD_LIBRARY_PATH=$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "cuBLAS: $found"
  fi
fi

export GDATTN_REQUIRE_GPU=1   # the tests fail, not skip, without a usable GPU
status=0
for t in ./*.test; do
  echo "== $t -test.v"
  if ! "$t" -test.v -test.count=1 > "logs/$(basename "$t").log" 2>&1; then
    status=1
    echo "FAIL: $t (logs/$(basename "$t").log)"
  fi
  grep -E -- '^(--- FAIL|--- SKIP|ok|FAIL|PASS)|backend:' "logs/$(basename "$t").log" | head -40
done

# Agreement check: the first CHECK_STEPS (1) steps on the CPU and on the GPU, same seed;
# the losses should agree to about float32 rounding.
if [ "${CHECK_STEPS:-1}" -gt 0 ] && grep -qE '^\s+-device\b' <<<"$(./language train -h 2>&1 || true)"; then
  for dev in cpu cuda; do
    echo "== language train -preset paper -steps ${CHECK_STEPS:-1} -device $dev (CPU/GPU agreement)"
    ./language train -model gd -preset paper -steps "${CHECK_STEPS:-1}" -corpus data/tinystories.txt -no-eval \
      -device "$dev" ${LANGUAGE_ARGS:-} > "logs/agree-$dev.log" 2>&1 || { status=1; echo "FAIL: logs/agree-$dev.log"; }
    grep -E '^gd step [0-9]+/[0-9]+ loss' "logs/agree-$dev.log"
  done
fi

echo "== language train -preset paper -steps ${STEPS:-20}"
# Ask the example for the GPU if it has a flag for it (-device cuda, or -gpu).
device=()
help=$(./language train -h 2>&1 || true)
if grep -qE '^\s+-device\b' <<<"$help"; then device=(-device cuda)
elif grep -qE '^\s+-gpu\b' <<<"$help"; then device=(-gpu)
else echo "note: language train has no -device/-gpu flag; it trains on the CPU"; fi
if ! ./language train -model gd -preset paper -steps "${STEPS:-20}" -corpus data/tinystories.txt -no-eval \
     "${device[@]}" ${LANGUAGE_ARGS:-} 2>&1 | tee logs/language-train.log; then
  status=1
  echo "FAIL: language train (logs/language-train.log)"
fi
# Step times: gdattn's executor (BenchmarkExecutorTrainStep: copies and resident modes; the
# language models train with plain Adam there) and PyTorch eager on the same GPU (peer.py,
# the same models and sizes as bench/peer; AdamW + clipping for the language models), float32.
if [ "${TIMINGS:-1}" = 1 ]; then
  echo "== gdattn on the GPU: cuda.test -test.bench ExecutorTrainStep"
  ./cuda.test -test.run '^$' -test.bench 'ExecutorTrainStep/(synthetic|language-paper)/' -test.benchtime "${BENCHTIME:-20x}" \
    2>&1 | tee logs/bench-gpu.log | grep -E '^Benchmark|^(ok|FAIL|PASS)' || status=1
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "== PyTorch $(python3 -c 'import torch; print(torch.__version__)') on the GPU: peer.py time --device cuda"
    syn="--batch 512 --n 10 --d 10 --dprime 5 --c 25"
    paper="--batch 4 --context 256 --dprime 512 --heads 8 --vocab 50258"
    while read -r name args; do
      for impl in mirror idiomatic; do
        printf '%-26s %-9s ' "$name" "$impl"
        python3 peer.py time --device cuda --impl "$impl" --warmup 5 --min-steps 20 --min-time 2 $args \
          2>>logs/peer-gpu.err | tee -a logs/peer-gpu.jsonl || { status=1; echo "FAIL (logs/peer-gpu.err)"; }
      done
    done <<PEER
synthetic/gd-1             --model gd --depth 1 $syn
synthetic/gd-2             --model gd --depth 2 $syn
synthetic/tf-1             --model tf --depth 1 $syn
synthetic/tf-2             --model tf --depth 2 --cross $syn
language-paper/gdlm        --model gdlm $paper
language-paper/gpt         --model gpt $paper
PEER
  else
    echo "note: python3 with a CUDA-enabled torch not found: no PyTorch comparison"
  fi
fi
exit $status
RUN
chmod +x "$DIR/run-on-gpu.sh"
echo "gpu-bundle: wrote $DIR:"; ls -la "$DIR"; cat "$DIR/BUILD-INFO"

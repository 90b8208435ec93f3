#!/usr/bin/env bash
# gpu-device.sh: the one command a GPU session runs on the device machine (from the repository
# root, with $OUT set by the device tool), after scripts/gpu-bundle.sh built
# results/gpu-bundle/gpu-bundle.tar.xz here. It writes everything under $OUT as it goes, so
# that a stage or the whole run cut short by a time limit still returns what it measured:
#
#   info      info.txt: GPU, driver, CUDA, compute capability, cuBLAS, bundle, glibc
#   tests     tests.log: graph/cuda's test binary with GDATTN_REQUIRE_GPU=1 (no device, no
#             cuBLAS: failures, not skips)
#   exact     exact.jsonl: the GD model against the functional-GD reference through the
#             device executor (5 kernels, K = 1..6, both constructions, float64, 1e-10)
#   parity    parity.jsonl: the first 3 training losses of GD, Trained TF, GD LM and GPT on
#             the CPU and on the GPU (float64 within 1e-10, float32 within 1e-4, relative)
#   time      time-gdattn-<round>.jsonl: float32 step times and peak device memory (synthetic
#             workloads at batch 512, language small and paper presets), and for the language
#             models the step's rate in TFLOP/s (counted FLOPs, bench.FLOPs) and its fraction
#             of the GPU's float32 peak (looked up by the GPU's name: H200, H100, A100, V100;
#             bench/gpu/peak.go), one file per round
#             (the stage runs once per round: STAGES names it three times, around the peer
#             stage), all rounds together in time-gdattn.jsonl; smi-apps.csv
#   nofuse    time-nofuse.jsonl: the time stage with fused elementwise chains off (gpu time
#             -fusion off: one launch per elementwise node) for NOFUSE_WORKLOADS, between the
#             second and third rounds of the time stage, so that the fused path's gain is
#             measured in the same call
#   graph     time-graph.jsonl: the time stage with CUDA graph capture of the step on (gpu time
#             -graph on: cuda.ExecOptions.GraphCapture) for GRAPH_WORKLOADS, after the nofuse
#             stage, so that capture's gain is measured in the same call
#   peer      time-torch.jsonl: the same workloads in PyTorch on the same GPU
#             (bench/peer/cuda_suite.py): eager (foreach optimiser; mirror and idiomatic
#             models), eager with the fused optimiser, and the whole step compiled
#             (torch.compile, modes reduce-overhead and max-autotune, fused optimiser) for
#             COMPILE_WORKLOADS in that order; each configuration timed in PEER_ROUNDS
#             interleaved rounds, its peak torch.cuda.max_memory_allocated/reserved recorded
#   profile   profile.jsonl: where a float32 training step
#             of PROFILE_WORKLOADS spends its time, by kernel and product (gpu profile), and
#             cpu-<n>.pprof, the Go CPU profile of the same steps unsynchronised
#   curve     (not run unless named in STAGES) curve-device.jsonl: the language paper preset
#             trained for what is left of
#             CURVE_BUDGET (120 s), curve-cpu.jsonl: the CPU's first steps of the same run,
#             trained at the same time on the machine's cores
# Each stage has its own time limit (cut to what is left of TOTAL, 470 s) and its stdout
# and stderr files; stages.tsv records each stage's limit, exit status and duration, and
# device.log the run. At the end (or when terminated) every file is packed into
# $OUT/gpu-run.tar.gz and removed, but for device.log and stages.tsv: the device tool
# returns only a few files of $OUT. Then, here: tar -xzf <files_at>/gpu-run.tar.gz -C DIR and
# go run ./bench/gpu report -in DIR.
#
# Environment (all optional):
#   OUT           output directory (required; the device tool sets it)
#   BUNDLE        the bundle (results/gpu-bundle/gpu-bundle.tar.xz)
#   TOTAL         wall-clock budget of the whole run in seconds (470: the device tool's call of
#                 at most 600 s, with room for the bundle's unpacking and the transfers)
#   STAGES        the stages to run, in order (info tests exact parity time peer time nofuse
#                 graph time profile; curve, 150 s more, only when named)
#   DEVICE        the bench/gpu -device value (cuda; emulator for a BUNDLE_TAGS=cudaemu bundle)
#   PYTHON        the Python with PyTorch (python3)
#   TORCH_DEVICE  the torch device of the peer stage (cuda)
#   TIME_WORKLOADS, PARITY_WORKLOADS  comma-separated bench workloads (bench/gpu's defaults)
#   COMPILE_WORKLOADS  the workloads PyTorch compiles, most important first (the language paper
#                 preset, then the synthetic ones, then the small preset); what the peer stage's
#                 limit leaves out is noted in time-torch.jsonl
#   NOFUSE_WORKLOADS  the nofuse stage's workloads (the language paper presets and
#                 synthetic/gd-1)
#   GRAPH_WORKLOADS  the graph stage's workloads (the same as NOFUSE_WORKLOADS by default)
#   PEER_ROUNDS   timing rounds of each PyTorch configuration (3)
#   PROFILE_WORKLOADS  the profile stage's workloads (the language paper and small presets
#                 and two synthetic ones)
#   CURVE_BUDGET  seconds of GPU training in the curve stage (120); CURVE_PRESET (paper)
#   GDATTN_CUBLAS path of libcublas.so.*; found on the loader path or searched for if unset
#   LIMIT_<STAGE> a stage's own time limit in seconds, e.g. LIMIT_TESTS=60
#   GPU_COMMAND   the command recorded in info.txt (the report quotes it unless given -command)
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?gpu-device: set OUT to the output directory}"
mkdir -p "$OUT"
BUNDLE=${BUNDLE:-results/gpu-bundle/gpu-bundle.tar.xz}
TOTAL=${TOTAL:-470}
STAGES=${STAGES:-info tests exact parity time peer time nofuse graph time profile}
NOFUSE_WORKLOADS=${NOFUSE_WORKLOADS:-language-paper/gdlm,language-paper/gpt,synthetic/gd-1}
GRAPH_WORKLOADS=${GRAPH_WORKLOADS:-$NOFUSE_WORKLOADS}
COMPILE_WORKLOADS=${COMPILE_WORKLOADS:-language-paper/gdlm,language-paper/gpt,synthetic/gd-1,synthetic/tf-2,synthetic/gd-2,synthetic/tf-1,language-small/gdlm,language-small/gpt}
PEER_ROUNDS=${PEER_ROUNDS:-3}
PROFILE_WORKLOADS=${PROFILE_WORKLOADS:-language-paper/gdlm,language-paper/gpt,language-small/gdlm,synthetic/gd-1,synthetic/tf-2}
DEVICE=${DEVICE:-cuda}
PYTHON=${PYTHON:-python3}
TORCH_DEVICE=${TORCH_DEVICE:-cuda}
CURVE_BUDGET=${CURVE_BUDGET:-120}
CURVE_PRESET=${CURVE_PRESET:-paper}
T0=$(date +%s)

elapsed() { echo $(($(date +%s) - T0)); }
note() { echo "[$(elapsed)s] $*" | tee -a "$OUT/device.log" >&2; }
printf 'stage\tlimit_s\texit\tseconds\n' > "$OUT/stages.tsv"

# run_stage NAME LIMIT STDOUT STDERR CMD...: runs CMD under timeout with the smaller of LIMIT
# (or LIMIT_<NAME>) and what is left of TOTAL, output to $OUT/STDOUT and $OUT/STDERR; records
# the exit status (124 or 137: cut by the limit). CMD sees the limit as $STAGE_LIMIT.
run_stage() {
  local name=$1 limit=$2 so=$3 se=$4
  shift 4
  local var="LIMIT_${name^^}"
  limit=${!var:-$limit}
  local left=$((TOTAL - $(elapsed)))
  if [ "$left" -lt 10 ]; then
    note "stage $name: skipped, ${left}s left of TOTAL=${TOTAL}s"
    printf '%s\t%s\tskipped\t0\n' "$name" "$limit" >> "$OUT/stages.tsv"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  note "stage $name: limit ${limit}s: $*"
  local s=$(date +%s) rc=0
  # In the background and waited for, so that a TERM to this script (the device tool's own
  # time limit) reaches the stage too: timeout runs it in a process group of its own.
  STAGE_LIMIT=$limit timeout -k 5 "$limit" "$@" > "$OUT/$so" 2> "$OUT/$se" &
  STAGE_PID=$! STAGE_NAME=$name STAGE_START=$s STAGE_LIMIT_NOW=$limit
  wait "$STAGE_PID" || rc=$?
  STAGE_PID=
  local took=$(($(date +%s) - s))
  printf '%s\t%s\t%s\t%s\n' "$name" "$limit" "$rc" "$took" >> "$OUT/stages.tsv"
  note "stage $name: exit $rc in ${took}s$( [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo ' (cut by its time limit)')"
  return 0
}

# Unpack the bundle.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdattn-gpu.XXXXXX")
# tar -J needs the xz program; Python's tarfile (lzma) is the fallback.
if ! tar -C "$WORK" -xJf "$BUNDLE" 2> "$OUT/unpack.err" &&
  ! "$PYTHON" -c 'import sys, tarfile; t = tarfile.open(sys.argv[1]); t.extractall(sys.argv[2], **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))' "$BUNDLE" "$WORK" 2>> "$OUT/unpack.err"; then
  note "cannot unpack $BUNDLE: $(head -c 300 "$OUT/unpack.err") (build it with scripts/gpu-bundle.sh and carry results/gpu-bundle)"
  exit 1
fi
note "bundle: $(tr '\n' ' ' < "$WORK/BUILD-INFO")"
GPU=$WORK/gpu

# newest: of the libcublas.so.N paths on stdin, the one with the largest N.
newest() { awk -F. '{ print $NF "\t" $0 }' | sort -k1,1nr | head -1 | cut -f2-; }

# cuBLAS: on the loader path, or the newest libcublas.so.1[123] found (CUDA toolkit, or the
# nvidia-cublas wheel PyTorch installs); GDATTN_CUBLAS names the library for graph/cuda,
# and its directory goes on LD_LIBRARY_PATH for its libcublasLt.
if [ -z "${GDATTN_CUBLAS:-}" ] && ! ldconfig -p 2>/dev/null | grep -qE 'libcublas\.so\.1[123]\b'; then
  # The usual places first (a toolkit, the wheel next to PyTorch), then a bounded search.
  site=$(timeout 10 "$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  found=$(ls -d /usr/local/cuda/lib64/libcublas.so.1[123] /usr/local/cuda-*/lib64/libcublas.so.1[123] \
    /usr/local/cuda*/targets/*/lib/libcublas.so.1[123] ${site:+$site/nvidia/cublas/lib/libcublas.so.1[123]} \
    ${site:+$site/nvidia/cu13/lib/libcublas.so.1[123]} 2>/dev/null | newest)
  if [ -z "$found" ]; then
    found=$(timeout 15 find /usr/local /usr/lib /usr/lib64 /opt /root /home -maxdepth 9 -name 'libcublas.so.1[123]' \
      2>/dev/null | newest)
  fi
  if [ -n "$found" ]; then
    export GDATTN_CUBLAS=$found
    export LD_LIBRARY_PATH=$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
fi
note "cuBLAS: ${GDATTN_CUBLAS:-from the loader path ($(ldconfig -p 2>/dev/null | grep -oE 'libcublas\.so\.1[123]' | head -1))}"

stage_info() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if command -v nvidia-smi > /dev/null; then
      IFS=, read -r name driver mem cc < <(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -1)
      echo "gpu: $(echo "$name" | xargs)"
      echo "driver: $(echo "$driver" | xargs)"
      echo "memory: $(echo "$mem" | xargs)"
      echo "compute_capability: $(echo "$cc" | xargs)"
      echo "cuda: $(nvidia-smi 2>/dev/null | grep -oE 'CUDA Version: [0-9.]+' | head -1 | sed 's/CUDA Version: //') (the driver's)"
    else
      echo "gpu: none (no nvidia-smi)"
    fi
    echo "cublas: ${GDATTN_CUBLAS:-$(ldconfig -p 2>/dev/null | grep -oE 'libcublas\.so\.1[123][^ ]*' | head -1)}"
    echo "glibc: $(ldd --version 2>/dev/null | head -1)"
    echo "bundle: $(grep -E '^(commit|tags|needs)' "$WORK/BUILD-INFO" | tr '\n' ';' | sed 's/;$//')"
    echo "python: $("$PYTHON" --version 2>&1)"
    echo "cpus: $(nproc)"
    echo "command: ${GPU_COMMAND:-bash scripts/gpu-device.sh}"
  } > "$OUT/info.txt"
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
  cat "$OUT/info.txt" >&2
}

stage_tests() {
  # Outside graph/cuda, so the fake-driver tests (which need the kernel sources and gcc)
  # skip with their reason; every GPU test must run.
  local limit=$STAGE_LIMIT
  (cd "$WORK" && GDATTN_REQUIRE_GPU=1 ./cuda.test -test.v -test.count=1 -test.timeout="$((limit > 20 ? limit - 10 : limit))s")
}

stage_curve() {
  local limit=$STAGE_LIMIT corpus=$WORK/data/tinystories.txt
  if [ ! -f "$corpus" ]; then
    echo "no corpus in the bundle: curve skipped" >&2
    return 3
  fi
  local budget=$((limit - 25)) # model build and tokenising
  [ "$budget" -gt "$CURVE_BUDGET" ] && budget=$CURVE_BUDGET
  [ "$budget" -lt 5 ] && budget=5
  # The CPU's first steps of the same run, on the cores the GPU process leaves.
  GOMAXPROCS=$(($(nproc) > 3 ? $(nproc) - 2 : 1)) "$GPU" curve -device cpu -corpus "$corpus" -preset "$CURVE_PRESET" \
    -budget "${budget}s" > "$OUT/curve-cpu.jsonl" 2> "$OUT/curve-cpu.log" &
  local cpu=$!
  "$GPU" curve -device "$DEVICE" -corpus "$corpus" -preset "$CURVE_PRESET" -budget "${budget}s"
  local rc=$?
  wait "$cpu" || echo "the CPU curve exited $?" >&2
  return $rc
}

# Background sampler of per-process GPU memory during the timing stages.
smi_start() {
  if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader -lms 250 >> "$OUT/smi-apps.csv" 2>/dev/null &
    SMI_PID=$!
  fi
}
smi_stop() {
  if [ -n "${SMI_PID:-}" ]; then kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null; SMI_PID=; fi
}
# pack: every file of $OUT but device.log and stages.tsv into $OUT/gpu-run.tar.gz, the
# originals removed (the device tool returns only a few files).
pack() {
  local files
  files=$(cd "$OUT" && ls | grep -vxE 'device\.log|stages\.tsv|gpu-run\.tar\.gz')
  [ -z "$files" ] && return 0
  # shellcheck disable=SC2086
  if (cd "$OUT" && tar -czf gpu-run.tar.gz $files); then
    (cd "$OUT" && rm -f $files)
  fi
}
STAGE_PID=
on_term() {
  note "terminated: stopping the running stage"
  if [ -n "$STAGE_PID" ]; then
    kill -TERM "$STAGE_PID" 2>/dev/null
    printf '%s\t%s\tterminated\t%s\n' "$STAGE_NAME" "$STAGE_LIMIT_NOW" $(($(date +%s) - STAGE_START)) >> "$OUT/stages.tsv"
  fi
  smi_stop
  rm -rf "$WORK"
  pack
  exit 143
}
trap 'smi_stop' EXIT
trap on_term TERM INT

export -f stage_info stage_tests stage_curve
export OUT WORK GPU DEVICE PYTHON CURVE_BUDGET CURVE_PRESET COMPILE_WORKLOADS PEER_ROUNDS
tw=()
[ -n "${TIME_WORKLOADS:-}" ] && tw=(-workloads "$TIME_WORKLOADS")
pw=()
[ -n "${PARITY_WORKLOADS:-}" ] && pw=(-workloads "$PARITY_WORKLOADS")
# The timed workloads and their peer.py sizes, for the peer stage and the report.
"$GPU" peer-args "${tw[@]}" > "$OUT/peer-args.txt" 2>> "$OUT/device.log"

round=0
for st in $STAGES; do
  case $st in
  info) run_stage info 30 info.out info.err bash -c stage_info ;;
  tests)
    run_stage tests 90 tests.log tests.err bash -c stage_tests
    note "tests: $(grep -cE '^--- PASS' "$OUT/tests.log") passed, $(grep -cE '^--- FAIL' "$OUT/tests.log") failed, $(grep -cE '^--- SKIP' "$OUT/tests.log") skipped (top level); $(tail -1 "$OUT/tests.log")"
    ;;
  exact) run_stage exact 45 exact.jsonl exact.log "$GPU" exact -device "$DEVICE" -kmax 6 ;;
  parity) run_stage parity 60 parity.jsonl parity.log "$GPU" parity -device "$DEVICE" -steps 3 "${pw[@]}" ;;
  time)
    round=$((round + 1))
    smi_start
    run_stage time 45 "time-gdattn-$round.jsonl" "time-gdattn-$round.log" "$GPU" time -device "$DEVICE" "${tw[@]}"
    smi_stop
    # The report reads every round from one file (a line per workload and round).
    cat "$OUT"/time-gdattn-[0-9]*.jsonl > "$OUT/time-gdattn.jsonl" 2>/dev/null
    note "time: round $round"
    ;;
  nofuse)
    run_stage nofuse 30 time-nofuse.jsonl time-nofuse.log "$GPU" time -device "$DEVICE" -fusion off \
      -workloads "$NOFUSE_WORKLOADS"
    ;;
  graph)
    run_stage graph 30 time-graph.jsonl time-graph.log "$GPU" time -device "$DEVICE" -graph on \
      -workloads "$GRAPH_WORKLOADS"
    ;;
  peer)
    smi_start
    # cuda_suite.py starts no build or round past $STAGE_LIMIT - 5 s (its --deadline default).
    run_stage peer 300 time-torch.jsonl time-torch.log "$PYTHON" bench/peer/cuda_suite.py --device "$TORCH_DEVICE" \
      --workloads "$OUT/peer-args.txt" --impls idiomatic,mirror --compile --compile-workloads "$COMPILE_WORKLOADS" \
      --rounds "$PEER_ROUNDS"
    smi_stop
    grep -h 'torch_unavailable' "$OUT/time-torch.jsonl" > /dev/null && note "peer: $(tail -1 "$OUT/time-torch.log")"
    ;;
  curve) run_stage curve $((CURVE_BUDGET + 30)) curve-device.jsonl curve-device.log bash -c stage_curve ;;
  profile)
    run_stage profile 45 profile.jsonl profile.log "$GPU" profile -device "$DEVICE" -workloads "$PROFILE_WORKLOADS" \
      -cpuprofile "$OUT/cpu-"
    ;;
  *) note "unknown stage $st (want info tests exact parity time nofuse graph peer curve profile)" ;;
  esac
done
note "done in $(elapsed)s; files in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
rm -rf "$WORK"
pack

#!/usr/bin/env bash
# A real Slurm on this machine: a one-node cluster on localhost (munged, slurmctld, slurmd, 2 CPUs)
# runs a small sweep of examples/synthetic as a job array and checks the result against a
# single-process run of the same plan, digit for digit; then a fault (scancel of one array task
# mid-run), a resubmission of the missing runs, and the same check, with no duplicate, partial or
# temporary result left. Installs Debian's slurm-wlm and munge when missing (apt, needs root or
# sudo). Stops the daemons it started. About 2-3 minutes on 2 cores.
#
#   bash scripts/slurm-ci.sh          # run it (CI: .ci/run)
#   KEEP=1 bash scripts/slurm-ci.sh   # keep the temporary folder (configuration, logs, results)
#
# The plan: fig2 at L = 256, 1024, 60 epochs, 2 seeds, 256 test contexts: 2 kernels (RBF,
# softmax) x 2 models (GD, Trained TF) x 2 L x 2 seeds = 16 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

sudo_cmd=""
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "slurm-ci: needs root or sudo (to install Slurm and run slurmd)" >&2
    exit 1
  fi
  sudo_cmd="sudo"
fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
  echo "== slurm-ci: apt-get install slurm-wlm munge"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq slurm-wlm munge >/dev/null
fi
echo "== slurm-ci: $(slurmctld -V), $(munged --version | head -1)"

tmp=$(mktemp -d /tmp/gdattn-slurm-ci.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  set +e
  [ -n "${SLURM_CONF:-}" ] && scancel --quiet --user="$(id -un)" 2>/dev/null
  for f in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munge/munged.pid"; do
    [ -f "$f" ] && $sudo_cmd kill "$(cat "$f")" 2>/dev/null
  done
  sleep 1
  for f in "$tmp/slurmd.pid" "$tmp/slurmctld.pid" "$tmp/munge/munged.pid"; do
    [ -f "$f" ] && $sudo_cmd kill -9 "$(cat "$f")" 2>/dev/null
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "slurm-ci: kept $tmp"; else $sudo_cmd rm -rf "$tmp"; fi
}
trap cleanup EXIT

fail() {
  echo "slurm-ci: FAIL: $*" >&2
  for f in "$tmp"/slurmctld.log "$tmp"/slurmd.log; do echo "--- $f" >&2; tail -20 "$f" >&2; done
  exit 1
}

# munged with its own key, socket, pid and log files.
mkdir -p "$tmp/munge"
chmod 700 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
$sudo_cmd munged --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" --seed-file="$tmp/munge/munged.seed"

# A one-node cluster on localhost, on ports of its own.
node=ci-node
user=$(id -un)
cpus=2
export SLURM_CONF="$tmp/slurm.conf"
mkdir -p "$tmp/state" "$tmp/spool"
cat > "$SLURM_CONF" <<CONF
ClusterName=gdattn-ci
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MpiDefault=none
ReturnToService=2
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
MaxArraySize=1001
PlugStackConfig=$tmp/plugstack.conf
NodeName=$node NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=4000 State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
: > "$tmp/plugstack.conf"
$sudo_cmd slurmctld -f "$SLURM_CONF"
$sudo_cmd slurmd -f "$SLURM_CONF" -N "$node"
for i in $(seq 60); do
  state=$(sinfo -h -N -o '%t' 2>/dev/null | head -1 || true)
  [ "$state" = idle ] && break
  sleep 1
done
[ "$state" = idle ] || fail "the node did not come up (state '$state')"
echo "== slurm-ci: one-node cluster up: $(sinfo -h -o '%P %D nodes %C CPUs (A/I/O/T) %t')"

echo "== slurm-ci: building examples/synthetic"
go build -o "$tmp/bin/synthetic" ./examples/synthetic
plan=(-sweep fig2 -Ls 256,1024 -epochs 60 -seeds 2 -M 256 -quiet)
run() { "$tmp/bin/synthetic" "${plan[@]}" "$@"; }

# wait_jobs ID...: until none of the jobs is pending or running.
wait_jobs() {
  local ids; ids=$(IFS=,; echo "$*")
  for i in $(seq 600); do
    [ -z "$(squeue -h -j "$ids" 2>/dev/null)" ] && return 0
    sleep 1
  done
  fail "jobs $ids still queued after 10 minutes"
}

# submit DIR: submits the plan's missing runs; sets array_job and merge_job.
submit() {
  local out
  out=$(cd "$tmp" && run -results "$1" -submit slurm -parallel 2 -cpus 1 -mem 1000) || fail "submit: $out"
  echo "$out" | sed 's/^/   /'
  array_job=$(echo "$out" | sed -n 's/^submitted .* as job array \([0-9]*\) .*/\1/p')
  merge_job=$(echo "$out" | sed -n 's/^submitted the merge as job \([0-9]*\) .*/\1/p')
  [ -n "$merge_job" ] || fail "no merge job id in: $out"
}

# check DIR LABEL: DIR's merged tables equal the single-process run's, digit for digit, and its
# runs directory holds exactly one result per run (no duplicate, no temporary, no failure file).
check() {
  local dir=$tmp/$1
  cmp "$tmp/ref/fig2.csv" "$dir/fig2.csv" || fail "$2: fig2.csv differs from the single-process run"
  diff <(grep -v '"results"\|"png"' "$tmp/ref/fig2.json") <(grep -v '"results"\|"png"' "$dir/fig2.json") >/dev/null ||
    fail "$2: fig2.json's points differ from the single-process run"
  local n; n=$(ls -A "$dir/runs" | wc -l)
  [ "$n" = 16 ] || fail "$2: $n files in $dir/runs, want 16 results (no duplicate, partial or temporary file): $(ls -A "$dir/runs")"
  for f in "$tmp"/ref/runs/*.json; do
    diff <(sed -n '/"output"/,/"seconds"/p' "$f") <(sed -n '/"output"/,/"seconds"/p' "$dir/runs/$(basename "$f")") >/dev/null ||
      fail "$2: run $(basename "$f") differs from the single-process run"
  done
  echo "== slurm-ci: $2: merged fig2.csv and fig2.json equal the single-process run's; 16 result files, each equal to its single-process twin"
}

echo "== slurm-ci: the plan"
(cd "$tmp" && run -plan -results ref) | grep "^plan "
echo "== slurm-ci: the same plan in one process (the reference)"
start=$SECONDS
(cd "$tmp" && run -results ref > ref.log) || fail "single-process run: $(tail -5 "$tmp/ref.log")"
echo "   done in $((SECONDS - start)) s"

echo "== slurm-ci: the plan as a job array, at most 2 tasks at once, then the merge job"
start=$SECONDS
submit "$tmp/cluster"
wait_jobs "$array_job" "$merge_job"
echo "   done in $((SECONDS - start)) s"
ls "$tmp/cluster/slurm/logs" | grep -q "_15.out" || fail "no log of array task 15 in $tmp/cluster/slurm/logs"
grep -q "16 done, 0 missing" "$tmp"/cluster/slurm/logs/*merge-"$merge_job".out || fail "merge job: $(cat "$tmp"/cluster/slurm/logs/*merge-"$merge_job".out)"
check cluster "job array"

echo "== slurm-ci: a fault: scancel of the last array task while it runs"
submit "$tmp/fault"
victim=""
for i in $(seq 1200); do
  victim=$(squeue -h -r -t R -j "$array_job" -o '%i' | grep "_15$" || true)
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || fail "array task 15 never ran"
sleep 0.2
scancel "$victim"
echo "   cancelled task $victim"
wait_jobs "$array_job" "$merge_job"
mlog=$(cat "$tmp"/fault/slurm/logs/*merge-"$merge_job".out)
echo "$mlog" | grep -q "15 done, 1 missing" || fail "after the fault the merge job should report run 15 missing: $mlog"
echo "$mlog" | grep -q "indices 15" || fail "the merge's refusal does not name run 15: $mlog"
[ ! -e "$tmp/fault/fig2.csv" ] || fail "the merge wrote final tables with a run missing"
echo "   the merge job refused the final tables: $(echo "$mlog" | grep -o '1 of 16 runs.*indices 15')"

echo "== slurm-ci: resubmit: only the missing run"
submit "$tmp/fault"
wait_jobs "$array_job" "$merge_job"
[ "$(ls "$tmp"/fault/slurm/logs/ | grep -c "^synthetic-fig2-${array_job}_")" = 1 ] || fail "the resubmission ran more than the missing run"
check fault "after the fault and the resubmission"
echo "== slurm-ci: ok"

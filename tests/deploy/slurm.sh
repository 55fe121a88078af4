#!/bin/bash
# slurm.sh SRC_DIR BIN_DIR PLUGIN: a real single-node Slurm (munged, slurmctld,
# slurmd started here with their files in a temp dir, ports picked free, stopped by
# pid at the end) runs a batch job that uses containers/slurm/ncclscope-slurm.sh:
# collector on the batch host, one agent per node, emulated ranks (ncclscope-emu with
# the real plugin) as a job step. Then the store must hold the job under its
# SLURM_JOB_ID, with every rank the emulator ran: `ncclscope --db DIR status --json`.
# Needs root and slurm-wlm + munge (scripts/deps.sh --test); NCCLSCOPE_TEST_SLURM=0 skips it,
# NSC_KEEP=1 keeps its temp dir (logs, store) for a look afterwards.
set -euo pipefail
src=$1 bin=$2 plugin=$3
. "$(dirname "$0")/lib.sh"
[ "${NCCLSCOPE_TEST_SLURM:-1}" = 0 ] && skip "Slurm: NCCLSCOPE_TEST_SLURM=0"
need_root "slurmd and munged run as root here"
need_cmds "Slurm test" munged slurmctld slurmd sbatch sinfo srun
dir=$(mktemp -d /tmp/nsc-slurm-XXXXXX)
chmod 755 "$dir"
daemons=()
cleanup() {
    local p
    for p in "${daemons[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${daemons[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -n "${NSC_KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
die() {
    for f in "$dir"/*.log "$dir"/job/*.log "$dir"/job.out; do [ -f "$f" ] && { echo "== $f"; tail -30 "$f"; }; done >&2
    fail "$*"
}
# Slurm's daemons and clients all read their ports from slurm.conf before any
# of them starts, and slurmctld/slurmd have no port-0 mode nor a port file: the
# ports are the kernel's pick for a socket bound and closed here, and a start
# that loses one to another process is retried with new ports (start_slurm).
kernel_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
node=$(hostname -s)

# munge with its own key and socket
mkdir -m 700 "$dir/munge"
head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
munged -F --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/seed" --log-file="$dir/munged.log" >>"$dir/daemons.log" 2>&1 &
daemons+=($!)

mkdir -p "$dir/state" "$dir/spool"
export SLURM_CONF=$dir/slurm.conf
for _ in $(seq 50); do [ -S "$dir/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$dir/munge/munge.sock" ] || die "munged did not start"
# start_slurm: slurm.conf with new ports, slurmctld and slurmd; true once the
# node is idle. A daemon that could not bind its port is stopped, false.
start_slurm() {
    local ctld slurmd f
    cat >"$dir/slurm.conf" <<CONF
ClusterName=nsctest
SlurmctldHost=$node
SlurmctldPort=$(kernel_port)
SlurmdPort=$(kernel_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$node CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=10 State=UP
CONF
    slurmctld -D -c -f "$SLURM_CONF" >>"$dir/daemons.log" 2>&1 &
    ctld=$!
    slurmd -D -f "$SLURM_CONF" >>"$dir/daemons.log" 2>&1 &
    slurmd=$!
    daemons+=("$ctld" "$slurmd")
    for _ in $(seq 300); do
        [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && return 0
        grep -q "Address already in use" "$dir"/slurm*.log "$dir/daemons.log" 2>/dev/null && break
        sleep 0.1
    done
    kill -TERM "$ctld" "$slurmd" 2>/dev/null || true
    wait "$ctld" "$slurmd" 2>/dev/null || true
    for f in "$dir/slurmctld.log" "$dir/slurmd.log" "$dir/daemons.log"; do
        [ ! -e "$f" ] || mv "$f" "$f.$ctld"  # kept for a look (NSC_KEEP), out of the next try's way
    done
    return 1
}
for try in 1 2 3; do start_slurm && break; echo "slurm: start $try failed, new ports" >&2; done
[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] || die "the node is not idle: $(sinfo 2>&1)"

# The batch job: collector + agent through the helper, then 2 emulated ranks on
# node0 of the emulator, whose run dir is the agent's.
cat >"$dir/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=2 --time=2
set -euo pipefail
export NCCLSCOPE_BIN=$bin NCCLSCOPE_PLUGIN=$plugin NCCLSCOPE_JOBDIR=$dir/job
export NCCLSCOPE_RUNDIR=$dir/run/node0 NCCLSCOPE_COLLECTOR_BIND=127.0.0.1
export NCCLSCOPE_COLLECTOR_PORT=0 NCCLSCOPE_COLLECTOR_HTTP_PORT=0
. $src/containers/slurm/ncclscope-slurm.sh
trap ncclscope_stop EXIT
ncclscope_start
srun --ntasks=1 --overlap $bin/ncclscope-emu --plugin "\$NCCL_PROFILER_PLUGIN" --rundir-base $dir/run \
    --scenario ring --nodes 1 --ranks-per-node 2 --iters 5 --summary $dir/emu.json
JOB
job=$(sbatch --parsable --wait --output="$dir/job.out" "$dir/job.sh") || die "the batch job failed"
echo "job $job done"
grep -q "agents on 1 node" "$dir/job.out" || die "the helper did not start the agents"

# The report the helper asked the collector for before stopping it
# (`ncclscope status --json`): the job under its SLURM_JOB_ID, each process the
# emulator ran, with events and without drops.
python3 - "$job" "$dir/emu.json" "$dir/job/status.json" <<'PY' || die "status does not show the job: $(cat "$dir/job/status.json")"
import json, sys
job, emu, status = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
assert any(j.get("job") == job for j in status["jobs"]), f"job {job} not in {status['jobs']}"
pids = sorted({r["pid"] for r in emu["ranks"]})
for pid in pids:
    mine = [p for p in status["processes"] if p["pid"] == pid and p["job"] == job]
    assert mine, f"process {pid} of job {job} is not in status"
    assert sum(p["events_emitted"] for p in mine) > 0, f"process {pid}: no events"
    assert all(p["events_dropped"] == 0 for p in mine), f"process {pid}: drops"
print(f"status --json: job {job}, processes {pids}")
PY

# The store, read offline after the job (`ncclscope --db`): the job and both ranks.
cli() { "$bin/ncclscope" --db "$dir/job/db" "$@"; }
out=$(cli --job "$job" comms --json) || die "ncclscope comms: $out"
grep -qF "\"job\":\"$job\"" <<<"$out" || die "comms is not about job $job: $out"
grep -qF '"ranks_seen":2' <<<"$out" || die "the store does not hold both ranks: $out"
out=$(cli --job "$job$job" comms --json 2>&1) && die "an unknown job is answered: $out"
grep -qF "no job" <<<"$out" || die "an unknown job: $out"
echo "slurm: job $job ran its ranks through agent and collector, seen and stored under its SLURM_JOB_ID"

# ncclscope-slurm.sh: run ncclscope inside a Slurm allocation. Source it from a batch
# script, then:
#   ncclscope_start    collector on the batch host, one agent per node, ranks' env
#   srun ... ranks     (they inherit NCCL_PROFILER_PLUGIN and NCCLSCOPE_RUNDIR)
#   ncclscope_stop     agents drain their spools, the job's status is reported
#                      (printed, and as JSON in $NCCLSCOPE_JOBDIR/status.json), the
#                      collector closes its store
# docs/slurm.md explains every setting; the defaults:
#   NCCLSCOPE_BIN        directory of ncclscope-agent/-collector (default: build/bin of the
#                        checkout this file is in, which must be on a shared filesystem)
#   NCCLSCOPE_PLUGIN     the plugin .so (default: $NCCLSCOPE_BIN/../lib/libnccl-profiler-ncclscope.so)
#   NCCLSCOPE_JOBDIR     collector store, logs and ports ($SLURM_SUBMIT_DIR/ncclscope-$SLURM_JOB_ID)
#   NCCLSCOPE_RUNDIR     node-local socket dir of agent and ranks (/tmp/ncclscope-$SLURM_JOB_ID)
#   NCCLSCOPE_COLLECTOR_ADDR  set it to use a collector that already runs (none is started)
#   NCCLSCOPE_COLLECTOR_BIND  address the collector listens on for agents (0.0.0.0;
#                        agents then connect to the batch host's name)
#   NCCLSCOPE_COLLECTOR_PORT / NCCLSCOPE_COLLECTOR_HTTP_PORT  7760 / 7761 (0: any free port)
# Everything started is a child of the batch script; a trap in it should call
# ncclscope_stop so a failing job still stops them (see sbatch-example.sh).

_nsc_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${NCCLSCOPE_BIN:=$_nsc_here/../../build/bin}"
: "${NCCLSCOPE_PLUGIN:=$NCCLSCOPE_BIN/../lib/libnccl-profiler-ncclscope.so}"
: "${NCCLSCOPE_JOBDIR:=${SLURM_SUBMIT_DIR:-$PWD}/ncclscope-${SLURM_JOB_ID:?not inside a Slurm job}}"
: "${NCCLSCOPE_RUNDIR:=/tmp/ncclscope-$SLURM_JOB_ID}"
: "${NCCLSCOPE_COLLECTOR_BIND:=0.0.0.0}"
: "${NCCLSCOPE_COLLECTOR_PORT:=7760}"
: "${NCCLSCOPE_COLLECTOR_HTTP_PORT:=7761}"
_nsc_collector_pid=
_nsc_agents_pid=

_nsc_log() { echo "ncclscope-slurm: $*" >&2; }

# _nsc_wait_file FILE SECONDS: wait until FILE exists and is not empty.
_nsc_wait_file() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do [ -s "$1" ] && return 0; sleep 0.1; done
    return 1
}

_nsc_start_collector() {
    local ports=$NCCLSCOPE_JOBDIR/collector.ports
    rm -f "$ports"
    "$NCCLSCOPE_BIN/ncclscope-collector" --listen "tcp://$NCCLSCOPE_COLLECTOR_BIND:$NCCLSCOPE_COLLECTOR_PORT" \
        --http "127.0.0.1:$NCCLSCOPE_COLLECTOR_HTTP_PORT" --db "$NCCLSCOPE_JOBDIR/db" \
        --port-file "$ports" >"$NCCLSCOPE_JOBDIR/collector.log" 2>&1 &
    _nsc_collector_pid=$!
    _nsc_wait_file "$ports" 30 || { _nsc_log "the collector did not start: $NCCLSCOPE_JOBDIR/collector.log"; return 1; }
    local port host=$NCCLSCOPE_COLLECTOR_BIND
    port=$(awk '$1 == "zmq" { print $2 }' "$ports")
    [ "$host" = 0.0.0.0 ] && host=$(hostname)
    export NCCLSCOPE_COLLECTOR_ADDR="tcp://$host:$port"
    # The CLI's default collector, for `ncclscope status` inside the job.
    export NCCLSCOPE_COLLECTOR="http://127.0.0.1:$(awk '$1 == "http" { print $2 }' "$ports")"
    _nsc_log "collector $NCCLSCOPE_COLLECTOR_ADDR, store $NCCLSCOPE_JOBDIR/db"
}

# One agent per node as a job step that shares the nodes' CPUs with the ranks
# (--overlap), then a second step that waits for every node's socket.
_nsc_start_agents() {
    srun --ntasks-per-node=1 --nodes="${SLURM_JOB_NUM_NODES:-1}" --overlap --kill-on-bad-exit=0 \
        --job-name=ncclscope-agent --output="$NCCLSCOPE_JOBDIR/agent-%N.log" \
        bash -c 'mkdir -p "$2" && exec "$1" --rundir "$2" --collector "$3" --http 127.0.0.1:0' \
        _ "$NCCLSCOPE_BIN/ncclscope-agent" "$NCCLSCOPE_RUNDIR" "$NCCLSCOPE_COLLECTOR_ADDR" &
    _nsc_agents_pid=$!
    srun --ntasks-per-node=1 --nodes="${SLURM_JOB_NUM_NODES:-1}" --overlap \
        bash -c 'for i in $(seq 300); do [ -S "$1/agent.sock" ] && exit 0; sleep 0.1; done; echo "no agent on $(hostname)" >&2; exit 1' \
        _ "$NCCLSCOPE_RUNDIR" || { _nsc_log "agents did not start: $NCCLSCOPE_JOBDIR/agent-*.log"; return 1; }
    _nsc_log "agents on ${SLURM_JOB_NUM_NODES:-1} node(s), rundir $NCCLSCOPE_RUNDIR"
}

ncclscope_start() {
    mkdir -p "$NCCLSCOPE_JOBDIR" || return 1
    if [ -z "${NCCLSCOPE_COLLECTOR_ADDR:-}" ]; then
        _nsc_start_collector || return 1
    fi
    _nsc_start_agents || return 1
    # What the ranks need; the plugin takes the job name from SLURM_JOB_ID.
    export NCCL_PROFILER_PLUGIN=$NCCLSCOPE_PLUGIN NCCLSCOPE_RUNDIR
}

# Stop in data-flow order: agents first (SIGTERM: each drains its spool to the
# collector, up to its drain_ms), then the collector (SIGTERM: last commit, close).
# The agents get SIGTERM through `scancel --signal` on their step: a SIGTERM to srun
# itself would end the step with SIGKILL before the spools are drained. Safe under
# `set -e` (it is meant for an EXIT trap).
ncclscope_stop() {
    local step rc=0
    if [ -n "$_nsc_agents_pid" ]; then
        step=$(squeue -h --steps -j "$SLURM_JOB_ID" -o '%i %j' | awk '$2 == "ncclscope-agent" { print $1 }')
        if [ -n "$step" ]; then scancel --signal=TERM "$step" || rc=1; else kill -TERM "$_nsc_agents_pid" || rc=1; fi
        wait "$_nsc_agents_pid" || { rc=1; _nsc_log "the agents' step ended badly: $NCCLSCOPE_JOBDIR/agent-*.log"; }
        _nsc_agents_pid=
    fi
    if [ -n "$_nsc_collector_pid" ]; then
        # The job's final report, while the collector still serves it.
        if [ -x "$NCCLSCOPE_BIN/ncclscope" ]; then
            "$NCCLSCOPE_BIN/ncclscope" --job "$SLURM_JOB_ID" status --json >"$NCCLSCOPE_JOBDIR/status.json" \
                && "$NCCLSCOPE_BIN/ncclscope" --job "$SLURM_JOB_ID" status \
                || { rc=1; _nsc_log "no final status from the collector"; }
        fi
        kill -TERM "$_nsc_collector_pid" || rc=1
        wait "$_nsc_collector_pid" || { rc=1; _nsc_log "the collector exited badly: $NCCLSCOPE_JOBDIR/collector.log"; }
        _nsc_collector_pid=
        _nsc_log "store kept in $NCCLSCOPE_JOBDIR/db (ncclscope --db $NCCLSCOPE_JOBDIR/db status)"
    fi
    unset NCCL_PROFILER_PLUGIN
    return $rc
}

#!/bin/bash
# e2e.sh: one end-to-end run: the emulator drives the plugin while the test
# receiver listens on every simulated node's socket; then the emulator's
# summary and the receiver's are compared (e2e_compare.c).
#
#   e2e.sh BIN_DIR PLUGIN [--drops] [--late MS] [--no-agent] -- EMULATOR_ARGS...
#
# --late MS: the receiver starts MS after the emulator (an agent that comes up
# late; implies --drops). --no-agent: no receiver at all; the run must still
# finish, every rank exiting 0.
set -euo pipefail
bin=$1 plugin=$2
shift 2
drops="" late="" noagent=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
    --drops) drops=--drops ;;
    --late) late=$2; drops=--drops; shift ;;
    --no-agent) noagent=1 ;;
    *) echo "e2e.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
shift
. "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"

eps=""
for n in 0 1 2 3; do eps="$eps${eps:+,}ipc://$dir/node$n/agent.sock"; done
start_receiver() {
    "$bin/ncclscope-test-receiver" "$eps" "$dir/recv.json" --ready "$dir/ready" &
    pids[receiver]=$!
    wait_until 5 test -e "$dir/ready" || die "receiver not ready"
}

export NCCLSCOPE_EVENT_MASK=${NCCLSCOPE_EVENT_MASK:-all}
export NCCLSCOPE_RUNDIR="$dir/node0" # replay runs in-process; clusters set it per node
[ -z "$late$noagent" ] && start_receiver
"$bin/ncclscope-emu" --plugin "$plugin" --rundir-base "$dir" --summary "$dir/emu.json" "$@" &
epid=$!
if [ -n "$late" ]; then
    sleep "$(awk "BEGIN{print $late/1000}")"
    start_receiver
fi
wait $epid
# A rank failed if it exited non-zero or died of any signal but the kill
# scenario's own SIGKILL (9).
! grep -Eq '"exit_code":[1-9]|"signal":([1-8]|[1-9][0-9])[,}]' "$dir/emu.json" || die "a rank failed"
[ -z "$noagent" ] || exit 0
stop receiver
"$bin/nsc-e2e-compare" "$dir/emu.json" "$dir/recv.json" $drops

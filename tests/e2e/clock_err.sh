#!/bin/bash
# clock_err.sh: the plugin's clock conversion bound reaches the bounds a user
# reads (issue 35). The ranks stamp with the CPU's counter and run under the
# clock shim, which makes each CLOCK_MONOTONIC read of the plugin's shipper
# thread take SLOW_NS: the plugin's calibration pairs (a counter read between
# two of them) are then bracketed that wide, a conversion bound of at least
# SLOW_NS / 2 that it measures and sends in its batch headers (clock_err_ns),
# while its times stay as exact as before (the shim returns the read's
# middle), so the agent's GPU line is no worse. Through the real agent and
# collector, every rank's last ledger record has a gpu_err_ns, and so a
# gpu_bound_ns over clock_err_ns, of at least SLOW_NS / 2 in /api/v1/ledger,
# and in /api/v1/collectives a kernel start of the last ten collectives has a
# bound at least that much over its enqueue's (the host model's). Skipped
# (77) where the plugin would not read the counter (an x86-64 TSC that is not
# invariant).
#
#   clock_err.sh BIN_DIR PLUGIN
set -euo pipefail
bin=$1 plugin=$2
nodes=1
case $(uname -m) in
x86_64) grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo ||
    { echo "clock_err.sh: no invariant TSC, the plugin reads CLOCK_MONOTONIC: skipped"; exit 77; } ;;
aarch64) ;;
*) echo "clock_err.sh: no counter clock on $(uname -m): skipped"; exit 77 ;;
esac
. "$(dirname "$0")/lib.sh"
slow_ns=150000

start_all
# --time-scale 0: no time model, so the launcher leaves the plugin on the
# counter (it sets NCCLSCOPE_CLOCK=monotonic where it preloads the shim)
LD_PRELOAD=$bin/../lib/libnsc-clockshim.so NCCLSCOPE_TEST_CLOCK_SLOW_NS=$slow_ns \
    NCCLSCOPE_TEST_CLOCK_SLOW_THREAD=ncclscope-ship scenario=ring emulate --time-scale 0 --iters 50 --pace-us 20000
settled() { metric_is 0 ncclscope_agent_ledger_open 0 && delivered 0; }
wait_until 20 settled || die "the agent did not deliver its spool and ledger"
wait_collector_metric ncclscope_collector_ledger_records_stored_total "$(metric 0 ncclscope_agent_ledger_spooled_total)"
api="http://127.0.0.1:$http/api/v1"
comm=$(curl -sf "$api/comms?job=$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["comms"][0]["comm"])')
curl -sf "$api/ledger?job=$job&comm=$comm&limit=1000000" >"$dir/ledger" || die "ledger"
curl -sf "$api/collectives?job=$job&comm=$comm&limit=1000000" >"$dir/colls" || die "collectives"
python3 - "$dir/ledger" "$dir/colls" "$((slow_ns / 2))" <<'PY' || die "the plugin's clock error is not in the bounds"
import json, sys
least = int(sys.argv[3])
recs = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "record" and r["gpu_bound_ns"] is not None]
colls = [c for c in map(json.loads, open(sys.argv[2])) if c["kind"] == "collective"]
if not recs or not colls:
    sys.exit("no ledger record with GPU times, or no collective")
last = {}
for r in recs:
    if r["seq"] >= last.get(r["rank"], r)["seq"]:
        last[r["rank"]] = r
fail = []
for rank, r in sorted(last.items()):
    print("clock_err.sh: rank %d seq %d: gpu_err_ns %d (first record %d), gpu_bound_ns %d, clock_err_ns %d" %
          (rank, r["seq"], r["gpu_err_ns"], min(recs, key=lambda x: x["seq"])["gpu_err_ns"], r["gpu_bound_ns"], r["clock_err_ns"]))
    if r["gpu_err_ns"] < least or r["gpu_bound_ns"] < r["clock_err_ns"] + least:
        fail.append("ledger rank %d seq %d: gpu_err_ns %d" % (rank, r["seq"], r["gpu_err_ns"]))
# The collectives' kernel bounds are the ledger's narrowed by causality (a
# kernel starts after its enqueue, ends after every rank's started: docs/api.md,
# "Figures"), which may cut any one of them: among the last ten collectives'
# ranks, the widest kernel start bound over the enqueue's (the host model's,
# within 1 us of it so close by) is the conversion's.
tail = sorted(colls, key=lambda c: c["seq"])[-10:]
wide = max((x["kernel_start_err_ns"] - x["enqueue_err_ns"], c["seq"], x["rank"])
           for c in tail for x in c["ranks"] if x["kernel_start_err_ns"] is not None)
print("clock_err.sh: collectives: widest kernel start bound over the enqueue's %d (seq %d rank %d)" % wide)
if wide[0] < least - 1000:
    fail.append("collectives: the widest kernel start bound over the enqueue's is %d" % wide[0])
sys.exit("; ".join(fail) if fail else 0)
PY
stop agent0
stop collector

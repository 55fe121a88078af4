#!/usr/bin/env bash
# rundir.sh BIN_DIR: the agent runs only in a run directory and a spool that
# are its user's alone, so nothing another local user planted there can
# redirect what it writes (docs/faults.md, "Hardening II"):
#   - writable by others or by the group, a symbolic link, or (as root) a
#     directory another user owns: the agent exits at once and says why;
#   - the report's case, as root: another user's 0777 rundir with
#     spool/lock.mdb linked to a root-owned 0600 file: refused, the file intact;
#   - a private directory works; as root with no rundir set, the agent takes
#     /run/ncclscope (checked in a private mount namespace with its own /run,
#     skipped where unshare cannot make one).
set -euo pipefail
bin=$1
dir=$(mktemp -d /tmp/nsc-rundir.XXXXXX)
trap 'rm -rf "$dir"' EXIT
die() { echo "rundir.sh: $*" >&2; exit 1; }
mkd() { mkdir "$1" && chmod "$2" "$1"; }  # mkd DIR MODE, whatever the umask

refused() {  # refused WHY_REGEX ARGS...: the agent exits non-zero at once, saying WHY
    local why=$1; shift
    if timeout 10 "$bin/ncclscope-agent" --http off "$@" >"$dir/out" 2>&1; then die "the agent ran with $*"; fi
    grep -q -- "$why" "$dir/out" || die "the agent with $* said: $(cat "$dir/out")"
}
runs() {  # runs RUNDIR ARGS...: the agent binds its socket there and stops on SIGTERM
    local run=$1; shift
    "$bin/ncclscope-agent" --http off "$@" 2>"$dir/out" &
    local pid=$! i=0
    while [ ! -S "$run/agent.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ -S "$run/agent.sock" ] || { kill "$pid" 2>/dev/null; die "no socket in $run: $(cat "$dir/out")"; }
    kill -TERM "$pid" && wait "$pid" || die "the agent in $run did not stop cleanly"
}

mkd "$dir/open" 0777
refused "refusing rundir $dir/open is writable by others" --rundir "$dir/open"
mkd "$dir/group" 0775
refused "refusing rundir $dir/group is writable by its group" --rundir "$dir/group"
mkd "$dir/real" 0755
ln -s "$dir/real" "$dir/link"
refused "refusing rundir $dir/link is a symbolic link" --rundir "$dir/link"
mkd "$dir/ok" 0755
mkd "$dir/openspool" 0777
refused "refusing spool $dir/openspool is writable by others" --rundir "$dir/ok" --spool "$dir/openspool"
runs "$dir/ok" --rundir "$dir/ok"
runs "$dir/new" --rundir "$dir/new"  # made by the agent
[ "$(stat -c %a "$dir/new")" = 755 ] || die "rundir made with mode $(stat -c %a "$dir/new")"

if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1; then
    echo "rundir.sh: ok (not root: another user's directory not tried)"
    exit 0
fi
mkd "$dir/planted" 0777
mkd "$dir/planted/spool" 0777
echo secret >"$dir/target"
chmod 0600 "$dir/target"
ln -s "$dir/target" "$dir/planted/spool/lock.mdb"
chown -hR nobody "$dir/planted"
refused "belongs to uid $(id -u nobody), not to this user (uid 0)" --rundir "$dir/planted"
[ "$(cat "$dir/target")" = secret ] && [ "$(stat -c %s "$dir/target")" = 7 ] || die "written through the planted link"
chmod 0755 "$dir/planted"  # not writable by others, but still another user's
refused "belongs to uid $(id -u nobody)" --rundir "$dir/planted"

if unshare -m true 2>/dev/null; then
    unshare -m bash -c '
        mount -t tmpfs -o mode=0755 none /run || exit 77
        unset NCCLSCOPE_RUNDIR XDG_RUNTIME_DIR
        "$1/ncclscope-agent" --http off 2>"$2/out" & pid=$! i=0
        while [ ! -S /run/ncclscope/agent.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        [ -S /run/ncclscope/agent.sock ] || { kill $pid; exit 1; }
        kill -TERM $pid && wait $pid' _ "$bin" "$dir" && echo "default rundir as root: /run/ncclscope" ||
        { [ $? = 77 ] && echo "rundir.sh: default rundir not tried (no tmpfs on /run here)"; } ||
        die "root's default rundir is not /run/ncclscope: $(cat "$dir/out")"
else
    echo "rundir.sh: default rundir not tried (unshare -m refused)"
fi
echo "rundir.sh: ok"

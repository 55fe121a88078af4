#!/bin/bash
# containers.sh SRC_DIR: build the container images of containers/Dockerfile with
# podman (chroot isolation, no registry) from a locally made Debian 12 base, and run
# what is inside each with buildah. About a minute on 2 cores (the build stage
# compiles the agent, collector, CLI and plugin with -j2); NCCLSCOPE_TEST_CONTAINERS=0
# skips it. Needs root, podman, buildah and debootstrap (scripts/deps.sh --test).
#
# The base image docker.io/library/debian:bookworm is debootstrapped (minbase) once
# and cached as a tarball in $NCCLSCOPE_TEST_CACHE (default /var/cache/ncclscope-test);
# podman keeps the imported image and the build stage's layers between runs.
set -euo pipefail
src=$(cd "$1" && pwd)
. "$(dirname "$0")/lib.sh"
[ "${NCCLSCOPE_TEST_CONTAINERS:-1}" = 0 ] && skip "container images: NCCLSCOPE_TEST_CONTAINERS=0"
need_root "podman and buildah run as root here"
need_cmds "container test" podman buildah debootstrap
cache=${NCCLSCOPE_TEST_CACHE:-/var/cache/ncclscope-test}
base=docker.io/library/debian:bookworm
tag=ncclscope-test-$$
ctrs=()
# Every image this run makes (the three targets and the build stage's layers) is
# removed at the end; what existed before, the base included, stays.
before=unset
cleanup() {
    for c in "${ctrs[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
    [ "$before" = unset ] && return
    comm -13 <(echo "$before") <(podman images -a -q --no-trunc | sort -u) | xargs -r podman rmi -f >/dev/null 2>&1 || true
}
trap cleanup EXIT
t0=$SECONDS
step() { echo "== [$((SECONDS - t0)) s] $*"; }

# The base: debootstrap once; apt inside gets the host's sources and its settings
# about the mirror (e.g. Check-Valid-Until for a snapshot mirror).
make_base() {
    local tarball=$cache/bookworm-minbase.tar root=$cache/rootfs.$$
    if [ ! -s "$tarball" ]; then
        step "debootstrap bookworm minbase into $root"
        mkdir -p "$cache"
        debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 \
            || { tail -20 "$cache/debootstrap.log"; fail "debootstrap"; }
        grep -rlE 'Check-Valid-Until|Check-Date' /etc/apt/apt.conf.d 2>/dev/null \
            | while read -r f; do cp "$f" "$root/etc/apt/apt.conf.d/"; done
        rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*
        tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
        rm -rf "$root"
    fi
    step "podman import $tarball as $base"
    podman import "$tarball" "$base" >/dev/null
}
podman image exists "$base" || make_base
before=$(podman images -a -q --no-trunc | sort -u)

# run_in IMAGE CMD...: run CMD in a fresh container of IMAGE, print its output.
run_in() {
    local image=$1 c; shift
    c=$(buildah from --pull-never "$image") || fail "buildah from $image"
    ctrs+=("$c")
    buildah run --isolation chroot "$c" -- "$@"
}
build() {  # build TARGET
    step "podman build --target $1"
    podman build --isolation=chroot --pull=never --build-arg JOBS=2 \
        -f "$src/containers/Dockerfile" --ignorefile "$src/containers/Dockerfile.dockerignore" \
        --target "$1" -t "localhost/ncclscope-$1:$tag" "$src" >"$cache/build-$1.log" 2>&1 \
        || { tail -40 "$cache/build-$1.log"; fail "building the $1 image"; }
    echo "image ncclscope-$1: $(podman image inspect --format '{{.Size}}' "localhost/ncclscope-$1:$tag") bytes"
}

build agent
out=$(run_in "localhost/ncclscope-agent:$tag" ncclscope-agent --help 2>&1) || fail "agent --help: $out"
grep -q -- '--rundir' <<<"$out" || fail "agent --help does not list --rundir: $out"
# The agent starts, binds its socket in the run dir and stops cleanly on SIGTERM.
run_in "localhost/ncclscope-agent:$tag" sh -c '
    ncclscope-agent --rundir /tmp/r --http off & a=$!
    i=0; while [ ! -S /tmp/r/agent.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
    [ -S /tmp/r/agent.sock ] || { echo "no socket"; exit 1; }
    kill -TERM $a; wait $a' || fail "the agent did not run in its image"
# Slim: no compiler, no headers.
run_in "localhost/ncclscope-agent:$tag" sh -c '! command -v cc && [ ! -e /usr/include/zmq.h ]' >/dev/null \
    || fail "the agent image contains build tools"

build plugin
lib=/opt/ncclscope/lib
# The plugin image has no libzmq of its own: everything the plugin needs must come
# from its bundle, through the plugin's RPATH.
out=$(run_in "localhost/ncclscope-plugin:$tag" ldd "$lib/libnccl-profiler-ncclscope.so") || fail "ldd: $out"
grep -q 'not found' <<<"$out" && fail "unresolved plugin dependencies: $out"
grep -qE "libzmq\.so\.5 => $lib/libzmq\.so\.5" <<<"$out" || fail "libzmq not taken from the bundle: $out"
# What the init container does: copy the bundle into a volume.
out=$(run_in "localhost/ncclscope-plugin:$tag" sh -c 'mkdir /ncclscope && cp -a /opt/ncclscope/lib/. /ncclscope/ && ls -l /ncclscope')
grep -q 'libnccl-profiler.so -> libnccl-profiler-ncclscope.so' <<<"$out" || fail "the init copy lost the symlinks: $out"
# The API versions the bundle serves, one exported struct each (the NCCL versions and
# distributions behind them: docs/plugin.md, "NCCL versions and layouts").
for v in 3 4 5 6 7; do
    run_in "localhost/ncclscope-plugin:$tag" grep -qa "ncclProfiler_v$v" "$lib/libnccl-profiler-ncclscope.so" ||
        fail "the bundled plugin lacks ncclProfiler_v$v"
done
echo "serves ncclProfiler_v3..v7: NCCL 2.26 and later and RCCL; v7 to NCCL 2.31.x and RCCL only"
# The highest glibc and libstdc++ versions the bundle needs (docs/kubernetes.md).
run_in "localhost/ncclscope-plugin:$tag" sh -c "cat $lib/*.so* | grep -aoE 'GLIBC(XX)?_[0-9]+\.[0-9.]+' | sort -Vu | awk -F_ '{m[\$1]=\$0} END {for (k in m) print \"needs \" m[k]}'"

if [ -e "$src/collector/CMakeLists.txt" ]; then
    build collector
    progs=(ncclscope-collector)
    if [ -e "$src/cli/CMakeLists.txt" ]; then progs+=(ncclscope); else echo "NOT TESTED: the CLI in the collector image (no cli/ in this tree)"; fi
    for p in "${progs[@]}"; do
        out=$(run_in "localhost/ncclscope-collector:$tag" "$p" --help 2>&1) || fail "$p --help: $out"
        grep -q '^usage' <<<"$out" || fail "$p --help prints no usage: $out"
    done
    out=$(run_in "localhost/ncclscope-collector:$tag" id -u)
    [ "$out" = 10001 ] || fail "the collector image runs as uid $out, not 10001"
    # It opens its store in the image's volume as that user, binds and stops on SIGTERM.
    run_in "localhost/ncclscope-collector:$tag" sh -c '
        ncclscope-collector --listen tcp://127.0.0.1:0 --http off --port-file /var/lib/ncclscope/ports & c=$!
        i=0; while [ ! -s /var/lib/ncclscope/ports ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
        grep -q "^zmq [0-9]" /var/lib/ncclscope/ports || { echo "no port file"; exit 1; }
        kill -TERM $c; wait $c && [ -e /var/lib/ncclscope/db/data.mdb ]' || fail "the collector did not run in its image"
else
    echo "NOT TESTED: the collector image (no collector/ in this tree)"
fi
step "done"

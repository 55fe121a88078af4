#!/bin/sh
# plugin-bundle.sh PLUGIN.so OUTDIR: copy the NCCL plugin and the shared libraries it
# needs beyond the C and C++ runtimes into OUTDIR, and give the plugin the RPATH
# $ORIGIN, so a training image without libzmq loads it from OUTDIR. DT_RPATH (not
# RUNPATH) because glibc also searches a loader's RPATH for its dependencies'
# dependencies (libzmq -> libsodium ...). Used by the `build` stage of the Dockerfile.
set -eu
plugin=$1 out=$2
mkdir -p "$out"
cp "$plugin" "$out/libnccl-profiler-ncclscope.so"
# Every resolved dependency except glibc's own libraries, libstdc++ and libgcc_s,
# which a training image always has (and must not be shadowed).
ldd "$plugin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' \
    | grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' \
    | while read -r lib; do cp -L "$lib" "$out/"; done
patchelf --force-rpath --set-rpath '$ORIGIN' "$out/libnccl-profiler-ncclscope.so"
ln -sf libnccl-profiler-ncclscope.so "$out/libnccl-profiler.so"
ln -sf libnccl-profiler-ncclscope.so "$out/librccl-profiler-ncclscope.so"

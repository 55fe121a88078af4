#!/usr/bin/env bash
# The aarch64 (Grace Hopper, Grace Blackwell) cross build: what it needs on a
# Debian 12 x86-64 host and the test stage that runs its binaries under qemu-user.
#   scripts/aarch64.sh deps    install the cross compiler and qemu-user, build the
#                              arm64 sysroot, let the kernel run aarch64 programs
#   scripts/aarch64.sh test    deps, then cross-build everything into build-aarch64/
#                              and run the tests labelled aarch64 under qemu-user
# Where the packages cannot be had (no root, apt failing) `test` prints
# "aarch64: skipped: REASON" and exits 0; once they are there, a failure fails it.
# Why a sysroot and not multiarch packages: see docs/aarch64.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/lib.sh

cache=${NCCLSCOPE_AARCH64_CACHE:-/var/cache/ncclscope-aarch64}
sysroot=$cache/sysroot
host_pkgs=(gcc-aarch64-linux-gnu qemu-user)
# What the build links against; their Depends are followed, minus the C++ and
# compiler packages below (the cross compiler brings its own libgcc; no target is C++).
dev_pkgs=(libc6-dev libzmq3-dev liblmdb-dev libevent-dev libzstd-dev libcurl4-openssl-dev libmsgpack-dev libcriterion-dev)
not_needed='^(libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev|libboost|libmsgpack-cxx-dev|libicu-dev|icu-devtools|lib(a|hwa|l|t|ub)san[0-9]+)$'

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
export DEBIAN_FRONTEND=noninteractive

# The host's cross compiler and qemu-user, never at the price of removing a package.
host_tools() {
  local missing=() p
  for p in "${host_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  $SUDO apt-get update -qq || return 1
  if apt-get -s install --no-install-recommends "${missing[@]}" | grep -q '^Remv'; then
    echo "installing ${missing[*]} would remove packages" >&2; return 1
  fi
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# apt's view of the arm64 archive (the sysroot's packages come from it).
arm64_lists() {
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64 || return 1
    $SUDO apt-get update -qq || return 1
  fi
  apt-cache show --no-all-versions libc6:arm64 >/dev/null 2>&1 || $SUDO apt-get update -qq
}

# The dev packages and everything they depend on, one apt-cache call a level;
# prints PACKAGE:arm64=VERSION lines.
arm64_closure() {
  local seen=" " level=("${dev_pkgs[@]/%/:arm64}") next p
  while [ ${#level[@]} -gt 0 ]; do
    seen+="${level[*]} "
    next=()
    for p in $(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
                 --no-replaces --no-enhances "${level[@]}" |
               awk '$1 ~ /^\|?(Pre)?Depends:$/ && $2 ~ /:arm64$/ {print $2}' | sort -u); do
      [[ $seen == *" $p "* || ${p%:arm64} =~ $not_needed ]] || next+=("$p")
    done
    level=("${next[@]}")
  done
  # shellcheck disable=SC2086
  apt-cache show --no-all-versions $seen | awk '/^Package:/{p=$2} /^Version:/{print p":arm64="$2}' | sort
}

# Extract the packages (no maintainer scripts run, nothing registered with dpkg)
# into a fresh sysroot; rebuilt only when the package set or a version changes.
arm64_sysroot() {
  local want stage deb link
  want=$(arm64_closure) || return 1
  [ -n "$want" ] || { echo "no arm64 packages resolved" >&2; return 1; }
  [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$want" ] && [ -d "$sysroot" ] && return 0
  echo "aarch64: building the sysroot ($(wc -l <<<"$want") packages) in $sysroot"
  $SUDO mkdir -p "$cache" && $SUDO chown "$(id -u)" "$cache" || return 1
  rm -rf "$cache/debs" "$cache/stage" && mkdir -p "$cache/debs" "$cache/stage"
  # shellcheck disable=SC2046
  (cd "$cache/debs" && apt-get download -qq -o APT::Sandbox::User="$(id -un)" $want) || return 1
  stage=$cache/stage
  for deb in "$cache"/debs/*.deb; do dpkg-deb -x "$deb" "$stage" || return 1; done
  # Absolute links (libfoo.so -> /lib/...) must stay inside the sysroot: made relative.
  find "$stage" -type l -lname '/*' | while read -r link; do
    ln -sfnr "$stage$(readlink "$link")" "$link"
  done
  rm -rf "$sysroot" && mv "$stage" "$sysroot" || return 1
  rm -rf "$cache/debs"
  echo "$want" >"$cache/stamp"
}

# Programs that start aarch64 programs (Criterion re-executes the test binary
# for each test, the emulator itself for each rank, the e2e scripts start the
# emulator) need the kernel to hand aarch64 ELF files to qemu: binfmt_misc.
binfmt() {
  local dir=/proc/sys/fs/binfmt_misc
  local magic=7f454c460201010000000000000000000200b700
  [ -e $dir/register ] || $SUDO mount -t binfmt_misc binfmt_misc $dir 2>/dev/null || return 1
  local f
  for f in "$dir"/*; do
    grep -qsx "magic $magic" "$f" && grep -qsx enabled "$f" && return 0
  done
  if [ -e $dir/qemu-aarch64 ]; then
    echo 1 | $SUDO tee $dir/qemu-aarch64 >/dev/null
  else
    printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64:F' |
      $SUDO tee $dir/register >/dev/null
  fi
}

skip_reason=""
deps() {
  host_tools || { skip_reason="cannot install ${host_pkgs[*]}"; return 1; }
  arm64_lists || { skip_reason="cannot add Debian's arm64 package lists"; return 1; }
  arm64_sysroot || { skip_reason="cannot build the arm64 sysroot in $sysroot"; return 1; }
  binfmt 2>/dev/null || { skip_reason="cannot register qemu-aarch64 with binfmt_misc"; return 1; }
}

# What runs under qemu-user, the tests labelled aarch64: the plugin's unit
# tests and the emulator's tests (its own and every plugin end-to-end run). Left out (CRITERION_TEST_PATTERN),
# for limits of Debian 12's qemu 7.2, not of aarch64: a child forked from a
# multithreaded program aborts in qemu (life/fork_mid_run and the two fork-child
# tests, whose parents run the shipper thread), and qemu treats
# MAP_FIXED_NOREPLACE as a hint, so the emulator's PXN guard pages cannot be
# placed (emu/pxn_foreign_addresses_fault_in_the_proxy_process).
qemu_left_out='!(life/fork_mid_run|life/idle_fork_children_stay_inert|life/fork_child_ships_only_its_own|emu/pxn_foreign_addresses_fault_in_the_proxy_process)'

stage() {
  local dir=$root/build-aarch64 jobs rc=0
  jobs=$(nproc 2>/dev/null || echo 2)
  if [ "${NCCLSCOPE_TEST_AARCH64:-1}" = 0 ]; then echo "aarch64: skipped: NCCLSCOPE_TEST_AARCH64=0"; return 0; fi
  deps || { echo "aarch64: skipped: $skip_reason"; return 0; }
  echo "== aarch64: cross-configure and build ($dir)"
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
    -DNCCLSCOPE_AARCH64_SYSROOT="$sysroot" >/dev/null
  cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; return 1; }
  echo "== aarch64: ctest under qemu-user"
  (cd "$dir" && QEMU_LD_PREFIX=$sysroot CRITERION_TEST_PATTERN=$qemu_left_out \
     ctest -V -j"$jobs" --timeout 300 -L '^aarch64$' >"$dir/ctest.log" 2>&1) || rc=$?
  ctest_report "$dir" aarch64 "$rc"
}

case "${1:-}" in
  deps) deps || { echo "aarch64: $skip_reason" >&2; exit 1; } ;;
  test) stage ;;
  *) echo "usage: $0 deps|test" >&2; exit 2 ;;
esac

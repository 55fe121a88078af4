# Cross-compiling for aarch64 Linux (Grace Hopper, Grace Blackwell) from an
# x86-64 Debian host with gcc-aarch64-linux-gnu, against an arm64 sysroot
# (scripts/aarch64.sh builds one from Debian's arm64 packages):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DNCCLSCOPE_AARCH64_SYSROOT=/var/cache/ncclscope-aarch64/sysroot
# ctest then runs the test programs under qemu-aarch64 (docs/aarch64.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

set(NCCLSCOPE_AARCH64_SYSROOT /var/cache/ncclscope-aarch64/sysroot CACHE PATH
    "arm64 root with the libraries' headers, .so files and pkg-config files")
set(CMAKE_SYSROOT ${NCCLSCOPE_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH ${NCCLSCOPE_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads only the sysroot's .pc files and prefixes their paths with it.
set(ENV{PKG_CONFIG_LIBDIR}
    "${NCCLSCOPE_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${NCCLSCOPE_AARCH64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${NCCLSCOPE_AARCH64_SYSROOT})

# Test programs that ctest starts itself run under qemu-user with the sysroot's
# dynamic loader and libraries.
find_program(NCCLSCOPE_QEMU_AARCH64 qemu-aarch64)
if(NCCLSCOPE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${NCCLSCOPE_QEMU_AARCH64} -L ${NCCLSCOPE_AARCH64_SYSROOT})
endif()

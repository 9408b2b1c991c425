# Shared part of the Debian cross toolchains in this folder: the file that
# includes it sets ARENA_TRIPLET (gcc-<triplet>), ARENA_PROCESSOR and
# ARENA_QEMU (the qemu-user binary that runs the target's programs).
#
# Headers and libraries of the target come from two places: the cross
# compiler's own sysroot (/usr/<triplet>, package libc6-dev-<arch>-cross) and
# Debian's multiarch packages of the target architecture (libcmocka-dev:<arch>,
# in /usr/lib/<triplet>), which the cross compiler searches too.  Programs run
# under qemu-user with the multiarch libc (/lib/<triplet>) as their runtime.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${ARENA_PROCESSOR})
set(CMAKE_C_COMPILER ${ARENA_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${ARENA_TRIPLET}-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR ${ARENA_QEMU})
set(CMAKE_FIND_ROOT_PATH /usr/${ARENA_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config must see the target's .pc files, never the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${ARENA_TRIPLET}/pkgconfig:/usr/share/pkgconfig)

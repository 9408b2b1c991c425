# SPDX-License-Identifier: MIT
# Shared part of the Debian cross toolchains in this folder: the file that
# includes it sets ARENA_TRIPLET (gcc-<triplet>), ARENA_PROCESSOR and
# ARENA_QEMU (the qemu-user binary that runs the target's programs).
#
# The target's libraries (cmocka, the adapter tests' libraries, and the C
# library its programs run with) come from one of two places:
#   - Debian's multiarch packages of the target architecture, installed
#     (libcmocka-dev:<arch> in /usr/lib/<triplet>), which the cross compiler
#     and qemu-user find by themselves;
#   - or those packages unpacked into a folder, -DARENA_TARGET_ROOT=<dir>
#     (what scripts/ci-cross.sh does, leaving the machine's packages alone).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${ARENA_PROCESSOR})
set(CMAKE_C_COMPILER ${ARENA_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${ARENA_TRIPLET}-g++)
set(CMAKE_FIND_ROOT_PATH /usr/${ARENA_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ARENA_TARGET_ROOT)

if(ARENA_TARGET_ROOT)
  set(arena_lib ${ARENA_TARGET_ROOT}/usr/lib/${ARENA_TRIPLET})
  foreach(lang C CXX)
    set(CMAKE_${lang}_STANDARD_INCLUDE_DIRECTORIES
      ${ARENA_TARGET_ROOT}/usr/include/${ARENA_TRIPLET} ${ARENA_TARGET_ROOT}/usr/include)
  endforeach()
  # The libraries' own dependencies (the C library) are the cross compiler's.
  string(APPEND CMAKE_EXE_LINKER_FLAGS_INIT " -Wl,-rpath-link,${arena_lib}")
  string(APPEND CMAKE_SHARED_LINKER_FLAGS_INIT " -Wl,-rpath-link,${arena_lib}")
  list(APPEND CMAKE_FIND_ROOT_PATH ${ARENA_TARGET_ROOT})
  set(ENV{PKG_CONFIG_LIBDIR} ${arena_lib}/pkgconfig:${ARENA_TARGET_ROOT}/usr/share/pkgconfig)
  set(ENV{PKG_CONFIG_SYSROOT_DIR} ${ARENA_TARGET_ROOT})
  # qemu-user looks for the program's loader and libraries in the folder
  # first, then on the machine.
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ARENA_QEMU} -L ${ARENA_TARGET_ROOT})
else()
  # pkg-config must see the target's .pc files, never the build machine's.
  set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${ARENA_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ARENA_QEMU})
endif()

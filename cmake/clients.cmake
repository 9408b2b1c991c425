# SPDX-License-Identifier: MIT
# The C libraries the adapters (arena/hooks.h) are tested and shown with:
# tests/clients and the adapter examples build against the real Debian
# packages (scripts/deps.sh test installs them), found with pkg-config.
#   ARENA_CLIENTS=AUTO  every library found; a warning names the others
#   ARENA_CLIENTS=ON    all of them, configuration fails when one is missing
#   ARENA_CLIENTS=OFF   none
# Each library found defines an imported target PkgConfig::ARENA_CLIENT_<name>;
# protobuf-c also needs its compiler, protoc-c (ARENA_PROTOC_C).
set(ARENA_CLIENTS AUTO CACHE STRING
  "Build tests and examples with cJSON, Lua 5.4, zlib, expat, protobuf-c: AUTO, ON or OFF")
set_property(CACHE ARENA_CLIENTS PROPERTY STRINGS AUTO ON OFF)

if(NOT ARENA_CLIENTS STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  find_program(ARENA_PROTOC_C protoc-c)
  set(arena_clients_missing "")
  foreach(name_module cjson:libcjson lua:lua5.4 zlib:zlib expat:expat protobufc:libprotobuf-c)
    string(REPLACE ":" ";" nm ${name_module})
    list(GET nm 0 name)
    list(GET nm 1 module)
    if(PkgConfig_FOUND)
      pkg_check_modules(ARENA_CLIENT_${name} QUIET IMPORTED_TARGET ${module})
    endif()
    if(NOT TARGET PkgConfig::ARENA_CLIENT_${name})
      list(APPEND arena_clients_missing ${module})
    endif()
  endforeach()
  if(TARGET PkgConfig::ARENA_CLIENT_protobufc AND NOT ARENA_PROTOC_C)
    list(APPEND arena_clients_missing protoc-c)
  endif()
  if(arena_clients_missing)
    string(REPLACE ";" ", " arena_clients_missing "${arena_clients_missing}")
    set(arena_clients_message "not found: ${arena_clients_missing} (scripts/deps.sh test installs "
        "them, scripts/deps.sh ci their i386 builds too)")
    if(ARENA_CLIENTS STREQUAL "ON")
      message(FATAL_ERROR "ARENA_CLIENTS=ON: ${arena_clients_message}")
    endif()
    message(WARNING "The adapter tests and examples for these libraries are not built, "
                    ${arena_clients_message})
  endif()
endif()

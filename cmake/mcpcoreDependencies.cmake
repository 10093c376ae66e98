# SPDX-License-Identifier: Apache-2.0
# The dependencies of each mcpcore component, and how a missing one is reported: used by the
# build (CMakeLists.txt) and installed beside mcpcoreConfig.cmake, which asks only for the
# components a consumer names (docs/configuration.md#cmake-components).
#
#   core       simdjson, RE2 (schema patterns, docs/schema.md#patterns), Threads
#   sqlite     core + SQLite 3.35
#   postgres   core + libpq (with pkg-config: the imported target PkgConfig::libpq)
#   transport  core + Asio, http-parser, OpenSSL 3
#   oauth      core + cjose (with jansson and libcrypto) and cpp-httplib (with pkg-config: the
#              imported targets PkgConfig::cjose and PkgConfig::cpp_httplib)
#
# mcpcore_find_component_dependencies(<component> <result-var> [QUIET])
#   Finds every dependency of <component>. On success sets <result-var> to ""; otherwise to a
#   message naming the component, the dependency and the Debian package that provides it.
#   A macro, so that the imported targets and *_FOUND variables land in the caller's scope.
# _mcpcore_find_pc_module(<component> <prefix> <module> <what> <debian> <result-var>): the imported
# target PkgConfig::<prefix> from pkg-config's <module>, or a message in <result-var>.
macro(_mcpcore_find_pc_module _pc_component _pc_prefix _pc_module _pc_what _pc_debian _pc_result)
  find_package(PkgConfig QUIET)
  if(NOT PKG_CONFIG_FOUND)
    set(${_pc_result} "mcpcore component `${_pc_component}` needs pkg-config to find ${_pc_what}: apt install pkgconf")
  else()
    if(NOT TARGET PkgConfig::${_pc_prefix})
      pkg_check_modules(${_pc_prefix} QUIET IMPORTED_TARGET ${_pc_module})
    endif()
    if(NOT TARGET PkgConfig::${_pc_prefix})
      set(${_pc_result} "mcpcore component `${_pc_component}` needs ${_pc_what}: apt install ${_pc_debian}")
    endif()
  endif()
endmacro()

macro(mcpcore_find_component_dependencies _mcpcore_component _mcpcore_result)
  set(${_mcpcore_result} "")
  set(_mcpcore_quiet "")
  if("${ARGN}" STREQUAL "QUIET")
    set(_mcpcore_quiet QUIET)
  endif()
  if("${_mcpcore_component}" STREQUAL "core")
    find_package(Threads ${_mcpcore_quiet})
    if(NOT Threads_FOUND)
      set(${_mcpcore_result} "mcpcore component `core` needs Threads (a POSIX threads library): apt install libc6-dev")
    endif()
    if(NOT ${_mcpcore_result})
      find_package(simdjson CONFIG QUIET)
      if(NOT simdjson_FOUND OR simdjson_VERSION VERSION_LESS 3.0)
        set(${_mcpcore_result} "mcpcore component `core` needs simdjson 3.0 or later: apt install libsimdjson-dev")
      endif()
    endif()
    if(NOT ${_mcpcore_result})
      # Debian 12's libre2-dev ships a pkg-config file and no CMake package.
      _mcpcore_find_pc_module(core RE2 re2 RE2 libre2-dev ${_mcpcore_result})
    endif()
  elseif("${_mcpcore_component}" STREQUAL "sqlite")
    find_package(SQLite3 3.35 QUIET)
    if(NOT SQLite3_FOUND)
      set(${_mcpcore_result} "mcpcore component `sqlite` needs SQLite 3.35 or later: apt install libsqlite3-dev")
    endif()
  elseif("${_mcpcore_component}" STREQUAL "postgres")
    # Debian 12's libpq-dev ships a pkg-config file; the build links the same PkgConfig::libpq.
    _mcpcore_find_pc_module(postgres libpq libpq libpq libpq-dev ${_mcpcore_result})
  elseif("${_mcpcore_component}" STREQUAL "transport")
    find_package(Asio 1.22 QUIET)
    if(NOT Asio_FOUND)
      set(${_mcpcore_result} "mcpcore component `transport` needs Asio: apt install libasio-dev")
    endif()
    if(NOT ${_mcpcore_result})
      find_package(HttpParser 2.9 QUIET)
      if(NOT HttpParser_FOUND)
        set(${_mcpcore_result} "mcpcore component `transport` needs http-parser: apt install libhttp-parser-dev")
      endif()
    endif()
    if(NOT ${_mcpcore_result})
      find_package(OpenSSL 3 QUIET)
      if(NOT OpenSSL_FOUND)
        set(${_mcpcore_result} "mcpcore component `transport` needs OpenSSL 3: apt install libssl-dev")
      endif()
    endif()
  elseif("${_mcpcore_component}" STREQUAL "oauth")
    # Debian 12's libcjose-dev ships a pkg-config file that requires jansson's (libjansson-dev).
    _mcpcore_find_pc_module(oauth cjose cjose "cjose (and jansson)" "libcjose-dev libjansson-dev" ${_mcpcore_result})
    if(NOT ${_mcpcore_result})
      _mcpcore_find_pc_module(oauth cpp_httplib cpp-httplib cpp-httplib libcpp-httplib-dev ${_mcpcore_result})
    endif()
  else()
    set(${_mcpcore_result} "mcpcore has no component `${_mcpcore_component}` (components: core, sqlite, postgres, transport, oauth)")
  endif()
  unset(_mcpcore_quiet)
endmacro()

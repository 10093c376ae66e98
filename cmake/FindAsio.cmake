# SPDX-License-Identifier: Apache-2.0
# Finds standalone Asio (Debian's libasio-dev ships neither a CMake config nor a .pc file).
# Defines Asio_FOUND, Asio_VERSION, Asio_INCLUDE_DIR and the target asio::asio.
find_path(Asio_INCLUDE_DIR NAMES asio.hpp)
if(Asio_INCLUDE_DIR AND EXISTS "${Asio_INCLUDE_DIR}/asio/version.hpp")
  file(STRINGS "${Asio_INCLUDE_DIR}/asio/version.hpp" _asio_line REGEX "^#define ASIO_VERSION [0-9]+")
  string(REGEX REPLACE "^#define ASIO_VERSION ([0-9]+).*" "\\1" _asio_n "${_asio_line}")
  math(EXPR _asio_major "${_asio_n} / 100000")
  math(EXPR _asio_minor "${_asio_n} / 100 % 1000")
  math(EXPR _asio_patch "${_asio_n} % 100")
  set(Asio_VERSION "${_asio_major}.${_asio_minor}.${_asio_patch}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Asio REQUIRED_VARS Asio_INCLUDE_DIR VERSION_VAR Asio_VERSION)
if(Asio_FOUND AND NOT TARGET asio::asio)
  find_package(Threads REQUIRED)
  add_library(asio::asio INTERFACE IMPORTED)
  set_target_properties(asio::asio PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${Asio_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "ASIO_STANDALONE;ASIO_NO_DEPRECATED"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
mark_as_advanced(Asio_INCLUDE_DIR)

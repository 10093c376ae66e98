# SPDX-License-Identifier: Apache-2.0
# Finds the Node.js http-parser C library (Debian's libhttp-parser-dev ships no CMake config).
# Defines HttpParser_FOUND, HttpParser_VERSION and the target HttpParser::HttpParser.
find_path(HttpParser_INCLUDE_DIR NAMES http_parser.h)
find_library(HttpParser_LIBRARY NAMES http_parser)
if(HttpParser_INCLUDE_DIR AND EXISTS "${HttpParser_INCLUDE_DIR}/http_parser.h")
  foreach(_part MAJOR MINOR PATCH)
    file(STRINGS "${HttpParser_INCLUDE_DIR}/http_parser.h" _hp_line REGEX "^#define HTTP_PARSER_VERSION_${_part} [0-9]+")
    string(REGEX REPLACE "^#define HTTP_PARSER_VERSION_${_part} ([0-9]+).*" "\\1" _hp_${_part} "${_hp_line}")
  endforeach()
  set(HttpParser_VERSION "${_hp_MAJOR}.${_hp_MINOR}.${_hp_PATCH}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(HttpParser
  REQUIRED_VARS HttpParser_LIBRARY HttpParser_INCLUDE_DIR VERSION_VAR HttpParser_VERSION)
if(HttpParser_FOUND AND NOT TARGET HttpParser::HttpParser)
  add_library(HttpParser::HttpParser UNKNOWN IMPORTED)
  set_target_properties(HttpParser::HttpParser PROPERTIES
    IMPORTED_LOCATION "${HttpParser_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${HttpParser_INCLUDE_DIR}")
endif()
mark_as_advanced(HttpParser_INCLUDE_DIR HttpParser_LIBRARY)

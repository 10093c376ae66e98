# SPDX-License-Identifier: Apache-2.0
# mcpcore_add_header_checks(<headers...>): for every public header,
#  - a generated translation unit that includes it twice (self-containment, include guard),
#    compiled in both modes (objects of mcpcore_header_checks_compiled / _header_only);
#  - a ctest test that preprocesses it in compiled mode and fails above MCPCORE_HEADER_LINE_BUDGET
#    lines (a deterministic proxy for compile cost; docs/design.md#compile-model). The headers that
#    join the wire layer's request ids to shared, timed state (dispatch/server.hpp,
#    dispatch/operation.hpp, transport/stdio.hpp, session/progress_bridge.hpp,
#    session/stream_admission.hpp, session/stream_pump.hpp, transport/http_endpoint.hpp and
#    transport/blocking_adapter.hpp, which adds 54 lines to it) and the umbrella have
#    MCPCORE_DISPATCH_HEADER_LINE_BUDGET instead: the standard headers they need
#    (<chrono>, <functional>, <stop_token>, <memory>) expand to 56k lines on their own with
#    libstdc++ 12 in C++23 mode.
function(mcpcore_add_header_checks)
  set(_sources "")
  set(_headers ${ARGN})
  if(NOT TARGET PkgConfig::libpq)
    list(FILTER _headers EXCLUDE REGEX "postgres_")
  endif()
  foreach(_header IN LISTS _headers)
    string(REPLACE "include/" "" _rel "${_header}")
    string(MAKE_C_IDENTIFIER "${_rel}" _id)
    set(_tu "${CMAKE_CURRENT_BINARY_DIR}/header_checks/${_id}.cpp")
    file(CONFIGURE OUTPUT "${_tu}" CONTENT "#include <${_rel}>\n#include <${_rel}>\n")
    list(APPEND _sources "${_tu}")
    set(_budget ${MCPCORE_HEADER_LINE_BUDGET})
    if(_rel MATCHES "^mcpcore/(dispatch/server|dispatch/operation|transport/stdio|session/progress_bridge|session/stream_admission|session/stream_pump|transport/http_endpoint|transport/blocking_adapter|mcpcore)\\.hpp$")
      set(_budget ${MCPCORE_DISPATCH_HEADER_LINE_BUDGET})
    endif()
    add_test(NAME header_budget.${_rel}
             COMMAND ${CMAKE_COMMAND} -DCXX=${CMAKE_CXX_COMPILER} -DHEADER=${_rel}
                     -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include -DBUDGET=${_budget}
                     -P ${PROJECT_SOURCE_DIR}/cmake/mcpcore_header_budget.cmake)
    set_tests_properties(header_budget.${_rel} PROPERTIES LABELS "unit;header")
  endforeach()
  add_library(mcpcore_header_checks_compiled OBJECT ${_sources})
  target_link_libraries(mcpcore_header_checks_compiled PRIVATE mcpcore::mcpcore)
  mcpcore_target_warnings(mcpcore_header_checks_compiled)
  add_library(mcpcore_header_checks_header_only OBJECT ${_sources})
  target_link_libraries(mcpcore_header_checks_header_only PRIVATE mcpcore::header_only)
  if(TARGET PkgConfig::libpq)  # header-only, the PostgreSQL store includes <libpq-fe.h>
    target_link_libraries(mcpcore_header_checks_header_only PRIVATE PkgConfig::libpq)
  endif()
  mcpcore_target_warnings(mcpcore_header_checks_header_only)
endfunction()

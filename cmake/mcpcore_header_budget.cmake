# SPDX-License-Identifier: Apache-2.0
# cmake -DCXX=<compiler> -DHEADER=<mcpcore/x.hpp> -DINCLUDE_DIR=<dir> -DBUDGET=<lines> -P this
# Preprocesses the header alone in compiled mode and fails when it expands beyond BUDGET lines.
# One probe file per header: ctest runs these tests in parallel.
string(MAKE_C_IDENTIFIER "${HEADER}" _probe)
set(_probe "${CMAKE_CURRENT_BINARY_DIR}/budget_probe_${_probe}.cpp")
file(WRITE "${_probe}" "#include <${HEADER}>\n")
execute_process(
  COMMAND ${CXX} -std=c++23 -E -P -DMCPCORE_SEPARATE_COMPILATION=1 -I${INCLUDE_DIR}
          "${_probe}"
  OUTPUT_VARIABLE _out RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "preprocessing ${HEADER} failed: ${_err}")
endif()
string(REGEX MATCHALL "\n" _lines "${_out}")
list(LENGTH _lines _count)
message(STATUS "${HEADER}: ${_count} preprocessed lines (budget ${BUDGET})")
if(_count GREATER BUDGET)
  message(FATAL_ERROR "${HEADER} expands to ${_count} lines, over the budget of ${BUDGET}")
endif()

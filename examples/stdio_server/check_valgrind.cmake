# SPDX-License-Identifier: Apache-2.0
# cmake -DVALGRIND=<valgrind> -DEXE=<mcpcore-stdio-server> -DINPUT=<session.in> -P this
# Runs the stdio example under valgrind memcheck on a scripted session that touches every method,
# progress and logging, an approval mint, errors of every kind and a cancellation; fails on any
# memcheck error (invalid reads or writes, uninitialised values, definite or indirect leaks) or a
# non-zero exit, and unless every request was answered.
execute_process(
  COMMAND ${VALGRIND} --tool=memcheck --error-exitcode=99 --leak-check=full
          --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
          --track-origins=yes --quiet ${EXE} --tier supervised
  INPUT_FILE ${INPUT} OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "under valgrind the example exited with ${_rc}:\n${_err}")
endif()
# Every request got its answer: ids 1-17 and 20; the batch, the null id and the line that is not
# JSON are answered with id null; 19 was cancelled, so it gets none (MCP: no response to a
# cancelled request).
string(REGEX MATCHALL "\"id\":null," _nulls "${_out}")
list(LENGTH _nulls _null_count)
if(NOT _null_count EQUAL 3)
  message(FATAL_ERROR "expected 3 answers with id null under valgrind, got ${_null_count}:\n${_out}")
endif()
string(FIND "${_out}" "\"id\":19," _cancelled)
if(NOT _cancelled EQUAL -1)
  message(FATAL_ERROR "the cancelled request 19 was answered:\n${_out}")
endif()
foreach(_id RANGE 1 17 1)
  string(FIND "${_out}" "\"id\":${_id}," _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "no answer to request ${_id} under valgrind:\n${_out}")
  endif()
endforeach()
string(FIND "${_out}" "\"id\":20," _last)
if(_last EQUAL -1)
  message(FATAL_ERROR "no answer to request 20 under valgrind:\n${_out}")
endif()
message(STATUS "valgrind memcheck: no errors, every request answered")

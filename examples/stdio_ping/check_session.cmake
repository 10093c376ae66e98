# SPDX-License-Identifier: Apache-2.0
# cmake -DEXE=<example> -DINPUT=<session.in> -DEXPECTED=<session.expected> -P this
# Runs the example on a scripted session (with a 256-byte line limit) and compares its output,
# with correlation ids masked, to the expected transcript.
execute_process(COMMAND ${EXE} --max-line 256 INPUT_FILE ${INPUT} OUTPUT_VARIABLE _out RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "example exited with ${_rc}")
endif()
string(REGEX REPLACE "req-[0-9a-f]+-[0-9a-f]+" "req-X-Y" _out "${_out}")
file(READ ${EXPECTED} _expected)
if(NOT _out STREQUAL _expected)
  message(FATAL_ERROR "unexpected transcript:\n${_out}\nexpected:\n${_expected}")
endif()

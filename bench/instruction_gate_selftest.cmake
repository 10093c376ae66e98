# SPDX-License-Identifier: Apache-2.0
# The instruction gate's own test, ctest bench.instruction_gate_catches_slowdown
# (docs/instruction-gate.md#the-self-test): proves that scripts/instruction-gate can fail.
#
#   cmake -DBASH=<bash> -DGATE=<scripts/instruction-gate> -DBIN=<mcpcore_parse_instructions>
#         -DSLOWED_BIN=<mcpcore_parse_instructions_slowed> -DWORK_DIR=<scratch directory>
#         -P instruction_gate_selftest.cmake
#
# 1. The gate measures the unslowed driver BIN into a scratch baseline (--update), so that the
#    test judges the slowdown alone, whatever the state of the checked-in baseline.
# 2. The gate runs the slowed driver (MCPCORE_INSTRUCTION_GATE_SLOWDOWN=10: about 10 % more
#    instructions in every measured operation) against that baseline. It must exit 1 (over
#    budget; 2 is "could not measure", anything else a crash) and print every path of the
#    baseline with the verdict OVER BUDGET. An exit code alone would not do: a gate that crashed,
#    or that caught only some of the paths, must fail this test.
foreach(var BASH GATE BIN SLOWED_BIN WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "instruction_gate_selftest.cmake needs -D${var}=...")
  endif()
endforeach()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(baseline "${WORK_DIR}/instructions.baseline")

execute_process(COMMAND "${BASH}" "${GATE}" --bin "${BIN}" --baseline "${baseline}" --update
                RESULT_VARIABLE update_rc OUTPUT_VARIABLE update_out ERROR_VARIABLE update_err)
if(NOT update_rc EQUAL 0)
  message(FATAL_ERROR "measuring the unslowed driver failed (exit ${update_rc}):\n${update_out}${update_err}")
endif()

# The paths: every `name value` line of the scratch baseline.
file(STRINGS "${baseline}" lines REGEX "^[A-Za-z0-9_]+ [0-9.]+$")
set(names "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE " .*" "" name "${line}")
  list(APPEND names "${name}")
endforeach()
list(LENGTH names path_count)
if(path_count EQUAL 0)
  message(FATAL_ERROR "the scratch baseline ${baseline} lists no path")
endif()

execute_process(COMMAND "${BASH}" "${GATE}" --bin "${SLOWED_BIN}" --baseline "${baseline}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "1")
  message(FATAL_ERROR "the gate exited '${rc}' on the slowed driver, not 1 (over budget)")
endif()

set(missed "")
foreach(name IN LISTS names)
  # The path's line: name, baseline, measured, a positive change, OVER BUDGET.
  if(NOT "\n${out}" MATCHES "\n${name} +[0-9.]+ +[0-9.]+ +\\+[0-9.]+% +OVER BUDGET")
    list(APPEND missed "${name}")
  endif()
endforeach()
if(missed)
  message(FATAL_ERROR "the gate did not report these paths over budget: ${missed}")
endif()
if(NOT out MATCHES "FAILED: ${path_count} path\\(s\\) over budget")
  message(FATAL_ERROR "the gate's summary does not count all ${path_count} paths over budget")
endif()
message(STATUS "the gate caught the slowdown on all ${path_count} paths")

# SPDX-License-Identifier: Apache-2.0
# cmake -DNM=<nm> -DLIBRARY=<shared library> -DEXPECT=<a|b|...> -DREJECT=<a|b|...> -P check_symbols.cmake
# Fails unless the library's dynamic symbol table (`nm -D --defined-only`, demangled) has every
# EXPECT string and no REJECT string (plain substrings): the API is exported, the internals are
# hidden (docs/configuration.md#shared-and-static-libraries).
execute_process(COMMAND ${NM} -D --defined-only -C ${LIBRARY}
                OUTPUT_VARIABLE symbols ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D ${LIBRARY} failed: ${err}")
endif()
string(REPLACE "|" ";" EXPECT "${EXPECT}")
string(REPLACE "|" ";" REJECT "${REJECT}")
string(REGEX MATCHALL "\n" lines "${symbols}")
list(LENGTH lines count)
message(STATUS "${LIBRARY}: ${count} exported symbols")
set(wrong "")
foreach(name IN LISTS EXPECT)
  string(FIND "${symbols}" "${name}" at)
  if(at EQUAL -1)
    string(APPEND wrong "\n  not exported: ${name}")
  endif()
endforeach()
foreach(name IN LISTS REJECT)
  string(FIND "${symbols}" "${name}" at)
  if(NOT at EQUAL -1)
    string(SUBSTRING "${symbols}" ${at} 160 line)
    string(REGEX REPLACE "\n.*" "" line "${line}")
    string(APPEND wrong "\n  exported, but internal: ${line}")
  endif()
endforeach()
if(wrong)
  message(FATAL_ERROR "${LIBRARY}:${wrong}")
endif()

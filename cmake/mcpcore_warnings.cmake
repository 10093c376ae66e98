# SPDX-License-Identifier: Apache-2.0
# mcpcore_target_warnings(<target>): the project's warning set on its own code (-Werror when
# MCPCORE_WERROR is ON). Dependencies live in system include dirs and stay quiet.
function(mcpcore_target_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion
                                             -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
                                             -Wnull-dereference -Wimplicit-fallthrough)
    if(MCPCORE_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
endfunction()

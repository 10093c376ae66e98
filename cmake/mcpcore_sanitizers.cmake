# SPDX-License-Identifier: Apache-2.0
# MCPCORE_SANITIZE (a list of address, undefined, thread) instruments everything this project
# builds (library, tests, examples) so that no frame runs uninstrumented. It is a developer
# setting of the top-level build: the flags never reach the exported targets.
macro(mcpcore_enable_sanitizers)
  if(MCPCORE_SANITIZE)
    if("address" IN_LIST MCPCORE_SANITIZE AND "thread" IN_LIST MCPCORE_SANITIZE)
      message(FATAL_ERROR "MCPCORE_SANITIZE: address and thread cannot be combined")
    endif()
    list(JOIN MCPCORE_SANITIZE "," _mcpcore_sanitize)
    add_compile_options(-fsanitize=${_mcpcore_sanitize} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${_mcpcore_sanitize})
  endif()
endmacro()

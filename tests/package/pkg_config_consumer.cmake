# SPDX-License-Identifier: Apache-2.0
# cmake -DPKG_CONFIG=<pkg-config> -DPKG_CONFIG_PATH=<dir> [-DMODULE=<module>] -DCXX=<compiler>
#       -DSOURCE=<program> -DOUTPUT=<binary> -P pkg_config_consumer.cmake
# Builds and runs SOURCE with the flags `pkg-config --cflags --libs MODULE` (default: mcpcore)
# gives for the staged install (docs/configuration.md#pkg-config).
if(NOT MODULE)
  set(MODULE mcpcore)
endif()
set(ENV{PKG_CONFIG_PATH} "${PKG_CONFIG_PATH}")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${MODULE}
                OUTPUT_VARIABLE flags ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs ${MODULE} failed: ${err}")
endif()
message(STATUS "pkg-config ${MODULE}: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${CXX} -O0 ${SOURCE} -o ${OUTPUT} ${flags} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling with the pkg-config flags failed: ${err}")
endif()
execute_process(COMMAND ${OUTPUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the pkg-config consumer failed (${rc})")
endif()

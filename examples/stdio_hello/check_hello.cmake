# SPDX-License-Identifier: Apache-2.0
# cmake -DEXE=<mcpcore-stdio-hello> -DINPUT=<session.in> -P this
# The smallest example answers initialize and one tools/call on stdin/stdout.
execute_process(COMMAND ${EXE} INPUT_FILE ${INPUT} OUTPUT_VARIABLE _out RESULT_VARIABLE _rc TIMEOUT 30)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "example exited with ${_rc}:\n${_out}")
endif()
if(NOT _out MATCHES "\"id\":1,\"result\":{\"protocolVersion\":\"2025-11-25\"")
  message(FATAL_ERROR "initialize was not answered:\n${_out}")
endif()
string(FIND "${_out}" "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"Hello, Ada!\"}]}}" _pos)
if(_pos EQUAL -1)
  message(FATAL_ERROR "tools/call greet was not answered \"Hello, Ada!\":\n${_out}")
endif()
message(STATUS "stdio_hello answered initialize and greet")

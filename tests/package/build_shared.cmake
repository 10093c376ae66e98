# SPDX-License-Identifier: Apache-2.0
# cmake -DSOURCE=<mcpcore> -DBINARY=<build dir> -DSTAGE=<prefix> -DGENERATOR=<gen> -DCXX=<compiler>
#       -DWERROR=<ON|OFF> -DSQLITE=<ON|OFF> -DPOSTGRES=<ON|OFF> -DTRANSPORT=<ON|OFF> -DOAUTH=<ON|OFF>
#       -P build_shared.cmake
# Builds mcpcore's libraries with BUILD_SHARED_LIBS=ON (Release at -O1: a quick build, no
# sanitizer, no tests or examples) and installs them into STAGE, for the consumer of
# docs/configuration.md#shared-and-static-libraries.
foreach(step configure build install)
  if(step STREQUAL "configure")
    set(command ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} --fresh
                -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
                -DBUILD_SHARED_LIBS=ON -DMCPCORE_BUILD_TESTS=OFF -DMCPCORE_BUILD_EXAMPLES=OFF
                -DMCPCORE_HEADER_CHECKS=OFF -DMCPCORE_WERROR=${WERROR} -DMCPCORE_SQLITE=${SQLITE}
                -DMCPCORE_POSTGRES=${POSTGRES} -DMCPCORE_TRANSPORT=${TRANSPORT} -DMCPCORE_OAUTH=${OAUTH})
  elseif(step STREQUAL "build")
    set(command ${CMAKE_COMMAND} --build ${BINARY})
  else()
    set(command ${CMAKE_COMMAND} --install ${BINARY} --prefix ${STAGE})
  endif()
  execute_process(COMMAND ${command} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the shared build failed at its ${step} step (${rc})")
  endif()
endforeach()

# SPDX-License-Identifier: Apache-2.0
# cmake -DDOC=<markdown file> -DSOURCE=<test source> -P check_snippet.cmake
# Fails unless the code between the source's "snippet (keep identical)" and "end of snippet"
# markers appears verbatim in the markdown file, so a documented example cannot drift from the
# compiled one.
file(READ "${SOURCE}" _source)
file(READ "${DOC}" _doc)
string(REGEX MATCH "snippet \\(keep identical\\) ----\n(.*)\n// ---- end of snippet" _match "${_source}")
if(NOT _match)
  message(FATAL_ERROR "${SOURCE}: no snippet markers")
endif()
set(_snippet "${CMAKE_MATCH_1}")
string(FIND "${_doc}" "${_snippet}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "the snippet of ${SOURCE} is not in ${DOC} verbatim")
endif()
message(STATUS "${DOC} carries the snippet of ${SOURCE}")

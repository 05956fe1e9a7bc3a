# check_many_names.cmake - one case of the ctest fuzz/many_names_* (finding
# F6 in docs/robustness.md): compiles a generated kernel with many names and
# checks that tilec exits 0 and its output holds the last name.
#
#   cmake -DTILEC=... -DINPUT=x.tile -DEMIT=c|cuda|ir -DOUTPUT=out -DEXPECT=name
#         [-DDUMP_DIR=dir] -P check_many_names.cmake
#
# With DUMP_DIR, the run also writes --dump-ir there, and the last dump must
# hold EXPECT too. The ctest TIMEOUT is the no-hang guard; nothing is timed.
foreach(var TILEC INPUT EMIT OUTPUT EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_many_names.cmake: -D${var}=... is required")
  endif()
endforeach()

set(args ${INPUT} --emit=${EMIT} -o ${OUTPUT})
if(DEFINED DUMP_DIR)
  file(REMOVE_RECURSE ${DUMP_DIR})
  list(APPEND args --dump-ir=${DUMP_DIR})
endif()
file(REMOVE ${OUTPUT})
execute_process(COMMAND ${TILEC} ${args} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tilec ${args} exited with ${rc}:\n${err}")
endif()

function(expect_in path)
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "${path} was not written")
  endif()
  file(READ ${path} text)
  string(FIND "${text}" "${EXPECT}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "'${EXPECT}' not in ${path}")
  endif()
endfunction()

expect_in(${OUTPUT})
if(DEFINED DUMP_DIR)
  file(GLOB dumps ${DUMP_DIR}/*.tir)
  list(LENGTH dumps n)
  if(n EQUAL 0)
    message(FATAL_ERROR "no dump in ${DUMP_DIR}")
  endif()
  list(SORT dumps)
  list(GET dumps -1 last)
  expect_in(${last})
endif()

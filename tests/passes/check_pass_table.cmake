# check_pass_table.cmake - docs/passes.md's pipeline table says what the
# compiler runs: the same passes, in the same order, for the same targets
# as `tilec --list-passes` (compiler/passes/pipeline.def).
#   cmake -DTILEC=<tilec> -DDOC=<docs/passes.md> -P check_pass_table.cmake
execute_process(COMMAND ${TILEC} --list-passes OUTPUT_VARIABLE listed RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tilec --list-passes failed (${rc})")
endif()
# "NN  name  target  guarantee": number, name, first word of the target.
string(REGEX MATCHALL "(^|\n) *[0-9]+ +[a-z-]+ +[a-z]+" rows_cli "${listed}")
set(cli "")
foreach(row ${rows_cli})
  string(REGEX REPLACE "^\n? *([0-9]+) +([a-z-]+) +([a-z]+)$" "\\1 \\2 \\3" row "${row}")
  list(APPEND cli "${row}")
endforeach()

file(READ ${DOC} doc)
# "| NN | name | target ... |": the table's rows, target's first word.
string(REGEX MATCHALL "\n\\| [0-9]+ \\| [a-z-]+ \\| [a-z]+" rows_doc "${doc}")
set(docs "")
foreach(row ${rows_doc})
  string(REGEX REPLACE "^\n\\| ([0-9]+) \\| ([a-z-]+) \\| ([a-z]+)$" "\\1 \\2 \\3" row "${row}")
  list(APPEND docs "${row}")
endforeach()

list(LENGTH cli ncli)
list(LENGTH docs ndoc)
if(ncli EQUAL 0)
  message(FATAL_ERROR "no passes read from tilec --list-passes:\n${listed}")
endif()
if(NOT "${cli}" STREQUAL "${docs}")
  message(FATAL_ERROR "docs/passes.md's table (${ndoc} rows) does not match tilec --list-passes (${ncli}):\n"
                      "  tilec: ${cli}\n  docs:  ${docs}")
endif()
message(STATUS "pass table: ${ncli} passes, docs/passes.md agrees")

# check_pass_table.cmake - docs/passes.md's pipeline table says what the
# compiler runs: the same passes, in the same order, for the same targets
# as `tilec --list-passes` (compiler/passes/pipeline.def).
#   cmake -DTILEC=<tilec> -DDOC=<docs/passes.md> -P check_pass_table.cmake

# The rows of `text` that match `row` (which starts at a line's newline),
# each as "number name target": its three groups, the number, the pass name
# and the target's first word.
function(pass_rows out text row)
  string(REGEX MATCHALL "${row}" rows "${text}")
  set(list "")
  foreach(r ${rows})
    string(REGEX REPLACE "^${row}$" "\\1 \\2 \\3" r "${r}")
    list(APPEND list "${r}")
  endforeach()
  set(${out} "${list}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${TILEC} --list-passes OUTPUT_VARIABLE listed RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tilec --list-passes failed (${rc})")
endif()
file(READ ${DOC} doc)
pass_rows(cli "\n${listed}" "\n *([0-9]+) +([a-z-]+) +([a-z]+)")  # "NN  name  target  guarantee"
pass_rows(docs "${doc}" "\n\\| ([0-9]+) \\| ([a-z-]+) \\| ([a-z]+)") # "| NN | name | target ... |"

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

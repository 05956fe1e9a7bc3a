# require_no_skips.cmake - CI's last step (.ci/run, the README's test command):
#   cmake -DBUILD_DIR=build -P tests/require_no_skips.cmake
# after `ctest --test-dir build ... --output-junit junit.xml`. Fails when a
# test that is not labelled `gpu` was skipped (or not run): on the CI machine
# (no GPU) every other test must really run, since a skipped test checks
# nothing. Labels come from `ctest --show-only=json-v1`, results from the
# JUnit file (status="notrun" marks skips: SKIP_RETURN_CODE, missing
# executables, disabled tests). -DALLOW_SKIPPED=<regex> accepts skipped tests
# whose names match (for a machine that lacks e.g. NVRTC on purpose); CI
# passes none.
#
# It also copies into the CI log what ctest --output-on-failure hides for
# passing tests: the output of the tests labelled install and package (the C
# consumer built against the installed tree, the wheel in a fresh venv), and
# for those labelled python the interpreter used and the pass count.
cmake_minimum_required(VERSION 3.20)
if(NOT BUILD_DIR)
  set(BUILD_DIR build)
endif()
if(NOT JUNIT)
  set(JUNIT junit.xml)
endif()
set(junit ${BUILD_DIR}/${JUNIT})
if(NOT EXISTS ${junit})
  message(FATAL_ERROR "require_no_skips: ${junit} is missing (run ctest with --output-junit junit.xml)")
endif()

# The output of test NAME, from the JUnit file (XML entities decoded).
function(xml_output_of name out)
  set(text "")
  string(FIND "${xml}" "<testcase name=\"${name}\"" at)
  if(at GREATER -1)
    string(SUBSTRING "${xml}" ${at} -1 rest)
    string(FIND "${rest}" "<system-out>" a)
    string(FIND "${rest}" "</system-out>" b)
    if(a GREATER -1 AND b GREATER a)
      math(EXPR a "${a} + 12")
      math(EXPR len "${b} - ${a}")
      string(SUBSTRING "${rest}" ${a} ${len} text)
      foreach(pair "&lt;;<" "&gt;;>" "&quot;;\"" "&apos;;'" "&amp;;&")
        list(GET pair 0 from)
        list(GET pair 1 to)
        string(REPLACE "${from}" "${to}" text "${text}")
      endforeach()
    endif()
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${BUILD_DIR} --show-only=json-v1
                OUTPUT_VARIABLE tests_json RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "require_no_skips: ctest --show-only=json-v1 failed (${rc})")
endif()
set(gpu_tests "")
string(JSON ntests LENGTH "${tests_json}" tests)
math(EXPR last "${ntests} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${tests_json}" tests ${i} name)
  string(JSON nprops ERROR_VARIABLE err LENGTH "${tests_json}" tests ${i} properties)
  if(err OR nprops EQUAL 0)
    continue()
  endif()
  math(EXPR plast "${nprops} - 1")
  foreach(j RANGE ${plast})
    string(JSON pname GET "${tests_json}" tests ${i} properties ${j} name)
    if(pname STREQUAL "LABELS")
      string(JSON labels GET "${tests_json}" tests ${i} properties ${j} value)
      if(labels MATCHES "\"gpu\"")
        list(APPEND gpu_tests "${name}")
      endif()
    endif()
  endforeach()
endforeach()

file(READ ${junit} xml)
string(REGEX MATCHALL "<testcase name=\"[^\"]*\"[^>]*status=\"(notrun|disabled)\"" skipped_cases "${xml}")
string(REGEX MATCHALL "<testcase name=\"[^\"]*\"" all_cases "${xml}")
list(LENGTH all_cases nrun)
set(bad "")
set(nskipped_gpu 0)
set(nallowed 0)
foreach(c ${skipped_cases})
  string(REGEX REPLACE "^<testcase name=\"([^\"]*)\".*" "\\1" name "${c}")
  if(name IN_LIST gpu_tests)
    math(EXPR nskipped_gpu "${nskipped_gpu} + 1")
  elseif(ALLOW_SKIPPED AND name MATCHES "${ALLOW_SKIPPED}")
    math(EXPR nallowed "${nallowed} + 1")
    message("require_no_skips: ${name} skipped (allowed by ALLOW_SKIPPED)")
  else()
    # Its reason: the first output line that says "skip", else the last one.
    xml_output_of(${name} text)
    string(REGEX MATCH "[^\n]*[Ss][Kk][Ii][Pp][^\n]*" why "${text}")
    if(NOT why)
      string(REGEX MATCH "[^\n]*\n?$" why "${text}")
    endif()
    string(STRIP "${why}" why)
    list(APPEND bad "${name}: ${why}")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " bad_text)
  message(FATAL_ERROR "require_no_skips: these tests are not labelled gpu but did not run "
                      "(skipped), so they checked nothing:\n  ${bad_text}\n"
                      "On a machine that lacks something on purpose (e.g. no NVRTC: the nvrtc "
                      "tests skip), accept those by name: -DALLOW_SKIPPED=<regex>, e.g. "
                      "-DALLOW_SKIPPED=nvrtc")
endif()

foreach(i RANGE ${last})
  string(JSON name GET "${tests_json}" tests ${i} name)
  string(JSON nprops ERROR_VARIABLE err LENGTH "${tests_json}" tests ${i} properties)
  if(err OR nprops EQUAL 0)
    continue()
  endif()
  set(labels "")
  math(EXPR plast "${nprops} - 1")
  foreach(j RANGE ${plast})
    string(JSON pname GET "${tests_json}" tests ${i} properties ${j} name)
    if(pname STREQUAL "LABELS")
      string(JSON labels GET "${tests_json}" tests ${i} properties ${j} value)
    endif()
  endforeach()
  if(labels MATCHES "\"gpu\"")
    continue()
  endif()
  if(labels MATCHES "\"(install|package)\"")
    xml_output_of(${name} text)
    if(text)
      message("---- output of ${name} ----\n${text}---- end of ${name} ----")
    endif()
  elseif(labels MATCHES "\"python\"")
    xml_output_of(${name} text)
    string(REGEX MATCHALL "(pyrun: [^\n]*|[0-9]+ passed, [0-9]+ failed)" keep "${text}")
    list(JOIN keep "; " keep)
    if(keep)
      message("${name}: ${keep}")
    endif()
  endif()
endforeach()

message(STATUS "require_no_skips: ${nrun} tests in ${junit}; none skipped except ${nskipped_gpu} labelled gpu"
               " (and ${nallowed} allowed by ALLOW_SKIPPED)")

# cmake -P script: every test name of a Catch2 binary survives catch_discover_tests. Discovery
# reads the binary's list of names as a CMake list, where ';' splits a name and an unbalanced
# '[' or ']' joins the names that follow it into one entry (CMake's bracket nesting); such an
# entry then matches no test case. The discovered tests fail for it too ("No test cases matched"),
# but this names the test case and the character.
#   -DBINARY=<the Catch2 binary>
execute_process(COMMAND ${BINARY} --list-test-names-only RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 AND out STREQUAL "")
  message(FATAL_ERROR "${BINARY} --list-test-names-only: exit ${rc}\n${err}")
endif()
# Each line of the output apart, without letting CMake's list rules read it: split at newlines
# by position.
set(bad "")
while(NOT out STREQUAL "")
  string(FIND "${out}" "\n" at)
  if(at EQUAL -1)
    set(line "${out}")
    set(out "")
  else()
    string(SUBSTRING "${out}" 0 ${at} line)
    math(EXPR next "${at} + 1")
    string(SUBSTRING "${out}" ${next} -1 out)
  endif()
  foreach(char ";" "[" "]")
    string(FIND "${line}" "${char}" found)
    if(NOT found EQUAL -1)
      string(APPEND bad "  '${char}' in: ${line}\n")
    endif()
  endforeach()
endwhile()
if(NOT bad STREQUAL "")
  message(FATAL_ERROR "test names that catch_discover_tests would cut or merge (take out the "
                      "character):\n${bad}")
endif()

# The README's Python example is python/examples/readme.py, verbatim, and it runs as written:
# relay-run starts 8 ranks of it.
file(READ ${SOURCE}/README.md readme)
file(READ ${SOURCE}/python/examples/readme.py example)
string(FIND "${readme}" "${example}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md does not show python/examples/readme.py as it is")
endif()
execute_process(COMMAND ${RUN} -n 8 --timeout 240 -- ${PYTHON} ${SOURCE}/python/examples/readme.py
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "relay-run -n 8 python/examples/readme.py exited ${rc}")
endif()

# relay-run's contract, one check per run (cmake -DRUN=relay-run -DCHECK=... -P this file).
string(TIMESTAMP start "%s")
if(CHECK STREQUAL "exit_status")
  # Rank 2 exits 3 at once; the others would sleep 30 s. With a 20 s grace period, relay-run can
  # only end within seconds if SIGTERM stopped them.
  execute_process(COMMAND ${RUN} -n 4 --grace 20 -- sh -c "test $RANK = 2 && exit 3; sleep 30"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 50)
  string(TIMESTAMP stop "%s")
  math(EXPR took "${stop} - ${start}")
  if(NOT rc EQUAL 3)
    message(FATAL_ERROR "relay-run exited ${rc}, not rank 2's 3\n${out}\n${err}")
  endif()
  if(took GREATER 5)
    message(FATAL_ERROR "relay-run took ${took} s to stop the other ranks")
  endif()
  if(NOT err MATCHES "rank 2 failed with status 3")
    message(FATAL_ERROR "relay-run did not name the failing rank:\n${err}")
  endif()
elseif(CHECK STREQUAL "prefix")
  execute_process(COMMAND ${RUN} -n 3 -- sh -c
                          "echo out $RANK $WORLD_SIZE $LOCAL_RANK $RELAY_DEVICE; echo err $RANK >&2"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 50)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "relay-run exited ${rc}\n${out}\n${err}")
  endif()
  foreach(r 0 1 2)
    if(NOT out MATCHES "\\[${r}\\] out ${r} 3 ${r} ${r}\n")
      message(FATAL_ERROR "no '[${r}] out ${r} 3 ${r} ${r}' line in stdout:\n${out}")
    endif()
    if(NOT err MATCHES "\\[${r}\\] err ${r}\n")
      message(FATAL_ERROR "no '[${r}] err ${r}' line in stderr:\n${err}")
    endif()
  endforeach()
  # --devices: rank r gets entry r % 2 of the list.
  execute_process(COMMAND ${RUN} -n 3 --devices 5,7 -- sh -c "echo dev $RELAY_DEVICE"
                  OUTPUT_VARIABLE out TIMEOUT 50)
  if(NOT out MATCHES "\\[0\\] dev 5\n" OR NOT out MATCHES "\\[1\\] dev 7\n"
     OR NOT out MATCHES "\\[2\\] dev 5\n")
    message(FATAL_ERROR "--devices 5,7 gave:\n${out}")
  endif()
elseif(CHECK STREQUAL "timeout")
  execute_process(COMMAND ${RUN} -n 2 --timeout 1 --grace 1 -- sleep 30 RESULT_VARIABLE rc
                  ERROR_VARIABLE err TIMEOUT 50)
  string(TIMESTAMP stop "%s")
  math(EXPR took "${stop} - ${start}")
  if(NOT rc EQUAL 124 OR took GREATER 5)
    message(FATAL_ERROR "relay-run --timeout 1 exited ${rc} after ${took} s:\n${err}")
  endif()
elseif(CHECK STREQUAL "usage")
  # Refusals name the problem and exit 2 before starting anything; --version and --help exit 0.
  foreach(case "-n;0;--;true|-n takes 1..1024 processes" "-n;2;-n;2;--;true|-n is given twice"
               "-n;2|no command after --" "--bogus|unknown option --bogus"
               "-n;2;--devices;1,x;--;true|comma-separated list of device numbers"
               "--timeout;-1;-n;2;--;true|--timeout takes seconds > 0")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts -1 words)
    list(REMOVE_AT parts -1)
    execute_process(COMMAND ${RUN} ${parts} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err TIMEOUT 20)
    if(NOT rc EQUAL 2 OR NOT err MATCHES "${words}" OR NOT err MATCHES "usage: relay-run")
      message(FATAL_ERROR "relay-run ${parts}: exit ${rc}, expected 2 and '${words}':\n${err}")
    endif()
  endforeach()
  execute_process(COMMAND ${RUN} --version RESULT_VARIABLE rc OUTPUT_VARIABLE out TIMEOUT 20)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^relay-run [0-9]+\\.[0-9]+\\.[0-9]+\n$")
    message(FATAL_ERROR "relay-run --version: exit ${rc}, '${out}'")
  endif()
  execute_process(COMMAND ${RUN} --help RESULT_VARIABLE rc OUTPUT_VARIABLE out TIMEOUT 20)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "--timeout S")
    message(FATAL_ERROR "relay-run --help: exit ${rc}, '${out}'")
  endif()
else()
  message(FATAL_ERROR "unknown check '${CHECK}'")
endif()

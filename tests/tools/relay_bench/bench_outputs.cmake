# relay-bench's CSV and JSON from the CPU sweep (bench.cpu_sweep) are complete and well formed,
# bench/plot turns the CSV into an SVG with a panel pair per collective, and bench/mesh-speedups
# into a speedup table.
# Run as: cmake -DPYTHON=<python3> -DPLOT=<bench/plot> -DSPEEDUPS=<bench/mesh-speedups>
#         -DRESULTS=<prefix> -P bench_outputs.cmake
file(STRINGS ${RESULTS}.csv lines)
list(LENGTH lines count)
# 4 collectives x 2 A x 3 modes x 3 sizes, two forms each except all-to-all's: 1 + 6*3*(3*2+1).
if(NOT count EQUAL 127)
  message(FATAL_ERROR "${RESULTS}.csv has ${count} lines, expected 127")
endif()
foreach(line IN LISTS lines)
  if(line MATCHES "^collective,")
    continue()
  endif()
  string(REPLACE "," ";" cells "${line}")
  list(GET cells 16 wrong)
  list(GET cells 22 base_wrong)
  if(NOT wrong STREQUAL "0" OR NOT base_wrong STREQUAL "0")
    message(FATAL_ERROR "a row with wrong elements: ${line}")
  endif()
endforeach()

function(python what)
  execute_process(COMMAND ${PYTHON} ${ARGN} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: ${err}")
  endif()
endfunction()

python("${RESULTS}.json" -c "import json,sys; d=json.load(open(sys.argv[1])); \
assert len(d['rows'])==126, len(d['rows']); assert all(r['wrong']==0 for r in d['rows'])"
       ${RESULTS}.json)
python("bench/plot" ${PLOT} ${RESULTS}.csv -o ${RESULTS}.svg)
python("${RESULTS}.svg is well-formed XML" -c
       "import sys,xml.etree.ElementTree as E; E.parse(sys.argv[1])" ${RESULTS}.svg)
file(READ ${RESULTS}.svg svg)
foreach(title "allreduce: busbw" "reduce-scatter: speedup" "all-gather: busbw" "all-to-all: speedup"
              "A=4 parallel cpu")
  string(FIND "${svg}" "${title}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${RESULTS}.svg has no '${title}'")
  endif()
endforeach()

# bench/mesh-speedups reads the same CSV: every row has the direct baseline (126), each row's
# measured speedup against the predicted one; rows from --from on are held to --tolerance, and
# the exit status is 1 when one is off.
execute_process(COMMAND ${PYTHON} ${SPEEDUPS} ${RESULTS}.csv --from 4K --tolerance 1000
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\n126 of 126 rows at 4K and up within 100000% of the predicted")
  message(FATAL_ERROR "mesh-speedups, any ratio allowed: exit ${rc}\n${out}${err}")
endif()
execute_process(COMMAND ${PYTHON} ${SPEEDUPS} ${RESULTS}.csv --from 16K --tolerance 0
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
# 2 of the 3 sizes (16K, 64K) are held to a tolerance of 0: all 84 are off.
if(NOT rc EQUAL 1 OR NOT out MATCHES "\n0 of 84 rows at 16K and up within 0% of the predicted speedup; 84 off")
  message(FATAL_ERROR "mesh-speedups, no tolerance: exit ${rc}\n${out}${err}")
endif()

# relay_bench_hip holds the rank executors themselves, not the stand-ins of a build without their
# GPU code ("this relay-bench was built without ..."): as a job of two ranks, -x ipc reaches the
# HIP runtime and -x nccl looks for RCCL. Where a GPU and RCCL are present a run succeeds; on a
# machine with neither (CI) each fails at its start, in the runtime's or the loader's words.
# Run as: cmake -DBENCH=<relay_bench_hip> -DRUN=<relay-run> -P hip_rank_modes.cmake
function(expect executor text)
  execute_process(COMMAND ${RUN} -n 2 --timeout 60 -- ${BENCH} -x ${executor} -N 2 -C allreduce
                          -A 2 -r direct -m single -b 4K -e 4K -n 1 -w 0
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(FIND "${out}${err}" "built without" stand_in)
  if(NOT stand_in EQUAL -1)
    message(FATAL_ERROR "-x ${executor} is the stand-in of a build without it:\n${out}${err}")
  endif()
  if(rc EQUAL 0)
    return()
  endif()
  string(FIND "${out}${err}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "-x ${executor}: exit ${rc} without '${text}':\n${out}${err}")
  endif()
  message(STATUS "-x ${executor}: exit ${rc}, at its start in the ${text} words expected here")
endfunction()

expect(ipc "hipError")
expect(nccl "RCCL")

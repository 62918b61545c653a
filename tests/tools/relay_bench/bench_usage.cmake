# relay-bench refuses invalid input with exit status 2 and a message that names the problem.
# Run as: cmake -DBENCH=<relay-bench> -P bench_usage.cmake
function(expect code text)
  execute_process(COMMAND ${BENCH} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "relay-bench ${ARGN}: exit ${rc}, expected ${code}\n${out}${err}")
  endif()
  string(FIND "${out}${err}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "relay-bench ${ARGN}: no '${text}' in:\n${out}${err}")
  endif()
endfunction()

expect(0 "usage: relay-bench" --help)
expect(0 "relay-bench 0." --version)
expect(2 "unknown option '--sizes'" --sizes 4K)
expect(2 "relay-bench: --minbytes: '4Q' is not a size" -b 4Q)
expect(2 "relay-bench: --ranks is given twice" -N 8 -N 8)
expect(2 "relay-bench: --permille: '0' is out of range (1..999)" -p 0)
expect(2 "relay-bench: --devices maps ranks to GPUs: it needs --executor gpu" --devices 0,0,0,0,0,0,0,0)
expect(2 "is larger than --maxbytes" -b 1M -e 4K)
expect(2 "A must be a power of two" -A 3)
expect(2 "fused mode needs A to divide N" -A 4 -N 6)
expect(2 "parallel mode runs N/A groups" -A 4 -N 6 -m parallel)
expect(2 "legacy three-step schedule exists for A=2 only" -A 4 -r legacy)
expect(2 "--baseline nccl needs a GPU executor" --baseline nccl)
expect(2 "relay-bench: --emulate-mesh paces the GPU executor's copies or the ipc transport's pushes: it needs --executor gpu or ipc"
       --emulate-mesh 12)
expect(2 "--graph times replays of captured calls: it needs --executor ipc" --graph 10)
expect(2 "--per-call-events times calls between device events: it needs --executor ipc or nccl"
       --per-call-events 1)
expect(2 "parallel mode runs each group's plan on a copy of the job's: give -m fused or single"
       -x ipc --split 1 -r direct -m parallel)
# Hosted helpers: shm or ipc, one group of the processes (-A N minus the helpers), not split.
expect(2 "--helper-devices: hosted helpers run on -x shm or -x ipc" --helper-devices 2,3,4,5,6,7)
expect(2 "--helper-devices: hosted helpers hold no buffers, so the processes run one group: give -m single"
       -x shm --helper-devices 2,3,4,5,6,7 -m fused)
expect(2 "--helper-devices names 6 helpers of -N 8: the processes are the group, -A 2, not 4"
       -x shm --helper-devices 2,3,4,5,6,7 -m single -A 4)
# A job of one process per rank: shm runs fused and single; ipc parallel mode too, so it gets as
# far as its start (no launcher here, or no GPU code in this build).
expect(2 "relay-bench: -x shm runs fused and single, not parallel" -x shm -m parallel)
expect(3 "relay-bench: -x ipc: " -x ipc -m parallel -b 4K -e 4K)
expect(2 "pipelined schedule exists for single groups only" -r pipelined -m fused)
expect(2 "relay-bench: --topology: 'dgx' is not one of mi300x" -t dgx)
expect(2 "relay-bench: --topology: 'mesh:inf' is not one of" -t mesh:inf)
expect(2 "relay-bench: --topology: 'mi250x' is a fixed machine of 8 ranks, not 16" -t mi250x -N 16)
expect(2 "cannot write" -b 4K -e 4K --csv /nonexistent/dir/out.csv)
expect(2 "relay-bench: --wire fp8: takes float32, float16 or bfloat16, not int32" --wire fp8 -d int32)
expect(2 "relay-bench: --wire-threshold needs --wire fp8" --wire-threshold 0)

# Rows that do not fit the available memory (forced to 200 MB here) are skipped, each with a line
# on stderr and in the table, before they allocate; the rows that fit run and the exit status is 0.
execute_process(COMMAND ${CMAKE_COMMAND} -E env RELAY_AVAILABLE_MEMORY=200000000 ${BENCH}
                        -C reduce-scatter -A 4 -b 1M -e 64M -f 4 -n 1 -w 0 --rotate 0
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(pattern
    "^relay-bench: skipped reduce-scatter A=4 fused 16 MiB: it needs about [0-9.]+ MiB of host memory. 190.7 MiB available \\(RELAY_AVAILABLE_MEMORY\\)\nrelay-bench: skipped reduce-scatter A=4 fused 64 MiB: it needs about [0-9.]+ GiB of host memory. 190.7 MiB available \\(RELAY_AVAILABLE_MEMORY\\)\n$")
if(NOT rc EQUAL 0 OR NOT err MATCHES "${pattern}")
  message(FATAL_ERROR "memory skip: exit ${rc}, stderr:\n${err}")
endif()
if(NOT out MATCHES "\n +1048576 .*\n +4194304 .*\n# skipped reduce-scatter A=4 fused 16 MiB.*\n# rows skipped for lack of host memory: 2\n")
  message(FATAL_ERROR "memory skip: the table does not show the run and skipped rows:\n${out}")
endif()

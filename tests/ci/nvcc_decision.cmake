# cmake -P script: .ci/run's decision about nvcc, on a machine without it. PATH holds only bash
# and dirname (links in a scratch folder) and CUDA_HOME points nowhere, so no nvcc can be found
# whatever this machine has installed. RELAY_CI_DRY_RUN=1 stops the script before it installs or
# builds anything.
#   -DSOURCE=<repository root> -DWORK=<scratch folder>
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/bin)
foreach(tool bash dirname)
  find_program(path_${tool} ${tool} REQUIRED)
  file(CREATE_LINK ${path_${tool}} ${WORK}/bin/${tool} SYMBOLIC)
endforeach()
set(env ${CMAKE_COMMAND} -E env --unset=CI PATH=${WORK}/bin CUDA_HOME=${WORK}/no-cuda
        RELAY_CI_DRY_RUN=1)

# A developer's machine: one line says the CUDA check is skipped and why; the run goes on.
execute_process(COMMAND ${env} bash ${SOURCE}/.ci/run RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^CUDA compile check skipped: no nvcc on PATH or in [^\n]*no-cuda/bin \\(nvcc is not a Debian package. CI=true makes the check mandatory\\)\ndry run: RELAY_GPU=HIP\n$")
  message(FATAL_ERROR "without CI: exit ${rc}, stdout:\n${out}\nstderr:\n${err}")
endif()

# CI: a missing nvcc is an error that names the reason.
execute_process(COMMAND ${env} CI=true bash ${SOURCE}/.ci/run RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT out STREQUAL "" OR NOT err MATCHES "^CI needs nvcc [^\n]*CI=true makes the check mandatory\\)\n$")
  message(FATAL_ERROR "with CI=true: exit ${rc}, stdout:\n${out}\nstderr:\n${err}")
endif()

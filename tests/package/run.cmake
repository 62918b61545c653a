# cmake -P script: install, then build the consumer against the installed package; every tool in
# TOOLS (comma-separated) must be installed in bin/ and print "<tool> VERSION" for --version.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${RELAY_BUILD} --prefix ${WORK}/prefix
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${RELAY_SOURCE}/tests/package/consumer
                        -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix
                        -DCMAKE_CXX_COMPILER=${CXX}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "consumer configure failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "consumer build failed: ${rc}")
endif()
execute_process(COMMAND ${WORK}/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(rc)
  message(FATAL_ERROR "consumer run failed: ${rc}")
endif()

foreach(c_consumer c_consumer c_hip_consumer)
  if(EXISTS ${WORK}/build/${c_consumer})
    execute_process(COMMAND ${WORK}/build/${c_consumer} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
    message(STATUS "${out}")
    if(rc)
      message(FATAL_ERROR "the C consumer ${c_consumer} failed: ${rc}")
    endif()
  endif()
endforeach()

string(REPLACE "," ";" tools "${TOOLS}")  # empty where the tools are not built
foreach(tool IN LISTS tools)
  execute_process(COMMAND ${WORK}/prefix/bin/${tool} --version RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc OR NOT out STREQUAL "${tool} ${VERSION}\n")
    message(FATAL_ERROR "installed ${tool} --version: exit ${rc}, '${out}' ${err}")
  endif()
  message(STATUS "installed: ${out}")
endforeach()

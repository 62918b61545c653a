# `cmake --install` of the libraries and the package into a fresh prefix, then relay.torch
# imported from there as the interpreter's user site (PYTHONUSERBASE), with no LD_LIBRARY_PATH,
# no RELAY_C_LIBRARY_DIR and no PYTHONPATH: the package must find its library by itself.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
foreach(component relay_c relay_python)
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/prefix
                          --component ${component}
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake --install --component ${component} failed")
  endif()
endforeach()
set(check [=[
import os, sys
import relay, relay.torch
lib = relay.library("host")
prefix = os.path.realpath(sys.argv[1])
for what, path in (("the package", relay.__file__), ("the library", lib.path)):
    if not os.path.realpath(path).startswith(prefix + os.sep):
        sys.exit(f"{what} came from {path}, not from {prefix}")
print("relay", relay.version(), "from", os.path.dirname(relay.__file__), "library", lib.path)
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=RELAY_C_LIBRARY_DIR
                        --unset=LD_LIBRARY_PATH --unset=PYTHONPATH PYTHONUSERBASE=${WORK}/prefix
                        --unset=PYTHONNOUSERSITE PYTHONDONTWRITEBYTECODE=1
                        ${PYTHON} -c "${check}" ${WORK}/prefix
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import relay.torch from the installed prefix failed")
endif()

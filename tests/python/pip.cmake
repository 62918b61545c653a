# The README's install command in a fresh virtual environment over the system's packages (torch,
# setuptools: nothing from PyPI), with the libraries this build made (RELAY_C_LIBRARY_DIR: setup.py
# copies them instead of building them again), then relay.torch imported from outside the tree,
# and the entry point torchcomms finds the backend by (group torchcomms.backends, name relay).
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${PYTHON} -m venv --system-site-packages ${WORK}/venv RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PYTHON} -m venv failed (Debian: apt install python3-venv)")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env RELAY_C_LIBRARY_DIR=${LIBRARIES}
                        ${WORK}/venv/bin/pip install --no-build-isolation --no-index -q
                        ${SOURCE}/python
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pip install --no-build-isolation ./python failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=RELAY_C_LIBRARY_DIR --unset=PYTHONPATH
                        --unset=LD_LIBRARY_PATH ${WORK}/venv/bin/python -c
                        "import relay, relay.torch; print(relay.version(), relay.library().path)"
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "${WORK}/venv/.*/relay/_lib/librelay_c.so")
  message(FATAL_ERROR "relay.torch did not import from the virtual environment")
endif()
# Every library the build made is in the package (librelay_c_cuda and librelay_c_hip where their
# compilers were), beside the librelay_c.so found above.
string(REGEX REPLACE "/librelay_c\\.so.*" "" package_lib "${out}")
string(REGEX REPLACE "^.* " "" package_lib "${package_lib}")
file(GLOB built RELATIVE ${LIBRARIES} ${LIBRARIES}/librelay_c*.so)
foreach(name ${built})
  if(NOT EXISTS ${package_lib}/${name})
    message(FATAL_ERROR "pip install left out ${name}")
  endif()
endforeach()
message(STATUS "in ${package_lib}: ${built}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=RELAY_C_LIBRARY_DIR --unset=PYTHONPATH
                        ${WORK}/venv/bin/python -c
                        "from importlib.metadata import entry_points; import relay.torchrec; print([e.load().__name__ for e in entry_points(group='torchcomms.backends') if e.name == 'relay'])"
                WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "\\['relay.torchcomms'\\]")
  message(FATAL_ERROR "the entry point torchcomms.backends: relay = relay.torchcomms is missing")
endif()

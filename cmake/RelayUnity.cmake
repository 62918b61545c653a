# relay_unity_target(<target>): compile the target's C++ units 16 to a unit (a CMake unity build),
# where RELAY_UNITY_BUILD is on (the default). The units of the project's test suites and tools
# instantiate much the same library (plans, schedules, the communicator, transports and executors:
# inline functions and templates that each unit otherwise compiles and optimizes again): compiled
# together they cost much less (relay_unit_tests at -O3: about 60% less CPU; the tools' libraries
# about 25%). The files of one target therefore share a namespace scope: a file-local name must
# not clash with another file's (tests/support holds what several suites share). Off, each file is
# its own unit: a faster rebuild after editing one file.
option(RELAY_UNITY_BUILD "Compile the tests' and tools' sources in batches (unity builds)" ON)

function(relay_unity_target target)
  if(RELAY_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
  endif()
endfunction()

# Build options. The library itself has none: it is headers.
option(RELAY_BUILD_TESTS "Build the test suite" ${PROJECT_IS_TOP_LEVEL})
option(RELAY_BUILD_TOOLS "Build the tools (relay-plan, relay-bench, relay-run)"
       ${PROJECT_IS_TOP_LEVEL})
option(RELAY_BUILD_EXAMPLES "Build the example programs" ${PROJECT_IS_TOP_LEVEL})
option(RELAY_BUILD_C "Build the C ABI libraries (librelay_c) and install the Python package" ON)
option(RELAY_BUILD_STATIC_TESTS "Build the compile-time (static_assert) suites" ON)
set(RELAY_SANITIZE "" CACHE STRING
    "Sanitizers for the project's own targets: empty, 'address;undefined' or 'thread'")

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

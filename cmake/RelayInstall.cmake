# Install the headers and a CMake package, so that consumers write
#   find_package(relay 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE relay::relay)
include(CMakePackageConfigHelpers)

install(TARGETS relay EXPORT relayTargets)
install(DIRECTORY include/relay DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT relayTargets NAMESPACE relay:: DESTINATION ${CMAKE_INSTALL_DATADIR}/relay/cmake)

configure_package_config_file(cmake/relayConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/relayConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_DATADIR}/relay/cmake)
# Header-only and architecture-independent: any 32/64-bit consumer may use it.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/relayConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/relayConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/relayConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_DATADIR}/relay/cmake)

# relay_install_tool(<target>): `cmake --install` puts the program in bin/ (relay-plan,
# relay-bench; a new tool, such as the launcher relay-run, adds one call beside its
# add_executable). The list of installed tools is the global property RELAY_INSTALLED_TOOLS (the
# package test runs each one's --version from the installed tree; register a tool in a directory
# added before tests/).
function(relay_install_tool target)
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  get_target_property(name ${target} OUTPUT_NAME)
  if(NOT name)
    set(name ${target})
  endif()
  set_property(GLOBAL APPEND PROPERTY RELAY_INSTALLED_TOOLS ${name})
endfunction()

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

// The ipc transport's kernels, compiled once for the project's binaries that use the transport
// (src/CMakeLists.txt): the definitions of ipc/launch.hpp's functions, not inline here since
// RELAY_IPC_SEPARATE_KERNELS is defined.
#include "relay/transport/ipc/launch_impl.hpp"

#if !defined(RELAY_IPC_SEPARATE_KERNELS)
#error "kernels.cpp is compiled with RELAY_IPC_SEPARATE_KERNELS (src/CMakeLists.txt)"
#endif

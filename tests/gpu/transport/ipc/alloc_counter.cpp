// The allocation counter of relay_ipc_tests (hostpath), compiled by the host compiler: see
// tools/support/alloc_counter.hpp.
#define RELAY_ALLOC_COUNTER_DEFINE
#include "support/alloc_counter.hpp"

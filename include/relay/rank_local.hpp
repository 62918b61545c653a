// relay's rank-local entry: one process per rank, each passing only its own buffers
// (docs/multiprocess.md). What such a program includes:
//   comm/communicator.hpp       relay::communicator: a rank, a bootstrap and a transport
//   comm/collectives.hpp        allreduce, reduce_scatter, all_gather, all_to_all on it
//   comm/from_environment.hpp   a communicator from relay-run's or torchrun's variables
//   comm/split.hpp              communicators of a subset of the ranks
//   transport/shm/factory.hpp   the host transport: processes of one node, shared memory
// and, in code compiled by nvcc or hipcc, the GPU transports' factories:
//   transport/ipc/factory.hpp   device memory and device signals, on the caller's stream
//   transport/nccl/factory.hpp  the process's NCCL (RCCL)
//
// What users may touch is what these headers name in namespace relay. relay::detail and the
// transports' own namespaces (relay::shm, relay::ipc) are internals, free to change.
#pragma once

#include "relay/comm/collectives.hpp"
#include "relay/comm/communicator.hpp"
#include "relay/comm/from_environment.hpp"
#include "relay/comm/split.hpp"
#include "relay/transport/shm/factory.hpp"

#if defined(__CUDACC__) || defined(__HIPCC__)
#include "relay/transport/ipc/factory.hpp"
#include "relay/transport/nccl/factory.hpp"
#endif

// The rank-local calls: each process passes only its own buffers, NCCL-shaped.
//
//   relay::status s = relay::allreduce(comm, groups, send, recv, counts, dtype, op, options,
//                                      stream);
//
// groups, counts, dtype, op, options: as in api/collectives.hpp, and the same on every rank.
// send, recv: THIS rank's buffers; a rank that is active in no group (a helper in single mode)
//             passes empty views. Every rank of the communicator makes every call.
// stream:     cudaStream_t / hipStream_t for GPU transports (the call enqueues and returns);
//             host transports ignore it and return when this rank's part is done.
// A failure on any rank is an error on every rank (communicator.hpp, transport.hpp).
#pragma once

#include "relay/comm/communicator.hpp"

namespace relay {

inline status run_collective(communicator& comm, collective c, const group_list& groups,
                             buffer_view send, buffer_view recv,
                             std::span<const std::int64_t> counts, dtype type, reduce_op op,
                             const options& opt = {}, void* stream = nullptr) {
  return comm.run(c, groups, send, recv, counts, type, op, opt, stream);
}

inline status allreduce(communicator& comm, const group_list& groups, buffer_view send,
                        buffer_view recv, std::span<const std::int64_t> counts, dtype type,
                        reduce_op op, const options& opt = {}, void* stream = nullptr) {
  return run_collective(comm, collective::allreduce, groups, send, recv, counts, type, op, opt,
                        stream);
}

inline status reduce_scatter(communicator& comm, const group_list& groups, buffer_view send,
                             buffer_view recv, std::span<const std::int64_t> recv_counts,
                             dtype type, reduce_op op, const options& opt = {},
                             void* stream = nullptr) {
  return run_collective(comm, collective::reduce_scatter, groups, send, recv, recv_counts, type, op,
                        opt, stream);
}

inline status all_gather(communicator& comm, const group_list& groups, buffer_view send,
                         buffer_view recv, std::span<const std::int64_t> send_counts, dtype type,
                         const options& opt = {}, void* stream = nullptr) {
  return run_collective(comm, collective::all_gather, groups, send, recv, send_counts, type,
                        reduce_op::sum, opt, stream);
}

inline status all_to_all(communicator& comm, const group_list& groups, buffer_view send,
                         buffer_view recv, std::span<const std::int64_t> segment_counts, dtype type,
                         const options& opt = {}, void* stream = nullptr) {
  return run_collective(comm, collective::all_to_all, groups, send, recv, segment_counts, type,
                        reduce_op::sum, opt, stream);
}

}  // namespace relay

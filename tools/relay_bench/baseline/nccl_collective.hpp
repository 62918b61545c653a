// NCCL's (RCCL's) own collectives, as relay-bench's baselines issue them: one rank's part of a
// collective over its communicator, through the table of the process's library
// (transport/nccl/api.hpp). Host code (a stream is a pointer): baseline/vendor.cpp, ranks/nccl.cpp
// and ranks/ipc.cpp share it.
#pragma once

#include <cstddef>
#include <string>

#include "relay/core/collective.hpp"
#include "relay/core/dtype.hpp"
#include "relay/core/status.hpp"
#include "relay/transport/nccl/api.hpp"

namespace relay::bench {

inline nccl_type nccl_type_of(dtype t) {
  switch (t) {
    case dtype::int8: return nccl_type::int8;
    case dtype::uint8: return nccl_type::uint8;
    case dtype::int32: return nccl_type::int32;
    case dtype::uint32: return nccl_type::uint32;
    case dtype::int64: return nccl_type::int64;
    case dtype::uint64: return nccl_type::uint64;
    case dtype::float16: return nccl_type::float16;
    case dtype::bfloat16: return nccl_type::bfloat16;
    case dtype::float32: return nccl_type::float32;
    case dtype::float64: break;
  }
  return nccl_type::float64;
}

// This rank's part of `coll` over `comm` (`members` ranks), `count` elements as relay counts a
// group's call, from `in` to `out`, enqueued on `stream`. all-to-all is point-to-point in a
// group of its own (NCCL groups nest, so a caller's group may hold it).
inline status nccl_collective(const nccl_api& nccl, nccl_comm comm, int members, collective coll,
                              dtype type, reduce_op op, std::size_t count, const void* in,
                              void* out, void* stream) {
  const nccl_type t = nccl_type_of(type);
  const nccl_op o = op == reduce_op::avg ? nccl_op::avg : nccl_op::sum;
  nccl_result r = nccl_success;
  const char* what = "";
  switch (coll) {
    case collective::allreduce:
      what = "ncclAllReduce";
      r = nccl.all_reduce(in, out, count, t, o, comm, stream);
      break;
    case collective::reduce_scatter:
      what = "ncclReduceScatter";
      r = nccl.reduce_scatter(in, out, count, t, o, comm, stream);
      break;
    case collective::all_gather:
      what = "ncclAllGather";
      r = nccl.all_gather(in, out, count, t, comm, stream);
      break;
    case collective::all_to_all: {
      what = "ncclSend/ncclRecv";
      const std::size_t segment = count * static_cast<std::size_t>(size_of(type));
      r = nccl.group_start();
      for (int peer = 0; peer < members && r == nccl_success; ++peer) {
        const std::size_t at = static_cast<std::size_t>(peer) * segment;
        r = nccl.send(static_cast<const unsigned char*>(in) + at, count, t, peer, comm, stream);
        if (r == nccl_success)
          r = nccl.recv(static_cast<unsigned char*>(out) + at, count, t, peer, comm, stream);
      }
      const nccl_result end = nccl.group_end();
      if (r == nccl_success) r = end;
      break;
    }
  }
  if (r != nccl_success)
    return {errc::gpu_error, std::string(what) + " failed: " + nccl.get_error_string(r)};
  return {};
}

}  // namespace relay::bench

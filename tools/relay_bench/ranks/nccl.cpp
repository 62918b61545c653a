// gpu_rank.hpp's -x nccl over CUDA and NCCL: a communicator from the environment with the nccl
// transport, and NCCL's own collectives on the same communicator (stream_rank.hpp does the rest).
// GPU code (the transport launches relay's reduce kernel), so no {fmt} here.
#include <sstream>

#include "baseline/nccl_types.hpp"
#include "ranks/stream_rank.hpp"
#include "relay/transport/nccl/factory.hpp"

namespace relay::bench {

namespace {

class cuda_nccl_rank final : public stream_rank {
 public:
  using stream_rank::stream_rank;

  std::string description() const override {
    int version = 0;
    (void)ncclGetVersion(&version);
    std::string name;
    (void)gpu::rt::device_name(name, device());
    std::ostringstream text;
    text << "NCCL " << version / 10000 << "." << version / 100 % 100 << "." << version % 100
         << ", rank " << rank() << " on device " << device() << " (" << name << ")";
    return text.str();
  }

  bool vendor_supports(const rank_collective& c) const override {
    return c.groups.size() == 1 && static_cast<int>(c.groups[0].size()) == size();
  }

 private:
  status after_calls() override {
    if (comm().link().broken())
      return {errc::gpu_error, "the NCCL communicator reported an asynchronous error"};
    return {};
  }

  status vendor_call(const rank_collective& c) override {
    ncclComm_t nc = static_cast<nccl_transport&>(comm().link()).comm();
    const auto n = static_cast<std::size_t>(c.counts[0]);
    const ncclDataType_t t = nccl_type(c.type);
    const ncclRedOp_t op = c.op == reduce_op::avg ? ncclAvg : ncclSum;
    ncclResult_t r = ncclSuccess;
    switch (c.coll) {
      case collective::allreduce:
        r = ncclAllReduce(c.send.data, c.recv.data, n, t, op, nc, stream());
        break;
      case collective::reduce_scatter:
        r = ncclReduceScatter(c.send.data, c.recv.data, n, t, op, nc, stream());
        break;
      case collective::all_gather:
        r = ncclAllGather(c.send.data, c.recv.data, n, t, nc, stream());
        break;
      case collective::all_to_all: {
        const std::size_t seg = n * static_cast<std::size_t>(size_of(c.type));
        r = ncclGroupStart();
        for (int p = 0; p < size() && r == ncclSuccess; ++p) {
          const auto at = static_cast<std::size_t>(p) * seg;
          r = ncclSend(static_cast<const unsigned char*>(c.send.data) + at, n, t, p, nc, stream());
          if (r == ncclSuccess)
            r = ncclRecv(static_cast<unsigned char*>(c.recv.data) + at, n, t, p, nc, stream());
        }
        const ncclResult_t end = ncclGroupEnd();
        if (r == ncclSuccess) r = end;
        break;
      }
    }
    if (r != ncclSuccess) return detail::nccl_failure("NCCL's own collective", r);
    return {};
  }
};

}  // namespace

std::unique_ptr<gpu_rank> make_nccl_rank(std::string& why) {
  // The communicator's device is the environment's (RELAY_DEVICE, else the local rank).
  return make_stream_rank<cuda_nccl_rank>(
      nccl_factory(), [](const communicator& c) { return c.device(); }, why);
}

}  // namespace relay::bench

// gpu_rank.hpp's -x nccl: a communicator from the environment with the nccl transport, and
// NCCL's (RCCL's) own collectives on the same communicator, through the transport's table of the
// process's library (stream_rank.hpp does the rest). GPU code (the transport launches relay's
// reduce kernel), so no {fmt} here.
#include <sstream>

#include "baseline/nccl_collective.hpp"
#include "ranks/stream_rank.hpp"
#include "relay/transport/nccl/factory.hpp"

namespace relay::bench {

namespace {

class nccl_rank final : public stream_rank {
 public:
  using stream_rank::stream_rank;

  std::string description() const override {
    int version = 0;
    (void)transport().nccl().get_version(&version);
    std::string name;
    (void)gpu::rt::device_name(name, device());
    std::ostringstream text;
    text << gpu_nccl_search.name << " " << version / 10000 << "." << version / 100 % 100 << "."
         << version % 100 << ", rank " << rank() << " on device " << device() << " (" << name
         << ")";
    return text.str();
  }

  // It runs where one group covers every rank (rank_bench.cpp), on the transport's communicator.
  vendor_info vendor() const override {
    return {true, "NCCL's own collectives on the transport's communicator (" + description() + ")"};
  }

 private:
  const nccl_transport& transport() const {
    return static_cast<const nccl_transport&>(comm().transport());
  }

  status after_calls() override {
    if (comm().transport().broken())
      return {errc::gpu_error, "the NCCL communicator reported an asynchronous error"};
    return {};
  }

  status vendor_call(const rank_collective& c) override {
    return nccl_collective(transport().nccl(), transport().comm(), size(), c.coll, c.type, c.op,
                           static_cast<std::size_t>(c.counts[0]), c.send.data, c.recv.data,
                           stream());
  }
};

}  // namespace

std::unique_ptr<gpu_rank> make_nccl_rank(std::string& why) {
  // The communicator's device is the environment's (RELAY_DEVICE, else the local rank).
  return make_stream_rank<nccl_rank>(
      nccl_factory(), [](const communicator& c) { return c.device(); }, why);
}

}  // namespace relay::bench

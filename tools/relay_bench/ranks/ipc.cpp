// gpu_rank.hpp's -x ipc: a communicator from the environment over the ipc transport, its calls
// eager or replayed from a captured graph (stream_rank.hpp). No vendor baseline runs beside it:
// NCCL allows one rank per device, and these ranks may share one. GPU code, so no {fmt} here.
#include <cstdlib>
#include <sstream>
#include <string>

#include "ranks/stream_rank.hpp"
#include "relay/transport/ipc/factory.hpp"

namespace relay::bench {

namespace {

class cuda_ipc_rank final : public stream_rank {
 public:
  // RELAY_BENCH_REGISTER=1: the rank's buffers are registered, so calls run on them without
  // staging where they may (docs/ipc-transport.md).
  cuda_ipc_rank(std::unique_ptr<communicator> comm, int device, int graph_calls)
      : stream_rank(std::move(comm), device, graph_calls) {
    const char* v = std::getenv("RELAY_BENCH_REGISTER");
    register_memory_ = v != nullptr && std::string(v) == "1";
  }

  std::string description() const override {
    std::string name;
    (void)gpu::rt::device_name(name, device());
    std::ostringstream text;
    text << "relay's ipc transport, rank " << rank() << " on device " << device() << " (" << name
         << "), " << (link().bytes_per_rank() >> 20) << " MiB registered"
         << (register_memory_ ? ", user buffers registered" : "");
    return text.str();
  }
  bool vendor_supports(const rank_collective&) const override { return false; }

 private:
  const ipc_transport& link() const { return static_cast<const ipc_transport&>(comm().link()); }
  status after_calls() override { return link().device_status(); }
  status vendor_call(const rank_collective&) override {
    return {errc::unsupported, "no vendor collective runs beside the ipc transport"};
  }
};

}  // namespace

std::unique_ptr<gpu_rank> make_ipc_rank(std::size_t bytes_per_rank, int graph_calls,
                                        std::string& why) {
  ipc_options o;
  o.bytes_per_rank = bytes_per_rank;
  return make_stream_rank<cuda_ipc_rank>(
      ipc_factory(o),
      [](communicator& c) { return static_cast<ipc_transport&>(c.link()).device(); }, why,
      graph_calls);
}

}  // namespace relay::bench

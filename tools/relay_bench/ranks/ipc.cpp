// gpu_rank.hpp's -x ipc: a communicator from the environment over the ipc transport, its calls
// eager or replayed from a captured graph (stream_rank.hpp). No vendor library runs beside it
// (NCCL allows one rank per device, and these ranks may share one); with --baseline floor the
// vendor's place is the floor's, a single-kernel one-shot allreduce (bench/tools/floor), eager
// or replayed like relay's calls. GPU code, so no {fmt} here.
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "floor_allreduce.hpp"
#include "ranks/stream_rank.hpp"
#include "relay/transport/ipc/factory.hpp"

namespace relay::bench {

// The floor's relay-sized launches (floor_options::relay_sized_arguments) carry as many argument
// bytes as the pull kernel's launch (ipc::launch_pull_kernel).
static_assert(floor::relay_argument_bytes == sizeof(ipc::ipc_pull) + sizeof(ipc::ipc_peers) +
                                                 sizeof(gpu::copy_desc) + sizeof(std::uint64_t) +
                                                 sizeof(ipc::ipc_env));

namespace {

class cuda_ipc_rank final : public stream_rank {
 public:
  // RELAY_BENCH_REGISTER=1: the rank's buffers are registered, so calls run on them without
  // staging where they may (docs/ipc-transport.md).
  // split: relay's calls run on a communicator of the rank's group, over an ipc transport of
  // options `o`, as the job's.
  cuda_ipc_rank(std::unique_ptr<communicator> comm, int device, int graph_calls, floor_entry floor,
                bool split, ipc_options o)
      : stream_rank(std::move(comm), device, graph_calls) {
    if (split) split_groups(ipc_factory(o));
    const char* v = std::getenv("RELAY_BENCH_REGISTER");
    register_memory_ = v != nullptr && std::string(v) == "1";
    if (floor != floor_entry::none) {  // collective, as the communicator was
      floor_how_.whole_job_entry = floor == floor_entry::job;
      floor_ = std::make_unique<bench::floor::floor_allreduce>();
      floor_status_ = floor_->open(boot(), device, timeout());
    }
  }

  // The floor maps every rank's memory (collective: every rank calls this for every row). Its
  // old mappings are closed first: relay's registration of a reallocated buffer would fail
  // while this process still mapped the peer's old one (floor_allreduce::unmap).
  void* device_memory(std::size_t bytes) override {
    if (floor_ && floor_status_) floor_->unmap();
    void* m = stream_rank::device_memory(bytes);
    if (floor_ && floor_status_) floor_status_ = floor_->map(boot(), m, timeout());
    return m;
  }

  std::string description() const override {
    std::string name;
    (void)gpu::rt::device_name(name, device());
    std::ostringstream text;
    text << "relay's ipc transport, rank " << rank() << " on device " << device() << " (" << name
         << "), " << (transport().bytes_per_rank() >> 20) << " MiB registered"
         << (register_memory_ ? ", user buffers registered" : "")
         << (replays_graphs() && graph_inputs_ ? ", graph inputs registered after capture" : "");
    return text.str();
  }
  bool vendor_supports(const rank_collective& c) const override {
    return floor_ && c.coll == collective::allreduce && c.op == reduce_op::sum &&
           bench::floor::supports(c.type);
  }

 private:
  const ipc_transport& transport() const {
    return static_cast<const ipc_transport&>(comm().transport());
  }
  status after_calls() override {
    if (status s = transport().device_status(); !s) return s;
    if (const communicator* g = group_communicator())
      if (status s = static_cast<const ipc_transport&>(g->transport()).device_status(); !s)
        return s;
    return floor_ ? floor_->error() : status{};
  }
  bool vendor_graphs() const override { return true; }
  status vendor_call(const rank_collective& c) override {
    if (!floor_) return {errc::unsupported, "no vendor collective runs beside the ipc transport"};
    if (!floor_status_) return floor_status_;
    if (!vendor_supports(c)) return {errc::unsupported, "the floor runs allreduce sums only"};
    for (const auto& g : c.groups)
      for (int r : g)
        if (r == rank())
          return floor_->run(g, c.send.data, c.recv.data, c.send.bytes, c.type, timeout(), stream(),
                             floor_how_);
    // Not in any group: nothing to do (floor-job is not run where a rank is in none: rank_bench).
    if (floor_how_.whole_job_entry)
      return {errc::unsupported, "--baseline floor-job needs every rank in a group"};
    return {};
  }

  std::unique_ptr<bench::floor::floor_allreduce> floor_;
  bench::floor::floor_options floor_how_;
  status floor_status_;
};

}  // namespace

std::unique_ptr<gpu_rank> make_ipc_rank(std::size_t bytes_per_rank, int graph_calls,
                                        floor_entry floor, bool split, std::string& why) {
  ipc_options o;
  o.bytes_per_rank = bytes_per_rank;
  return make_stream_rank<cuda_ipc_rank>(
      ipc_factory(o),
      [](communicator& c) { return static_cast<ipc_transport&>(c.transport()).device(); }, why,
      graph_calls, floor, split, o);
}

}  // namespace relay::bench

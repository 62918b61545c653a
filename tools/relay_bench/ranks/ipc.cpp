// gpu_rank.hpp's -x ipc: a communicator from the environment over the ipc transport, its calls
// eager or replayed from a captured graph (stream_rank.hpp). Beside it runs the vendor's
// collective that ipc_vendor names, eager or replayed like relay's calls: the floor, a
// single-kernel one-shot allreduce (bench/tools/floor), or NCCL's (RCCL's) own collectives, each
// group on an NCCL communicator of its own, split from the job's where every rank has a device
// of its own. GPU code, so no {fmt} here.
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "baseline/nccl_collective.hpp"
#include "floor_allreduce.hpp"
#include "ranks/stream_rank.hpp"
#include "relay/transport/ipc/factory.hpp"
#include "relay/transport/nccl/factory.hpp"

namespace relay::bench {

// The floor's relay-sized launches (floor_options::relay_sized_arguments) carry as many argument
// bytes as the pull kernel's launch (ipc::launch_pull_kernel).
static_assert(floor::relay_argument_bytes == sizeof(ipc::ipc_pull) + sizeof(ipc::ipc_peers) +
                                                 sizeof(gpu::copy_desc) + sizeof(std::uint64_t) +
                                                 sizeof(ipc::ipc_env));

namespace {

using bench::floor::floor_algorithm;

class ipc_rank final : public stream_rank {
 public:
  // RELAY_BENCH_REGISTER=1: the rank's buffers are registered, so calls run on them without
  // staging where they may (docs/ipc-transport.md).
  // split: relay's calls run on a communicator of the rank's group, over an ipc transport of
  // options `o`, as the job's.
  ipc_rank(std::unique_ptr<communicator> comm, int device, int graph_calls, ipc_vendor vendor,
           bool split, ipc_options o)
      : stream_rank(std::move(comm), device, graph_calls), vendor_(vendor) {
    if (split) split_groups(ipc_factory(o));
    // Parallel mode's plans run at once on this device: each copy of the job's communicator
    // divides it among the plans too, so that their spinning kernels cannot starve each other.
    parallel_plans([this, o](int plans) -> transport_factory {
      ipc_options each = o;
      each.device_share = plans * transport().device_share();
      return ipc_factory(each);
    });
    const char* v = std::getenv("RELAY_BENCH_REGISTER");
    register_memory_ = v != nullptr && std::string(v) == "1";
  }

  // The vendor's start, collective as the communicator's was. The floor's failure is told by
  // its first call; NCCL's is agreed here, so that every rank runs it or none does.
  status open_vendor() {
    if (vendor_ == ipc_vendor::floor || vendor_ == ipc_vendor::floor_ll ||
        vendor_ == ipc_vendor::floor_barrier || vendor_ == ipc_vendor::floor_job) {
      floor_how_.algorithm = vendor_ == ipc_vendor::floor      ? floor_algorithm::automatic
                             : vendor_ == ipc_vendor::floor_ll ? floor_algorithm::ll
                                                               : floor_algorithm::barrier;
      floor_how_.whole_job_entry = vendor_ == ipc_vendor::floor_job;
      // RELAY_BENCH_FLOOR_EARLY_LAUNCH=0: the ll floor launched the ordinary way, for the
      // accounting of relay's launch (RELAY_IPC_EARLY_LAUNCH=0 is relay's).
      if (const char* v = std::getenv("RELAY_BENCH_FLOOR_EARLY_LAUNCH"); v != nullptr)
        floor_how_.early_launch = std::string(v) != "0";
      floor_ = std::make_unique<bench::floor::floor_allreduce>();
      floor_status_ = floor_->open(boot(), device(), timeout());
      return {};
    }
    if (vendor_ != ipc_vendor::nccl && vendor_ != ipc_vendor::automatic) return {};
    status mine;
    const nccl_api* library = nullptr;
    if (const int share = transport().device_share(); share > 1)
      mine = {errc::unsupported, std::to_string(share) + " ranks share device " +
                                     std::to_string(device()) + ", and " + gpu_nccl_search.name +
                                     " puts one rank on a device"};
    else
      mine = gpu_nccl(library);
    const status agreed = detail::agree_on_outcome(boot(), mine, timeout(),
                                                   std::string(gpu_nccl_search.name) + " baseline");
    if (agreed) {
      vendor_ = ipc_vendor::nccl;
      return {};
    }
    if (vendor_ == ipc_vendor::nccl)
      return {agreed.code(), std::string("--baseline nccl: ") + agreed.message(), agreed.peer()};
    vendor_ = ipc_vendor::none;
    no_vendor_ = std::string(gpu_nccl_search.name) + ": " + agreed.message();
    return {};
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
         << "), " << (transport().area_bytes() >> 20) << " MiB registered"
         << (register_memory_ ? ", user buffers registered" : "")
         << (replays_graphs() && graph_inputs_ ? ", graph inputs registered after capture" : "");
    return text.str();
  }

  vendor_info vendor() const override {
    switch (vendor_) {
      case ipc_vendor::floor:
        return {true,
                "the floor: a single-kernel one-shot allreduce, up to " +
                    std::to_string(bench::floor::ll_default_max >> 10) +
                    " KiB pushing words that carry their call's epoch to every member (no "
                    "barrier), above it reading every member's input in place between an entry "
                    "and an exit barrier among each group's ranks (bench/tools/floor; allreduce "
                    "sum, out of place)"};
      case ipc_vendor::floor_ll:
        return {true,
                "the floor's ll algorithm: a single-kernel one-shot allreduce pushing words "
                "that carry their call's epoch to every member, no barrier (bench/tools/floor; "
                "allreduce sum, out of place, up to " +
                    std::to_string(bench::floor::ll_capacity >> 10) + " KiB)",
                static_cast<std::int64_t>(bench::floor::ll_capacity)};
      case ipc_vendor::floor_barrier:
      case ipc_vendor::floor_job:
        return {true, std::string("the floor's barrier algorithm: a single-kernel one-shot "
                                  "allreduce reading every member's input in place between an "
                                  "entry and an exit barrier, its entry meeting ") +
                          (floor_how_.whole_job_entry ? "every rank" : "each group's ranks") +
                          " (bench/tools/floor; allreduce sum, out of place)"};
      case ipc_vendor::nccl: {
        int version = 0;
        const nccl_api* library = nullptr;
        if (gpu_nccl(library)) (void)library->get_version(&version);
        std::ostringstream text;
        text << gpu_nccl_search.name << " " << version / 10000 << "." << version / 100 % 100 << "."
             << version % 100
             << "'s own collectives, each group on a communicator of its own (split from the "
                "job's), a device per rank";
        return {true, text.str()};
      }
      case ipc_vendor::none:
      case ipc_vendor::automatic: break;
    }
    const std::string why = no_vendor_.empty() ? "not asked for" : no_vendor_;
    return {false, "none (" + why + ")"};
  }

 private:
  // The communicator's transport: ipc's, or with hosted helpers (--helper-devices) the one that
  // drives this process's ranks, each on an ipc transport of its own; either through relay's
  // transport interface.
  const relay::transport& transport() const { return comm().transport(); }

  // NCCL's communicators of the call's groups, unless the last vendor run made these already
  // (collective: every rank runs the vendor's form of every row where it runs).
  status before_calls(const rank_collective& c, bool vendor) override {
    if (!vendor || vendor_ != ipc_vendor::nccl || c.groups == nccl_of_) return {};
    nccl_comm_.reset();
    nccl_of_.clear();
    nccl_config config;
    config.check_every_call = false;  // its collectives are NCCL's own, not relay's calls
    const group_place at = place_in(c.groups, rank());
    if (status s = split_communicator(comm(), at.group, at.index, nccl_factory(config), nccl_comm_);
        !s)
      return s;
    nccl_of_ = c.groups;
    nccl_group_ = at.group;
    return {};
  }

  status after_calls() override {
    if (status s = transport().async_status(); !s) return s;
    if (const communicator* g = group_communicator())
      if (status s = g->transport().async_status(); !s) return s;
    if (nccl_comm_ && nccl_comm_->transport().broken())
      return {errc::gpu_error, std::string("the ") + gpu_nccl_search.name +
                                   " communicator of the baseline reported an asynchronous error"};
    return floor_ ? floor_->error() : status{};
  }

  bool vendor_graphs() const override { return true; }

  status vendor_call(const rank_collective& c) override {
    if (vendor_ == ipc_vendor::nccl) {
      if (!nccl_comm_) return {};  // in no group: nothing to run
      const auto& t = static_cast<const nccl_transport&>(nccl_comm_->transport());
      const std::int64_t count = c.counts[static_cast<std::size_t>(nccl_group_)];
      return nccl_collective(t.nccl(), t.comm(), nccl_comm_->size(), c.coll, c.type, c.op,
                             static_cast<std::size_t>(count), c.send.data, c.recv.data, stream());
    }
    if (!floor_) return {errc::unsupported, "no vendor collective runs beside the ipc transport"};
    if (!floor_status_) return floor_status_;
    if (c.coll != collective::allreduce || c.op != reduce_op::sum ||
        !bench::floor::supports(c.type))
      return {errc::unsupported, "the floor runs allreduce sums only"};
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

  ipc_vendor vendor_;
  std::string no_vendor_;  // why the automatic choice runs none
  std::unique_ptr<bench::floor::floor_allreduce> floor_;
  bench::floor::floor_options floor_how_;
  status floor_status_;
  // NCCL's: the communicator of this rank's group (null: in none), the groups it was made for
  // (none yet: empty, which no call's groups are), and the group's index.
  std::unique_ptr<communicator> nccl_comm_;
  group_list nccl_of_;
  int nccl_group_ = -1;
};

}  // namespace

std::unique_ptr<gpu_rank> make_ipc_rank(std::size_t bytes_per_rank, int graph_calls,
                                        ipc_vendor vendor, bool split, std::string& why) {
  ipc_options o;
  o.bytes_per_rank = bytes_per_rank;
  std::unique_ptr<ipc_rank> r = make_stream_rank<ipc_rank>(
      ipc_factory(o), [](communicator& c) { return c.transport().device(); }, why, graph_calls,
      vendor, split, o);
  if (!r) return nullptr;
  if (status s = r->open_vendor(); !s) {
    why = s.to_string();
    return nullptr;
  }
  return r;
}

}  // namespace relay::bench

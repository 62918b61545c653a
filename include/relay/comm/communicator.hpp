// A communicator: one per process, one process per rank. It holds the rank, the node size N,
// the device, a bootstrap and a transport, and turns a rank-local collective call into a plan
// (the same on every rank, cached by the call's shape) and this rank's slice of it.
//
// What the communicator guarantees before the transport runs:
//   - Arguments every rank sees alike (groups, counts, dtype, op, options) are validated by
//     make_plan identically everywhere, so all ranks refuse a bad call together, without
//     communicating.
//   - The first call of a shape on this communicator all-gathers a description of those
//     arguments (and whether each active rank is in place) through the bootstrap; a mismatch is
//     errc::mismatch on every rank, naming the ranks that disagree with rank 0. Later calls of a
//     cached shape pass the fingerprint to the transport (shm compares it on every call).
//   - In place is detected on each active rank from its own pointers and must agree across all
//     active ranks of the call (helpers have no buffers and do not vote).
//   - This rank's own buffers are checked (null, size, alignment, in-place layout, overlap);
//     a failure goes to the transport as call.local so the peers learn of it (see transport.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "relay/api/collectives.hpp"
#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/transport/transport.hpp"

namespace relay {

struct comm_config {
  int device = 0;
  std::chrono::milliseconds timeout = default_peer_timeout;  // every wait for a peer
  std::size_t plan_cache_entries = 64;                       // least recently used shapes kept
};

// One call as the caller made it on this rank.
struct rank_call {
  collective coll = collective::allreduce;
  const group_list* groups = nullptr;
  buffer_view send{}, recv{};  // this rank's buffers (empty views on a helper)
  std::span<const std::int64_t> counts;
  dtype type = dtype::float32;
  reduce_op op = reduce_op::sum;
  options opt{};
  void* stream = nullptr;
};

class communicator {
 public:
  // The bootstrap is shared with the transport (which may keep using it).
  inline communicator(std::shared_ptr<bootstrap> boot, std::unique_ptr<transport> link,
                      comm_config config);

  int rank() const { return boot_->rank(); }
  int size() const { return boot_->size(); }
  int device() const { return config_.device; }
  const comm_config& config() const { return config_; }
  bootstrap& boot() { return *boot_; }
  relay::transport& link() { return *link_; }

  // Runs one call (the rank-local collectives in comm/collectives.hpp forward here).
  inline status run(const rank_call& call);

 private:
  struct cached {
    plan p;
    plan_slice slice;
    std::uint64_t fingerprint = 0;
    std::list<std::string>::iterator lru;
  };
  std::shared_ptr<bootstrap> boot_;
  std::unique_ptr<relay::transport> link_;
  comm_config config_;
  std::uint64_t sequence_ = 0;
  std::unordered_map<std::string, cached> cache_;
  std::list<std::string> lru_;
};

}  // namespace relay

// Bootstrap: how the processes of one job find each other before any transport exists. Every
// rank-local communicator is built over one; transports use it to exchange what they set up
// (a shared-memory name, NCCL's unique id, IPC handles) and the communicator uses it to compare
// the fingerprint of a new call shape across ranks.
//
// Every call is collective (all ranks of the job make the same calls in the same order) and
// takes a timeout: a peer that never arrives, or died, makes the call fail with a status that
// names that peer, never hang. Implementations: tcp_bootstrap.hpp (a TCP store configured from
// the environment, torchrun's variables included), callback_bootstrap.hpp (a framework's own
// store serves). An existing NCCL/RCCL communicator can serve through the callback bootstrap
// (ncclAllGather of sizes, then of padded bytes) or its own implementation of this interface.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "relay/core/status.hpp"

namespace relay {

using milliseconds = std::chrono::milliseconds;

class bootstrap {
 public:
  virtual ~bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank contributes `mine` (any length, 0 included); on success all[r] holds rank r's
  // bytes on every rank. On failure `all` is unspecified and the status names the missing peer.
  virtual status all_gather(std::span<const std::byte> mine,
                            std::vector<std::vector<std::byte>>& all, milliseconds timeout) = 0;
  // Returns once every rank has entered it (or fails naming a rank that did not).
  virtual status barrier(milliseconds timeout) = 0;
  // A numeric address at which the job's other processes can reach this one (where a split's
  // store listens: bootstrap/split.hpp). A bootstrap that does not know says loopback, so a
  // split over it joins the ranks of one host only.
  virtual std::string address() const { return "127.0.0.1"; }
};

}  // namespace relay

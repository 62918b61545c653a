// What a stream transport offers the hosted transport (hosted/transport.hpp), so that the parts
// of one call that a process's ranks run are one enqueue on the caller's stream
// (docs/hosted-helpers.md, "A call on GPUs"): the host's work of every rank first, then each
// hosted rank's kernels on a stream of its own, forked from the caller's stream and joined back,
// every rank's launches made together, by order (launch_in_order).
// Host-only: the ipc transport implements it over the GPU runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/transport/transport.hpp"

namespace relay::hosted {

class stream_side {
 public:
  virtual ~stream_side() = default;
  // The stream of this rank's own, on its device: where its part of a call runs when another rank
  // of its process calls.
  virtual void* own_stream() const = 0;
  // The host's work of `call` that may allocate or wait for the device (a program built and
  // uploaded), done before any rank of the process launches the call's kernels: a rank's kernels
  // wait for its peers', so no rank may wait for the device while another's are in flight. A
  // failure is left for run() to meet again.
  virtual void prepare(const call_context& call) = 0;
  // An event recorded on `stream` now (a stream of this rank's device: the caller's), into `point`.
  virtual status fork(void* stream, void*& point) = 0;
  // This rank's own stream waits for `point` (an event of another rank of this process).
  virtual status follow(void* point) = 0;
  // `stream` (the caller's) waits for what this rank's own stream holds now.
  virtual status rejoin(void* stream) = 0;
  // While on, run() keeps the call's kernel launches instead of making them, each with its
  // order (ipc/kernel_launch.hpp says why the ranks of a process launch by it); turning it off
  // drops what is kept.
  virtual void keep_launches(bool on) = 0;
  // The launches kept: how many, the order of the i-th (nondecreasing in i), and making it (a
  // failure leaves this rank, as a failed launch in run() does).
  virtual std::size_t kept_launches() const = 0;
  virtual std::uint32_t kept_order(std::size_t i) const = 0;
  virtual status launch_kept(std::size_t i) = 0;
};

// Every rank's kept launches, by order, ties by rank index: a rank's launch waits for no launch
// made after it (ipc/kernel_launch.hpp). A rank whose launch fails makes no more; its failure goes
// into results[k] unless that already holds one. `next` is scratch (one per rank).
inline void launch_in_order(std::span<stream_side* const> ranks, std::span<status> results,
                            std::vector<std::size_t>& next) {
  next.assign(ranks.size(), 0);
  for (;;) {
    std::size_t pick = ranks.size();
    std::uint32_t least = 0;
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      if (next[k] >= ranks[k]->kept_launches()) continue;
      const std::uint32_t o = ranks[k]->kept_order(next[k]);
      if (pick == ranks.size() || o < least) pick = k, least = o;
    }
    if (pick == ranks.size()) return;
    if (status s = ranks[pick]->launch_kept(next[pick]++); !s) {
      if (results[pick]) results[pick] = s;
      next[pick] = ranks[pick]->kept_launches();
    }
  }
}

}  // namespace relay::hosted

// What a stream transport offers the hosted transport (hosted/transport.hpp), so that the parts
// of one call that a process's ranks run are one enqueue on the caller's stream
// (docs/hosted-helpers.md, "A call on GPUs"): the host's work of every rank first, then each
// hosted rank's kernels on a stream of its own, forked from the caller's stream and joined back.
// Host-only: the ipc transport implements it over the GPU runtime.
#pragma once

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
};

}  // namespace relay::hosted

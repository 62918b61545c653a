// What a communicator says, before each step that every rank must take with it, to whoever
// serves it: a call (its shape as passed and the choice made for it), a refusal made before the
// call had a shape, a collective registration. A control plane (serve/plane.hpp) is one: its
// publisher writes each step into shared memory, and ranks that serve instead of calling read it
// and take the same step (serve/serve.hpp).
//
// The communicator announces before the step's agreement, on every rank; what the announcer does
// with it is its own rule (the plane publishes from one rank and does nothing on the others). An
// announcer that fails leaves whoever serves out of step: the communicator then gives up on the
// job (transport::abort, with the announcer's status) and returns that status. A call that fails
// is passed to the announcer's explain before it returns.
#pragma once

#include <cstdint>

#include "relay/core/status.hpp"
#include "relay/plan/call_shape.hpp"

namespace relay {

enum class announced_step : std::uint8_t {
  call,     // shape and choice
  refusal,  // communicator::refuse: `refusal` says why
  register_buffer,
  deregister_buffer,
  register_graph_inputs,
  deregister_graph_inputs,
};

struct announcement {
  announced_step step = announced_step::call;
  // The call's sequence (call, refusal: the same on every rank), else the calls made before it.
  std::uint64_t sequence = 0;
  // The sequence numbers the call takes: its pieces where it is larger than the transport's area
  // (plan/pieces.hpp), else 1; whoever serves it cuts it alike.
  std::uint64_t rounds = 1;
  const call_shape* shape = nullptr;    // call: as the caller passed it
  const call_choice* choice = nullptr;  // call: the route and wire taken
  const status* refusal = nullptr;      // refusal: the rank's reason
  void* stream = nullptr;               // the step's stream (GPU transports)
};

class announcer {
 public:
  virtual ~announcer() = default;
  virtual status announce(const announcement& a) = 0;
  // The call of sequence `sequence` failed with `failure`: what the call returns, which names a
  // cause the announcer knows of where it knows one (a plane whose publisher stopped the ranks
  // that serve before the call), else `failure` as it is.
  virtual status explain(std::uint64_t sequence, status failure) {
    (void)sequence;
    return failure;
  }
};

}  // namespace relay

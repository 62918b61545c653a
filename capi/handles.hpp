// The C ABI's communicator handles: what a relay_comm holds, the registry that tells a live
// handle from a stray pointer, and how one is made (the transport every rank agrees on).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "async_calls.hpp"
#include "relay/bootstrap/bootstrap.hpp"
#include "relay/bootstrap/environment.hpp"
#include "relay/c/relay.h"
#include "relay/comm/communicator.hpp"
#include "relay/topology/topology.hpp"
#include "transport_choice.hpp"

// What a handle holds: the communicator, the transport's name, the last few group lists passed,
// so that a repeated call finds its groups without building (allocating) a list, and its async
// calls' events.
struct relay_comm {
  std::unique_ptr<relay::communicator> comm;
  std::string transport;
  std::size_t transport_bytes = 0;  // as created (0: the transport's default), for its splits
  relay::status aborted;            // set by relay_comm_abort: every later call fails with it
  // What route::automatic and the fp8 wire are priced on: mi300x, with the e4m3 encoding this
  // rank's device converts (wire fp8: fnuz on gfx942, OCP on gfx950 and NVIDIA; device_fp8).
  relay::topology machine = relay::mi300x;
  static constexpr std::size_t group_slots = 8;
  std::array<relay::group_list, group_slots> groups;
  std::size_t next_slot = 0;
  // Async calls (relay_run_call_async): how many were made, and on a stream transport the
  // events that order them (made at the first).
  std::uint64_t async_made = 0;
  relay::c_abi::async_calls_ptr async;
};

namespace relay::c_abi {

// Whether `h` is a live handle: a set of them is looked up, never the pointer read, so a
// destroyed or stray handle is an error, not a crash.
bool is_live(const void* h);
status bad_handle(const void* h);
// `c` as a live handle into `out`, or why not (a stray pointer; an aborted communicator, with
// `out` set).
status live(relay_comm* c, relay_comm*& out);

// Collective: the communicator over `boot` and the transport every rank agrees on (the one
// choose_transport picks for `requested` and `memory`), as a new handle into *out. The processes
// of `boot` host `helpers` (docs/hosted-helpers.md; agreed first: `refused` not ok is this
// process's reason it has no list, and every process fails naming it).
status make_comm(std::shared_ptr<bootstrap> boot, const environment& env, const char* requested,
                 memory_kind memory, std::size_t bytes, std::span<const int> helpers,
                 const status& refused, relay_comm** out);
// A new live handle for `comm` into *out.
void publish(std::unique_ptr<communicator> comm, std::string transport, std::size_t bytes,
             relay_comm** out);
// Unregisters and deletes `c` (NULL: nothing).
status destroy(relay_comm* c);

// The handle's list equal to the flat groups, or one filled with them.
const group_list& groups_of(relay_comm& h, const std::int32_t* ranks, const std::int32_t* sizes,
                            std::int32_t n);

}  // namespace relay::c_abi

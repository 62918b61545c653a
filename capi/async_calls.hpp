// What the C ABI's async calls (relay_run_call_async and the entries that take a call's number)
// keep per communicator on a stream transport: an event that joins the caller's stream to the
// operation stream, and a ring of RELAY_ASYNC_DEPTH events, each marking the end of one async
// call (number n in slot n % depth). The GPU builds order with the runtime's events
// (async_calls_gpu.cpp); the host build has no streams (async_calls_host.cpp), and the entry
// points never ask it: its transport's calls have finished when they return.
#pragma once

#include <cstdint>
#include <memory>

#include "relay/core/status.hpp"

namespace relay::c_abi {

struct async_calls;
struct async_calls_deleter {
  void operator()(async_calls* a) const noexcept;
};
using async_calls_ptr = std::unique_ptr<async_calls, async_calls_deleter>;

// Orders `op_stream` after the work enqueued on `stream` so far (neither blocks the host). Makes
// the events on `device` at a communicator's first async call (`a` null).
status enqueue_after(async_calls_ptr& a, int device, void* stream, void* op_stream);
// Marks the end of async call `number` on `op_stream`. The call `depth` numbers before it, whose
// slot this takes, has finished first: where it is still in flight, this waits for it on the host
// (not while `op_stream` is captured into a graph: a captured call's end is its graph's).
status mark_end(async_calls& a, std::uint64_t number, void* op_stream);
// `stream` waits for async call `number`, whose slot still marks it.
status order_after(async_calls& a, std::uint64_t number, void* stream);
// Whether async call `number`, whose slot still marks it, has finished.
status has_finished(async_calls& a, std::uint64_t number, bool& finished);
// Blocks until async call `number`, whose slot still marks it, has finished.
status wait_finished(async_calls& a, std::uint64_t number);

}  // namespace relay::c_abi

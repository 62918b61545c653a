// Serving: a rank that does not run the model takes every step the ranks that do take, as a
// helper, from the communicator's control plane (serve/plane.hpp).
//
//   // every rank:
//   relay::serve::attach_plane(*comm, rank < 2 ? plane_role::call : plane_role::serve);
//   if (rank < 2) {                              // the active ranks call exactly as before
//     for (...) relay::allreduce(*comm, {{0, 1}}, send, recv, counts, dtype, op);
//     relay::serve::stop_serving(*comm);
//   } else {
//     relay::status s = relay::serve::serve(*comm);   // returns when told to stop
//   }
//
// Each call is served with the shape the publisher passed and the choice its cost model made, so
// every rank makes the same plan; the call's agreement then checks it as any call's, so a serving
// rank that read a shape wrong makes a mismatch on every rank, never wrong data. A served call
// that fails and leaves the communicator usable (a mismatch, a refusal, arguments refused
// alike everywhere, a call too large for the transport) is counted in the report, and serving
// goes on: the callers got the same error, and their next call is served. serve() returns ok at
// stop, and an error where it cannot go on: the plane failed (a publisher that stalled past the
// timeout, exited or closed its communicator without stopping: named first), the communicator
// broke (a peer gone mid-call), or it cannot follow a graph. It then gives up on the job
// (transport::abort), so every rank's next call fails at once, naming the same cause. One serve()
// per communicator at a time: a second, from another thread while the first runs, is refused at
// once on its rank (errc::invalid_argument) and changes nothing else.
//
// A caller's call made after the publisher's stop (the ranks that serve returned: they take no
// part) fails naming the publisher, errc::peer_error (control_plane::explain).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "relay/comm/communicator.hpp"
#include "relay/serve/graphs.hpp"
#include "relay/serve/plane.hpp"
#include "relay/serve/record.hpp"

namespace relay::serve {

struct serve_options {
  // The longest wait for the publisher's next step (between calls, the callers' own work
  // included). 0: the communicator's timeout.
  std::chrono::milliseconds timeout{0};
  void* stream = nullptr;           // GPU transports: where the served calls run
  graph_runtime* graphs = nullptr;  // to follow the callers' graphs (serve/graphs.hpp)
};

// What a serve() did.
struct serve_report {
  std::uint64_t steps = 0;     // records taken from the plane
  std::uint64_t calls = 0;     // calls served (a mirrored refusal included)
  std::uint64_t failed = 0;    // of those, failed with the communicator usable after
  std::uint64_t captures = 0;  // graphs captured
  std::uint64_t replays = 0;   // graphs launched
  status last_failure;         // the last of the failed calls
};

namespace detail {

// For tests: called with each call's shape as this rank read it, before it serves it (a test
// alters it to show that a shape read wrong is a mismatch everywhere, or delays the call).
inline void (*after_reading)(call_shape& shape, std::uint64_t sequence) = nullptr;

// Gives up on the job with `why`: every rank's next call fails at once, naming it.
inline status leave(communicator& comm, control_plane& plane, status why) {
  why = plane.give_up(std::move(why));
  comm.transport().abort(why);
  return why;
}

inline bool is_call(record_kind k) {
  return k == record_kind::call || k == record_kind::refusal || k == record_kind::unservable;
}

// This rank's refusal of a served call in which it is active: it holds no buffers.
inline status active_refusal(const call_shape& s, int me, std::uint64_t sequence) {
  for (std::size_t g = 0; g < s.groups.size(); ++g)
    for (int r : s.groups[g])
      if (r == me && g < s.counts.size() && s.counts[g] != 0)
        return {errc::invalid_argument,
                "rank " + std::to_string(me) + " serves (it holds no buffers) but call #" +
                    std::to_string(sequence) + " makes it active in group " + std::to_string(g) +
                    " (count " + std::to_string(s.counts[g]) + ")"};
  return {};
}

}  // namespace detail

inline status serve(communicator& comm, const serve_options& opt = {},
                    serve_report* report = nullptr) {
  serve_report own;
  serve_report& rep = report != nullptr ? *report : own;
  control_plane* plane = plane_of(comm);
  if (plane == nullptr)
    return {errc::invalid_argument,
            "the communicator has no control plane: attach_plane(comm, plane_role::serve) first"};
  if (plane->role() != plane_role::serve)
    return {errc::invalid_argument,
            "rank " + std::to_string(comm.rank()) + " calls: serve() is for the ranks that serve"};
  // A second serve() of the same communicator (another thread) would take the first one's
  // records: it is refused here, on this rank alone, and the first goes on.
  if (!plane->claim_serving())
    return {errc::invalid_argument,
            "rank " + std::to_string(comm.rank()) +
                " serves this communicator already (a serve() in another thread): one serve() "
                "per communicator at a time"};
  struct release {
    control_plane& p;
    ~release() { p.release_serving(); }
  } const serving{*plane};
  const auto timeout = opt.timeout.count() > 0 ? opt.timeout : comm.config().timeout;
  const std::string me = "rank " + std::to_string(comm.rank());
  std::vector<std::byte> record;
  served_call served;
  std::uint64_t capture = 0;  // the capture open here (0: none)
  for (;;) {
    record_head h;
    if (status s = plane->take(record, h, timeout); !s) return detail::leave(comm, *plane, s);
    ++rep.steps;
    const bool is_call = detail::is_call(h.kind);
    const std::uint64_t expected = comm.calls_made() + (is_call ? 1 : 0);
    if (h.sequence != expected || (is_call && h.capture != capture))
      return detail::leave(
          comm, *plane,
          {errc::system_error, me + " serves and is at call #" + std::to_string(expected) +
                                   (capture ? " in capture " + std::to_string(capture) : "") +
                                   ", but the plane's next step is " + name(h.kind) + " of call #" +
                                   std::to_string(h.sequence) +
                                   (h.capture ? " in capture " + std::to_string(h.capture) : "") +
                                   ": the ranks are out of step"});
    if (h.kind == record_kind::stop) {
      served_refusal why;
      if (record.size() == record_head_bytes) return {};
      if (status r = read_refusal(record, why); !r) return detail::leave(comm, *plane, r);
      // The callers' communicator broke (a call failed after this rank's part of it was done):
      // its failure, here too.
      return detail::leave(comm, *plane, {why.code, why.reason, why.root});
    }
    const bool graph_step = h.kind == record_kind::capture_begin ||
                            h.kind == record_kind::capture_end || h.kind == record_kind::replay;
    if (graph_step && opt.graphs == nullptr)
      return detail::leave(comm, *plane,
                           {errc::invalid_argument,
                            me +
                                " serves without a graph runtime (serve_options::graphs), and "
                                "the ranks that call capture graph " +
                                std::to_string(h.capture) + ": it cannot follow them"});
    status st;
    plane->set_serving(true);
    switch (h.kind) {
      case record_kind::call:
        if (status r = read_call(record, served); !r) {
          plane->set_serving(false);
          return detail::leave(comm, *plane, r);
        }
        if (detail::after_reading != nullptr) detail::after_reading(served.shape, h.sequence);
        st = comm.serve_call(served.shape, served.choice,
                             detail::active_refusal(served.shape, comm.rank(), h.sequence),
                             opt.stream);
        ++rep.calls;
        break;
      case record_kind::unservable:
        st = comm.refuse(
            {errc::invalid_argument, "call #" + std::to_string(h.sequence) +
                                         "'s shape does not fit the control plane's records "
                                         "(plane_geometry::record_bytes)"},
            opt.stream);
        ++rep.calls;
        break;
      case record_kind::refusal: {
        served_refusal why;
        if (status r = read_refusal(record, why); !r) {
          plane->set_serving(false);
          return detail::leave(comm, *plane, r);
        }
        const int by = static_cast<int>(h.publisher);
        st = comm.refuse(
            {errc::peer_error,
             "rank " + std::to_string(by) + " refused call #" + std::to_string(h.sequence) + ": " +
                 std::string(name(why.code)) + (why.reason.empty() ? "" : ": " + why.reason),
             by},
            opt.stream);
        ++rep.calls;
        break;
      }
      case record_kind::register_buffer: st = comm.register_buffer(nullptr, 0); break;
      case record_kind::deregister_buffer: st = comm.deregister_buffer(nullptr); break;
      case record_kind::register_graph_inputs: st = comm.register_graph_inputs(); break;
      case record_kind::deregister_graph_inputs: st = comm.deregister_graph_inputs(); break;
      case record_kind::capture_begin:
        st = opt.graphs->begin_capture(opt.stream);
        capture = h.capture;
        break;
      case record_kind::capture_end:
        st = opt.graphs->end_capture(opt.stream, h.capture);
        capture = 0;
        ++rep.captures;
        break;
      case record_kind::replay:
        st = opt.graphs->launch(h.capture, opt.stream);
        ++rep.replays;
        break;
      default:
        st = {errc::system_error, me + " read " + name(h.kind) + " from the call stream"};
        break;
    }
    plane->set_serving(false);
    if (st.ok()) continue;
    // A step that leaves the ranks in step failed alike everywhere: serving goes on.
    const bool usable = (is_call || !graph_step) && !comm.transport().broken();
    if (!usable) return detail::leave(comm, *plane, st);
    ++rep.failed;
    rep.last_failure = st;
  }
}

// Every rank that calls, once the calls the serving ranks should make are made: the publisher
// tells them to return from serve() (after serving those calls, any still in flight included);
// the other callers have nothing to do. Where the publisher's communicator is broken (a call
// failed), the serving ranks return that failure instead of ok.
inline status stop_serving(communicator& comm) {
  control_plane* plane = plane_of(comm);
  if (plane == nullptr)
    return {errc::invalid_argument, "the communicator has no control plane (serve::attach_plane)"};
  return plane->publish_step(record_kind::stop, 0, comm.transport().async_status());
}

}  // namespace relay::serve

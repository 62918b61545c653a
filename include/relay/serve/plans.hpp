// A program's own plans, for helpers that run ahead: the ranks that call know a forward's calls
// up front and publish them by epoch (0, 1, 2, ...) into the plane's plan stream; a helper
// consumes each forward's plan and makes its calls itself, as a helper (no buffers). Two forms:
//   - relay's terms: a forward_plan, its call shapes in order (serve_forward makes them);
//   - torchcomms' (relay_control_publish / relay_control_consume, RCCLX's control plane): a
//     control_plan, an op code, a dtype, a reduce op, flags and one count per call, carried as
//     given; what they mean is the program's (relay.torchcomms maps them onto its calls).
// Only the plane's publisher publishes (the lowest rank that calls: rank 0 where every rank
// calls, as RCCLX's); every wait has the caller's timeout. The publisher waits for a consumer
// from its first consume (or join_plan_stream) on, before it reuses that consumer's slot: a
// consumer that starts later than plan_depth epochs behind finds its epoch overwritten (an
// error, never another epoch's plan). A consumer whose wait times out gives up on the plane:
// the publisher's next publish fails naming it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "relay/comm/collectives.hpp"
#include "relay/serve/plane.hpp"
#include "relay/serve/record.hpp"

namespace relay::serve {

namespace detail {

inline status no_plan_stream() {
  return {errc::invalid_argument,
          "the communicator has no control plane (serve::attach_plane): no plan stream"};
}

template <class Write>
status publish_plan(communicator& comm, std::uint64_t epoch, record_kind kind,
                    std::chrono::milliseconds timeout, Write&& write) {
  control_plane* p = plane_of(comm);
  if (p == nullptr) return no_plan_stream();
  std::vector<std::byte> bytes(p->plan_bytes());
  record_head h;
  h.kind = kind;
  h.publisher = static_cast<std::uint32_t>(comm.rank());
  h.sequence = epoch;
  bool fits = true;
  const std::size_t n = write(std::span(bytes), h, fits);
  if (!fits)
    return {errc::invalid_argument, "the plan of epoch " + std::to_string(epoch) +
                                        " does not fit the plane's plan slots of " +
                                        std::to_string(bytes.size()) +
                                        " bytes (plane_geometry::plan_bytes)"};
  return p->publish_plan(epoch, std::span<const std::byte>(bytes.data(), n), timeout);
}

inline status consume_plan(communicator& comm, std::uint64_t epoch, record_kind kind,
                           std::chrono::milliseconds timeout, std::vector<std::byte>& record) {
  control_plane* p = plane_of(comm);
  if (p == nullptr) return no_plan_stream();
  if (status s = p->consume_plan(epoch, record, timeout); !s) return s;
  record_head h;
  if (status s = read_head(record, h); !s) return s;
  if (h.kind != kind || h.sequence != epoch)
    return {errc::invalid_argument, "epoch " + std::to_string(epoch) + " holds " + name(h.kind) +
                                        " of epoch " + std::to_string(h.sequence) + ", not " +
                                        name(kind)};
  return {};
}

}  // namespace detail

// This rank consumes plans (plane::join_plans): the publisher waits for it from now on, not only
// from its first consume.
inline status join_plan_stream(communicator& comm) {
  control_plane* p = plane_of(comm);
  if (p == nullptr) return detail::no_plan_stream();
  return p->join_plans();
}

// relay's terms.
inline status publish_forward(communicator& comm, std::uint64_t epoch, const forward_plan& plan,
                              std::chrono::milliseconds timeout) {
  return detail::publish_plan(comm, epoch, record_kind::forward, timeout,
                              [&](std::span<std::byte> out, const record_head& h, bool& fits) {
                                return write_forward(out, h, plan, fits);
                              });
}

inline status consume_forward(communicator& comm, std::uint64_t epoch, forward_plan& plan,
                              std::chrono::milliseconds timeout) {
  std::vector<std::byte> record;
  if (status s = detail::consume_plan(comm, epoch, record_kind::forward, timeout, record); !s)
    return s;
  return read_forward(record, plan);
}

// A helper's part of a forward: each call of `plan`, in order, with no buffers; the first that
// fails ends it (its status).
inline status serve_forward(communicator& comm, const forward_plan& plan, void* stream = nullptr) {
  for (const call_shape& s : plan.calls) {
    options opt;
    static_cast<call_options&>(opt) = s;
    if (status st =
            run_collective(comm, s.coll, s.groups, {}, {}, s.counts, s.type, s.op, opt, stream);
        !st)
      return st;
  }
  return {};
}

// torchcomms' terms: op_code < 5 (0 is shutdown) and flags 0, as RCCLX checks; the rest as given.
inline status publish_control(communicator& comm, std::uint64_t epoch, const control_plan& plan,
                              std::chrono::milliseconds timeout) {
  if (plan.op_code >= control_op_count)
    return {errc::invalid_argument, "op_code " + std::to_string(plan.op_code) +
                                        " is none of 0 (shutdown), 1 (all_reduce), 2 "
                                        "(reduce_scatter), 3 (all_gather), 4 (all_to_all)"};
  if (plan.flags != 0)
    return {errc::invalid_argument,
            "flags " + std::to_string(plan.flags) + ": the plan's flags are reserved; pass 0"};
  return detail::publish_plan(comm, epoch, record_kind::control, timeout,
                              [&](std::span<std::byte> out, const record_head& h, bool& fits) {
                                return write_control(out, h, plan, fits);
                              });
}

inline status consume_control(communicator& comm, std::uint64_t epoch, control_plan& plan,
                              std::chrono::milliseconds timeout) {
  std::vector<std::byte> record;
  if (status s = detail::consume_plan(comm, epoch, record_kind::control, timeout, record); !s)
    return s;
  return read_control(record, plan);
}

}  // namespace relay::serve

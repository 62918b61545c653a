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
// the publisher's next publish fails naming it. A consumer that dies, closes its communicator or
// gives up is named by every other consumer's wait at once (errc::peer_lost, or its recorded
// failure) and by the publisher's next publish, which gives up on the plane with that cause.
//
// How large a plan may be: serve/plan_limits.hpp (a plan's record fits a plan slot; a
// torchcomms plan has at most the plane's control limit of counts, 128 unless
// NCCL_RELAY_CONTROL_MAX_CALLS says otherwise). A plan refused for its size publishes nothing:
// the same epoch can be published next with one that fits.
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
  std::size_t needed = 0;
  const std::size_t n = write(std::span(bytes), h, fits, needed);
  if (!fits)
    return {errc::invalid_argument,
            "the plan of epoch " + std::to_string(epoch) + " takes " + std::to_string(needed) +
                " bytes; the plane's plan slots hold " + std::to_string(bytes.size()) +
                " (plane_geometry::plan_bytes)"};
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

// What the plan stream takes (serve/plan_limits.hpp), the same on every rank: a plan's record
// fits plan_bytes (forward_plan_bytes says what a forward's takes); a torchcomms plan has at
// most control_max_calls counts, never more than control_counts_held.
struct plan_stream_limits {
  std::size_t plan_bytes = 0;
  std::uint32_t control_max_calls = 0;
  std::uint32_t control_counts_held = 0;
};

inline status plan_limits_of(communicator& comm, plan_stream_limits& out) {
  const control_plane* p = plane_of(comm);
  if (p == nullptr) return detail::no_plan_stream();
  out = {p->plan_bytes(), p->control_max_calls(), p->control_counts_held()};
  return {};
}

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
  return detail::publish_plan(
      comm, epoch, record_kind::forward, timeout,
      [&](std::span<std::byte> out, const record_head& h, bool& fits, std::size_t& needed) {
        needed = forward_plan_bytes(plan);
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

// torchcomms' terms: op_code < 5 (0 is shutdown), flags 0 and at most the plane's control limit
// of counts, as RCCLX checks; the rest as given.
inline status publish_control(communicator& comm, std::uint64_t epoch, const control_plan& plan,
                              std::chrono::milliseconds timeout) {
  const control_plane* p = plane_of(comm);
  if (p == nullptr) return detail::no_plan_stream();
  if (plan.counts.size() > p->control_max_calls())
    return {errc::invalid_argument,
            "the plan of epoch " + std::to_string(epoch) + " has " +
                std::to_string(plan.counts.size()) + " counts; a torchcomms plan holds at most " +
                std::to_string(p->control_max_calls()) + " (" + p->control_limit_source() + "; " +
                control_max_calls_variable + " sets it, up to the " +
                std::to_string(p->control_counts_held()) + " the plan slots hold)"};
  if (plan.op_code >= control_op_count)
    return {errc::invalid_argument, "op_code " + std::to_string(plan.op_code) +
                                        " is none of 0 (shutdown), 1 (all_reduce), 2 "
                                        "(reduce_scatter), 3 (all_gather), 4 (all_to_all)"};
  if (plan.flags != 0)
    return {errc::invalid_argument,
            "flags " + std::to_string(plan.flags) + ": the plan's flags are reserved; pass 0"};
  return detail::publish_plan(
      comm, epoch, record_kind::control, timeout,
      [&](std::span<std::byte> out, const record_head& h, bool& fits, std::size_t& needed) {
        needed = control_plan_bytes(plan.counts.size());
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

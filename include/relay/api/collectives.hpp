// The calls a communication library makes. One per collective, NCCL-shaped:
//
//   relay::status s = relay::allreduce(executor, groups, send, recv, counts, dtype, op, options);
//
// groups  the active ranks of each group, in active order. Several groups: fused (they must
//         cover all N ranks, each rank active in one group and a helper for the others). One
//         group of A < N ranks: single (the other ranks help).
// send    rank r's input, for r = 0..N-1 (buffer_view{} where rank r is active nowhere): N is
//         its size, and recv must have as many
// recv    rank r's output. In place exactly when every active rank's recv sits where NCCL's
//         in-place form puts it (allreduce: recv == send; reduce-scatter: recv == send + k*n;
//         all-gather: send == recv + k*n, k the rank's index in its group). Where most do and
//         some do not, the error names a rank that does not (buffers_in_place).
// counts  per group: count (allreduce), recvCount (reduce-scatter), sendCount (all-gather),
//         segmentCount (all-to-all). Any count works, 0 included. Any sized range of integers
//         (std::vector<std::size_t> as NCCL code holds counts, int, std::int64_t, ...); a value
//         that does not fit std::int64_t is an invalid_count status, not a wrapped count.
//
// Every argument is validated before anything is written; a failure returns a status that names
// the problem and leaves every buffer as it was.
#pragma once

#include <concepts>
#include <ranges>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "relay/cost/choose.hpp"
#include "relay/exec/executor.hpp"
#include "relay/plan/buffers.hpp"
#include "relay/plan/call_shape.hpp"

namespace relay {

// Counts, one per group: any sized range of integers (count_range). Those that are not already
// std::int64_t (foreign_count_range) are converted, each checked to fit.
template <class R>
concept count_range = std::ranges::sized_range<R> && std::integral<std::ranges::range_value_t<R>>;
template <class R>
concept foreign_count_range =
    count_range<R> && !std::convertible_to<const R&, std::span<const std::int64_t>>;

template <foreign_count_range R>
status to_counts(const R& counts, std::vector<std::int64_t>& out) {
  out.clear();
  out.reserve(std::ranges::size(counts));
  for (const auto c : counts) {
    if (!std::in_range<std::int64_t>(c))
      return {errc::invalid_count, "count " + std::to_string(c) + " of group " +
                                       std::to_string(out.size()) + " does not fit std::int64_t"};
    out.push_back(static_cast<std::int64_t>(c));
  }
  return {};
}

// Any collective by value: what the four named calls below forward to.
template <plan_runner E>
status run_collective(E& ex, collective c, const group_list& groups,
                      std::span<const buffer_view> send, std::span<const buffer_view> recv,
                      std::span<const std::int64_t> counts, dtype type, reduce_op op,
                      const options& opt = {}) {
  // N is the number of buffers: it cannot be taken from one list when the other differs.
  if (send.size() != recv.size())
    return {errc::invalid_buffer, std::to_string(send.size()) + " inputs (send) and " +
                                      std::to_string(recv.size()) +
                                      " outputs (recv) were given; give one of each per rank"};
  plan_request request =
      call_request(c, groups, static_cast<int>(send.size()), counts, type, op, opt);
  if (static_cast<unsigned>(type) < all_dtypes.size())
    request.in_place = buffers_in_place(c, groups, counts, size_of(type), send, recv);
  plan p;
  if (status s = make_plan(request, p); !s) return s;
  if (opt.wire_report != nullptr) *opt.wire_report = p.wire;
  return ex.run(p, send, recv);
}

// The same with counts of another integer type (foreign_count_range): converted, each checked to
// fit.
template <plan_runner E, foreign_count_range R>
status run_collective(E& ex, collective c, const group_list& groups,
                      std::span<const buffer_view> send, std::span<const buffer_view> recv,
                      const R& counts, dtype type, reduce_op op, const options& opt = {}) {
  std::vector<std::int64_t> n;
  if (status s = to_counts(counts, n); !s) return s;
  return run_collective(ex, c, groups, send, recv, std::span<const std::int64_t>(n), type, op, opt);
}

// A collective that does not reduce (all-gather, all-to-all): its operator is sum, unused.
template <plan_runner E, count_range Counts>
status run_collective(E& ex, collective c, const group_list& groups, buffer_views send,
                      buffer_views recv, const Counts& counts, dtype type,
                      const options& opt = {}) {
  return run_collective(ex, c, groups, send, recv, counts, type, reduce_op::sum, opt);
}

template <plan_runner E, count_range Counts>
status allreduce(E& ex, const group_list& groups, buffer_views send, buffer_views recv,
                 const Counts& counts, dtype type, reduce_op op, const options& opt = {}) {
  return run_collective(ex, collective::allreduce, groups, send, recv, counts, type, op, opt);
}

template <plan_runner E, count_range Counts>
status reduce_scatter(E& ex, const group_list& groups, buffer_views send, buffer_views recv,
                      const Counts& recv_counts, dtype type, reduce_op op,
                      const options& opt = {}) {
  return run_collective(ex, collective::reduce_scatter, groups, send, recv, recv_counts, type, op,
                        opt);
}

template <plan_runner E, count_range Counts>
status all_gather(E& ex, const group_list& groups, buffer_views send, buffer_views recv,
                  const Counts& send_counts, dtype type, const options& opt = {}) {
  return run_collective(ex, collective::all_gather, groups, send, recv, send_counts, type, opt);
}

template <plan_runner E, count_range Counts>
status all_to_all(E& ex, const group_list& groups, buffer_views send, buffer_views recv,
                  const Counts& segment_counts, dtype type, const options& opt = {}) {
  return run_collective(ex, collective::all_to_all, groups, send, recv, segment_counts, type, opt);
}

}  // namespace relay

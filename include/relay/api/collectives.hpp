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

#include "relay/exec/executor.hpp"
#include "relay/plan/buffers.hpp"
#include "relay/plan/make_plan.hpp"

namespace relay {

struct options {
  // route::automatic: per call, the route (and pipeline depth) the cost model predicts fastest on
  // `machine` at the call's count: direct for small messages, relay for large ones
  // (with_chosen_route in plan/make_plan.hpp).
  relay::route route = route::relay;
  int permille = 0;  // allreduce offload share (relay route); 0: the link-balanced default
  int tiles = 0;     // pipeline depth (pipelined route)
  std::int64_t alignment = default_alignment;
  // fp16/bf16 partial sums: fp32 (one rounding, the default) or the element type (the spec's
  // 16-bit partials: fewer bytes, one more rounding; docs/schedules.md gives the bound).
  relay::precision precision = precision::fp32_partials;
  const topology* machine = nullptr;  // what route::automatic prices; nullptr: relay::mi300x
  // How data crosses links (issue 12; docs/schedules.md, "fp8 on the wire"): native, or fp8
  // blocks quantized where data leaves a rank (wire_format::fp8: `machine`'s encoding, e4m3_fnuz
  // on mi300x; or fp8_e4m3 / fp8_e4m3_fnuz by name). float32, float16 and bfloat16 only. Below
  // `wire_threshold` bytes of the largest group count (-1: the cost model's threshold on
  // `machine`, fp8_threshold_bytes; 0: always) the call runs natively.
  wire_format wire = wire_format::native;
  std::int64_t wire_threshold = -1;
  // Where the call writes the wire it took and why (describe(wire_choice) says it in words);
  // nullptr: nowhere.
  wire_choice* wire_report = nullptr;
};

using group_list = std::vector<std::vector<int>>;

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

// The request of a call of collective `c` on `ranks` ranks: one group is single mode, several are
// fused; route and tuning from `opt`; the operator only where `c` reduces. Whether it runs in
// place is the caller's to say (buffers_in_place, placement_of).
inline plan_request call_request(collective c, const group_list& groups, int ranks,
                                 std::span<const std::int64_t> counts, dtype type, reduce_op op,
                                 const options& opt) {
  plan_request request;
  request.coll = c;
  request.mode = groups.size() == 1 ? mode::single : mode::fused;
  request.route = opt.route;
  request.permille = opt.permille;
  request.tiles = opt.tiles;
  request.ranks = ranks;
  request.groups = groups;
  request.counts.assign(counts.begin(), counts.end());
  request.type = type;
  request.op = reduces(c) ? op : reduce_op::sum;
  request.alignment = opt.alignment;
  request.precision = opt.precision;
  request.machine = opt.machine;
  request.wire = opt.wire;
  request.wire_threshold = opt.wire_threshold;
  return request;
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

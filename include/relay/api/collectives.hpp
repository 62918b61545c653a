// The calls a communication library makes. One per collective, NCCL-shaped:
//
//   relay::status s = relay::allreduce(executor, groups, send, recv, counts, dtype, op, options);
//
// groups  the active ranks of each group, in active order. Several groups: fused (they must
//         cover all N ranks, each rank active in one group and a helper for the others). One
//         group of A < N ranks: single (the other ranks help).
// send    rank r's input, for r = 0..N-1 (buffer_view{} where rank r is active nowhere)
// recv    rank r's output. In place exactly when every active rank's recv sits where NCCL's
//         in-place form puts it (allreduce: recv == send; reduce-scatter: recv == send + k*n;
//         all-gather: send == recv + k*n, k the rank's index in its group).
// counts  per group: count (allreduce), recvCount (reduce-scatter), sendCount (all-gather),
//         segmentCount (all-to-all). Any count works, 0 included.
//
// Every argument is validated before anything is written; a failure returns a status that names
// the problem and leaves every buffer as it was.
#pragma once

#include <vector>

#include "relay/exec/executor.hpp"
#include "relay/plan/buffers.hpp"
#include "relay/plan/make_plan.hpp"

namespace relay {

struct options {
  relay::route route = route::relay;
  int permille = 0;  // allreduce offload share (relay route); 0: the link-balanced default
  int tiles = 0;     // pipeline depth (pipelined route)
  std::int64_t alignment = default_alignment;
  // fp16/bf16 partial sums: fp32 (one rounding, the default) or the element type (the spec's
  // 16-bit partials: fewer bytes, one more rounding; docs/schedules.md gives the bound).
  relay::precision precision = precision::fp32_partials;
};

using group_list = std::vector<std::vector<int>>;

// Any collective by value: what the four named calls below forward to.
template <plan_runner E>
status run_collective(E& ex, collective c, const group_list& groups,
                      std::span<const buffer_view> send, std::span<const buffer_view> recv,
                      std::span<const std::int64_t> counts, dtype type, reduce_op op,
                      const options& opt = {}) {
  plan_request request;
  request.coll = c;
  request.mode = groups.size() == 1 ? mode::single : mode::fused;
  request.route = opt.route;
  request.permille = opt.permille;
  request.tiles = opt.tiles;
  request.ranks = static_cast<int>(send.size());
  request.groups = groups;
  request.counts.assign(counts.begin(), counts.end());
  request.type = type;
  request.op = reduces(c) ? op : reduce_op::sum;
  request.alignment = opt.alignment;
  request.precision = opt.precision;
  if (static_cast<unsigned>(type) < all_dtypes.size())
    request.in_place = buffers_in_place(c, groups, counts, size_of(type), send, recv);
  plan p;
  if (status s = make_plan(request, p); !s) return s;
  return ex.run(p, send, recv);
}

template <plan_runner E>
status allreduce(E& ex, const group_list& groups, std::span<const buffer_view> send,
                 std::span<const buffer_view> recv, std::span<const std::int64_t> counts,
                 dtype type, reduce_op op, const options& opt = {}) {
  return run_collective(ex, collective::allreduce, groups, send, recv, counts, type, op, opt);
}

template <plan_runner E>
status reduce_scatter(E& ex, const group_list& groups, std::span<const buffer_view> send,
                      std::span<const buffer_view> recv, std::span<const std::int64_t> recv_counts,
                      dtype type, reduce_op op, const options& opt = {}) {
  return run_collective(ex, collective::reduce_scatter, groups, send, recv, recv_counts, type, op,
                        opt);
}

template <plan_runner E>
status all_gather(E& ex, const group_list& groups, std::span<const buffer_view> send,
                  std::span<const buffer_view> recv, std::span<const std::int64_t> send_counts,
                  dtype type, const options& opt = {}) {
  return run_collective(ex, collective::all_gather, groups, send, recv, send_counts, type,
                        reduce_op::sum, opt);
}

template <plan_runner E>
status all_to_all(E& ex, const group_list& groups, std::span<const buffer_view> send,
                  std::span<const buffer_view> recv, std::span<const std::int64_t> segment_counts,
                  dtype type, const options& opt = {}) {
  return run_collective(ex, collective::all_to_all, groups, send, recv, segment_counts, type,
                        reduce_op::sum, opt);
}

}  // namespace relay

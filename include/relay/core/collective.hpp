// The vocabulary shared by every layer: which collective, how groups share the node, and which
// family of schedule carries it.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "relay/core/names.hpp"

namespace relay {

enum class collective : unsigned char { allreduce, reduce_scatter, all_gather, all_to_all };

// fused:  N/A groups run at once; every rank is active in one group and a helper for the others.
// single: one group of A ranks is active; the other N-A ranks are idle helpers.
enum class mode : unsigned char { fused, single };

// relay:  the link-balanced helper schedules (the default, and the reason relay exists).
// direct: what NCCL/RCCL do over the active-to-active links only; the baseline of every ceiling.
// legacy: the spec's original three-step A=2 schedule (numChunks = H+1), kept as a reference.
// pipelined: single-group relay cut into T tiles, T+1 steps; tends to the single-group bound.
// automatic: no schedule of its own. A call (make_plan, the collective calls) takes the route,
//            and for a pipeline the depth, that the cost model predicts fastest at its count
//            (choose_schedule in cost/route.hpp).
enum class route : unsigned char { relay, direct, legacy, pipelined, automatic };

inline constexpr std::array<collective, 4> all_collectives{
    collective::allreduce, collective::reduce_scatter, collective::all_gather,
    collective::all_to_all};

namespace detail {
inline constexpr name_table<collective, 4> collective_names{
    {"allreduce", "reduce-scatter", "all-gather", "all-to-all"}};
inline constexpr name_table<mode, 2> mode_names{{"fused", "single"}};
inline constexpr name_table<route, 5> route_names{
    {"relay", "direct", "legacy", "pipelined", "automatic"}};
}  // namespace detail

constexpr std::string_view name(collective c) {
  return detail::collective_names(c);
}
constexpr std::string_view name(mode m) {
  return detail::mode_names(m);
}
constexpr std::string_view name(route r) {
  return detail::route_names(r);
}

constexpr std::optional<collective> parse_collective(std::string_view s) {
  return detail::collective_names.parse(s);
}
constexpr std::optional<mode> parse_mode(std::string_view s) {
  return detail::mode_names.parse(s);
}
// The four schedules, not "automatic": it names no schedule of its own (see route above).
constexpr std::optional<route> parse_route(std::string_view s) {
  const std::optional<route> r = detail::route_names.parse(s);
  return r == route::automatic ? std::nullopt : r;
}
// What a call may ask for: one of the four schedules, or automatic ("automatic" or "auto").
constexpr std::optional<route> parse_call_route(std::string_view s) {
  return s == "auto" ? route::automatic : detail::route_names.parse(s);
}

// True when the collective combines contributions (and so takes a reduction operator).
constexpr bool reduces(collective c) {
  return c == collective::allreduce || c == collective::reduce_scatter;
}

// Element counts of one active rank's buffers, for the per-group count n the collective is sized
// by (count, recvCount, sendCount or segmentCount).
constexpr long long input_elements(collective c, int active, long long n) {
  return (c == collective::reduce_scatter || c == collective::all_to_all) ? active * n : n;
}
constexpr long long output_elements(collective c, int active, long long n) {
  return (c == collective::all_gather || c == collective::all_to_all) ? active * n : n;
}

// Where In and Out sit in a rank's memory when a collective runs in place (NCCL's conventions):
// allreduce   Out == In;
// reduce-scatter Out is the rank's own block of In (In + k*n);
// all-gather  In is the rank's own slot of Out (Out + k*n);
// all-to-all  has no in-place form.
struct in_place_offsets {
  long long input = 0, output = 0;
};
constexpr in_place_offsets in_place_layout(collective c, int active_index, long long n) {
  switch (c) {
    case collective::reduce_scatter: return {0, active_index * n};
    case collective::all_gather: return {active_index * n, 0};
    default: return {0, 0};
  }
}
constexpr bool has_in_place(collective c) {
  return c != collective::all_to_all;
}

}  // namespace relay

// Making schedules: at compile time from template parameters, or at run time from a spec.
//
//   constexpr auto& s = relay::schedule_v<relay::collective::allreduce, 2, 8>;   // fused, relay
//   relay::schedule r = relay::build_schedule(spec);                            // run time
//
// Both come from the same generators, so what a static_assert proves of one holds for the other.
#pragma once

#include <algorithm>
#include <optional>
#include <string_view>

#include "relay/core/config.hpp"

#include "relay/schedule/all_gather.hpp"
#include "relay/schedule/all_to_all.hpp"
#include "relay/schedule/allreduce.hpp"
#include "relay/schedule/direct.hpp"
#include "relay/schedule/legacy.hpp"
#include "relay/schedule/pipelined.hpp"
#include "relay/schedule/pipelined_group.hpp"
#include "relay/schedule/reduce_scatter.hpp"

namespace relay {

constexpr bool is_power_of_two(int x) {
  return x > 0 && (x & (x - 1)) == 0;
}

// Why a spec has no schedule, or nullptr when it has one. The compile-time path states the same
// rules as static_asserts (see make_schedule); keep the two in step.
constexpr const char* spec_error(const schedule_spec& s) {
  if (s.route == route::automatic)
    return "route automatic names no schedule: a call chooses one by its count (choose_schedule)";
  if (s.active < 2) return "the active count A must be at least 2";
  if (!is_power_of_two(s.active)) return "the active count A must be a power of two (2, 4, 8, 16)";
  if (s.active > max_reduce_inputs) return "the active count A must be at most 16";
  if (s.ranks > max_ranks) return "the node size N must be at most 64";
  if (s.active > s.ranks) return "A must be at most N";
  // A = N leaves no helper: only the direct route, a plain collective of the whole node, exists.
  if (s.active == s.ranks && s.route != route::direct)
    return "A must be smaller than N: a relay needs at least one helper (A = N: route direct)";
  if (s.mode == mode::fused && s.ranks % s.active != 0)
    return "fused mode needs A to divide N: every rank is active in exactly one group";
  if (s.route == route::legacy && s.active != 2)
    return "the legacy three-step schedule exists for A=2 only";
  if (s.permille != 0 && (s.coll != collective::allreduce || s.route != route::relay))
    return "an offload permille applies to the allreduce relay route only";
  if (s.permille < 0 || s.permille >= 1000) return "the offload permille must be in 1..999";
  if (s.route == route::pipelined) {
    if (s.mode != mode::single)
      return "the pipelined schedule exists for single groups only (fused links are already busy "
             "both ways)";
    if (s.tiles < 2 || s.tiles > 64) return "the pipelined schedule needs 2..64 tiles";
  } else if (s.tiles != 0) {
    return "a tile count applies to the pipelined route only";
  }
  return nullptr;
}

namespace detail {

template <class Sink>
constexpr schedule_header generate(const schedule_spec& s, Sink& sink) {
  if (s.route == route::direct) return direct_baseline(s, sink);
  if (s.route == route::legacy) return legacy_three_step(s, sink);
  if (s.route == route::pipelined)
    return s.active == 2 ? pipelined_pair(s, sink) : pipelined_group(s, sink);
  switch (s.coll) {
    case collective::allreduce: return allreduce_relay(s, sink);
    case collective::reduce_scatter: return reduce_scatter_relay(s, sink);
    case collective::all_gather: return all_gather_relay(s, sink);
    case collective::all_to_all: return all_to_all_relay(s, sink);
  }
  return {};
}

// Executors walk steps in order; within a step, transfers come before reductions. Ties keep the
// generator's order (first_source grows with emission order).
template <class Ops>
constexpr void sort_ops(Ops& ops) {
  std::sort(ops.begin(), ops.end(), [](const operation& a, const operation& b) {
    if (a.step != b.step) return a.step < b.step;
    if (a.phase != b.phase) return a.phase < b.phase;
    return a.first_source < b.first_source;
  });
}

constexpr counting_sink count_schedule(const schedule_spec& s) {
  counting_sink c;
  generate(s, c);
  return c;
}

}  // namespace detail

// The run-time path: nullopt when spec_error(s) names a problem.
RELAY_CONSTEXPR_SCHEDULE std::optional<schedule> build_schedule(const schedule_spec& s) {
  if (spec_error(s) != nullptr) return std::nullopt;
  schedule out;
  detail::vector_sink sink{&out};
  out.header = detail::generate(s, sink);
  detail::sort_ops(out.ops);
  return out;
}

// The compile-time path. Each rule of spec_error is a static_assert here, so a spec without a
// schedule stops the build with the reason.
template <schedule_spec S>
consteval auto make_schedule() {
  static_assert(S.route != route::automatic,
                "relay: route automatic names no schedule: a call chooses one by its count");
  static_assert(S.active >= 2, "relay: the active count A must be at least 2");
  static_assert(is_power_of_two(S.active), "relay: the active count A must be a power of two");
  static_assert(S.active <= max_reduce_inputs, "relay: the active count A must be at most 16");
  static_assert(S.ranks <= max_ranks, "relay: the node size N must be at most 64");
  static_assert(S.active <= S.ranks, "relay: A must be at most N");
  static_assert(S.active < S.ranks || S.route == route::direct,
                "relay: A must be smaller than N: a relay needs at least one helper (A = N: route "
                "direct)");
  static_assert(S.mode != mode::fused || S.ranks % S.active == 0,
                "relay: fused mode needs A to divide N: every rank is active in exactly one group");
  static_assert(S.route != route::legacy || S.active == 2,
                "relay: the legacy three-step schedule exists for A=2 only");
  static_assert(S.permille == 0 || (S.coll == collective::allreduce && S.route == route::relay),
                "relay: an offload permille applies to the allreduce relay route only");
  static_assert(S.permille >= 0 && S.permille < 1000,
                "relay: the offload permille must be in 1..999");
  static_assert(S.route != route::pipelined || S.mode == mode::single,
                "relay: the pipelined schedule exists for single groups only");
  static_assert(S.route != route::pipelined || (S.tiles >= 2 && S.tiles <= 64),
                "relay: the pipelined schedule needs 2..64 tiles");
  static_assert(S.route == route::pipelined || S.tiles == 0,
                "relay: a tile count applies to the pipelined route only");
  if constexpr (spec_error(S) != nullptr) {
    return static_schedule<0, 0>{};  // unreachable after the assertions; keeps errors to those
  } else {
    constexpr detail::counting_sink counts = detail::count_schedule(S);
    static_schedule<counts.op_count, counts.source_count> out{};
    detail::array_sink<counts.op_count, counts.source_count> sink{&out};
    out.header = detail::generate(S, sink);
    detail::sort_ops(out.ops);
    return out;
  }
}

// The schedule for a spec, as a compile-time constant. Take it by reference:
//   constexpr auto& s = relay::schedule_for<relay::schedule_spec{
//       .coll = relay::collective::all_gather, .active = 2, .ranks = 8,
//       .mode = relay::mode::single, .route = relay::route::pipelined, .tiles = 4}>;
template <schedule_spec S>
inline constexpr auto schedule_for = make_schedule<S>();

// The same, by template parameters: schedule_v<collective, A, N [, mode, route, permille]>.
template <collective C, int A, int N, mode M = mode::fused, route R = route::relay,
          int Permille = 0>
inline constexpr const auto& schedule_v = schedule_for<schedule_spec{C, A, N, M, R, Permille, 0}>;

// The same, parameterized on the helper count H instead of the node size N = A + H.
template <collective C, int A, int H, mode M = mode::fused, route R = route::relay>
inline constexpr const auto& schedule_with_helpers_v = schedule_v<C, A, A + H, M, R>;

}  // namespace relay

// The checks before anything is made or issued: validate_shape, of a call's arguments before its
// plan is made (make_plan), and validate_plan, the one check every executor and transport makes
// of a plan before it issues anything.
//
// make_plan's plans pass it by construction (check/ proves their schedules), but a plan is a plain
// struct a caller may build or edit, and an executor indexes memory with its offsets: so the
// structure is checked once here, the same way everywhere, rather than trusted by one executor
// and re-derived by another. validate_plan(p) is the part a rank can check alone (a rank-local
// transport sees only its own buffers); validate_plan(p, in, out) adds the caller's buffers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "relay/core/status.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/buffers.hpp"
#include "relay/plan/call_shape.hpp"
#include "relay/plan/plan.hpp"
#include "relay/schedule/generate.hpp"

namespace relay {

namespace detail {

constexpr const char* buffer_name(buffer b) {
  return b == buffer::input ? "input" : b == buffer::output ? "output" : "scratch";
}

inline std::uint64_t area_bytes(const plan& p, const plan_operand& o) {
  const auto r = static_cast<std::size_t>(o.rank);
  return o.buf == buffer::input    ? p.input_bytes[r]
         : o.buf == buffer::output ? p.output_bytes[r]
                                   : p.scratch_bytes[r];
}

// `count` elements of `width` bytes (the element size, or plan::partial_size for a partial sum)
// at `o` lie inside the rank's area and start on an element.
inline status check_operand(const plan& p, const plan_operand& o, std::uint64_t count,
                            std::size_t op, int width) {
  const std::string where = "plan op " + std::to_string(op) + ": ";
  if (o.rank >= p.ranks())
    return {errc::invalid_schedule, where + "rank " + std::to_string(o.rank) + " out of range"};
  const auto esize = static_cast<std::uint64_t>(width);
  const std::uint64_t size = area_bytes(p, o);
  if (o.offset % esize != 0)
    return {errc::invalid_schedule, where + "offset " + std::to_string(o.offset) + " in the " +
                                        buffer_name(o.buf) + " of rank " + std::to_string(o.rank) +
                                        " is not on a " + std::to_string(esize) + "-byte element"};
  if (o.offset > size || count > (size - o.offset) / esize)
    return {errc::invalid_schedule, where + "bytes from " + std::to_string(o.offset) + ", " +
                                        std::to_string(count) + " elements of " +
                                        std::to_string(esize) + ", lie outside the " +
                                        buffer_name(o.buf) + " of rank " + std::to_string(o.rank) +
                                        " (" + std::to_string(size) + " bytes)"};
  return {};
}

}  // namespace detail

// The plan's own structure: sizes per rank, groups, phases, every operation's sources and
// operands in range, reductions local to their rank.
inline status validate_plan(const plan& p) {
  if (p.ranks() < 1 || p.ranks() > max_ranks)
    return {errc::invalid_schedule, "the plan has " + std::to_string(p.ranks()) + " ranks; 1.." +
                                        std::to_string(max_ranks) + " are allowed"};
  const auto n = static_cast<std::size_t>(p.ranks());
  if (p.input_bytes.size() != n || p.output_bytes.size() != n || p.scratch_bytes.size() != n)
    return {errc::invalid_schedule, "the plan's per-rank sizes do not have one entry per rank"};
  if (static_cast<unsigned>(p.type) >= all_dtypes.size())
    return {errc::unsupported, "the plan's dtype is unknown"};
  if (p.divisor < 1) return {errc::invalid_schedule, "the plan's divisor must be at least 1"};
  if (p.counts.size() != p.groups.size())
    return {errc::invalid_schedule, "the plan has " + std::to_string(p.groups.size()) +
                                        " groups but " + std::to_string(p.counts.size()) +
                                        " counts"};
  for (std::size_t g = 0; g < p.groups.size(); ++g)
    for (int r : p.groups[g])
      if (r < 0 || r >= p.ranks())
        return {errc::invalid_schedule, "group " + std::to_string(g) + " names rank " +
                                            std::to_string(r) + ", out of range"};
  for (std::size_t i = 0; i < p.phases.size(); ++i) {
    const plan_phase& ph = p.phases[i];
    if (std::uint64_t{ph.first} + ph.size > p.ops.size())
      return {errc::invalid_schedule, "plan phase " + std::to_string(i) + " names missing ops"};
    for (const plan_op& o : p.ops_of(ph))
      if (o.phase != ph.phase || o.step != ph.step)
        return {errc::invalid_schedule,
                "plan phase " + std::to_string(i) + " holds an op of another step or phase"};
  }
  if (p.wire.taken != wire_format::native && p.wire.taken != wire_format::fp8_e4m3 &&
      p.wire.taken != wire_format::fp8_e4m3_fnuz)
    return {errc::unsupported, "the plan's wire is neither native nor a concrete fp8 encoding"};
  if (p.wire.taken != wire_format::native && !fp8_wire_dtype(p.type))
    return {errc::unsupported, "the plan's fp8 wire takes float32, float16 or bfloat16, not " +
                                   std::string(name(p.type))};
  if (p.wire.taken != wire_format::native && p.wire_slots.size() != p.ops.size())
    return {errc::invalid_schedule, "the plan's fp8 wire needs one wire slot per op"};
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const plan_op& o = p.ops[i];
    const bool copy = o.phase == phase::transfer;
    if (o.source_count < 1 || o.source_count > max_reduce_inputs || (copy && o.source_count != 1) ||
        std::uint64_t{o.first_source} + o.source_count > p.sources.size())
      return {errc::invalid_schedule, "plan op " + std::to_string(i) + " has a bad source list"};
    // Checked where partials are used: a plan without them (hand-built ones included) never reads
    // partial_size.
    if (o.partial_mask != 0 && p.partial_size < p.element_size())
      return {errc::invalid_schedule,
              "plan op " + std::to_string(i) +
                  ": its partial sums are narrower than the plan's elements"};
    if (status s = detail::check_operand(p, o.dst, o.count, i, p.dst_width(o)); !s) return s;
    for (std::size_t k = 0; k < o.source_count; ++k) {
      const plan_operand& src = p.sources[o.first_source + k];
      if (status s = detail::check_operand(p, src, o.count, i, p.source_width(o, k)); !s) return s;
      if (!copy && src.rank != o.dst.rank)
        return {errc::invalid_schedule,
                "plan op " + std::to_string(i) + ": a reduction reads another rank's memory"};
    }
    if (p.crosses_wire(o)) {  // both ends of its encoded bytes lie in scratch
      const auto bytes = static_cast<std::uint64_t>(fp8_wire_bytes(o.count));
      if (status s = detail::check_operand(p, wire_send_end(p, i), bytes, i, 1); !s) return s;
      if (status s = detail::check_operand(p, wire_recv_end(p, i), bytes, i, 1); !s) return s;
    }
  }
  return {};
}

// For executors and transports that do not run the fp8 wire (yet): a clear refusal instead of
// a native run the caller did not ask for.
inline status require_native_wire(const plan& p, const char* who) {
  if (p.wire.taken == wire_format::native) return {};
  return {errc::unsupported, std::string(who) + " does not implement the fp8 wire (" +
                                 std::string(name(p.wire.taken)) +
                                 ") yet; run it on the host executor or ask for "
                                 "wire_format::native"};
}

// The plan and the caller's buffers for a run of it (buffers.hpp: presence, size, alignment,
// in-place layout, overlaps).
inline status validate_plan(const plan& p, std::span<const buffer_view> inputs,
                            std::span<const buffer_view> outputs) {
  if (status s = validate_plan(p); !s) return s;
  return validate_buffers(p, inputs, outputs);
}

// Whether `r`, with the schedule `chosen` took (cost/choose.hpp), can be made: the first
// problem, or ok. Every rank of a rank-local call sees the same arguments, so all refuse alike.
inline status validate_shape(const call_shape& r, const call_choice& chosen) {
  auto fail = [](errc code, std::string message) { return status{code, std::move(message)}; };
  if (r.ranks < 2 || r.ranks > max_ranks)
    return fail(errc::invalid_group,
                "the node size N must be 2..64, not " + std::to_string(r.ranks));
  if (r.groups.empty()) return fail(errc::invalid_group, "no groups were given");
  const std::size_t A = r.groups.front().size();
  // The group each rank is active in (-1: none); on the stack, so that checking a shape (and
  // rank_layout_of, which a binding calls per call) allocates nothing.
  std::array<int, max_ranks> owner;
  owner.fill(-1);
  for (std::size_t g = 0; g < r.groups.size(); ++g) {
    if (r.groups[g].size() != A)
      return fail(errc::invalid_group,
                  "group " + std::to_string(g) + " has " + std::to_string(r.groups[g].size()) +
                      " ranks; every group needs the same active count A = " + std::to_string(A));
    for (int rank : r.groups[g]) {
      if (rank < 0 || rank >= r.ranks)
        return fail(errc::invalid_group, "rank " + std::to_string(rank) + " in group " +
                                             std::to_string(g) + " is outside 0.." +
                                             std::to_string(r.ranks - 1));
      int& o = owner[static_cast<std::size_t>(rank)];
      if (o == static_cast<int>(g))
        return fail(errc::invalid_group, "rank " + std::to_string(rank) +
                                             " appears twice in group " + std::to_string(g));
      if (o >= 0)
        return fail(errc::invalid_group, "rank " + std::to_string(rank) +
                                             " is active in two groups (" + std::to_string(o) +
                                             " and " + std::to_string(g) + ")");
      o = static_cast<int>(g);
    }
  }
  const schedule_spec spec{r.coll,       static_cast<int>(A), r.ranks,     r.mode,
                           chosen.route, chosen.permille,     chosen.tiles};
  if (const char* why = spec_error(spec)) return fail(errc::invalid_schedule, why);
  if (r.mode == mode::single && r.groups.size() != 1)
    return fail(errc::invalid_group,
                "single mode takes exactly one group, not " + std::to_string(r.groups.size()));
  if (r.mode == mode::fused && r.groups.size() * A != static_cast<std::size_t>(r.ranks))
    return fail(errc::invalid_group, "fused mode needs N/A = " + std::to_string(r.ranks / A) +
                                         " groups covering every rank, not " +
                                         std::to_string(r.groups.size()));
  if (r.counts.size() != r.groups.size())
    return fail(errc::invalid_count, std::to_string(r.counts.size()) + " counts for " +
                                         std::to_string(r.groups.size()) +
                                         " groups; give one count per group");
  if (static_cast<unsigned>(r.type) >= all_dtypes.size())
    return fail(errc::unsupported, "unknown dtype " + std::to_string(static_cast<int>(r.type)));
  if (r.precision != precision::fp32_partials && r.precision != precision::native_partials)
    return fail(errc::unsupported, "unknown precision " +
                                       std::to_string(static_cast<int>(r.precision)) +
                                       " (fp32_partials or native_partials)");
  if (r.op != reduce_op::sum && r.op != reduce_op::avg)
    return fail(errc::unsupported, "unknown reduction operator " +
                                       std::to_string(static_cast<int>(r.op)) + " (sum or avg)");
  if (r.wire != wire_format::native && !is_fp8(r.wire))
    return fail(errc::unsupported, "unknown wire format " +
                                       std::to_string(static_cast<int>(r.wire)) +
                                       " (native, fp8, fp8_e4m3 or fp8_e4m3_fnuz)");
  if (is_fp8(r.wire) && !fp8_wire_dtype(r.type))
    return fail(errc::unsupported, "the fp8 wire (" + std::string(name(r.wire)) +
                                       ") takes float32, float16 or bfloat16 data, not " +
                                       std::string(name(r.type)) + "; use wire_format::native");
  if (r.wire_threshold < -1)
    return fail(errc::invalid_argument,
                "the wire threshold must be -1 (the model's) or a byte count, not " +
                    std::to_string(r.wire_threshold));
  if (r.in_place && !has_in_place(r.coll))
    return fail(errc::unsupported, "all-to-all has no in-place form (as in NCCL)");
  if (r.alignment < 1 || r.alignment > (std::int64_t{1} << 30))
    return fail(errc::invalid_argument,
                "the alignment must be 1..2^30 elements, not " + std::to_string(r.alignment));
  for (std::size_t g = 0; g < r.counts.size(); ++g)
    if (r.counts[g] < 0 || r.counts[g] > max_plan_count)
      return fail(errc::invalid_count, "count " + std::to_string(r.counts[g]) + " of group " +
                                           std::to_string(g) + " is negative or too large");
  return {};
}

}  // namespace relay

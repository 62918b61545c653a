// Make: a call's plan from its shape and what was chosen for it (cost/choose.hpp): the schedule
// made concrete at the caller's counts, canonical ranks mapped onto the caller's groups, offsets
// in bytes, scratch and the fp8 wire's slots laid out per rank. Validation first
// (validate_shape), once for every executor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "relay/core/status.hpp"
#include "relay/plan/call_shape.hpp"
#include "relay/plan/plan.hpp"
#include "relay/plan/validate.hpp"
#include "relay/schedule/evaluate.hpp"
#include "relay/schedule/generate.hpp"

namespace relay {

// Bytes from one scratch area to the next on a rank, so every area starts 256-byte aligned.
inline constexpr std::uint64_t scratch_area_alignment = 256;

namespace detail {

// Canonical rank (the schedule's numbering) -> physical rank (the caller's).
inline std::vector<int> physical_ranks(const call_shape& r) {
  const int A = static_cast<int>(r.groups.front().size());
  std::vector<int> physical(static_cast<std::size_t>(r.ranks), -1);
  std::vector<bool> active(static_cast<std::size_t>(r.ranks), false);
  for (std::size_t g = 0; g < r.groups.size(); ++g)
    for (int j = 0; j < A; ++j) {
      const int rank = r.groups[g][static_cast<std::size_t>(j)];
      physical[g * static_cast<std::size_t>(A) + static_cast<std::size_t>(j)] = rank;
      active[static_cast<std::size_t>(rank)] = true;
    }
  // Single mode: canonical helpers A..N-1 are the remaining ranks, in increasing order.
  std::size_t next = r.groups.size() * static_cast<std::size_t>(A);
  for (int rank = 0; rank < r.ranks; ++rank)
    if (!active[static_cast<std::size_t>(rank)]) physical[next++] = rank;
  return physical;
}

// Where the encoded bytes of `p`'s fp8 transfers lie: per rank, a wire area after its other
// scratch, as large as the most it sends plus receives in one phase (phases run one after
// another, so each reuses the area); within a phase every transfer has its own slot on both
// ends, 16-byte aligned.
inline void lay_out_wire(plan& p) {
  if (p.wire.taken == wire_format::native) return;
  const auto R = static_cast<std::size_t>(p.ranks());
  p.wire_slots.assign(p.ops.size(), wire_slot{});
  std::vector<std::uint64_t> area(R, 0), used(R, 0);
  auto take = [&](std::size_t rank, std::uint64_t bytes) {
    const std::uint64_t at = used[rank];
    used[rank] += (bytes + 15) / 16 * 16;
    area[rank] = std::max(area[rank], used[rank]);
    return at;
  };
  for (const plan_phase& ph : p.phases) {
    std::fill(used.begin(), used.end(), 0);
    for (std::uint32_t i = ph.first; i < ph.first + ph.size; ++i) {
      const plan_op& o = p.ops[i];
      if (!p.crosses_wire(o)) continue;
      const std::uint64_t bytes = fp8_wire_bytes(o.count);
      p.wire_slots[i].send = take(p.sources[o.first_source].rank, bytes);
      p.wire_slots[i].recv = take(o.dst.rank, bytes);
    }
  }
  std::vector<std::uint64_t> base(R, 0);
  for (std::size_t rank = 0; rank < R; ++rank) {
    base[rank] = p.scratch_bytes[rank];  // a multiple of scratch_area_alignment already
    p.scratch_bytes[rank] +=
        (area[rank] + scratch_area_alignment - 1) / scratch_area_alignment * scratch_area_alignment;
  }
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (!p.crosses_wire(p.ops[i])) continue;
    p.wire_slots[i].send += base[p.sources[p.ops[i].first_source].rank];
    p.wire_slots[i].recv += base[p.ops[i].dst.rank];
  }
}

}  // namespace detail

// Builds `out` for `r` as `chosen` says (its route; its wire), or returns the first problem and
// leaves `out` as it was.
inline status make_plan(const call_shape& r, const call_choice& chosen, plan& out) {
  if (status s = validate_shape(r, chosen); !s) return s;
  const int A = static_cast<int>(r.groups.front().size());
  const schedule_spec spec{r.coll, A, r.ranks, r.mode, chosen.route, chosen.permille, chosen.tiles};
  const schedule sched = *build_schedule(spec);
  const concrete_schedule concrete = evaluate(sched, r.counts, r.alignment);
  const std::vector<int> physical = detail::physical_ranks(r);
  const auto es = static_cast<std::uint64_t>(size_of(r.type));
  const auto ps = static_cast<std::uint64_t>(partial_size(r.type, r.precision));
  const auto R = static_cast<std::size_t>(r.ranks);

  plan p;
  p.spec = spec;
  p.type = r.type;
  p.op = r.op;
  p.in_place = r.in_place;
  p.alignment = r.alignment;
  p.divisor = r.op == reduce_op::avg ? A : 1;
  p.precision = r.precision;
  p.partial_size = static_cast<int>(ps);
  p.groups = r.groups;
  p.counts = r.counts;
  p.input_bytes.assign(R, 0);
  p.output_bytes.assign(R, 0);
  p.scratch_bytes.assign(R, 0);

  // Per physical rank: its home group and active index, and where each group's scratch starts.
  std::vector<int> home(R, -1), index(R, -1);
  for (std::size_t g = 0; g < r.groups.size(); ++g)
    for (int j = 0; j < A; ++j) {
      const auto rank = static_cast<std::size_t>(r.groups[g][static_cast<std::size_t>(j)]);
      home[rank] = static_cast<int>(g);
      index[rank] = j;
      const std::int64_t n = r.counts[g];
      p.input_bytes[rank] = static_cast<std::uint64_t>(input_elements(r.coll, A, n)) * es;
      p.output_bytes[rank] = static_cast<std::uint64_t>(output_elements(r.coll, A, n)) * es;
    }
  // Per rank and group: the scratch area (elements), then the partial area (ps-byte elements),
  // each starting 256-byte aligned.
  auto rounded = [](std::uint64_t bytes) {
    return (bytes + scratch_area_alignment - 1) / scratch_area_alignment * scratch_area_alignment;
  };
  std::vector<std::uint64_t> area(R * r.groups.size(), 0), partial_area(R * r.groups.size(), 0);
  for (std::size_t rank = 0; rank < R; ++rank)
    for (std::size_t g = 0; g < r.groups.size(); ++g) {
      const bool is_active = home[rank] == static_cast<int>(g);
      const auto elements = static_cast<std::uint64_t>(
          scratch_elements(sched.header, is_active, r.counts[g], r.alignment));
      const auto partials = static_cast<std::uint64_t>(
          partial_elements(sched.header, is_active, r.counts[g], r.alignment));
      area[rank * r.groups.size() + g] = p.scratch_bytes[rank];
      p.scratch_bytes[rank] += rounded(elements * es);
      partial_area[rank * r.groups.size() + g] = p.scratch_bytes[rank];
      p.scratch_bytes[rank] += rounded(partials * ps);
    }

  // In place, an active rank's input and output are one buffer: name it once (input for
  // allreduce and reduce-scatter, output for all-gather) so equal operands are equal addresses.
  auto convert = [&](const concrete_operand& o, int group) {
    const auto rank = static_cast<std::size_t>(physical[o.rank]);
    plan_operand x{static_cast<std::uint16_t>(rank), o.buf, static_cast<std::uint64_t>(o.offset)};
    const std::size_t at_area = rank * r.groups.size() + static_cast<std::size_t>(group);
    if (o.buf == buffer::scratch) {
      x.offset = area[at_area] + x.offset * es;
      return x;
    }
    if (o.buf == buffer::partial) {  // executors see scratch bytes; partial_mask says how wide
      x.buf = buffer::scratch;
      x.offset = partial_area[at_area] + x.offset * ps;
      return x;
    }
    if (r.in_place) {
      const in_place_offsets at =
          in_place_layout(r.coll, index[rank], r.counts[static_cast<std::size_t>(group)]);
      const buffer user = r.coll == collective::all_gather ? buffer::output : buffer::input;
      if (x.buf != user)
        x.offset += static_cast<std::uint64_t>(x.buf == buffer::input ? at.input : at.output);
      x.buf = user;
    }
    x.offset *= es;
    return x;
  };

  const bool wide = ps != es;  // otherwise a partial is stored exactly like an element
  std::vector<plan_operand> srcs;
  for (const concrete_op& op : concrete.ops) {
    plan_op q{.step = op.step,
              .phase = op.phase,
              .dst = convert(op.dst, op.group),
              .count = static_cast<std::uint64_t>(op.count),
              .finalize = op.finalize,
              .group = op.group};
    if (wide && op.dst.buf == buffer::partial) q.partial_mask |= partial_dst_bit;
    srcs.clear();
    std::uint32_t bit = 1;
    for (const concrete_operand& src : concrete.sources_of(op)) {
      if (wide && src.buf == buffer::partial) q.partial_mask |= bit;
      bit <<= 1;
      srcs.push_back(convert(src, op.group));
    }
    if (op.phase == phase::transfer && srcs.front() == q.dst) continue;  // in place: nothing to do
    p.append(q, srcs);
  }
  p.wire = chosen.wire;
  detail::lay_out_wire(p);
  out = std::move(p);
  return {};
}

}  // namespace relay

// Structural properties of a concrete program, each a condition an executor relies on:
//   - a copy has one source; a reduction's sources all live on the rank it writes;
//   - every operand stays inside its buffer, and scratch inside the size the schedule declares
//     for that rank's role (what the plan allocates, and what the public sizing function says);
//   - inside one phase no two operations write overlapping memory, and none reads memory another
//     writes (operations of a phase run concurrently). A reduction may write the exact region of
//     one of its own sources; a copy onto itself (in place) is no operation at all.
#pragma once

#include <algorithm>
#include <vector>

#include "relay/check/memory_model.hpp"

namespace relay {

namespace detail {

constexpr check_failure check_structure_of(const schedule_header& header, const concrete_program& p,
                                           std::span<const std::int64_t> counts, bool in_place,
                                           std::int64_t alignment) {
  const memory_model mem(header, counts, in_place, alignment);
  check_failure fail{};
  fail.in_place = in_place;
  auto failed = [&](const char* what, const concrete_op& op, int rank, std::int64_t position) {
    fail.what = what;
    fail.group = op.group;
    fail.rank = rank;
    fail.step = op.step;
    fail.count = mem.count(op.group);
    fail.position = position;
    return fail;
  };

  struct access {
    int space;
    std::int64_t lo, hi;
    std::size_t op;
    bool write;
  };
  for (std::size_t first = 0; first < p.ops.size();) {
    std::size_t last = first;
    while (last < p.ops.size() && p.ops[last].step == p.ops[first].step &&
           p.ops[last].phase == p.ops[first].phase)
      ++last;
    std::vector<access> accesses;
    for (std::size_t i = first; i < last; ++i) {
      const concrete_op& op = p.ops[i];
      if (op.phase == phase::transfer && op.source_count != 1)
        return failed("a copy must have exactly one source", op, op.dst.rank, -1);
      if (op.source_count == 0 || op.source_count > max_reduce_inputs)
        return failed("a reduction needs 1 to 16 sources", op, op.dst.rank, -1);
      auto locate = [&](const concrete_operand& o, bool write) -> const char* {
        const placement at = mem.place(o, op.group);
        if (o.rank >= header.spec.ranks) return "an operand names a rank outside the node";
        if (at.space < 0) return "an operand names the input or output of a rank outside its group";
        if (o.offset < 0 || o.offset + op.length > at.extent)
          return o.buf == buffer::scratch ? "an operand reaches past the declared scratch size"
                                          : "an operand reaches past its buffer";
        accesses.push_back(
            {at.space, at.base + o.offset, at.base + o.offset + op.length, i, write});
        return nullptr;
      };
      const auto sources = p.sources_of(op);
      auto address = [&](const concrete_operand& o) {
        const placement at = mem.place(o, op.group);
        return std::pair{at.space, at.base + o.offset};
      };
      // A copy onto itself (the in-place own slot) is elided by every executor.
      if (op.phase == phase::transfer && address(sources[0]) == address(op.dst)) continue;
      if (const char* e = locate(op.dst, true)) return failed(e, op, op.dst.rank, op.dst.offset);
      for (const concrete_operand& o : sources) {
        if (op.phase == phase::reduce && o.rank != op.dst.rank)
          return failed("a reduction reads another rank's memory", op, o.rank, o.offset);
        if (const char* e = locate(o, false)) return failed(e, op, o.rank, o.offset);
        // Within one operation, a source may be the destination itself but not overlap it
        // partially: elementwise in place is safe, shifted in place is not.
        const auto [space, at] = address(o);
        const auto [dspace, dat] = address(op.dst);
        if (space == dspace && at != dat && at < dat + op.length && dat < at + op.length)
          return failed("an operation's source partially overlaps its destination", op, o.rank,
                        o.offset);
      }
    }
    std::sort(accesses.begin(), accesses.end(), [](const access& a, const access& b) {
      return a.space != b.space ? a.space < b.space : a.lo < b.lo;
    });
    for (std::size_t a = 0; a < accesses.size(); ++a)
      for (std::size_t b = a + 1; b < accesses.size() && accesses[b].space == accesses[a].space &&
                                  accesses[b].lo < accesses[a].hi;
           ++b) {
        const access &x = accesses[a], &y = accesses[b];
        if (x.op == y.op || (!x.write && !y.write)) continue;
        const concrete_op& op = p.ops[y.op];
        return failed(x.write && y.write
                          ? "two operations of one phase write overlapping memory"
                          : "an operation reads memory another writes in the same phase",
                      op, op.dst.rank, y.lo);
      }
    first = last;
  }
  return fail;
}

}  // namespace detail

// One run at per-group `counts`, out of place or in place.
constexpr check_failure check_structure_at(const schedule_view& s,
                                           std::span<const std::int64_t> counts, bool in_place,
                                           std::int64_t alignment = default_alignment) {
  return detail::check_structure_of(*s.header, evaluate(s, counts, alignment), counts, in_place,
                                    alignment);
}

}  // namespace relay

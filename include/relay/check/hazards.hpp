// Structural properties of a concrete program, each a condition an executor relies on:
//   - a copy has one source; a reduction's sources all live on the rank it writes;
//   - every operand stays inside its buffer, and scratch inside the size the schedule declares
//     for that rank's role (what the plan allocates, and what the public sizing function says);
//   - a value that is not final is never stored in the element type: a reduction with
//     finalize == false writes the partial space and a final one writes elements; a copy moves a
//     partial to a partial and an element to an element (executors copy count * width bytes);
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
  };
  constexpr auto before = [](const access& a, const access& b) {
    return a.space != b.space ? a.space < b.space : a.lo < b.lo;
  };
  // One phase's writes and reads; kept across phases (constant evaluation pays for every
  // allocation).
  std::vector<access> writes, reads;
  for (std::size_t first = 0; first < p.ops.size();) {
    std::size_t last = first;
    while (last < p.ops.size() && p.ops[last].step == p.ops[first].step &&
           p.ops[last].phase == p.ops[first].phase)
      ++last;
    writes.clear();
    reads.clear();
    for (std::size_t i = first; i < last; ++i) {
      const concrete_op& op = p.ops[i];
      if (op.phase == phase::transfer && op.source_count != 1)
        return failed("a copy must have exactly one source", op, op.dst.rank, -1);
      if (op.source_count == 0 || op.source_count > max_reduce_inputs)
        return failed("a reduction needs 1 to 16 sources", op, op.dst.rank, -1);
      const bool to_partial = op.dst.buf == buffer::partial;
      if (op.phase == phase::reduce && to_partial == op.finalize)
        return failed(op.finalize ? "a final reduction writes a partial (it must write elements)"
                                  : "a reduction that is not final must write a partial "
                                    "(storing it as an element would round it twice)",
                      op, op.dst.rank, op.dst.offset);
      if (op.phase == phase::transfer &&
          (p.sources[op.first_source].buf == buffer::partial) != to_partial)
        return failed("a copy changes a value's width (partial to element or back)", op,
                      op.dst.rank, op.dst.offset);
      // Where an operand lies, or why it lies nowhere valid.
      auto locate = [&](const concrete_operand& o, const placement& at) -> const char* {
        if (o.rank >= header.spec.ranks) return "an operand names a rank outside the node";
        if (at.space < 0) return "an operand names the input or output of a rank outside its group";
        if (o.offset < 0 || o.offset + op.length > at.extent)
          return o.buf == buffer::scratch   ? "an operand reaches past the declared scratch size"
                 : o.buf == buffer::partial ? "an operand reaches past the declared partial size"
                                            : "an operand reaches past its buffer";
        return nullptr;
      };
      const auto sources = p.sources_of(op);
      const placement dst = mem.place(op.dst, op.group);
      const std::int64_t dst_at = dst.base + op.dst.offset;
      const placement first_source = mem.place(sources[0], op.group);
      // A copy onto itself (the in-place own slot) is elided by every executor.
      if (op.phase == phase::transfer && first_source.space == dst.space &&
          first_source.base + sources[0].offset == dst_at)
        continue;
      if (const char* e = locate(op.dst, dst)) return failed(e, op, op.dst.rank, op.dst.offset);
      writes.push_back({dst.space, dst_at, dst_at + op.length, i});
      for (std::size_t k = 0; k < sources.size(); ++k) {
        const concrete_operand& o = sources[k];
        if (op.phase == phase::reduce && o.rank != op.dst.rank)
          return failed("a reduction reads another rank's memory", op, o.rank, o.offset);
        const placement from = k == 0 ? first_source : mem.place(o, op.group);
        if (const char* e = locate(o, from)) return failed(e, op, o.rank, o.offset);
        const std::int64_t at = from.base + o.offset;
        // Within one operation, a source may be the destination itself but not overlap it
        // partially: elementwise in place is safe, shifted in place is not.
        if (from.space == dst.space && at != dst_at && at < dst_at + op.length &&
            dst_at < at + op.length)
          return failed("an operation's source partially overlaps its destination", op, o.rank,
                        o.offset);
        if (!(from.space == dst.space && at == dst_at))  // its own destination: no hazard
          reads.push_back({from.space, at, at + op.length, i});
      }
    }
    // Writes, sorted, must be disjoint; then each read may meet no write of another operation.
    // (Sorting the writes alone and searching them is much cheaper to evaluate at compile time
    // than sorting every access.)
    std::sort(writes.begin(), writes.end(), before);
    for (std::size_t w = 1; w < writes.size(); ++w)
      if (writes[w].space == writes[w - 1].space && writes[w].lo < writes[w - 1].hi) {
        const concrete_op& op = p.ops[writes[w].op];
        return failed("two operations of one phase write overlapping memory", op, op.dst.rank,
                      writes[w].lo);
      }
    for (const access& r : reads) {
      // Disjoint and sorted by start, the writes of a space are sorted by end too: the first
      // that ends after the read starts is the only candidate, and the ones after it while they
      // start before the read ends.
      auto w =
          std::lower_bound(writes.begin(), writes.end(), r, [](const access& x, const access& y) {
            return x.space != y.space ? x.space < y.space : x.hi <= y.lo;
          });
      for (; w != writes.end() && w->space == r.space && w->lo < r.hi; ++w)
        if (w->op != r.op) {
          const concrete_op& op = p.ops[w->op];
          return failed("an operation reads memory another writes in the same phase", op,
                        op.dst.rank, std::max(r.lo, w->lo));
        }
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

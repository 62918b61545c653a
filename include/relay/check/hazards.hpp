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

#include "relay/check/memory_model.hpp"

namespace relay {

namespace detail {

// One memory access of a phase: [lo, hi) of `space` by operation `op`.
struct access {
  int space = 0;  // (initialized members: a vector of a trivial type cannot be sized in a
  std::int64_t lo = 0, hi = 0;  // constant expression with libstdc++)
  std::size_t op = 0;
};

constexpr bool before(const access& a, const access& b) {
  return a.space != b.space ? a.space < b.space : a.lo < b.lo;
}

// Sorts [a, a + n) by (space, lo), `spare` holding n more. A bottom-up merge sort on raw
// pointers: compilers price constant evaluation by the statements and calls run, which std::sort
// spends freely; runs already in order (operations are generated rank by rank) are not merged.
constexpr void sort_accesses(access* a, std::size_t n, access* spare) {
  for (std::size_t width = 1; width < n; width *= 2)
    for (std::size_t lo = 0; lo + width < n; lo += 2 * width) {
      const std::size_t mid = lo + width, hi = mid + width < n ? mid + width : n;
      if (!before(a[mid], a[mid - 1])) continue;
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        spare[k++] = before(a[j], a[i]) ? a[j++] : a[i++];
      while (i < mid)
        spare[k++] = a[i++];
      while (j < hi)
        spare[k++] = a[j++];
      for (k = lo; k < hi; ++k)
        a[k] = spare[k];
    }
}

// Hot loops below index raw pointers (`.data()`): a subscript of std::vector or std::span is a
// call with an assertion in it, which constant evaluation pays for at every operand.
constexpr check_failure check_structure_of(const schedule_header& header, const concrete_view& p,
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
  const concrete_op* const ops = p.ops.data();
  const concrete_operand* const all_sources = p.sources.data();
  const std::size_t op_count = p.ops.size();

  // One phase's writes and reads, in lists kept across phases (constant evaluation pays for
  // every allocation and every element initialized).
  flat_stack<access> write_list, read_list, spare;
  for (std::size_t first = 0; first < op_count;) {
    std::size_t last = first;
    while (last < op_count && ops[last].step == ops[first].step &&
           ops[last].phase == ops[first].phase)
      ++last;
    write_list.clear();
    read_list.clear();
    for (std::size_t i = first; i < last; ++i) {
      const concrete_op& op = ops[i];
      const concrete_operand* const sources = all_sources + op.first_source;
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
      if (op.phase == phase::transfer && (sources[0].buf == buffer::partial) != to_partial)
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
      const placement dst = mem.place(op.dst, op.group);
      const std::int64_t dst_at = dst.base + op.dst.offset;
      const placement first_source = mem.place(sources[0], op.group);
      // A copy onto itself (the in-place own slot) is elided by every executor.
      if (op.phase == phase::transfer && first_source.space == dst.space &&
          first_source.base + sources[0].offset == dst_at)
        continue;
      if (const char* e = locate(op.dst, dst)) return failed(e, op, op.dst.rank, op.dst.offset);
      write_list.push({dst.space, dst_at, dst_at + op.length, i});
      for (std::size_t k = 0; k < op.source_count; ++k) {
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
          read_list.push({from.space, at, at + op.length, i});
      }
    }
    // Writes, sorted, must be disjoint; then each read may meet no write of another operation.
    // (Sorting the writes alone and searching them is much cheaper to evaluate at compile time
    // than sorting every access.)
    access* const writes = write_list.data();
    const access* const reads = read_list.data();
    const std::size_t write_count = write_list.size(), read_count = read_list.size();
    spare.clear();
    spare.extend(write_count);
    sort_accesses(writes, write_count, spare.data());
    for (std::size_t w = 1; w < write_count; ++w)
      if (writes[w].space == writes[w - 1].space && writes[w].lo < writes[w - 1].hi) {
        const concrete_op& op = ops[writes[w].op];
        return failed("two operations of one phase write overlapping memory", op, op.dst.rank,
                      writes[w].lo);
      }
    for (std::size_t k = 0; k < read_count; ++k) {
      const access& r = reads[k];
      // Disjoint and sorted by start, the writes of a space are sorted by end too: the first
      // that ends after the read starts is the only candidate, and the ones after it while they
      // start before the read ends.
      std::size_t lo = 0, hi = write_count;
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        const access& x = writes[mid];
        if (x.space < r.space || (x.space == r.space && x.hi <= r.lo))
          lo = mid + 1;
        else
          hi = mid;
      }
      for (; lo < write_count && writes[lo].space == r.space && writes[lo].lo < r.hi; ++lo)
        if (writes[lo].op != r.op) {
          const concrete_op& op = ops[writes[lo].op];
          return failed("an operation reads memory another writes in the same phase", op,
                        op.dst.rank, std::max(r.lo, writes[lo].lo));
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
  return detail::check_structure_of(*s.header, evaluate(s, counts, alignment).view(), counts,
                                    in_place, alignment);
}

}  // namespace relay

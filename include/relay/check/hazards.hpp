// Structural properties of a concrete schedule, each a condition an executor relies on:
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

// Sorts [a, a + n), accesses of one space, by start; `spare` holds n more. A bottom-up merge
// sort that skips runs already in order: a generator fills a space's slots in a few increasing
// runs (one per source), which an insertion sort would move element by element.
constexpr void sort_by_start(access* a, std::size_t n, access* spare) {
  for (std::size_t width = 1; width < n; width *= 2)
    for (std::size_t lo = 0; lo + width < n; lo += 2 * width) {
      const std::size_t mid = lo + width, hi = mid + width < n ? mid + width : n;
      if (a[mid - 1].lo <= a[mid].lo) continue;
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        spare[k++] = a[j].lo < a[i].lo ? a[j++] : a[i++];
      while (i < mid)
        spare[k++] = a[i++];
      while (j < hi)
        spare[k++] = a[j++];
      for (k = lo; k < hi; ++k)
        a[k] = spare[k];
    }
}

// Sorts the n accesses `a` by (space, lo) into `out`, and sets `start` (spaces + 1 entries) so
// that space s's accesses are out[start[s], start[s + 1]): a counting sort by space (a model has
// few: one user, scratch and partial space per rank and group), then each space's by start.
// `spare` holds n. On raw pointers, because compilers price constant evaluation by the
// statements and calls run, which std::sort spends freely.
constexpr void sort_by_space(const access* a, std::size_t n, std::size_t spaces, std::size_t* start,
                             access* out, access* spare) {
  for (std::size_t s = 0; s <= spaces; ++s)
    start[s] = 0;
  for (std::size_t i = 0; i < n; ++i)
    ++start[a[i].space + 1];
  for (std::size_t s = 1; s < spaces; ++s)
    start[s] += start[s - 1];
  for (std::size_t i = 0; i < n; ++i)  // start[s] ends as the end of space s
    out[start[a[i].space]++] = a[i];
  for (std::size_t s = spaces; s > 0; --s)
    start[s] = start[s - 1];
  start[0] = 0;
  for (std::size_t s = 0; s < spaces; ++s)
    if (start[s + 1] - start[s] > 1)
      sort_by_start(out + start[s], start[s + 1] - start[s], spare + start[s]);
}

// Whether `b` is a user buffer (an active's input or output), the memory in-place calls lay out
// differently.
constexpr bool is_user(buffer b) {
  return b == buffer::input || b == buffer::output;
}

// Why operand `o`, placed at `at`, lies nowhere valid (its rank, its buffer or its bounds).
constexpr const char* misplacement(const concrete_operand& o, const placement& at, int ranks) {
  if (o.rank >= ranks) return "an operand names a rank outside the node";
  if (at.space < 0) return "an operand names the input or output of a rank outside its group";
  return o.buf == buffer::scratch   ? "an operand reaches past the declared scratch size"
         : o.buf == buffer::partial ? "an operand reaches past the declared partial size"
                                    : "an operand reaches past its buffer";
}

// Hot loops below index raw pointers (`.data()`): a subscript of std::vector or std::span is a
// call with an assertion in it, which constant evaluation pays for at every operand.
//
// `user_only`: check only what the in-place layout changes, after a run out of place at the same
// counts passed. In place, an active's input and output share one space at new bases; every other
// operand lies where it lay, and no operand's bounds or kind depend on the layout (offsets count
// from the operand's own buffer). So only accesses to input and output can meet differently: a
// copy onto itself, a source overlapping its destination, and one operation's write meeting
// another's access. Accesses elsewhere are left out; those kept are checked in full.
constexpr check_failure check_structure_of(const schedule_header& header, const concrete_view& p,
                                           std::span<const std::int64_t> counts, bool in_place,
                                           std::int64_t alignment, bool user_only = false) {
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
  flat_stack<access> write_list, read_list, sorted, spare;
  flat_stack<std::size_t> space_start;
  const auto spaces = static_cast<std::size_t>(mem.space_count());
  space_start.extend(spaces + 1);
  for (std::size_t first = 0; first < op_count;) {
    const std::size_t last = phase_end(ops, op_count, first);
    write_list.clear();
    read_list.clear();
    for (std::size_t i = first; i < last; ++i) {
      const concrete_op& op = ops[i];
      const concrete_operand* const sources = all_sources + op.first_source;
      const bool copy = op.phase == phase::transfer;
      const std::int64_t count = op.count;
      if (copy ? op.source_count != 1 : op.source_count == 0 || op.source_count > max_reduce_inputs)
        return failed(
            copy ? "a copy must have exactly one source" : "a reduction needs 1 to 16 sources", op,
            op.dst.rank, -1);
      const bool to_partial = op.dst.buf == buffer::partial;
      if (copy ? (sources[0].buf == buffer::partial) != to_partial : to_partial == op.finalize)
        return failed(copy          ? "a copy changes a value's width (partial to element or back)"
                      : op.finalize ? "a final reduction writes a partial (it must write elements)"
                                    : "a reduction that is not final must write a partial "
                                      "(storing it as an element would round it twice)",
                      op, op.dst.rank, op.dst.offset);
      const placement& dst = mem.place(op.dst, op.group);
      const std::int64_t dst_at = dst.base + op.dst.offset;
      const placement& first_source = mem.place(sources[0], op.group);
      // A copy onto itself (the in-place own slot) is elided by every executor.
      if (copy && dst.space >= 0 && first_source.space == dst.space &&
          first_source.base + sources[0].offset == dst_at)
        continue;
      // (Each operand's bounds in one expression, the reason only on failure: it runs for every
      // operand.)
      if (!user_only || is_user(op.dst.buf)) {
        if (dst.space < 0 || op.dst.offset < 0 || op.dst.offset + count > dst.extent)
          return failed(misplacement(op.dst, dst, header.spec.ranks), op, op.dst.rank,
                        op.dst.offset);
        write_list.push({dst.space, dst_at, dst_at + count, i});
      }
      for (std::size_t k = 0; k < op.source_count; ++k) {
        const concrete_operand& o = sources[k];
        if (!copy && o.rank != op.dst.rank)
          return failed("a reduction reads another rank's memory", op, o.rank, o.offset);
        if (user_only && !is_user(o.buf)) continue;
        const placement& from = k == 0 ? first_source : mem.place(o, op.group);
        if (from.space < 0 || o.offset < 0 || o.offset + count > from.extent)
          return failed(misplacement(o, from, header.spec.ranks), op, o.rank, o.offset);
        const std::int64_t at = from.base + o.offset;
        if (from.space == dst.space && at < dst_at + count && dst_at < at + count) {
          // Within one operation, a source may be the destination itself but not overlap it
          // partially: elementwise in place is safe, shifted in place is not.
          if (at != dst_at)
            return failed("an operation's source partially overlaps its destination", op, o.rank,
                          o.offset);
          continue;  // its own destination: no hazard
        }
        read_list.push({from.space, at, at + count, i});
      }
    }
    // Writes, sorted, must be disjoint; then each read may meet no write of another operation.
    // (Sorting the writes alone and searching them is much cheaper to evaluate at compile time
    // than sorting every access.)
    const std::size_t write_count = write_list.size(), read_count = read_list.size();
    sorted.clear();
    sorted.extend(write_count);
    spare.clear();
    spare.extend(write_count);
    sort_by_space(write_list.data(), write_count, spaces, space_start.data(), sorted.data(),
                  spare.data());
    const access* const writes = sorted.data();
    const access* const reads = read_list.data();
    const std::size_t* const start = space_start.data();
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
      std::size_t lo = start[r.space], hi = start[r.space + 1];
      const std::size_t end = hi;
      while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (writes[mid].hi <= r.lo)
          lo = mid + 1;
        else
          hi = mid;
      }
      for (; lo < end && writes[lo].lo < r.hi; ++lo)
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
}  // namespace relay

// The dataflow property: every output element is produced exactly once, with exactly the right
// contributions, finalized (AVG's single division) exactly when the collective reduces.
//
// The check runs the concrete schedule on intervals instead of elements. Each interval of each
// memory space carries what its elements hold: a set of contributing ranks R and one shift s,
// meaning the element at position x holds the sum over r in R of input_r[x + s]. A copy moves an
// interval and adjusts the shift; a reduction unions the rank sets of its sources, which must
// agree on the shift and be disjoint (every collective here combines the same index of every
// input, and a rank counted twice is a wrong result). At the end every active rank's output must
// hold, interval by interval, the ranks and shift the collective defines, and an out-of-place
// input must be untouched. Nothing is counted: a schedule that moves the right number of bytes
// to the wrong place fails.
#pragma once

#include "relay/check/memory_model.hpp"
#include "relay/core/flat_stack.hpp"

namespace relay::detail {

struct content {
  std::uint64_t ranks = 0;     // contributing ranks, one bit each
  std::int64_t shift = 0;      // element x holds the inputs of those ranks at x + shift
  std::uint8_t finalized = 0;  // produced by a finalizing reduction (AVG's one division)
  bool garbage = true;         // nothing meaningful was ever written here

  static constexpr content of_ranks(std::uint64_t ranks, std::int64_t shift, bool finalized) {
    return {ranks, shift, static_cast<std::uint8_t>(finalized ? 1 : 0), false};
  }
  // The same values seen from `delta` elements further along.
  constexpr content moved(std::int64_t delta) const {
    return {ranks, shift - delta, finalized, garbage};
  }
  friend constexpr bool operator==(const content& a, const content& b) {
    if (a.garbage || b.garbage) return a.garbage == b.garbage;
    return a.ranks == b.ranks && a.shift == b.shift && a.finalized == b.finalized;
  }
};

constexpr std::uint64_t rank_bit(int rank) {
  return std::uint64_t{1} << rank;
}

struct segment {
  std::int64_t lo = 0, hi = 0;
  content value{};
};

// Interval maps, one per memory space; gaps are garbage.
//
// Reads append to a caller's list and writes rebuild only the overlapped stretch, through lists
// kept across calls: one evaluation of a fused schedule makes thousands of each, inside the
// compiler, which prices every statement (flat_stack.hpp).
class interval_memory {
 public:
  constexpr explicit interval_memory(int spaces)
      : spaces_(new flat_stack<segment>[static_cast<std::size_t>(spaces)]) {}
  constexpr interval_memory(const interval_memory&) = delete;
  constexpr interval_memory& operator=(const interval_memory&) = delete;
  constexpr ~interval_memory() { delete[] spaces_; }

  // Appends [lo, hi) of `space` to `out`, segment by segment, each moved `delta` further along
  // (its values seen from there: the shift drops by delta). Returns where the first garbage
  // (nothing ever written) lies, before the move, or -1 when there is none; a read of garbage
  // appends nothing after it. Moving while reading spares the checks a second pass.
  constexpr std::int64_t read(int space, std::int64_t lo, std::int64_t hi, std::int64_t delta,
                              flat_stack<segment>& out) const {
    const flat_stack<segment>& v = spaces_[space];
    const segment* const seg = v.data();
    const std::size_t size = v.size();
    const std::size_t first = first_ending_after(seg, size, lo);
    if (first == size || seg[first].lo > lo) return lo;
    const segment& s = seg[first];
    if (hi <= s.hi) {  // the common case: one segment holds it all
      if (s.value.garbage) return lo;
      out.push({lo + delta, hi + delta, s.value.moved(delta)});
      return -1;
    }
    std::int64_t at = lo;
    for (std::size_t i = first; i < size; ++i) {
      const segment& x = seg[i];
      if (x.lo >= hi) break;
      if (x.lo > at || x.value.garbage) return at;
      const std::int64_t end = hi < x.hi ? hi : x.hi;  // (no std::min: a call per use)
      out.push({at + delta, end + delta, x.value.moved(delta)});
      at = end;
    }
    return at < hi ? at : -1;
  }

  // `pieces` [first, last) are contiguous and sorted; they replace whatever was there.
  constexpr void write(int space, const segment* first_piece, const segment* last_piece) {
    if (first_piece == last_piece) return;
    const std::int64_t lo = first_piece->lo, hi = (last_piece - 1)->hi;
    flat_stack<segment>& v = spaces_[space];
    const segment* const seg = v.data();
    const std::size_t size = v.size();
    if (size == 0 || seg[size - 1].hi <= lo) {  // past the end (slots fill in order): append
      for (const segment* p = first_piece; p != last_piece; ++p) {
        if (p->lo >= p->hi) continue;
        segment* const end = v.data() + v.size();
        if (!v.empty() && end[-1].hi == p->lo && end[-1].value == p->value)
          end[-1].hi = p->hi;
        else
          v.push(*p);
      }
      return;
    }
    const std::size_t first = first_ending_after(seg, size, lo);
    std::size_t last = first;
    while (last < size && seg[last].lo < hi)
      ++last;
    // One piece into a gap, equal to neither neighbour it touches (a slot filled out of order):
    // insert it, moving the tail by one.
    if (first == last && last_piece - first_piece == 1 && lo < hi &&
        (first == 0 || seg[first - 1].hi != lo || !(seg[first - 1].value == first_piece->value)) &&
        (first == size || seg[first].lo != hi || !(seg[first].value == first_piece->value))) {
      v.extend(1);
      segment* const d = v.data();
      for (std::size_t i = size; i > first; --i)
        d[i] = d[i - 1];
      d[first] = *first_piece;
      return;
    }
    // The new stretch: the pieces, the cut ends and the neighbours, merged where equal.
    mid_.clear();
    auto push = [&](const segment& s) {
      if (s.lo >= s.hi) return;
      if (!mid_.empty() && mid_.back().hi == s.lo && mid_.back().value == s.value)
        mid_.back().hi = s.hi;  // the same values at adjacent positions: one interval
      else
        mid_.push(s);
    };
    if (first > 0) push(seg[first - 1]);  // merge with the left neighbour where possible
    if (first < last && seg[first].lo < lo) push({seg[first].lo, lo, seg[first].value});
    for (const segment* p = first_piece; p != last_piece; ++p)
      push(*p);
    if (first < last && seg[last - 1].hi > hi) push({hi, seg[last - 1].hi, seg[last - 1].value});
    if (last < size) push(seg[last]);  // and with the right one
    // Replace v[from, to) by the stretch, moving the tail when the counts differ.
    const std::size_t from = first > 0 ? first - 1 : first;
    const std::size_t to = last < size ? last + 1 : last;
    const std::size_t old_size = to - from, count = mid_.size();
    if (count > old_size) {
      v.extend(count - old_size);
      segment* const d = v.data();
      for (std::size_t i = v.size(); i-- > from + count;)
        d[i] = d[i - (count - old_size)];
    } else if (count < old_size) {
      segment* const d = v.data();
      for (std::size_t i = from + count; i + (old_size - count) < size; ++i)
        d[i] = d[i + (old_size - count)];
      v.pop(old_size - count);
    }
    segment* const out = v.data() + from;
    const segment* const in = mid_.data();
    for (std::size_t i = 0; i < count; ++i)
      out[i] = in[i];
  }

 private:
  // The index of the first segment that ends after `at` (segments are sorted and disjoint).
  static constexpr std::size_t first_ending_after(const segment* v, std::size_t size,
                                                  std::int64_t at) {
    std::size_t lo = 0, hi = size;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (v[mid].hi <= at)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

  flat_stack<segment>* spaces_;
  flat_stack<segment> mid_;
};

// The sources of one reduction, source k being sources[bounds[k], bounds[k + 1]), each covering
// the same stretch of the destination piece by piece: appends to `out` each output interval with
// the union of the ranks its sources hold there, cutting wherever any source's piece ends. Sets
// `error` where they cannot be summed into a right answer. `cursors` is scratch.
constexpr void combine(const flat_stack<segment>& source_list,
                       const flat_stack<std::size_t>& bound_list, bool finalize, const char*& error,
                       flat_stack<segment>& out, flat_stack<std::size_t>& cursors) {
  const segment* const sources = source_list.data();
  const std::size_t* const bounds = bound_list.data();
  const std::size_t k_count = bound_list.size() - 1;
  cursors.clear();
  cursors.extend(k_count);
  std::size_t* const cursor = cursors.data();
  for (std::size_t k = 0; k < k_count; ++k)
    cursor[k] = bounds[k];
  std::int64_t at = sources[bounds[0]].lo;
  while (cursor[0] < bounds[1]) {
    segment piece{at, 0, content::of_ranks(0, 0, finalize)};
    piece.hi = sources[cursor[0]].hi;
    for (std::size_t k = 1; k < k_count; ++k)
      if (sources[cursor[k]].hi < piece.hi) piece.hi = sources[cursor[k]].hi;
    for (std::size_t k = 0; k < k_count; ++k) {
      const content& v = sources[cursor[k]].value;
      if (v.finalized)
        error = "a reduction sums a value that was already finalized (AVG would divide twice)";
      else if (k > 0 && v.shift != piece.value.shift)
        error = "a reduction sums different elements of its contributors' inputs";
      else if ((piece.value.ranks & v.ranks) != 0)
        error = "a reduction counts one rank's contribution twice";
      if (error != nullptr) return;
      piece.value.ranks |= v.ranks;
      piece.value.shift = v.shift;
      if (sources[cursor[k]].hi == piece.hi) ++cursor[k];
    }
    out.push(piece);
    at = piece.hi;
  }
}

// The whole check on one concrete schedule (verify.hpp runs it).
constexpr check_failure check_dataflow_of(const schedule_header& header, const concrete_view& p,
                                          std::span<const std::int64_t> counts, bool in_place,
                                          std::int64_t alignment) {
  const schedule_spec& spec = header.spec;
  const memory_model mem(header, counts, in_place, alignment);
  interval_memory m(mem.space_count());
  check_failure fail{};
  fail.in_place = in_place;
  auto failed = [&](const char* what, int group, int rank, int step, std::int64_t position) {
    fail.what = what;
    fail.group = group;
    fail.rank = rank;
    fail.step = step;
    fail.count = group >= 0 ? mem.count(group) : -1;
    fail.position = position;
    return fail;
  };

  for (int r = 0; r < spec.ranks; ++r) {
    const int g = mem.home_group(r);
    if (g < 0 || mem.input_extent(g) == 0) continue;
    const std::int64_t b = mem.input_base(r);
    const segment whole{b, b + mem.input_extent(g), content::of_ranks(rank_bit(r), -b, false)};
    m.write(mem.user_space(r), &whole, &whole + 1);
  }

  // Lists reused by every phase and operation.
  struct staged_write {
    int space = 0;
    std::size_t first = 0, last = 0;  // in `staged`
  };
  flat_stack<segment> staged, source_pieces, found;
  flat_stack<staged_write> writes;
  flat_stack<std::size_t> bounds, cursors;
  const concrete_op* const ops = p.ops.data();
  const concrete_operand* const all_sources = p.sources.data();
  const std::size_t op_count = p.ops.size();
  for (std::size_t first = 0; first < op_count;) {
    const std::size_t last = phase_end(ops, op_count, first);
    // Every operation of a phase reads before any of them writes: they run concurrently.
    for (std::size_t i = first; i < last; ++i) {
      const concrete_op& op = ops[i];
      const placement& dst = mem.place(op.dst, op.group);
      if (dst.space < 0)
        return failed("an operation writes the input or output of a rank outside its group",
                      op.group, op.dst.rank, op.step, op.dst.offset);
      const std::int64_t at = dst.base + op.dst.offset;
      const std::size_t staged_from = staged.size();
      const concrete_operand* const srcs = all_sources + op.first_source;
      if (op.phase == phase::transfer) {  // a copy: its source lands straight in `staged`
        const placement& from = mem.place(srcs[0], op.group);
        if (from.space < 0)
          return failed("an operation reads the input or output of a rank outside its group",
                        op.group, srcs[0].rank, op.step, srcs[0].offset);
        const std::int64_t lo = from.base + srcs[0].offset;
        if (const std::int64_t g = m.read(from.space, lo, lo + op.count, at - lo, staged); g >= 0)
          return failed("an operation reads memory that nothing has written", op.group,
                        srcs[0].rank, op.step, g);
        writes.push({dst.space, staged_from, staged.size()});
        continue;
      }
      // A reduction: source k's pieces are source_pieces[bounds[k], bounds[k + 1]).
      source_pieces.clear();
      bounds.clear();
      bounds.push(0);
      for (std::size_t k = 0; k < op.source_count; ++k) {
        const concrete_operand& src = srcs[k];
        const placement& from = mem.place(src, op.group);
        if (from.space < 0)
          return failed("an operation reads the input or output of a rank outside its group",
                        op.group, src.rank, op.step, src.offset);
        const std::int64_t lo = from.base + src.offset;
        if (const std::int64_t g = m.read(from.space, lo, lo + op.count, at - lo, source_pieces);
            g >= 0)
          return failed("an operation reads memory that nothing has written", op.group, src.rank,
                        op.step, g);
        bounds.push(source_pieces.size());
      }
      const char* error = nullptr;
      combine(source_pieces, bounds, op.finalize, error, staged, cursors);
      if (error != nullptr) return failed(error, op.group, op.dst.rank, op.step, at);
      writes.push({dst.space, staged_from, staged.size()});
    }
    const staged_write* const w = writes.data();
    for (std::size_t k = 0; k < writes.size(); ++k)
      m.write(w[k].space, staged.data() + w[k].first, staged.data() + w[k].last);
    staged.clear();
    writes.clear();
    first = last;
  }

  // What every active rank must hold.
  for (int r = 0; r < spec.ranks; ++r) {
    const int g = mem.home_group(r);
    if (g < 0) continue;
    const int k = r - g * spec.active;
    const std::int64_t n = mem.count(g), out_base = mem.output_base(r);
    const bool reduced = reduces(spec.coll);
    const int slots = reduced ? 1 : spec.active;
    // Output slot `slot` (one slot when reducing) holds, at position x, the inputs of the
    // contributing actives at x - slot*n + block, where block = k*n for the collectives that send
    // rank k its own block of every input.
    const bool blocked =
        spec.coll == collective::reduce_scatter || spec.coll == collective::all_to_all;
    for (int slot = 0; slot < slots && n > 0; ++slot) {
      const std::uint64_t group_ranks = ((rank_bit(spec.active) - 1) << (g * spec.active));
      const content want =
          content::of_ranks(reduced ? group_ranks : rank_bit(g * spec.active + slot),
                            (blocked ? k * n : 0) - out_base - slot * n, reduced);
      const std::int64_t lo = out_base + slot * n;
      found.clear();
      const std::int64_t unwritten = m.read(mem.user_space(r), lo, lo + n, 0, found);
      for (std::size_t j = 0; j < found.size(); ++j) {
        const segment& piece = found.data()[j];
        if (!(piece.value == want))
          return failed("an output element holds the wrong contributions", g, r, -1,
                        piece.lo - out_base);
      }
      if (unwritten >= 0)
        return failed("an output element is never written", g, r, -1, unwritten - out_base);
    }
    if (!in_place && mem.input_extent(g) > 0) {
      const std::int64_t b = mem.input_base(r);
      found.clear();
      const std::int64_t unwritten =
          m.read(mem.user_space(r), b, b + mem.input_extent(g), 0, found);
      for (std::size_t j = 0; j < found.size(); ++j) {
        const segment& piece = found.data()[j];
        if (!(piece.value == content::of_ranks(rank_bit(r), -b, false)))
          return failed("an out-of-place input was modified", g, r, -1, piece.lo - b);
      }
      if (unwritten >= 0)
        return failed("an out-of-place input was modified", g, r, -1, unwritten - b);
    }
  }
  return fail;
}

}  // namespace relay::detail

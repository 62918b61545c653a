// The dataflow property: every output element is produced exactly once, with exactly the right
// contributions, finalized (AVG's single division) exactly when the collective reduces.
//
// The check runs the concrete program on intervals instead of elements. Each interval of each
// memory space carries what its elements hold: a set of contributing ranks R and one shift s,
// meaning the element at position x holds the sum over r in R of input_r[x + s]. A copy moves an
// interval and adjusts the shift; a reduction unions the rank sets of its sources, which must
// agree on the shift and be disjoint (every collective here combines the same index of every
// input, and a rank counted twice is a wrong result). At the end every active rank's output must
// hold, interval by interval, the ranks and shift the collective defines, and an out-of-place
// input must be untouched. Nothing is counted: a schedule that moves the right number of bytes
// to the wrong place fails.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "relay/check/memory_model.hpp"

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
    content c = *this;
    c.shift -= delta;
    return c;
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
// Compile-time checks pay for every allocation and every element a vector moves, so reads append
// to a caller's buffer and writes rebuild only the overlapped stretch through a buffer kept
// across calls (one evaluation of a fused schedule makes thousands of each).
class interval_memory {
 public:
  constexpr explicit interval_memory(int spaces) : spaces_(static_cast<std::size_t>(spaces)) {}

  // Appends [lo, hi) of `space` to `out`, segment by segment; gaps come out as garbage.
  constexpr void read(int space, std::int64_t lo, std::int64_t hi,
                      std::vector<segment>& out) const {
    std::int64_t at = lo;
    const auto& v = spaces_[static_cast<std::size_t>(space)];
    for (std::size_t i = first_ending_after(v, lo); i < v.size(); ++i) {
      const segment& s = v[i];
      if (s.lo >= hi) break;
      if (s.lo > at) out.push_back({at, s.lo, content{}});
      out.push_back({std::max(at, s.lo), std::min(hi, s.hi), s.value});
      at = std::min(hi, s.hi);
    }
    if (at < hi) out.push_back({at, hi, content{}});
  }

  // `pieces` [first, last) are contiguous and sorted; they replace whatever was there.
  constexpr void write(int space, const segment* first_piece, const segment* last_piece) {
    if (first_piece == last_piece) return;
    const std::int64_t lo = first_piece->lo, hi = (last_piece - 1)->hi;
    auto& v = spaces_[static_cast<std::size_t>(space)];
    std::size_t first = first_ending_after(v, lo);
    std::size_t last = first;
    while (last < v.size() && v[last].lo < hi)
      ++last;
    mid_.clear();
    auto push = [&](segment s) {
      if (s.lo >= s.hi) return;
      if (!mid_.empty() && mid_.back().hi == s.lo && mid_.back().value == s.value)
        mid_.back().hi = s.hi;  // the same values at adjacent positions: one interval
      else
        mid_.push_back(s);
    };
    if (first > 0) push(v[first - 1]);  // merge with the left neighbour where possible
    if (first < last && v[first].lo < lo) push({v[first].lo, lo, v[first].value});
    for (const segment* p = first_piece; p != last_piece; ++p)
      push(*p);
    if (first < last && v[last - 1].hi > hi) push({hi, v[last - 1].hi, v[last - 1].value});
    if (last < v.size()) push(v[last]);  // and with the right one
    // Replace v[from, to) by mid_, overwriting in place and moving the tail only when the
    // counts differ.
    const std::size_t from = first > 0 ? first - 1 : first;
    const std::size_t to = last < v.size() ? last + 1 : last;
    const std::size_t old_size = to - from, common = std::min(old_size, mid_.size());
    for (std::size_t i = 0; i < common; ++i)
      v[from + i] = mid_[i];
    if (mid_.size() < old_size)
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(from + common),
              v.begin() + static_cast<std::ptrdiff_t>(to));
    else if (mid_.size() > old_size)
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(to),
               mid_.begin() + static_cast<std::ptrdiff_t>(common), mid_.end());
  }

 private:
  // The index of the first segment that ends after `at` (segments are sorted and disjoint).
  static constexpr std::size_t first_ending_after(const std::vector<segment>& v, std::int64_t at) {
    std::size_t lo = 0, hi = v.size();
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (v[mid].hi <= at)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

  std::vector<std::vector<segment>> spaces_;
  std::vector<segment> mid_;
};

// The sources of one reduction, source k being sources[bounds[k], bounds[k + 1]), each covering
// the same stretch of the destination piece by piece: appends to `out` each output interval with
// the union of the ranks its sources hold there, cutting wherever any source's piece ends. Sets
// `error` where they cannot be summed into a right answer. `cursor` is scratch.
constexpr void combine(const std::vector<segment>& sources, const std::vector<std::size_t>& bounds,
                       bool finalize, const char*& error, std::vector<segment>& out,
                       std::vector<std::size_t>& cursor) {
  const std::size_t k_count = bounds.size() - 1;
  cursor.assign(bounds.begin(), bounds.end() - 1);
  std::int64_t at = sources[bounds[0]].lo;
  while (cursor[0] < bounds[1]) {
    segment piece{at, 0, content::of_ranks(0, 0, finalize)};
    piece.hi = sources[cursor[0]].hi;
    for (std::size_t k = 1; k < k_count; ++k)
      piece.hi = std::min(piece.hi, sources[cursor[k]].hi);
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
    out.push_back(piece);
    at = piece.hi;
  }
}

// The whole check on one concrete program (see check_dataflow_at below).
constexpr check_failure check_dataflow_of(const schedule_header& header, const concrete_program& p,
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

  // Buffers reused by every phase and operation (see interval_memory).
  struct staged_write {
    int space;
    std::size_t first, last;  // in `staged`
  };
  std::vector<segment> staged, source_pieces, found;
  std::vector<staged_write> writes;
  std::vector<std::size_t> bounds, cursor;
  for (std::size_t first = 0; first < p.ops.size();) {
    std::size_t last = first;
    while (last < p.ops.size() && p.ops[last].step == p.ops[first].step &&
           p.ops[last].phase == p.ops[first].phase)
      ++last;
    // Every operation of a phase reads before any of them writes: they run concurrently.
    staged.clear();
    writes.clear();
    for (std::size_t i = first; i < last; ++i) {
      const concrete_op& op = p.ops[i];
      const placement dst = mem.place(op.dst, op.group);
      if (dst.space < 0)
        return failed("an operation writes the input or output of a rank outside its group",
                      op.group, op.dst.rank, op.step, op.dst.offset);
      const std::int64_t at = dst.base + op.dst.offset;
      // A copy's source lands straight in `staged`; a reduction's sources go to source_pieces.
      const bool copy = op.phase == phase::transfer;
      std::vector<segment>& into = copy ? staged : source_pieces;
      const std::size_t staged_from = staged.size();
      source_pieces.clear();
      bounds.assign(1, 0);
      for (const concrete_operand& src : p.sources_of(op)) {
        const placement from = mem.place(src, op.group);
        if (from.space < 0)
          return failed("an operation reads the input or output of a rank outside its group",
                        op.group, src.rank, op.step, src.offset);
        const std::int64_t delta = at - (from.base + src.offset);
        const std::size_t read_from = into.size();
        m.read(from.space, from.base + src.offset, from.base + src.offset + op.length, into);
        for (std::size_t j = read_from; j < into.size(); ++j) {
          segment& piece = into[j];
          if (piece.value.garbage)
            return failed("an operation reads memory that nothing has written", op.group, src.rank,
                          op.step, piece.lo);
          piece = {piece.lo + delta, piece.hi + delta, piece.value.moved(delta)};
        }
        bounds.push_back(into.size());
      }
      if (!copy) {
        const char* error = nullptr;
        combine(source_pieces, bounds, op.finalize, error, staged, cursor);
        if (error != nullptr) return failed(error, op.group, op.dst.rank, op.step, at);
      }
      writes.push_back({dst.space, staged_from, staged.size()});
    }
    for (const staged_write& w : writes)
      m.write(w.space, staged.data() + w.first, staged.data() + w.last);
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
      m.read(mem.user_space(r), lo, lo + n, found);
      for (const segment& piece : found)
        if (!(piece.value == want))
          return failed(piece.value.garbage ? "an output element is never written"
                                            : "an output element holds the wrong contributions",
                        g, r, -1, piece.lo - out_base);
    }
    if (!in_place && mem.input_extent(g) > 0) {
      const std::int64_t b = mem.input_base(r);
      found.clear();
      m.read(mem.user_space(r), b, b + mem.input_extent(g), found);
      for (const segment& piece : found)
        if (!(piece.value == content::of_ranks(rank_bit(r), -b, false)))
          return failed("an out-of-place input was modified", g, r, -1, piece.lo - b);
    }
  }
  return fail;
}

}  // namespace relay::detail

namespace relay {

// One run at per-group `counts`, out of place or in place.
constexpr check_failure check_dataflow_at(const schedule_view& s,
                                          std::span<const std::int64_t> counts, bool in_place,
                                          std::int64_t alignment = default_alignment) {
  return detail::check_dataflow_of(*s.header, evaluate(s, counts, alignment), counts, in_place,
                                   alignment);
}

}  // namespace relay

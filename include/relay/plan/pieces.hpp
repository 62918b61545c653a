// Pieces: a call too large for a transport's data area runs as several calls of the same shape
// and choice on slices of its elements (comm/communicator.hpp runs them; transports see ordinary
// plans). The area bounds memory, never what a caller may pass.
//
// Piece j of a call covers, in every group g, the elements [j * step_g, j * step_g + n_g,j) of
// each of the group's blocks (an allreduce buffer is one block; a reduce-scatter input, an
// all-gather output and both all-to-all buffers are A blocks of the group's count), where
// n_g,j = clamp(count_g - j * step_g, 0, step_g). Every element of every output depends only on
// the same element index of the inputs' blocks, so the pieces together compute what the whole
// call does, in place too: piece j reads and writes only its own elements, and a transport stages
// a piece's input before it writes any of its output.
//
// The cut is a pure function of the call's shape, its choice and the area's size, so every rank
// (the area's size is one number for a whole job) cuts a call alike. Every piece takes the whole
// call's choice (route, offload share, pipeline depth, wire), not one of its own, so a call gives
// the same result whole or in pieces wherever its schedule's arithmetic does not depend on the
// count (every sum of native partials is over the same inputs in the same order).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "relay/core/collective.hpp"
#include "relay/core/status.hpp"
#include "relay/plan/area_layout.hpp"
#include "relay/plan/make_plan.hpp"
#include "relay/plan/plan.hpp"

namespace relay {

// How a call is cut: `pieces` (1: it runs whole) and, per group, the elements a piece takes from
// each of the group's blocks.
struct piece_cut {
  std::uint64_t pieces = 1;
  std::vector<std::int64_t> step;  // per group; empty when pieces == 1
  friend bool operator==(const piece_cut&, const piece_cut&) = default;
};

// The counts of piece j (count_g of a call that runs whole).
inline void piece_counts(std::span<const std::int64_t> counts, const piece_cut& cut,
                         std::uint64_t j, std::vector<std::int64_t>& out) {
  out.resize(counts.size());
  for (std::size_t g = 0; g < counts.size(); ++g) {
    if (cut.pieces <= 1) {
      out[g] = counts[g];
      continue;
    }
    const std::int64_t first = static_cast<std::int64_t>(j) * cut.step[g];
    out[g] = std::clamp<std::int64_t>(counts[g] - first, 0, cut.step[g]);
  }
}

// Where piece j's part of one rank's buffer lies in the caller's buffer: `runs` runs of
// `run_bytes`, `stride` bytes apart, the first at `offset` bytes from the buffer's start. A rank
// of no group, and a group whose piece is empty, has none (runs 0).
struct piece_runs {
  std::size_t offset = 0, run_bytes = 0, stride = 0;
  std::uint32_t runs = 0;
  friend constexpr bool operator==(const piece_runs&, const piece_runs&) = default;
};

// The runs of `rank`'s input (input = true) or output in piece j of a call of collective `c`
// whose elements are `element_size` bytes.
inline piece_runs runs_of_piece(collective c, const std::vector<std::vector<int>>& groups,
                                std::span<const std::int64_t> counts, const piece_cut& cut,
                                std::uint64_t j, int rank, int element_size, bool input) {
  for (std::size_t g = 0; g < groups.size() && g < counts.size(); ++g) {
    if (std::find(groups[g].begin(), groups[g].end(), rank) == groups[g].end()) continue;
    const int A = static_cast<int>(groups[g].size());
    const auto es = static_cast<std::size_t>(element_size);
    const auto count = static_cast<std::size_t>(counts[g]);
    const auto blocks =
        static_cast<std::uint32_t>(input ? input_elements(c, A, 1) : output_elements(c, A, 1));
    std::size_t first = 0, n = count;
    if (cut.pieces > 1) {
      const auto step = static_cast<std::size_t>(cut.step[g]);
      first = std::min<std::size_t>(count, static_cast<std::size_t>(j) * step);
      n = std::min(step, count - first);
    }
    if (n == 0) return {};
    return {first * es, n * es, count * es, blocks};
  }
  return {};
}

namespace detail {

inline std::int64_t round_up_to(std::int64_t x, std::int64_t quantum) {
  return (x + quantum - 1) / quantum * quantum;
}

// The steps of a cut into about `pieces` pieces: ceil(count / pieces) rounded up to the
// alignment (so a piece keeps the whole call's chunk geometry), at most the count.
inline std::vector<std::int64_t> steps_for(std::span<const std::int64_t> counts,
                                           std::uint64_t pieces, std::int64_t quantum) {
  std::vector<std::int64_t> step(counts.size());
  for (std::size_t g = 0; g < counts.size(); ++g) {
    const auto p = static_cast<std::int64_t>(pieces);
    step[g] = std::min(counts[g], round_up_to((counts[g] + p - 1) / p, quantum));
  }
  return step;
}

// How many pieces `step` makes of `counts` (the most any group needs).
inline std::uint64_t pieces_of(std::span<const std::int64_t> counts,
                               std::span<const std::int64_t> step) {
  std::uint64_t most = 1;
  for (std::size_t g = 0; g < counts.size(); ++g)
    if (step[g] > 0)
      most = std::max<std::uint64_t>(
          most, static_cast<std::uint64_t>((counts[g] + step[g] - 1) / step[g]));
  return most;
}

}  // namespace detail

// The distinct count lists of a cut's pieces, in piece order, with the first piece of each: a
// cut has a few (every group's full step, then the tails), whatever its number of pieces.
struct piece_shape {
  std::uint64_t first = 0;           // the first piece with these counts
  std::vector<std::int64_t> counts;  // per group
};
inline std::vector<piece_shape> piece_shapes(std::span<const std::int64_t> counts,
                                             const piece_cut& cut) {
  std::vector<piece_shape> shapes;
  std::vector<std::int64_t> now;
  // A group's count changes only at its last piece and the one after: visit those pieces alone.
  std::vector<std::uint64_t> at{0};
  for (std::size_t g = 0; cut.pieces > 1 && g < counts.size(); ++g)
    if (cut.step[g] > 0) {
      const auto last = static_cast<std::uint64_t>(counts[g] / cut.step[g]);
      for (std::uint64_t j : {last, last + 1})
        if (j < cut.pieces) at.push_back(j);
    }
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  for (std::uint64_t j : at) {
    piece_counts(counts, cut, j, now);
    if (shapes.empty() || shapes.back().counts != now) shapes.push_back({j, now});
  }
  return shapes;
}

// The cut of the call `r` (chosen as `chosen`, whose whole plan is `whole`) for a transport whose
// calls may lay out at most `area` bytes per rank (largest_area; 0: no bound): whole where it
// fits, else the fewest pieces (searched from the sizes' ratio up) whose every distinct plan
// fits. Where no cut fits (even pieces of one alignment quantum need more than the area: the
// plan's own memory), the call is left whole, for the transport to refuse with its size.
inline piece_cut cut_into_pieces(const call_shape& r, const call_choice& chosen, const plan& whole,
                                 std::uint64_t area) {
  const std::uint64_t need = largest_area(whole);
  if (area == 0 || need <= area) return {};
  const std::int64_t quantum = std::max<std::int64_t>(1, r.alignment);
  std::uint64_t pieces = (need + area - 1) / area;
  for (int tries = 0; tries < 64; ++tries) {
    piece_cut cut{0, detail::steps_for(r.counts, pieces, quantum)};
    cut.pieces = detail::pieces_of(r.counts, cut.step);
    std::uint64_t most = 0;  // the largest area of the cut's plans
    call_shape piece = r;
    for (const piece_shape& s : piece_shapes(r.counts, cut)) {
      piece.counts = s.counts;
      plan p;
      if (!make_plan(piece, chosen, p)) return {};
      most = std::max(most, largest_area(p));
    }
    if (most <= area) return cut;
    // Every group already at one quantum a piece (or its whole count): no finer cut exists.
    bool finest = true;
    for (std::size_t g = 0; g < r.counts.size(); ++g)
      finest = finest && cut.step[g] <= quantum;
    if (finest) return {};
    // Pieces shrink about in proportion: scale by the overshoot (a double: only an estimate).
    const double scaled =
        static_cast<double>(pieces) * static_cast<double>(most) / static_cast<double>(area);
    pieces = std::max(pieces + 1, static_cast<std::uint64_t>(scaled) + 1);
  }
  return {};
}

}  // namespace relay

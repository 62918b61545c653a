// The pull form's rules (transport/ipc/pull.hpp), host-only so that they are unit-tested without a
// device: which calls it runs, what each rank reads, and the grid every rank launches.
//
// The pull form is the ipc transport's one-kernel allreduce for small calls: every active rank
// reads each member of its group's input where that member keeps it (its registered buffer, or
// its staged copy) and sums them, in group order, straight into its own output. Nothing is pushed
// and no plan phase runs, so a call costs two device-side round trips (the inputs ready, the reads
// done), as a single-kernel one-shot allreduce does (bench/tools/floor).
//
// Why this is the same result as the plan's. An allreduce's output on every active rank of a
// group is the sum of the group's inputs (divided by A for AVG): the pull computes exactly that,
// accumulating in reduction_traits' accumulator (fp32 for fp16 and bf16) and rounding once, which
// is within the bound of either precision (docs/schedules.md, "Precision"). It moves no partial
// sums, so native_partials changes nothing here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "relay/plan/plan.hpp"

namespace relay::ipc {

// Blocks of a pull kernel: each reads and writes one 16-byte vector per thread per tile; the
// flags are per block (ipc_control::pull_flags), so the grid is bounded.
inline constexpr int max_pull_blocks = 64;
inline constexpr int pull_block_threads = 512;
inline constexpr std::uint64_t pull_tile_bytes = 16 * pull_block_threads;

// Whether the pull form can run `p`: an allreduce on the native wire whose groups fit one
// reduction's sources. (Other collectives keep the plan's one-shot kernel.)
inline bool pull_applies(const plan& p) {
  if (p.spec.coll != collective::allreduce || p.wire.taken != wire_format::native) return false;
  for (const std::vector<int>& g : p.groups)
    if (g.empty() || g.size() > static_cast<std::size_t>(max_reduce_inputs)) return false;
  return p.groups.size() == p.counts.size();
}

// What one rank does in the pull form of `p` (pull_applies).
struct pull_role {
  std::span<const int> members;  // the ranks whose inputs it sums, in group order (the plan's
                                 // group: valid while the plan is; empty: none)
  std::uint64_t count = 0;       // elements of each input and of its output
  std::uint64_t readers = 0;     // bit q: rank q reads this rank's input
};
inline pull_role pull_role_of(const plan& p, int rank) {
  pull_role r;
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    const std::vector<int>& group = p.groups[g];
    if (std::find(group.begin(), group.end(), rank) == group.end() || p.counts[g] <= 0) continue;
    r.members = group;  // a view (g++ 13 at -O3 took a copy's inlined loop for a null write)
    r.count = static_cast<std::uint64_t>(p.counts[g]);
    for (int q : group)
      if (q != rank) r.readers |= std::uint64_t{1} << q;
  }
  return r;
}

// The grid of every active rank: one block per tile of the largest group's output, at most
// `most` (the smallest one-shot grid of all ranks, the same everywhere) and max_pull_blocks.
// Every rank computes the same number, so block b of one rank meets block b of another.
inline std::uint32_t pull_grid(const plan& p, std::uint64_t most) {
  std::uint64_t largest = 0;
  for (std::int64_t n : p.counts)
    largest = std::max<std::uint64_t>(largest, n > 0 ? static_cast<std::uint64_t>(n) : 0);
  const std::uint64_t tiles =
      (largest * static_cast<std::uint64_t>(p.element_size()) + pull_tile_bytes - 1) /
      pull_tile_bytes;
  const std::uint64_t cap =
      std::clamp<std::uint64_t>(most, 1, static_cast<std::uint64_t>(max_pull_blocks));
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(tiles, 1, cap));
}

// The pull form's stage for the form model (cost/form.hpp): every output tile of 16 KiB reads
// one tile of each of the A members, so the stage is the largest group's output tiles times A.
inline std::uint64_t pull_stage_tiles(const plan& p, std::uint64_t tile_bytes) {
  std::uint64_t most = 0;
  for (std::size_t g = 0; g < p.groups.size() && g < p.counts.size(); ++g) {
    const std::uint64_t n = p.counts[g] > 0 ? static_cast<std::uint64_t>(p.counts[g]) : 0;
    const std::uint64_t tiles =
        (n * static_cast<std::uint64_t>(p.element_size()) + tile_bytes - 1) / tile_bytes;
    most = std::max<std::uint64_t>(most, tiles * p.groups[g].size());
  }
  return most;
}

}  // namespace relay::ipc

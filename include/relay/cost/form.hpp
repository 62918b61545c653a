// Form: how a transport that runs a plan as device stages (the ipc transport) launches them, and
// what each way is predicted to cost:
//
//   stepped   one launch per stage: S launches, each stage's tiles spread over the step kernel's
//             resident grid (G_s blocks);
//   one-shot  one launch; its blocks meet at a grid barrier between stages (S - 1 barriers), and
//             its grid is at most one block per multiprocessor (every block must be resident), so
//             a stage of more tiles than that runs in rounds;
//   pull      (allreduce only) one launch whose blocks read the group's inputs in place and sum
//             them: two round trips whatever the plan (transport/ipc/pull.hpp);
//   ll        (allreduce only, up to ll_capacity bytes a member) one launch whose blocks push
//             the input to every member as words that carry their call, and sum the words that
//             landed: one trip, no barrier (transport/ipc/ll.hpp).
//
// Between the plan's two forms the model prices:
//
//   T_stepped  = S * launch + sum over stages of ceil(tiles_s / G_s) * tile
//   T_one_shot = launch + (S - 1) * signal + sum over stages of ceil(tiles_s / G_1) * tile
//
// `launch` is the time from one kernel's end to the next one's start on a stream when the host
// issues them back to back (bounded below by the launch latency), `signal` one device-side round
// trip: a store that another block (the barrier) or another rank (a peer's signal) sees.
// The waits for peers cost the same in both forms and cancel. `tile` is what one block takes for
// one tile (16 KiB of work): it is how the size enters, through the rounds. Below one round per
// stage in both forms (every stage within G_1 tiles) the choice is launch against signal alone,
// whatever the size; beyond, the one-shot's rounds cost more the larger the call. The pull and ll
// forms are not priced: choose_form (cost/choose.hpp) says why.
//
// Same on every rank: the stage count and the tiles per stage are the plan's, the largest any
// rank has (plan_stages), and the grids are the smallest of all ranks' (the transport gathers
// them at creation), so every rank prices the same numbers and takes the same form.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "relay/plan/plan.hpp"

namespace relay {

// automatic: the model's choice (choose_form); one_shot, stepped, pull, ll: always that form where
// it can run (choose_form). Every rank of a communicator must ask for the same form.
enum class call_form : unsigned char { automatic, one_shot, stepped, pull, ll };

// Fitted on one H200 under MPS, 2 processes, A=2 allreduce bf16, both forms forced side by side
// (bench/results/2026-12-01-h200-ipc-agreement): the stepped form's 3 extra launches cost 6.6 us
// more than the one-shot's 3 barriers eager (launch - signal = 2.2 us; 1.05 us in graph replay),
// and the measured crossover lies at 8 MB (one-shot faster at 4 MB, the forms even at 8 MB,
// stepped faster at 16 MB, eager and replayed), which `tile` = 0.3 us places there. The model has
// no device-memory term, so `tile` is not the per-block time of a tile at large sizes (2.2 us
// there): it is what puts the choice where it was measured.
struct form_costs {
  double launch = 3.7e-6;  // seconds between dependent launches issued back to back
  double signal = 1.5e-6;  // seconds of one device-side signal or barrier round trip
  double tile = 0.3e-6;    // seconds of one round of a stage's tiles, as the choice weighs it
};

// The stages of a call as every rank prices it: per stage the most tiles any rank has. Stage 0 is
// the entry (the copy in of the largest input), then one per plan phase with operations, then
// the exit (the copy out of the largest output). A tile is `tile_bytes` of an operation's
// destination; every operation takes at least one (as gpu::tiles_for).
inline std::vector<std::uint64_t> plan_stages(const plan& p, std::uint64_t tile_bytes) {
  auto tiles = [tile_bytes](std::uint64_t bytes) {
    return bytes == 0 ? 0 : (bytes + tile_bytes - 1) / tile_bytes;
  };
  const auto R = static_cast<std::size_t>(p.ranks());
  std::vector<std::uint64_t> stages;
  std::uint64_t in = 0, out = 0;
  for (std::size_t r = 0; r < R; ++r) {
    in = std::max(in, tiles(p.input_bytes[r]));
    out = std::max(out, tiles(p.output_bytes[r]));
  }
  stages.push_back(in);
  std::vector<std::uint64_t> per_rank(R);
  for (const plan_phase& ph : p.phases) {
    if (ph.size == 0) continue;
    std::fill(per_rank.begin(), per_rank.end(), 0);
    for (const plan_op& o : p.ops_of(ph)) {
      const auto issuer = static_cast<std::size_t>(o.issuer(p.sources));
      per_rank[issuer] += std::max<std::uint64_t>(1, tiles(o.count * p.dst_width(o)));
    }
    stages.push_back(*std::max_element(per_rank.begin(), per_rank.end()));
  }
  stages.push_back(out);
  return stages;
}

struct form_prices {
  double stepped = 0, one_shot = 0;
  bool one_shot_wins() const { return one_shot < stepped; }
};

// Both forms' predicted times for `stages`; `one_shot_grid` (G_1) and `stepped_grid` (G_s) at
// least 1.
inline form_prices price_forms(const std::vector<std::uint64_t>& stages, const form_costs& c,
                               std::uint64_t one_shot_grid, std::uint64_t stepped_grid) {
  auto rounds = [](std::uint64_t tiles, std::uint64_t grid) {
    return static_cast<double>((tiles + grid - 1) / grid);
  };
  const double S = static_cast<double>(stages.size());
  form_prices p;
  p.stepped = S * c.launch;
  p.one_shot = c.launch + (S - 1) * c.signal;
  for (std::uint64_t t : stages) {
    p.stepped += rounds(t, std::max<std::uint64_t>(1, stepped_grid)) * c.tile;
    p.one_shot += rounds(t, std::max<std::uint64_t>(1, one_shot_grid)) * c.tile;
  }
  return p;
}

}  // namespace relay

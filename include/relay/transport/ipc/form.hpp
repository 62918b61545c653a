// The ipc transport's choice of a call's form (ipc/transport.hpp):
//
//   stepped   one launch per stage: S launches, each stage's tiles spread over the step kernel's
//             resident grid (G_s blocks);
//   one-shot  one launch; its blocks meet at a grid barrier between stages (S - 1 barriers), and
//             its grid is at most one block per multiprocessor (every block must be resident), so
//             a stage of more tiles than that runs in rounds;
//   pull      (allreduce only) one launch whose blocks read the group's inputs in place and sum
//             them: two round trips whatever the plan (transport/ipc/pull.hpp).
//
// The pull form is not priced (choose_ipc_form): on a direct route it does the plan's work and
// no more, so it is taken wherever it applies and fits; on a relay route it is never taken by
// itself. Between the plan's two forms a model chooses:
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
// whatever the size; beyond, the one-shot's rounds cost more the larger the call.
//
// Same on every rank: the stage count and the tiles per stage are the plan's, the largest any
// rank has (plan_stages), and G_1 is the smallest multiprocessor count of all ranks (the transport
// all-gathers it at creation), so every rank prices the same numbers and takes the same form.
// (The forms publish the same marks, so a disagreement would still be correct, only slower.)
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "relay/plan/plan.hpp"

namespace relay {

// automatic: the model's choice (choose_ipc_form); one_shot, stepped, pull: always that form (the
// one-shot and pull forms within one_shot_tiles; pull where the call is an allreduce, else the
// one-shot form). Every rank must run with the same form (the transport checks at creation).
enum class ipc_form : unsigned char { automatic, one_shot, stepped, pull };

// Fitted on one H200 under MPS, 2 processes, A=2 allreduce bf16, both forms forced side by side
// (bench/results/2026-12-01-h200-ipc-agreement): the stepped form's 3 extra launches cost 6.6 us
// more than the one-shot's 3 barriers eager (launch - signal = 2.2 us; 1.05 us in graph replay),
// and the measured crossover lies at 8 MB (one-shot faster at 4 MB, the forms even at 8 MB,
// stepped faster at 16 MB, eager and replayed), which `tile` = 0.3 us places there. The model has
// no device-memory term, so `tile` is not the per-block time of a tile at large sizes (2.2 us
// there): it is what puts the choice where it was measured.
struct ipc_form_costs {
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

struct ipc_form_prices {
  double stepped = 0, one_shot = 0;
  bool one_shot_wins() const { return one_shot < stepped; }
};

// Both forms' predicted times for `stages`; `one_shot_grid` (G_1) and `stepped_grid` (G_s) at
// least 1.
inline ipc_form_prices price_ipc_forms(const std::vector<std::uint64_t>& stages,
                                       const ipc_form_costs& c, std::uint64_t one_shot_grid,
                                       std::uint64_t stepped_grid) {
  auto rounds = [](std::uint64_t tiles, std::uint64_t grid) {
    return static_cast<double>((tiles + grid - 1) / grid);
  };
  const double S = static_cast<double>(stages.size());
  ipc_form_prices p;
  p.stepped = S * c.launch;
  p.one_shot = c.launch + (S - 1) * c.signal;
  for (std::uint64_t t : stages) {
    p.stepped += rounds(t, std::max<std::uint64_t>(1, stepped_grid)) * c.tile;
    p.one_shot += rounds(t, std::max<std::uint64_t>(1, one_shot_grid)) * c.tile;
  }
  return p;
}

// Which form runs a call (ipc_options::form, RELAY_IPC_FORM). automatic, the model's choice:
//   - the pull form wherever it applies (an allreduce on the native wire, ipc/pull_plan.hpp) and
//     fits (one_shot_tiles), on a direct route. It reads each member's input once, in place, and
//     writes each output once, in one launch with two round trips; the plan's forms of the same
//     route do that work and stage it besides (copies in and out, more launches or barriers).
//     Measured on one H200 under MPS, replayed (bench/results/2026-12-02-h200-ipc-pull,
//     2026-12-04-h200-eager-agreement): faster than both plan forms at every size to its cap,
//     1 to 32 MB with 2 processes and A=2 (32 MB: pull 68 us, stepped 199), 4 KB to 16 MB with
//     8 processes and A=4 (16 MB: 239 against 296). It was priced once, as
//     launch + 2 signal + ceil(A * output tiles / G_p) * tile: rounds of at most 64 blocks priced
//     as the stepped form's rounds of 528, which put the switch to the stepped form at 1-4 MB
//     (A=4) and 16-32 MB (A=2), where the pull was 1.2-2.9x faster.
//   - never on a relay route: it would read from the group's members over their own links and
//     leave idle the helpers' links the route was chosen for (the plan's forms carry the route).
//     (RELAY_IPC_FORM=pull forces it on any route.)
//   - otherwise the one-shot form where it fits and the model prices it below the stepped one.
// one_shot, stepped, pull: that form (pull falls back to the one-shot form where it does not
// apply, and both to the stepped form where they do not fit).
struct ipc_form_choice {
  bool pull = false;      // the pull kernel runs the call
  bool one_shot = false;  // one launch (the pull's, or the plan's one-shot kernel)
};
inline ipc_form_choice choose_ipc_form(ipc_form form, bool one_shot_fits, bool pull_fits,
                                       bool direct_route, const ipc_form_prices& prices) {
  ipc_form_choice c;
  switch (form) {
    case ipc_form::automatic:
      c.pull = pull_fits && direct_route;
      c.one_shot = c.pull || (one_shot_fits && prices.one_shot_wins());
      break;
    case ipc_form::pull:
      c.pull = pull_fits;
      c.one_shot = one_shot_fits;
      break;
    case ipc_form::one_shot: c.one_shot = one_shot_fits; break;
    case ipc_form::stepped: break;
  }
  return c;
}

// One rank's device as the ipc transport sizes its grids: its multiprocessors, the fewest blocks
// any form of the ipc kernels keeps resident at once, and where it sits (its PCI address: ranks
// that show the same one share the device).
struct ipc_device {
  std::int64_t sms = 1, resident = 1;
  std::array<char, 32> place{};
  // The options that choose a call's form (ipc_options: form, one_shot_tiles, costs): ranks that
  // chose differently would wait on each other's marks until the timeout, so creation refuses
  // unequal ones.
  std::int64_t form = 0, one_shot_tiles = 0;
  double launch = 0, signal = 0, tile = 0;
  // The ranks of the whole job that drive this device, where the rank knows of more than this
  // communicator's (ipc_options::device_share: a split communicator's parent's count). The
  // grids divide the device among these, so that communicators split from one job and sharing a
  // device leave room for each other's kernels.
  std::int64_t share_at_least = 1;
  bool same_choice(const ipc_device& o) const {
    return form == o.form && one_shot_tiles == o.one_shot_tiles && launch == o.launch &&
           signal == o.signal && tile == o.tile;
  }
};

// The grids of both forms. Ranks that share a device divide it: a rank's kernel that spins on a
// peer's signal while it fills the device would leave no room for the kernel of that peer (under
// MPS, where kernels of several processes run side by side, it waits forever), so each rank's
// grid is at most its share of the resident blocks, and every block of every rank's kernel fits
// at once. one_shot, stepped: this rank's launch grids (the one-shot form's within one block per
// multiprocessor, its blocks must all be resident); priced_*: the smallest of all ranks', which
// every rank prices the forms with.
struct ipc_grids {
  int share = 1;    // ranks of this communicator on this rank's device, itself included
  int divided = 1;  // the ranks the device is divided among: share, or more (share_at_least)
  std::uint64_t one_shot = 1, stepped = 1, priced_one_shot = 1, priced_stepped = 1;
};
inline ipc_grids ipc_grids_of(std::span<const ipc_device> all, int me) {
  auto share_of = [&](const ipc_device& d) {
    return static_cast<std::int64_t>(std::count_if(
        all.begin(), all.end(), [&](const ipc_device& x) { return x.place == d.place; }));
  };
  auto divided_of = [&](const ipc_device& d) {
    return std::max<std::int64_t>(share_of(d), d.share_at_least);
  };
  auto part = [](std::int64_t blocks, std::int64_t share) {
    return static_cast<std::uint64_t>(
        std::max<std::int64_t>(1, blocks / std::max<std::int64_t>(1, share)));
  };
  ipc_grids g;
  const ipc_device& mine = all[static_cast<std::size_t>(me)];
  g.share = static_cast<int>(share_of(mine));
  g.divided = static_cast<int>(divided_of(mine));
  g.one_shot = part(mine.sms, g.divided);
  g.stepped = part(mine.resident, g.divided);
  g.priced_one_shot = g.one_shot;
  g.priced_stepped = g.stepped;
  for (const ipc_device& d : all) {
    g.priced_one_shot = std::min(g.priced_one_shot, part(d.sms, divided_of(d)));
    g.priced_stepped = std::min(g.priced_stepped, part(d.resident, divided_of(d)));
  }
  return g;
}

}  // namespace relay

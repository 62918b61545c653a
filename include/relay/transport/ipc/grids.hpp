// The ipc transport's grids (ipc/transport.hpp): how many blocks each form of its kernels may
// launch on this rank's device, from what every rank of the communicator says of its own device
// at creation (device_info). Host-only, so that the rule is unit-tested without a device.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace relay::ipc {

// One rank's device as the ipc transport sizes its grids: its multiprocessors, the fewest blocks
// any form of the ipc kernels keeps resident at once, and where it sits (its PCI address: ranks
// that show the same one share the device).
struct device_info {
  std::int64_t sms = 1, resident = 1;
  std::array<char, 32> place{};
  // The options that choose a call's form (ipc::options: form, one_shot_tiles, costs): ranks that
  // chose differently would wait on each other's marks until the timeout, so creation refuses
  // unequal ones.
  std::int64_t form = 0, one_shot_tiles = 0;
  double launch = 0, signal = 0, tile = 0;
  // The ranks of the whole job that drive this device, where the rank knows of more than this
  // communicator's (ipc::options::device_share: a split communicator's parent's count). The
  // grids divide the device among these, so that communicators split from one job and sharing a
  // device leave room for each other's kernels.
  std::int64_t share_at_least = 1;
  bool same_choice(const device_info& o) const {
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
struct grids {
  int share = 1;    // ranks of this communicator on this rank's device, itself included
  int divided = 1;  // the ranks the device is divided among: share, or more (share_at_least)
  std::uint64_t one_shot = 1, stepped = 1, priced_one_shot = 1, priced_stepped = 1;
};
inline grids grids_of(std::span<const device_info> all, int me) {
  auto share_of = [&](const device_info& d) {
    return static_cast<std::int64_t>(std::count_if(
        all.begin(), all.end(), [&](const device_info& x) { return x.place == d.place; }));
  };
  auto divided_of = [&](const device_info& d) {
    return std::max<std::int64_t>(share_of(d), d.share_at_least);
  };
  auto part = [](std::int64_t blocks, std::int64_t share) {
    return static_cast<std::uint64_t>(
        std::max<std::int64_t>(1, blocks / std::max<std::int64_t>(1, share)));
  };
  grids g;
  const device_info& mine = all[static_cast<std::size_t>(me)];
  g.share = static_cast<int>(share_of(mine));
  g.divided = static_cast<int>(divided_of(mine));
  g.one_shot = part(mine.sms, g.divided);
  g.stepped = part(mine.resident, g.divided);
  g.priced_one_shot = g.one_shot;
  g.priced_stepped = g.stepped;
  for (const device_info& d : all) {
    g.priced_one_shot = std::min(g.priced_one_shot, part(d.sms, divided_of(d)));
    g.priced_stepped = std::min(g.priced_stepped, part(d.resident, divided_of(d)));
  }
  return g;
}

}  // namespace relay::ipc

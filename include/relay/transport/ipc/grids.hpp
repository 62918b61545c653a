// The ipc transport's grids (ipc/transport.hpp): how many blocks each form of its kernels may
// launch on this rank's device, from what every rank of the communicator says of its own device
// at creation (device_info). Host-only but for the reading of this rank's device and the
// exchange (describe_device, gather_grids), so that the rules are unit-tested without a device.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "relay/bootstrap/exchange.hpp"
#include "relay/core/status.hpp"

#if defined(__CUDACC__) || defined(__HIPCC__)
#include "relay/gpu/handles.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc/launch.hpp"
#endif

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
  // Mesh emulation's link rate (ipc::options::emulate_mesh, bytes per second; 0: off): ranks that
  // differ would pace one link at two rates and choose forms differently, so creation refuses them.
  std::uint64_t emulate_mesh = 0;
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
  int ranks_on_device = 1;  // of this communicator, on this rank's device, itself included
  int device_share = 1;  // the ranks the device is divided among: those, or more (share_at_least)
  std::uint64_t one_shot = 1, stepped = 1, priced_one_shot = 1, priced_stepped = 1;
};
inline grids grids_of(std::span<const device_info> all, int me) {
  auto ranks_on_device_of = [&](const device_info& d) {
    return static_cast<std::int64_t>(std::count_if(
        all.begin(), all.end(), [&](const device_info& x) { return x.place == d.place; }));
  };
  auto device_share_of = [&](const device_info& d) {
    return std::max<std::int64_t>(ranks_on_device_of(d), d.share_at_least);
  };
  auto part = [](std::int64_t blocks, std::int64_t share) {
    return static_cast<std::uint64_t>(
        std::max<std::int64_t>(1, blocks / std::max<std::int64_t>(1, share)));
  };
  grids g;
  const device_info& mine = all[static_cast<std::size_t>(me)];
  g.ranks_on_device = static_cast<int>(ranks_on_device_of(mine));
  g.device_share = static_cast<int>(device_share_of(mine));
  g.one_shot = part(mine.sms, g.device_share);
  g.stepped = part(mine.resident, g.device_share);
  g.priced_one_shot = g.one_shot;
  g.priced_stepped = g.stepped;
  for (const device_info& d : all) {
    g.priced_one_shot = std::min(g.priced_one_shot, part(d.sms, device_share_of(d)));
    g.priced_stepped = std::min(g.priced_stepped, part(d.resident, device_share_of(d)));
  }
  return g;
}

// A link rate of mesh emulation as the errors name it: "12 GB/s", or "none" for 0.
inline std::string mesh_rate_text(std::uint64_t bytes_per_second) {
  if (bytes_per_second == 0) return "none";
  std::string t = std::to_string(static_cast<double>(bytes_per_second) / 1e9);
  t.erase(t.find_last_not_of('0') + 1);  // std::to_string gives 6 decimals: "12.500000"
  if (t.back() == '.') t.pop_back();
  return t + " GB/s";
}

// The grids of rank `me` (grids_of), where every rank chose its forms with the same options and
// emulates the same mesh: ranks that chose differently would wait on each other's marks until the
// timeout, so the first rank whose options differ from this one's is named instead.
inline status agree_on_grids(std::span<const device_info> all, int me, grids& out) {
  const device_info& mine = all[static_cast<std::size_t>(me)];
  for (std::size_t q = 0; q < all.size(); ++q)
    if (all[q].emulate_mesh != mine.emulate_mesh)
      return {errc::invalid_argument,
              "rank " + std::to_string(q) + " emulates a mesh of " +
                  mesh_rate_text(all[q].emulate_mesh) + " but rank " + std::to_string(me) + " of " +
                  mesh_rate_text(mine.emulate_mesh) +
                  " (RELAY_IPC_EMULATE_MESH): every rank must set it alike"};
  for (std::size_t q = 0; q < all.size(); ++q)
    if (!all[q].same_choice(mine))
      return {errc::invalid_argument,
              "rank " + std::to_string(q) +
                  " chooses the ipc transport's forms with other options than rank " +
                  std::to_string(me) +
                  " (RELAY_IPC_FORM, RELAY_IPC_ONE_SHOT_TILES, RELAY_IPC_LAUNCH_US, "
                  "RELAY_IPC_SIGNAL_US, RELAY_IPC_TILE_US): every rank must set them alike"};
  out = grids_of(all, me);
  return {};
}

// Every rank's device_info (collective), then agree_on_grids.
inline status gather_grids(bootstrap& boot, const device_info& mine,
                           std::chrono::milliseconds timeout, grids& out) {
  std::vector<device_info> devices;
  if (status s = exchange(boot, mine, devices, timeout, "device description"); !s) return s;
  return agree_on_grids(devices, boot.rank(), out);
}

#if defined(__CUDACC__) || defined(__HIPCC__)

// `device` as the grids see it: its multiprocessors, the ipc kernels' fewest resident blocks
// (`paced`: the paced step kernel's too), its PCI address (the form options are the caller's to
// fill).
inline status describe_device(int device, device_info& out, bool paced) {
  int sms = 0, resident = 0;
  if (gpu::rt::error_t e = gpu::rt::sm_count(&sms, device); e != gpu::rt::success)
    return gpu::failure("counting the multiprocessors", device, e);
  if (gpu::rt::error_t e = fewest_resident_blocks(&resident, device, paced); e != gpu::rt::success)
    return gpu::failure("querying the ipc kernels' occupancy", device, e);
#if defined(RELAY_GPU_HIP)
  const gpu::rt::error_t placed = hipDeviceGetPCIBusId(out.place.data(), 31, device);
#else
  const gpu::rt::error_t placed = cudaDeviceGetPCIBusId(out.place.data(), 31, device);
#endif
  if (placed != gpu::rt::success)
    return gpu::failure("reading the device's PCI address", device, placed);
  out.sms = sms;
  out.resident = resident;
  return {};
}

#endif

}  // namespace relay::ipc

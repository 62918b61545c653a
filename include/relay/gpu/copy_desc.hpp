// A copy as the GPU kernels see it (copy_desc), and how one is cut: its unit width, unaligned ends
// and tiles. Plain data and host functions, no GPU runtime: the batched copy kernel
// (gpu/kernels.hpp), the paced copy of mesh emulation (exec/gpu/paced_copy.hpp) and the host-tested
// pacing plan (exec/gpu/pacing.hpp) share it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "relay/core/config.hpp"

namespace relay::gpu {

inline constexpr int default_block = 256;
inline constexpr int default_unroll = 4;

// One copy of `head + units * width + tail` bytes. The head and tail (each < width bytes) are the
// unaligned ends, copied byte by byte by the operation's first tile.
struct copy_desc {
  const unsigned char* src = nullptr;
  unsigned char* dst = nullptr;
  std::uint64_t units = 0;
  std::uint64_t first_tile = 0;
  std::uint32_t head = 0, tail = 0;
  std::uint32_t width = 1;  // 16, 8, 4, 2 or 1 bytes per unit
};

RELAY_HOST_DEVICE constexpr std::uint64_t tiles_for(std::uint64_t units, std::uint64_t tile_units) {
  return units == 0 ? 1 : (units + tile_units - 1) / tile_units;  // >= 1: the ends need a tile
}

// Sets first_tile of each descriptor (copy_desc or reduce_desc: tiles of `tile_units` units);
// returns the total tile count.
template <class Desc>
std::uint64_t assign_tiles(Desc* descs, std::size_t n, std::uint64_t tile_units) {
  std::uint64_t t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    descs[i].first_tile = t;
    t += tiles_for(descs[i].units, tile_units);
  }
  return t;
}

// The widest word both ends can move in after a common head. Returns the descriptor; the caller
// sets first_tile (see assign_tiles). On the device too: the ipc kernels cut the runs of a piece
// of a call there (transport/ipc/stage.hpp, user_runs).
RELAY_HOST_DEVICE inline copy_desc make_copy(const void* src, void* dst, std::uint64_t bytes) {
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  std::uint32_t w = 16;
  while (w > 1 && (s - d) % w != 0)
    w /= 2;
  std::uint64_t head = (w - s % w) % w;
  if (head > bytes) head = bytes;
  copy_desc c;
  c.src = static_cast<const unsigned char*>(src);
  c.dst = static_cast<unsigned char*>(dst);
  c.width = w;
  c.head = static_cast<std::uint32_t>(head);
  c.units = (bytes - head) / w;
  c.tail = static_cast<std::uint32_t>(bytes - head - c.units * w);
  return c;
}

}  // namespace relay::gpu

// The fp8 wire's ends as the batched kernels see them (gpu/fp8_kernels.hpp): a descriptor per
// quantize or dequantize, and a list of them, one launch. Plain data and host functions, no GPU
// runtime; the GPU executor groups a lane's ends into lists (exec/gpu/lowering.hpp, batch_fp8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "relay/core/config.hpp"
#include "relay/core/fp8_block.hpp"
#include "relay/gpu/copy_desc.hpp"

namespace relay::gpu {

inline constexpr int fp8_block_threads = 256;
inline constexpr int fp8_unroll = 4;

// The fp8 blocks (fp8_block_elements, 128 elements) one thread block of the fp8 kernels handles
// for elements of `bytes` bytes: a block is 128 / (16 / bytes) lanes of one 16-byte access each
// (32 for float, one warp; 16 for 16-bit types), so 256 threads hold 256 / that blocks, Unroll
// times over (float: 32 blocks, 4096 elements; 16-bit: 64, 8192).
RELAY_HOST_DEVICE constexpr std::uint64_t fp8_tile_blocks(std::size_t bytes,
                                                          int unroll = fp8_unroll) {
  const auto lanes = static_cast<std::uint64_t>(fp8_block_elements / (16 / bytes));
  return static_cast<std::uint64_t>(fp8_block_threads) / lanes * static_cast<std::uint64_t>(unroll);
}

// One end of an fp8 copy: quantize `count` elements at `src` into the wire image at `dst`, or
// dequantize the image at `src` into `count` elements at `dst`. Its tiles are the list's
// first_tile onwards (assign_fp8_tiles).
struct fp8_desc {
  const void* src = nullptr;
  void* dst = nullptr;
  std::uint64_t count = 0;
  std::uint64_t first_tile = 0;
};

// The ends of one element width: one launch.
struct fp8_batch {
  bool wide = false;  // the elements are floats, else the plan's 16-bit type
  std::vector<fp8_desc> descs;
  std::uint64_t tiles = 0;  // the list's total
};

// Sets first_tile of each descriptor for elements of `bytes` bytes; returns the total tile count.
// Every end takes at least one tile, as tiles_for gives (an empty one writes nothing).
inline std::uint64_t assign_fp8_tiles(std::span<fp8_desc> descs, std::size_t bytes) {
  std::uint64_t t = 0;
  for (fp8_desc& d : descs) {
    d.first_tile = t;
    t += tiles_for(fp8_blocks(d.count), fp8_tile_blocks(bytes));
  }
  return t;
}

}  // namespace relay::gpu

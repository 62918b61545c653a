// Mesh emulation in the GPU executor (exec/gpu/pacing.hpp) on the CPU: a lane's copies made into
// one paced launch. The link clock's arithmetic is tests/unit/gpu/test_link_pacing.cpp's. Every
// expected number is worked out by hand in the comments.
#include "relay/exec/gpu/pacing.hpp"

#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

using namespace relay;

namespace {

constexpr std::uint64_t gbps(std::uint64_t g) {
  return g * 1'000'000'000ull;
}

// A copy between two fake addresses: the paced plan only computes with them.
gpu::lowered_copy copy_of(std::uintptr_t src, std::uintptr_t dst, std::uint64_t bytes, int src_rank,
                          int dst_rank) {
  gpu::lowered_copy c;
  c.src = reinterpret_cast<const void*>(src);
  c.dst = reinterpret_cast<void*>(dst);
  c.bytes = bytes;
  c.src_rank = src_rank;
  c.dst_rank = dst_rank;
  return c;
}

}  // namespace

TEST_CASE("pacing: a lane's copies as one paced launch", "[gpu][pacing]") {
  // Four ranks, links of 12 GB/s (2 blocks per link). Addresses are 16-byte aligned, so every
  // copy moves 16-byte units, 4096 a tile (64 KiB).
  const std::vector<gpu::lowered_copy> copies{
      copy_of(0x100000, 0x200000, 1 << 20, 0, 1),         // 16 tiles: 2 blocks, link 0*4+1
      copy_of(0x300000, 0x400000, 100, 0, 1),             // 6 units + 4 bytes: 1 tile, 1 block
      copy_of(0x500000, 0x600000, (1 << 20) + 16, 2, 2),  // rank-local, 65537 units: 17 tiles
      copy_of(0x700000, 0x800000, 3 << 20, 3, 0),         // 48 tiles: 2 blocks, link 3*4+0
  };
  const gpu::paced_launch l = gpu::plan_paced(copies, 4, gbps(12));
  REQUIRE(l.entries.size() == 4);
  REQUIRE(l.copies.size() == 4);
  // first_block, blocks, link, desc; the copies over links first, in their order, then the
  // rank-local one (blocks start in grid order: the links must not wait behind it).
  CHECK(l.entries[0] == gpu::paced_entry{0, 2, 1, 0});
  // The same link as the first: its own block, the same clock.
  CHECK(l.entries[1] == gpu::paced_entry{2, 1, 1, 1});
  CHECK(l.entries[2] == gpu::paced_entry{3, 2, 12, 2});
  // Rank-local: not paced, a block per tile (17, under local_copy_blocks), last.
  CHECK(l.entries[3] == gpu::paced_entry{5, 17, gpu::no_link, 3});
  CHECK(l.grid == 22);
  // The copies as the batched kernel cuts them (make_copy), in the entries' order.
  CHECK(l.copies[0].src == reinterpret_cast<const unsigned char*>(0x100000));
  CHECK(l.copies[0].dst == reinterpret_cast<unsigned char*>(0x200000));
  CHECK(l.copies[0].units == 65536);
  CHECK(l.copies[1].width == 16);
  CHECK(l.copies[1].units == 6);
  CHECK(l.copies[1].tail == 4);
  CHECK(l.copies[2].src == reinterpret_cast<const unsigned char*>(0x700000));
  CHECK(l.copies[3].units == 65537);

  // A large rank-local copy gets local_copy_blocks (256) blocks, a paced one still 2; listed
  // first, it still comes after the link's.
  const std::vector<gpu::lowered_copy> big{copy_of(0x100000, 0x40000000, 1 << 30, 5, 5),
                                           copy_of(0x100000, 0x80000000, 1 << 30, 5, 6)};
  const gpu::paced_launch b = gpu::plan_paced(big, 8, gbps(12));
  CHECK(b.entries[0] == gpu::paced_entry{0, 2, 5 * 8 + 6, 0});
  CHECK(b.entries[1] == gpu::paced_entry{2, 256, gpu::no_link, 1});
  CHECK(b.copies[1].dst == reinterpret_cast<unsigned char*>(0x40000000));
  CHECK(b.grid == 258);

  // No copies: an empty launch (the program builds none).
  CHECK(gpu::plan_paced({}, 4, gbps(12)).grid == 0);
}

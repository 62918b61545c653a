// The batched kernels against the host arithmetic of core/reduction.hpp, bit for bit: every
// dtype, 1 to 16 inputs, AVG and SUM, aligned, equally misaligned (vector body with scalar ends)
// and differently misaligned (scalar path) operands, in one launch each, on poisoned output
// arenas whose every byte is compared (written where it should be, untouched elsewhere).
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "gpu_support.hpp"
#include "relay/gpu/kernels.hpp"

using namespace relay;
using relay::test::device_buffer;
using relay::test::poison;

namespace {

constexpr std::uint64_t tile_units = gpu::default_block * gpu::default_unroll;

template <class Desc, class Kernel>
void launch_list(Kernel kernel, std::vector<Desc>& descs, unsigned max_grid) {
  const std::uint64_t tiles = gpu::assign_tiles(descs.data(), descs.size(), tile_units);
  device_buffer list(descs.size() * sizeof(Desc));
  RELAY_GPU_REQUIRE(gpu::rt::memcpy(list.data(), descs.data(), list.bytes()));
  const auto grid = static_cast<unsigned>(std::min<std::uint64_t>(tiles, max_grid));
  RELAY_GPU_REQUIRE(gpu::rt::launch(kernel, grid, gpu::default_block, nullptr,
                                    reinterpret_cast<const Desc*>(list.data()),
                                    static_cast<std::uint32_t>(descs.size()), tiles));
  RELAY_GPU_REQUIRE(gpu::rt::device_synchronize());
}

unsigned resident(auto kernel) {
  int blocks = 0;
  RELAY_GPU_REQUIRE(gpu::resident_blocks(&blocks, kernel, gpu::default_block, 0));
  return static_cast<unsigned>(blocks);
}

}  // namespace

TEST_CASE("make_copy picks the widest common word and splits off the unaligned ends",
          "[gpu][kernels]") {
  auto at = [](std::uintptr_t a) { return reinterpret_cast<unsigned char*>(a); };
  gpu::copy_desc c = gpu::make_copy(at(0x1000), at(0x2000), 100);
  CHECK((c.width == 16 && c.head == 0 && c.units == 6 && c.tail == 4));
  c = gpu::make_copy(at(0x1001), at(0x2001), 100);  // same misalignment: 15 bytes, then vectors
  CHECK((c.width == 16 && c.head == 15 && c.units == 5 && c.tail == 5));
  c = gpu::make_copy(at(0x1001), at(0x2003), 100);  // differ by 2 bytes mod 16: 2-byte words
  CHECK((c.width == 2 && c.head == 1 && c.units == 49 && c.tail == 1));
  c = gpu::make_copy(at(0x1008), at(0x2000), 100);
  CHECK((c.width == 8 && c.head == 0 && c.units == 12 && c.tail == 4));
  c = gpu::make_copy(at(0x1000), at(0x2001), 3);
  CHECK((c.width == 1 && c.head == 0 && c.units == 3 && c.tail == 0));
  c = gpu::make_copy(at(0x100f), at(0x200f), 1);  // shorter than its head
  CHECK((c.width == 16 && c.head == 1 && c.units == 0 && c.tail == 0));
}

TEST_CASE("batched copy: many copies of any size and alignment in one launch", "[gpu][kernels]") {
  const std::uint64_t seed = 20241101;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const std::size_t src_bytes = 8 << 20;
  std::vector<unsigned char> src_host(src_bytes);
  for (auto& b : src_host)
    b = static_cast<unsigned char>(rng());
  device_buffer src(src_bytes);
  src.upload(src_host);

  // Sizes from 1 byte to a few MiB; every source and destination offset modulo 16 occurs.
  struct piece {
    std::size_t src, dst, bytes;
  };
  std::vector<piece> pieces;
  std::size_t dst_bytes = 0;
  for (int i = 0; i < 300; ++i) {
    const int kind = i % 10;
    const std::size_t bytes = kind < 5   ? 1 + rng() % 64
                              : kind < 9 ? 1 + rng() % 70000
                                         : (1u << 20) + rng() % (3u << 20);
    const std::size_t s = rng() % (src_bytes - bytes);
    dst_bytes += rng() % 40;  // a gap that must stay poisoned
    pieces.push_back({s, dst_bytes, bytes});
    dst_bytes += bytes;
  }
  std::vector<unsigned char> want(dst_bytes, poison);
  for (const piece& p : pieces)
    std::copy_n(src_host.begin() + static_cast<std::ptrdiff_t>(p.src), p.bytes,
                want.begin() + static_cast<std::ptrdiff_t>(p.dst));

  for (unsigned grid : {resident(gpu::batched_copy_kernel<>), 1u, 7u}) {
    INFO("grid of at most " << grid << " blocks");
    device_buffer dst(dst_bytes);
    dst.upload(std::vector<unsigned char>(dst_bytes, poison));
    std::vector<gpu::copy_desc> descs;
    for (const piece& p : pieces)
      descs.push_back(gpu::make_copy(src.data() + p.src, dst.data() + p.dst, p.bytes));
    launch_list(gpu::batched_copy_kernel<>, descs, grid);
    const std::vector<unsigned char> got = dst.download();
    CHECK(test::first_difference(got, want, 1) == -1);
  }
}

TEST_CASE("batched reduce equals reduce_element bit for bit", "[gpu][kernels]") {
  const std::uint64_t seed = 77;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr std::size_t span = 40000;  // elements per source slice
  for (dtype t : all_dtypes) {
    INFO("dtype " << name(t));
    const auto es = static_cast<std::size_t>(size_of(t));
    // 16 source slices of random values.
    std::vector<unsigned char> src_host = test::random_elements(t, 16 * span, rng);
    device_buffer src(src_host.size());
    src.upload(src_host);

    struct op {
      int k, divisor;
      std::size_t count, dst;
      std::size_t src[16];
    };
    std::vector<op> ops;
    std::size_t dst_elems = 0;
    for (int k : {1, 2, 3, 8, 16})
      for (std::size_t count : {std::size_t{1}, std::size_t{5}, std::size_t{129}, std::size_t{4099},
                                std::size_t{33333}})
        for (int align = 0; align < 3; ++align)  // aligned, same misalignment, mixed
          for (int divisor : {1, 3}) {
            op o{};
            o.k = k;
            o.divisor = divisor;
            o.count = count;
            const std::size_t shift = align == 0 ? 0 : 1;
            dst_elems += 1 + rng() % 5;  // a gap
            dst_elems = (dst_elems + 15) / 16 * 16 + shift;
            o.dst = dst_elems;
            dst_elems += count;
            for (int s = 0; s < k; ++s) {
              const std::size_t base =
                  static_cast<std::size_t>(s) * span + 16 * (rng() % ((span - count - 2) / 16));
              o.src[s] = base + shift + (align == 2 && s == 1 ? 1 : 0);
            }
            ops.push_back(o);
          }
    dst_elems += 8;

    // The reference: poison, then reduce_element over the host copy of the sources.
    std::vector<unsigned char> want(dst_elems * es, poison);
    visit_dtype(t, [&](auto x) {
      using T = decltype(x);
      const T* base = reinterpret_cast<const T*>(src_host.data());
      for (const op& o : ops) {
        const T* ptrs[16];
        for (int s = 0; s < o.k; ++s)
          ptrs[s] = base + o.src[s];
        for (std::size_t i = 0; i < o.count; ++i) {
          const T v = reduce_element<T>(ptrs, o.k, i, o.divisor);
          std::memcpy(want.data() + (o.dst + i) * es, &v, es);
        }
      }
    });

    visit_dtype(t, [&](auto x) {
      using T = decltype(x);
      for (unsigned grid : {resident(gpu::batched_reduce_kernel<T>), 5u}) {
        INFO("grid of at most " << grid << " blocks");
        device_buffer dst(dst_elems * es);
        dst.upload(std::vector<unsigned char>(dst_elems * es, poison));
        std::vector<gpu::reduce_desc> descs;
        for (const op& o : ops) {
          const void* ptrs[16];
          for (int s = 0; s < o.k; ++s)
            ptrs[s] = src.data() + o.src[s] * es;
          descs.push_back(gpu::make_reduce(dst.data() + o.dst * es, ptrs, o.k, o.count,
                                           static_cast<int>(es), o.divisor));
        }
        // The three alignment cases really take the paths they are meant to.
        CHECK(descs[0].vector == 1);   // k=1, aligned
        CHECK(descs[2].vector == 1);   // k=1, all shifted by one element
        CHECK(descs[34].vector == 0);  // k=2, the second source shifted once more
        launch_list(gpu::batched_reduce_kernel<T>, descs, grid);
        const std::vector<unsigned char> got = dst.download();
        const long long bad = test::first_difference(got, want, static_cast<int>(es));
        INFO("first wrong element " << bad);
        CHECK(bad == -1);
      }
    });
  }
}

TEST_CASE("batched reduce in place: the destination is one of the sources", "[gpu][kernels]") {
  std::mt19937_64 rng(5);
  const std::size_t n = 100001;
  std::vector<unsigned char> a = test::random_elements(dtype::bfloat16, n, rng);
  std::vector<unsigned char> b = test::random_elements(dtype::bfloat16, n, rng);
  std::vector<unsigned char> want(a.size());
  for (std::size_t i = 0; i < n; ++i) {
    bfloat16 x, y;
    std::memcpy(&x, a.data() + 2 * i, 2);
    std::memcpy(&y, b.data() + 2 * i, 2);
    const bfloat16* p[2] = {&x, &y};
    const bfloat16 v = reduce_element<bfloat16>(p, 2, 0, 2);
    std::memcpy(want.data() + 2 * i, &v, 2);
  }
  device_buffer da(a.size()), db(b.size());
  da.upload(a);
  db.upload(b);
  const void* srcs[2] = {da.data(), db.data()};
  std::vector<gpu::reduce_desc> descs{gpu::make_reduce(da.data(), srcs, 2, n, 2, 2)};
  launch_list(gpu::batched_reduce_kernel<bfloat16>, descs,
              resident(gpu::batched_reduce_kernel<bfloat16>));
  CHECK(test::first_difference(da.download(), want, 2) == -1);
}

TEST_CASE("batched reduce with partial operands equals reduce_element_mixed bit for bit",
          "[gpu][kernels]") {
  // Operands stored as accumulators (fp32 partial sums of 16-bit types; for float the same
  // width) mixed with element operands, the destination either: aligned (the vector body),
  // every operand shifted by one element of its own width (vector body with scalar ends), and
  // one source shifted once more (the element-by-element path).
  const std::uint64_t seed = 78;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  constexpr std::size_t span = 40000;  // elements per source slice
  for (dtype t : {dtype::bfloat16, dtype::float16, dtype::float32}) {
    INFO("dtype " << name(t));
    const std::size_t es = static_cast<std::size_t>(size_of(t)), as = es == 2 ? 4 : es;
    // 8 slices of elements, then 8 of accumulators (random floats), byte offsets below.
    const std::vector<unsigned char> elems = test::random_elements(t, 8 * span, rng);
    const std::vector<unsigned char> accs = test::random_elements(dtype::float32, 8 * span, rng);
    std::vector<unsigned char> src_host = elems;
    src_host.insert(src_host.end(), accs.begin(), accs.end());
    device_buffer src(src_host.size());
    src.upload(src_host);

    struct op {
      int k = 0, divisor = 1;
      std::uint32_t mask = 0;
      std::size_t count = 0, dst = 0;  // dst: a byte offset into the output arena
      std::size_t src[8] = {};         // byte offsets into src_host
      int path = 0;                    // 0 aligned, 1 shifted alike, 2 shifted apart
    };
    std::vector<op> ops;
    std::size_t arena = 0;
    for (int k : {1, 2, 3, 5})
      for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{9}, std::size_t{129},
                                std::size_t{4099}, std::size_t{33333}})
        for (int path = 0; path < 3; ++path) {
          op o{};
          o.k = k;
          o.count = count;
          o.path = path;
          o.divisor = rng() % 2 == 0 ? 1 : 3;
          o.mask = static_cast<std::uint32_t>(rng()) & ((1u << k) - 1u);
          if (rng() % 2 == 0) o.mask |= partial_dst_bit;
          if (o.mask == 0) o.mask = 1;  // at least one partial operand
          const std::size_t shift = path == 0 ? 0 : 1;
          const std::size_t dw = (o.mask & partial_dst_bit) != 0 ? as : es;
          arena = (arena + 64 + 15) / 16 * 16;
          o.dst = arena + shift * dw;
          arena = o.dst + count * dw;
          for (int s = 0; s < k; ++s) {
            const bool wide = ((o.mask >> s) & 1u) != 0;
            const std::size_t w = wide ? as : es;
            const std::size_t slice = static_cast<std::size_t>(s);
            const std::size_t first = wide ? elems.size() + slice * span * 4 : slice * span * es;
            const std::size_t at = 16 * (rng() % ((span - count - 2) / 16));
            o.src[s] = first + at * w + (shift + (path == 2 && s == k - 1 ? 1 : 0)) * w;
          }
          ops.push_back(o);
        }
    arena += 64;

    std::vector<unsigned char> want(arena, poison);
    visit_dtype(t, [&](auto x) {
      using T = decltype(x);
      if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16> ||
                    std::is_same_v<T, float>) {
        for (const op& o : ops) {
          const void* ptrs[8];
          for (int s = 0; s < o.k; ++s)
            ptrs[s] = src_host.data() + o.src[s];
          for (std::size_t i = 0; i < o.count; ++i)
            reduce_element_mixed<T>(want.data() + o.dst, ptrs, o.k, o.mask, i, o.divisor);
        }
        for (unsigned grid : {resident(gpu::batched_reduce_kernel<T>), 5u}) {
          INFO("grid of at most " << grid << " blocks");
          device_buffer dst(arena);
          dst.upload(std::vector<unsigned char>(arena, poison));
          std::vector<gpu::reduce_desc> descs;
          for (const op& o : ops) {
            const void* ptrs[8];
            for (int s = 0; s < o.k; ++s)
              ptrs[s] = src.data() + o.src[s];
            descs.push_back(gpu::make_reduce(dst.data() + o.dst, ptrs, o.k, o.count,
                                             static_cast<int>(es), o.divisor, o.mask));
            // Each alignment case takes the path it is meant to.
            INFO("op " << descs.size() - 1 << " path " << o.path << " k " << o.k);
            CHECK(descs.back().vector == (o.path == 2 ? 0 : 1));
          }
          launch_list(gpu::batched_reduce_kernel<T>, descs, grid);
          const long long bad = test::first_difference(dst.download(), want, 1);
          INFO("first wrong byte " << bad);
          CHECK(bad == -1);
        }
      }
    });
  }
}

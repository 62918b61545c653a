// The two kernels the GPU executor launches, written once for HIP and CUDA:
//
//   batched copy:  every copy of one phase on one stream, in one launch, from a device-side list
//                  (the spec's open lead: a helper's many small sends cost one launch, not many);
//   batched reduce: every reduction of one phase on one stream, in one launch: dst = the sum of
//                  k sources in the listed order, divided once when finalizing (AVG), with the
//                  arithmetic of core/reduction.hpp so that the bits equal the host executor's.
//
// Work is cut into tiles of `Block * Unroll` units (a unit is one 16-byte vector where every
// operand of an operation shares its misalignment, else one element or one narrower word). The
// blocks walk the tiles (the reduce kernel's grid is the resident blocks; the copy kernel's a
// block per tile, see copy_grid); a block finds its operation by binary search over the tiles'
// prefix sums, so one launch balances operations of any mix of sizes. Each thread keeps Unroll
// independent 16-byte loads in flight per source before it uses them.
//
// The descriptors are plain structs built on the host (make_copy in gpu/copy_desc.hpp, make_reduce
// and reduce_of in gpu/reduce_desc.hpp) and copied to the device once per prepared plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "relay/core/reduction.hpp"
#include "relay/gpu/copy_desc.hpp"
#include "relay/gpu/reduce_desc.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/gpu/vec16.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay::gpu {

// ---- host side: building descriptor lists -------------------------------------------------------

// The grid of a batched copy: a block per tile (up to 2^22 blocks, then the blocks walk the
// rest). On an H200 this beat a persistent grid of the resident blocks (the measurements:
// bench/results/gpu-kernels-h200.md).
inline unsigned copy_grid(std::uint64_t tiles) {
  constexpr std::uint64_t most = std::uint64_t{1} << 22;  // within HIP's 2^32 threads per grid
  return static_cast<unsigned>(tiles < most ? tiles : most);
}

// ---- device side --------------------------------------------------------------------------------

namespace detail {

// The descriptor whose tiles include tile t: the last one with first_tile <= t.
template <class Desc>
__device__ inline std::uint32_t find_desc(const Desc* d, std::uint32_t n, std::uint64_t t) {
  std::uint32_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    if (d[mid].first_tile <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The unit a copy of width W moves.
template <int W>
using word_t = std::conditional_t<
    W == 16, vec16,
    std::conditional_t<
        W == 8, std::uint64_t,
        std::conditional_t<W == 4, std::uint32_t,
                           std::conditional_t<W == 2, std::uint16_t, std::uint8_t>>>>;

// A streaming copy reads and writes each word once: on NVIDIA its 16-byte words go with the
// evict-first cache hint both ways. On an H200 the hints on loads and stores together speed up a
// batched copy (either one alone does not), but slow down a reduction that reads the copied data
// next, so the executor streams only plans without reductions (measured: docs/gpu.md). HIP has
// no 16-byte form of the hints: plain accesses there.
template <bool Streaming, class Word>
__device__ inline Word load_once(const Word* p) {
#if defined(RELAY_GPU_CUDA)
  if constexpr (Streaming && std::is_same_v<Word, vec16>) {
    const uint4 v = __ldcs(reinterpret_cast<const uint4*>(p));
    return vec16{{v.x, v.y, v.z, v.w}};
  }
#endif
  return *p;
}
template <bool Streaming, class Word>
__device__ inline void store_once(Word* p, const Word& v) {
#if defined(RELAY_GPU_CUDA)
  if constexpr (Streaming && std::is_same_v<Word, vec16>) {
    __stcs(reinterpret_cast<uint4*>(p), make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]));
    return;
  }
#endif
  *p = v;
}

template <int W, int Block, int Unroll, bool Streaming>
__device__ inline void copy_tile(const copy_desc& c, std::uint64_t tile) {
  using word = word_t<W>;
  const word* src = reinterpret_cast<const word*>(c.src + c.head);
  word* dst = reinterpret_cast<word*>(c.dst + c.head);
  constexpr std::uint64_t per_tile = static_cast<std::uint64_t>(Block) * Unroll;
  const std::uint64_t base = tile * per_tile + threadIdx.x;
  word v[Unroll] = {};
  if ((tile + 1) * per_tile <= c.units) {  // a whole tile: no bounds to test
#pragma unroll
    for (int u = 0; u < Unroll; ++u)
      v[u] = load_once<Streaming>(src + base + static_cast<std::uint64_t>(u) * Block);
#pragma unroll
    for (int u = 0; u < Unroll; ++u)
      store_once<Streaming>(dst + base + static_cast<std::uint64_t>(u) * Block, v[u]);
    return;
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Block;
    if (i < c.units) v[u] = load_once<Streaming>(src + i);
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Block;
    if (i < c.units) store_once<Streaming>(dst + i, v[u]);
  }
}

// E elements of T in one 16-byte vector.
template <class T>
struct pack {
  T v[16 / sizeof(T)];
};

}  // namespace detail

// Tile `tile` of one copy (its ends with tile 0). A device function so that other kernels (the
// ipc transport's step kernel) walk copies exactly as the batched kernel does.
template <int Block = default_block, int Unroll = default_unroll, bool Streaming = true>
__device__ inline void copy_desc_tile(const copy_desc& c, std::uint64_t tile) {
  switch (c.width) {
    case 16: detail::copy_tile<16, Block, Unroll, Streaming>(c, tile); break;
    case 8: detail::copy_tile<8, Block, Unroll, Streaming>(c, tile); break;
    case 4: detail::copy_tile<4, Block, Unroll, Streaming>(c, tile); break;
    case 2: detail::copy_tile<2, Block, Unroll, Streaming>(c, tile); break;
    default: detail::copy_tile<1, Block, Unroll, Streaming>(c, tile); break;
  }
  if (tile == 0) {
    if (threadIdx.x < c.head) c.dst[threadIdx.x] = c.src[threadIdx.x];
    const std::uint64_t tail = c.head + c.units * c.width;
    if (threadIdx.x < c.tail) c.dst[tail + threadIdx.x] = c.src[tail + threadIdx.x];
  }
}

// Tile t (0 .. the list's tiles - 1) of a copy list.
template <int Block = default_block, int Unroll = default_unroll, bool Streaming = true>
__device__ inline void copy_list_tile(const copy_desc* descs, std::uint32_t n, std::uint64_t t) {
  // By value: in registers, not reloaded after every store through the byte pointers.
  const copy_desc c = descs[detail::find_desc(descs, n, t)];
  copy_desc_tile<Block, Unroll, Streaming>(c, t - c.first_tile);
}

// Streaming: the evict-first hints above (for copies whose data no reduction reads next).
template <int Block = default_block, int Unroll = default_unroll, bool Streaming = true>
__global__ void __launch_bounds__(Block)
    batched_copy_kernel(const copy_desc* descs, std::uint32_t n, std::uint64_t tiles) {
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x)
    copy_list_tile<Block, Unroll, Streaming>(descs, n, t);
}

namespace detail {

// One element, one by one: the definition the vector path must agree with.
template <class T>
__device__ inline void reduce_one(const reduce_desc& r, std::uint64_t i) {
  using R = reduction_traits<T>;
  typename R::accumulator a = R::load(static_cast<const T*>(r.src[0])[i]);
  for (int s = 1; s < r.k; ++s)
    a = R::add(a, static_cast<const T*>(r.src[s])[i]);
  static_cast<T*>(r.dst)[i] = R::store(a, r.divisor);
}

template <class T, int Block, int Unroll>
__device__ inline void reduce_vector_tile(const reduce_desc& r, std::uint64_t tile) {
  using R = reduction_traits<T>;
  using A = typename R::accumulator;
  constexpr int E = 16 / sizeof(T);
  const std::uint64_t base = tile * static_cast<std::uint64_t>(Block * Unroll) + threadIdx.x;
  const std::size_t head_bytes = static_cast<std::size_t>(r.head) * sizeof(T);
  bool live[Unroll];
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    live[u] = base + static_cast<std::uint64_t>(u) * Block < r.units;

  A acc[Unroll][E];
  // Two sources' Unroll independent 16-byte loads each in flight before any is used: a pair's
  // sum (the common reduction: an input and what one peer sent) waits for memory once, not twice.
  vec16 v[2][Unroll] = {};
  auto load = [&](int s, vec16(&into)[Unroll]) {
    const vec16* p =
        reinterpret_cast<const vec16*>(static_cast<const char*>(r.src[s]) + head_bytes);
#pragma unroll
    for (int u = 0; u < Unroll; ++u)
      if (live[u]) into[u] = p[base + static_cast<std::uint64_t>(u) * Block];
  };
  auto add = [&](const vec16(&from)[Unroll]) {
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const pack<T> x = __builtin_bit_cast(pack<T>, from[u]);
#pragma unroll
      for (int e = 0; e < E; ++e)
        acc[u][e] = R::add(acc[u][e], x.v[e]);
    }
  };
  load(0, v[0]);
  if (r.k > 1) load(1, v[1]);
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const pack<T> x = __builtin_bit_cast(pack<T>, v[0][u]);
#pragma unroll
    for (int e = 0; e < E; ++e)
      acc[u][e] = R::load(x.v[e]);
  }
  if (r.k > 1) add(v[1]);
  for (int s = 2; s < r.k; s += 2) {  // in the listed order, as reduce_element adds
    load(s, v[0]);
    if (s + 1 < r.k) load(s + 1, v[1]);
    add(v[0]);
    if (s + 1 < r.k) add(v[1]);
  }
  vec16* out = reinterpret_cast<vec16*>(static_cast<char*>(r.dst) + head_bytes);
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    pack<T> y;
#pragma unroll
    for (int e = 0; e < E; ++e)
      y.v[e] = R::store(acc[u][e], r.divisor);
    if (live[u]) out[base + static_cast<std::uint64_t>(u) * Block] = __builtin_bit_cast(vec16, y);
  }
}

// A mixed reduction's vector body: groups of E = 16 / sizeof(T) elements, an element operand one
// 16-byte vector a group, an accumulator operand W = sizeof(A) / sizeof(T) of them; operand 0
// taken as it is (0 + x would turn -0 into +0), then reduce_element_mixed's adds in its order.
template <class T, int Block, int Unroll>
__device__ inline void reduce_mixed_vector_tile(const reduce_desc& r, std::uint64_t tile) {
  using R = reduction_traits<T>;
  using A = typename R::accumulator;
  constexpr int E = 16 / sizeof(T), EA = 16 / sizeof(A), W = sizeof(A) / sizeof(T);
  static_assert(W * sizeof(T) == sizeof(A) && (W == 1 || W == 2));
  const std::uint64_t base = tile * static_cast<std::uint64_t>(Block * Unroll) + threadIdx.x;
  bool live[Unroll];
#pragma unroll
  for (int u = 0; u < Unroll; ++u)
    live[u] = base + static_cast<std::uint64_t>(u) * Block < r.units;
  // Vector v of group g of an operand of `wide` (accumulator) or element width, from `head` on.
  auto at = [&](const void* p, bool wide, std::uint64_t g, int v) {
    const std::size_t width = wide ? sizeof(A) : sizeof(T);
    return reinterpret_cast<const vec16*>(static_cast<const char*>(p) + r.head * width) +
           g * (wide ? W : 1) + v;
  };
  A acc[Unroll][E];
  auto fold = [&](int s, auto first) {
    if ((r.partial >> s) & 1u) {
      vec16 v[Unroll][W] = {};
#pragma unroll
      for (int u = 0; u < Unroll; ++u)
        if (live[u])
#pragma unroll
          for (int w = 0; w < W; ++w)
            v[u][w] = *at(r.src[s], true, base + static_cast<std::uint64_t>(u) * Block, w);
#pragma unroll
      for (int u = 0; u < Unroll; ++u)
#pragma unroll
        for (int w = 0; w < W; ++w) {
          const pack<A> x = __builtin_bit_cast(pack<A>, v[u][w]);
#pragma unroll
          for (int e = 0; e < EA; ++e) {
            A& a = acc[u][w * EA + e];
            if constexpr (decltype(first)::value)
              a = x.v[e];
            else
              a = R::add_partial(a, x.v[e]);
          }
        }
    } else {
      vec16 v[Unroll] = {};
#pragma unroll
      for (int u = 0; u < Unroll; ++u)
        if (live[u]) v[u] = *at(r.src[s], false, base + static_cast<std::uint64_t>(u) * Block, 0);
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const pack<T> x = __builtin_bit_cast(pack<T>, v[u]);
#pragma unroll
        for (int e = 0; e < E; ++e) {
          A& a = acc[u][e];
          if constexpr (decltype(first)::value)
            a = R::load(x.v[e]);
          else
            a = R::add_partial(a, R::load(x.v[e]));
        }
      }
    }
  };
  fold(0, std::true_type{});
  for (int s = 1; s < r.k; ++s)
    fold(s, std::false_type{});
  const bool wide_out = (r.partial & partial_dst_bit) != 0;
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    if (!live[u]) continue;
    const std::uint64_t g = base + static_cast<std::uint64_t>(u) * Block;
    if (wide_out) {  // not final: unrounded, never divided
#pragma unroll
      for (int w = 0; w < W; ++w) {
        pack<A> y;
#pragma unroll
        for (int e = 0; e < EA; ++e)
          y.v[e] = acc[u][w * EA + e];
        *const_cast<vec16*>(at(r.dst, true, g, w)) = __builtin_bit_cast(vec16, y);
      }
    } else {
      pack<T> y;
#pragma unroll
      for (int e = 0; e < E; ++e)
        y.v[e] = R::store(acc[u][e], r.divisor);
      *const_cast<vec16*>(at(r.dst, false, g, 0)) = __builtin_bit_cast(vec16, y);
    }
  }
}

}  // namespace detail

// Tile `tile` of one reduction (its unaligned ends with tile 0). A device function so that other
// kernels (the ipc transport's, which moves a descriptor's operands per call) reduce exactly as
// the batched kernel does.
template <class T, int Block = default_block, int Unroll = default_unroll>
__device__ inline void reduce_desc_tile(const reduce_desc& r, std::uint64_t tile) {
  if (r.vector && r.partial != 0) {
    detail::reduce_mixed_vector_tile<T, Block, Unroll>(r, tile);
    if (tile == 0) {  // the ends outside whole groups, fewer than 16 elements each
      constexpr std::uint64_t E = 16 / sizeof(T);
      const std::uint64_t tail = r.head + r.units * E;
      if (threadIdx.x < r.head)
        reduce_element_mixed<T>(r.dst, r.src, r.k, r.partial, threadIdx.x, r.divisor);
      if (tail + threadIdx.x < r.count)
        reduce_element_mixed<T>(r.dst, r.src, r.k, r.partial, tail + threadIdx.x, r.divisor);
    }
  } else if (r.vector) {
    detail::reduce_vector_tile<T, Block, Unroll>(r, tile);
    if (tile == 0) {  // the unaligned ends, fewer than 16 bytes each
      constexpr std::uint64_t E = 16 / sizeof(T);
      const std::uint64_t tail = r.head + r.units * E;
      if (threadIdx.x < r.head) detail::reduce_one<T>(r, threadIdx.x);
      if (tail + threadIdx.x < r.count) detail::reduce_one<T>(r, tail + threadIdx.x);
    }
  } else if (r.partial != 0) {  // uniform per operation: no per-element test elsewhere
    const std::uint64_t base = tile * static_cast<std::uint64_t>(Block * Unroll) + threadIdx.x;
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Block;
      if (i < r.count) reduce_element_mixed<T>(r.dst, r.src, r.k, r.partial, i, r.divisor);
    }
  } else {
    const std::uint64_t base = tile * static_cast<std::uint64_t>(Block * Unroll) + threadIdx.x;
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t i = base + static_cast<std::uint64_t>(u) * Block;
      if (i < r.count) detail::reduce_one<T>(r, i);
    }
  }
}

// Tile t (0 .. the list's tiles - 1) of a reduction list.
template <class T, int Block = default_block, int Unroll = default_unroll>
__device__ inline void reduce_list_tile(const reduce_desc* descs, std::uint32_t n,
                                        std::uint64_t t) {
  const reduce_desc& r = descs[detail::find_desc(descs, n, t)];
  reduce_desc_tile<T, Block, Unroll>(r, t - r.first_tile);
}

template <class T, int Block = default_block, int Unroll = default_unroll>
__global__ void __launch_bounds__(Block)
    batched_reduce_kernel(const reduce_desc* descs, std::uint32_t n, std::uint64_t tiles) {
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x)
    reduce_list_tile<T, Block, Unroll>(descs, n, t);
}

// The largest grid worth launching for a kernel: every block resident at once.
template <class Kernel>
inline rt::error_t resident_blocks(int* blocks, Kernel k, int block, int device) {
  int sms = 0, per_sm = 0;
  rt::error_t e = rt::sm_count(&sms, device);
  if (e == rt::success) e = rt::max_active_blocks(&per_sm, k, block);
  *blocks = sms * (per_sm > 0 ? per_sm : 1);
  return e;
}

}  // namespace relay::gpu

// The fp8 wire's kernels (issue 12), written once for HIP and CUDA:
//
//   quantize:              T elements (float, float16, bfloat16; an fp32 partial sum is a float)
//                          -> a wire image: count fp8 codes, then a scale byte per 32 elements
//                          (core/fp8_block.hpp's layout, what the host executor's slots hold);
//   dequantize:            a wire image -> T, stored as fp8_store stores it (the host
//                          executor's bits);
//   dequantize-accumulate: dst = acc + the dequantized value, summed in fp32 and rounded once
//                          to T (a reduction's add of arrived data, without a pass through T).
//
// Both use core/fp8_block.hpp's arithmetic (fp8_block_exponent, fp8_from_float, fp8_value,
// fp8_store), so they produce the host's bits. A block of 32 elements is `32 / E` lanes, each
// holding E = 16 / sizeof(T) consecutive elements: one 16-byte load or store where the operands
// are 16-byte aligned (else E scalar accesses). The block's largest finite magnitude is a max over
// its lanes by xor shuffles inside the lane group (no shared memory, no barrier); the lanes of a
// group always run the same trip count, so every shuffle has all its lanes. Each thread keeps
// Unroll blocks' loads in flight before it computes.
//
// The GPU executor runs an fp8 copy as a quantize launch on the sender's lane, the image pushed
// by the batched copy (or a peer memcpy), and a dequantize launch on the receiver's lane
// (gpu/lowering.hpp, split_fp8_copy), one launch per copy end. examples/gpu_kernel_bench.cpp
// --fp8 measures the kernels against a device-to-device copy.
#pragma once

#include <cstdint>
#include <type_traits>

#include "relay/core/fp8_block.hpp"
#include "relay/gpu/runtime.hpp"

namespace relay::gpu {

inline constexpr int fp8_block_threads = 256;
inline constexpr int fp8_unroll = 4;

namespace detail {

template <class T>
__device__ inline float fp8_widen(T x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else
    return x.to_float();
}

// The largest of `v` over the Lanes lanes of this lane's group (xor masks below Lanes stay in
// the group, whose lanes are Lanes-aligned in the warp or wavefront).
template <int Lanes>
__device__ inline float fp8_group_max(float v) {
#if defined(RELAY_GPU_CUDA)
  const unsigned lane = threadIdx.x % 32u;
  const unsigned mask = (Lanes == 32 ? 0xffffffffu : ((1u << Lanes) - 1u))
                        << (lane & ~(Lanes - 1u));
#endif
  for (int m = Lanes / 2; m > 0; m /= 2) {
#if defined(RELAY_GPU_CUDA)
    const float other = __shfl_xor_sync(mask, v, m);
#else
    const float other = __shfl_xor(v, m);
#endif
    v = other > v ? other : v;
  }
  return v;
}

// 16 bytes moved as one vector, and what they hold: E elements of T, or E codes (bit-cast with
// __builtin_bit_cast: HIP 5.2 has no memcpy in device code).
struct alignas(16) fp8_vec16 {
  std::uint32_t w[4];
};
template <class T>
struct fp8_elements {
  T v[16 / sizeof(T)];
};
template <int E>
struct fp8_codes {
  unsigned char c[E];
};
template <int E>
using fp8_code_word = std::conditional_t<E == 8, std::uint64_t, std::uint32_t>;

}  // namespace detail

// `wire` receives fp8_wire_bytes(count) bytes: the codes, then the scales.
template <class T, int Unroll = fp8_unroll>
__global__ void fp8_quantize_kernel(const T* src, unsigned char* wire, std::uint64_t count,
                                    fp8_format f) {
  constexpr int E = 16 / static_cast<int>(sizeof(T)), Lanes = 32 / E;
  const std::uint64_t blocks = (count + 31) / 32;
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x / Lanes;  // groups in the grid
  const std::uint64_t thread = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::uint64_t group = thread / Lanes;
  const int sub = static_cast<int>(thread % Lanes);
  const bool vector_in = reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
  const bool vector_out = reinterpret_cast<std::uintptr_t>(wire) % 16 == 0;
  unsigned char* scales = wire + count;
  for (std::uint64_t b0 = group; b0 < blocks; b0 += stride * Unroll) {
    float x[Unroll][E];
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t first =
          (b0 + static_cast<std::uint64_t>(u) * stride) * 32 + static_cast<std::uint64_t>(sub) * E;
      if (vector_in && first + E <= count) {
        const auto t = __builtin_bit_cast(detail::fp8_elements<T>,
                                          *reinterpret_cast<const detail::fp8_vec16*>(src + first));
        for (int e = 0; e < E; ++e)
          x[u][e] = detail::fp8_widen(t.v[e]);
      } else {
        for (int e = 0; e < E; ++e)
          x[u][e] = first + e < count ? detail::fp8_widen(src[first + e]) : 0.0f;
      }
    }
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t b = b0 + static_cast<std::uint64_t>(u) * stride;
      float amax = 0;  // finite magnitudes only, as fp8_quantize_block
      for (int e = 0; e < E; ++e) {
        const float a = x[u][e] < 0 ? -x[u][e] : x[u][e];
        if (a <= 3.4028234663852886e38f && a > amax) amax = a;
      }
      amax = detail::fp8_group_max<Lanes>(amax);
      if (b >= blocks) continue;  // the group's lanes agree: the shuffles above had them all
      const int k = fp8_block_exponent(f, amax);
      const float down = relay::detail::exact_pow2(-k);
      const std::uint64_t first = b * 32 + static_cast<std::uint64_t>(sub) * E;
      detail::fp8_codes<E> codes;
      for (int e = 0; e < E; ++e) {
        const float a = x[u][e] < 0 ? -x[u][e] : x[u][e];
        codes.c[e] = a <= 3.4028234663852886e38f ? fp8_from_float(f, x[u][e] * down)
                                                 : relay::detail::fp8_nan_code(f);
      }
      if (vector_out && first + E <= count) {
        using word = detail::fp8_code_word<E>;
        *reinterpret_cast<word*>(wire + first) = __builtin_bit_cast(word, codes);
      } else {
        for (int e = 0; e < E; ++e)
          if (first + e < count) wire[first + e] = codes.c[e];
      }
      if (sub == 0) scales[b] = static_cast<unsigned char>(static_cast<std::int8_t>(k));
    }
  }
}

// dst[i] = the arrived value of code i (Accumulate: acc[i] + it, in fp32, rounded once).
template <class T, bool Accumulate, int Unroll = fp8_unroll>
__global__ void fp8_dequantize_kernel(const unsigned char* wire, std::uint64_t count, fp8_format f,
                                      T* dst, const T* acc) {
  constexpr int E = 16 / static_cast<int>(sizeof(T)), Lanes = 32 / E;
  const std::uint64_t blocks = (count + 31) / 32;
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x / Lanes;
  const std::uint64_t thread = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::uint64_t group = thread / Lanes;
  const int sub = static_cast<int>(thread % Lanes);
  const bool aligned = reinterpret_cast<std::uintptr_t>(wire) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 &&
                       (!Accumulate || reinterpret_cast<std::uintptr_t>(acc) % 16 == 0);
  const unsigned char* scales = wire + count;
  for (std::uint64_t b0 = group; b0 < blocks; b0 += stride * Unroll) {
    detail::fp8_codes<E> codes[Unroll];
    float base[Unroll][E];
    int k[Unroll];
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t b = b0 + static_cast<std::uint64_t>(u) * stride;
      const std::uint64_t first = b * 32 + static_cast<std::uint64_t>(sub) * E;
      k[u] = b < blocks ? static_cast<std::int8_t>(scales[b]) : 0;
      const bool full = aligned && first + E <= count;
      if (full) {
        using word = detail::fp8_code_word<E>;
        codes[u] =
            __builtin_bit_cast(detail::fp8_codes<E>, *reinterpret_cast<const word*>(wire + first));
      } else {
        for (int e = 0; e < E; ++e)
          codes[u].c[e] = first + e < count ? wire[first + e] : 0;
      }
      for (int e = 0; e < E; ++e)
        base[u][e] = 0;
      if constexpr (Accumulate) {
        if (full) {
          const auto t = __builtin_bit_cast(
              detail::fp8_elements<T>, *reinterpret_cast<const detail::fp8_vec16*>(acc + first));
          for (int e = 0; e < E; ++e)
            base[u][e] = detail::fp8_widen(t.v[e]);
        } else {
          for (int e = 0; e < E; ++e)
            if (first + e < count) base[u][e] = detail::fp8_widen(acc[first + e]);
        }
      }
    }
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t first =
          (b0 + static_cast<std::uint64_t>(u) * stride) * 32 + static_cast<std::uint64_t>(sub) * E;
      if (first >= count) continue;
      const float up = relay::detail::exact_pow2(k[u]);
      detail::fp8_elements<T> out;
      for (int e = 0; e < E; ++e) {
        const float v = fp8_value(f, codes[u].c[e]) * up;
        if constexpr (Accumulate) {
          const float sum = base[u][e] + v;
          if constexpr (std::is_same_v<T, float>)
            out.v[e] = sum;
          else
            out.v[e] = T::from_float(sum);
        } else {
          out.v[e] = fp8_store<T>(v, !fp8_is_nan(f, codes[u].c[e]));
        }
      }
      if (aligned && first + E <= count) {
        *reinterpret_cast<detail::fp8_vec16*>(dst + first) =
            __builtin_bit_cast(detail::fp8_vec16, out);
      } else {
        for (int e = 0; e < E; ++e)
          if (first + e < count) dst[first + e] = out.v[e];
      }
    }
  }
}

// ---- host side ----------------------------------------------------------------------------------

// A grid that gives every lane group Unroll blocks per trip, at most 2^20 thread blocks (they
// loop over the rest).
template <class T>
inline unsigned fp8_grid(std::uint64_t count, int unroll = fp8_unroll) {
  constexpr std::uint64_t lanes = 32 / (16 / sizeof(T));
  const std::uint64_t groups_per_block = fp8_block_threads / lanes;
  const std::uint64_t blocks = (count + 31) / 32;
  const std::uint64_t per_block = groups_per_block * static_cast<std::uint64_t>(unroll);
  const std::uint64_t grid = (blocks + per_block - 1) / per_block;
  return static_cast<unsigned>(grid == 0 ? 1 : grid < (1u << 20) ? grid : (1u << 20));
}

template <class T>
inline rt::error_t launch_fp8_quantize(const T* src, unsigned char* wire, std::uint64_t count,
                                       fp8_format f, rt::stream_t stream) {
  return rt::launch(fp8_quantize_kernel<T>, fp8_grid<T>(count), fp8_block_threads, stream, src,
                    wire, count, f);
}

// acc == nullptr: dequantize into dst; else dst = acc + the arrived values (dst may be acc).
template <class T>
inline rt::error_t launch_fp8_dequantize(const unsigned char* wire, std::uint64_t count,
                                         fp8_format f, T* dst, const T* acc, rt::stream_t stream) {
  if (acc == nullptr)
    return rt::launch(fp8_dequantize_kernel<T, false>, fp8_grid<T>(count), fp8_block_threads,
                      stream, wire, count, f, dst, acc);
  return rt::launch(fp8_dequantize_kernel<T, true>, fp8_grid<T>(count), fp8_block_threads, stream,
                    wire, count, f, dst, acc);
}

}  // namespace relay::gpu

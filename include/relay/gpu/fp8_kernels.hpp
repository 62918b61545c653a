// The fp8 wire's kernels, written once for HIP and CUDA:
//
//   quantize:              T elements (float, float16, bfloat16; an fp32 partial sum is a float)
//                          -> a wire image: count fp8 codes, zeros to a multiple of 4, then a
//                          4-byte float scale per 128 elements (core/fp8_block.hpp's layout,
//                          what the host executor's slots hold);
//   dequantize:            a wire image -> T, stored as fp8_store stores it (the host
//                          executor's bits);
//   dequantize-accumulate: dst = acc + the dequantized value, summed in fp32 and rounded once
//                          to T (a reduction's add of arrived data, without a pass through T).
//
// Bit for bit what core/fp8_block.hpp's reference gives (fp8_quantize_block, fp8_value,
// fp8_store; NaN payloads aside, which the hardware's arithmetic chooses), but cheap enough per
// element to leave the kernels bound by memory, not by arithmetic:
//
// - The encoding is a template parameter: no run-time format tests per element.
// - A block's scale is fp8_block_scale of its largest finite magnitude (a multiply and two
//   selects), and every element is divided by it with a correctly rounded division (CUDA's
//   __fdiv_rn; HIP's default division, which is IEEE's unless built with
//   -fno-hip-fp32-correctly-rounded-divide-sqrt, which relay's builds never pass), as the host
//   divides: the quotient lies within 2^e <= fp8's largest, so the conversion never saturates
//   and sees no NaN or infinity except where x is one.
// - The fast path (fp8_conversion::fast) converts e4m3 with the hardware on NVIDIA sm_89 and newer
//   (cvt.rn.satfinite.e4m3x2.f32: two elements per instruction, round to nearest even, fp8
//   subnormals). Where it differs from the reference it is fixed up: an infinity becomes a NaN
//   before the conversion (x / s - (x - x): the hardware would saturate it to 448, the reference
//   sends NaN), and every NaN code is made the reference's positive 0x7f afterwards, four codes
//   at a time. 16-bit results are packed by cvt.rn.{bf16,f16}x2.f32 (sm_80 and newer).
// - Everything else (e4m3_fnuz on NVIDIA; both encodings on AMD; fp8_conversion::software on any
//   target) uses core/fp8_block.hpp's branch-free forms: a float add rounds fp8 subnormals, an
//   integer add normal ones (fp8_encode_in_range); one multiply decodes (fp8_decode).
// - Decoding is that multiply on every target: it is exact, a handful of ALU operations a code,
//   and leaves the conversion units (a fraction of the ALUs' rate) to the quantize and the
//   16-bit stores. The arrival is the decoded value times the scale, one float rounding (never
//   fused into the accumulating form's add).
// - dequantize stores with T's plain rounding unless the block's scale is large enough for a
//   code's arrival to leave T's range (fp8_store_plain_scale: above 2^119 for float and bf16
//   on e4m3, 2^7 for fp16, i.e. blocks whose largest element was within 2^8 of T's largest);
//   such blocks take fp8_store's saturating path.
//
// AMD: gfx942 converts e4m3_fnuz in hardware (v_cvt_pk_fp8_f32, v_cvt_f32_fp8) and gfx950 the OCP
// encoding (v_cvt_scalef32_pk_fp8_f32, which even applies the block scale). Using them here would
// need three facts checked on the hardware first: that an infinity or a NaN input gives the NaN
// code (0x80 or 0x7f) rather than the largest finite one (with the clamp bit, which saturation
// needs, Inf may well clamp); that a negative value rounding to zero gives 0x00 and not the fnuz
// NaN 0x80; and that the conversion rounds float subnormals and fp8 subnormals to nearest even
// with no flush (the mode register's denormal setting applies to these instructions). Until a
// gfx942 run shows that, AMD takes the software forms, which the [fp8] GPU tests check.
//
// A block of 128 elements is `128 / E` lanes, each holding E = 16 / sizeof(T) consecutive
// elements: one 16-byte load or store where the operands are 16-byte aligned (else E scalar
// accesses); 32 lanes for float (a whole NVIDIA warp, half an AMD wavefront), 16 for the 16-bit
// types. The block's largest finite magnitude is a max over its lanes by xor shuffles inside the
// lane group (no shared memory, no barrier; xor masks below the group's size never leave it, on
// 32- and 64-lane hardware alike); the lanes of a group always take the same branches, so every
// shuffle has all its lanes. Lane 0 of a group writes the block's scale (one 4-byte store where
// the image is 4-byte aligned, as every slot is) and every lane of a group reads it. A thread
// block handles a tile of Groups * Unroll blocks (Groups = 256 / (128 / E)) and each thread
// keeps Unroll 16-byte loads in flight before it computes.
//
// The GPU executor runs an fp8 copy as a quantize on the sender's lane, the image pushed by the
// batched copy (or a peer memcpy), and a dequantize on the receiver's lane (exec/gpu/lowering.hpp,
// split_fp8_copy); each lane's ends of a phase go as one list kernel launch per element width
// (exec/gpu/lowering.hpp, batch_fp8), not one per copy end. tools/gpu_kernel_bench.cpp --fp8
// measures the kernels against a device-to-device copy.
#pragma once

#include <cstdint>
#include <type_traits>

#include "relay/core/fp8_block.hpp"
#include "relay/gpu/fp8_desc.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"

// The hardware conversions the fast path uses, by the device pass's architecture.
#if defined(RELAY_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define RELAY_FP8_CVT_E4M3 1
#else
#define RELAY_FP8_CVT_E4M3 0
#endif
#if defined(RELAY_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define RELAY_FP8_CVT_16X2 1
#else
#define RELAY_FP8_CVT_16X2 0
#endif

namespace relay::gpu {

// fast: the hardware conversions where the target has them (above); software: core/fp8_block.hpp's
// forms everywhere (AMD's path, which the tests also run on NVIDIA). Both give the same bits.
enum class fp8_conversion : unsigned char { fast, software };

namespace detail {

// 16 bytes moved as one vector, and what they hold: E elements of T (bit-cast with
// __builtin_bit_cast: HIP 5.2 has no memcpy in device code).
struct alignas(16) fp8_vec16 {
  std::uint32_t w[4];
};
template <class T>
struct fp8_elements {
  T v[16 / sizeof(T)];
};
// E codes as E / 4 words.
template <int E>
using fp8_code_word = std::conditional_t<E == 8, std::uint64_t, std::uint32_t>;
template <int E>
struct fp8_code_words {
  std::uint32_t w[E / 4];
};

template <class T>
struct fp8_shape {
  static constexpr int E = 16 / static_cast<int>(sizeof(T));  // elements per lane
  static constexpr int Lanes = fp8_block_elements / E;        // lanes per block: 32 or 16
  static constexpr int Groups = fp8_block_threads / Lanes;    // blocks per thread block
  static_assert(Lanes <= 32, "a block's lanes stay within one NVIDIA warp");
  // What the host's fp8 lists count a tile as (fp8_desc.hpp), Unroll times over.
  static_assert(static_cast<std::uint64_t>(Groups) == fp8_tile_blocks(sizeof(T), 1));
};

template <class T, fp8_conversion C>
__device__ inline float fp8_widen(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return x.to_float();
  } else {
#if RELAY_FP8_CVT_16X2
    if constexpr (C == fp8_conversion::fast) {
      float f;
      asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
      return f;
    } else
#endif
    {
      return relay::detail::float16_widen(x.bits);
    }
  }
}

// E values rounded to T, to nearest even (no saturation).
// E elements of T at p[first ..], widened: one 16-byte load where `vector` (aligned, all E within
// count), else one by one, those at or past `count` read as 0.
template <class T, fp8_conversion C, int E>
__device__ inline void fp8_load_widened(const T* p, std::uint64_t first, std::uint64_t count,
                                        bool vector, float (&out)[E]) {
  if (vector) {
    const auto t =
        __builtin_bit_cast(fp8_elements<T>, *reinterpret_cast<const fp8_vec16*>(p + first));
#pragma unroll
    for (int e = 0; e < E; ++e)
      out[e] = fp8_widen<T, C>(t.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e)
      out[e] = first + e < count ? fp8_widen<T, C>(p[first + e]) : 0.0f;
  }
}

template <class T, fp8_conversion C, int E>
__device__ inline fp8_elements<T> fp8_round(const float (&v)[E]) {
  fp8_elements<T> out;
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int e = 0; e < E; ++e)
      out.v[e] = v[e];
  } else {
#if RELAY_FP8_CVT_16X2
    if constexpr (C == fp8_conversion::fast) {
      fp8_vec16 packed;
#pragma unroll
      for (int p = 0; p < E / 2; ++p) {
        if constexpr (std::is_same_v<T, bfloat16>)
          asm("cvt.rn.bf16x2.f32 %0, %1, %2;"
              : "=r"(packed.w[p])
              : "f"(v[2 * p + 1]), "f"(v[2 * p]));
        else
          asm("cvt.rn.f16x2.f32 %0, %1, %2;"
              : "=r"(packed.w[p])
              : "f"(v[2 * p + 1]), "f"(v[2 * p]));
      }
      out = __builtin_bit_cast(fp8_elements<T>, packed);
    } else
#endif
    {
#pragma unroll
      for (int e = 0; e < E; ++e)
        out.v[e] = T::from_float(v[e]);
    }
  }
  return out;
}

// base + a * b with the product rounded first, as the host does: never one fused multiply-add
// (which would round once where the host rounds twice).
__device__ inline float fp8_add_product(float base, float a, float b) {
#if defined(RELAY_GPU_CUDA)
  return __fadd_rn(base, __fmul_rn(a, b));
#else
#pragma clang fp contract(off)
  return base + a * b;
#endif
}

// max(m, a) for a >= 0, where a NaN a leaves m (fmaxf's rule; on AMD a compare, since the ISA's
// max quiets a signalling NaN in IEEE mode instead of ignoring it).
__device__ inline float fp8_max_of(float m, float a) {
#if defined(RELAY_GPU_CUDA)
  return fmaxf(m, a);
#else
  return a > m ? a : m;
#endif
}

// The largest of `v` over the Lanes lanes of this lane's group (xor masks below Lanes stay in
// the group, whose lanes are Lanes-aligned in the warp or wavefront).
template <int Lanes>
__device__ inline float fp8_group_max(float v) {
#if defined(RELAY_GPU_CUDA)
  const unsigned lane = threadIdx.x % 32u;
  const unsigned mask = static_cast<unsigned>((std::uint64_t{1} << Lanes) - 1u)
                        << (lane & ~(Lanes - 1u));
#endif
#pragma unroll
  for (int m = Lanes / 2; m > 0; m /= 2) {
#if defined(RELAY_GPU_CUDA)
    const float other = __shfl_xor_sync(mask, v, m);
#else
    const float other = __shfl_xor(v, m);
#endif
    v = fp8_max_of(v, other);
  }
  return v;
}

// The block's largest finite magnitude over its group: infinities are rare, so the max first
// takes them (NaN never) and only a group that found one looks again without them (the group's
// lanes agree on the branch: they hold the same maximum).
template <int Lanes, int E>
__device__ inline float fp8_block_amax(const float (&x)[E]) {
  float amax = 0;
#pragma unroll
  for (int e = 0; e < E; ++e)
    amax = fp8_max_of(amax, fabsf(x[e]));
  amax = fp8_group_max<Lanes>(amax);
  if (amax > 3.4028234663852886e38f) {
    amax = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const float a = fabsf(x[e]);
      amax = a <= 3.4028234663852886e38f ? fp8_max_of(amax, a) : amax;
    }
    amax = fp8_group_max<Lanes>(amax);
  }
  return amax;
}

// x / d, correctly rounded, as the host divides (never a reciprocal's approximation).
__device__ inline float fp8_quotient(float x, float d) {
#if defined(RELAY_GPU_CUDA)
  return __fdiv_rn(x, d);
#else
  return x / d;
#endif
}

// The codes of E elements of a block divided by `divisor` (fp8_divisor of its scale):
// fp8_quantize_block's.
template <fp8_format F, fp8_conversion C, int E>
__device__ inline fp8_code_words<E> fp8_encode(const float (&x)[E], float divisor) {
  fp8_code_words<E> out;
#if RELAY_FP8_CVT_E4M3
  if constexpr (F == fp8_format::e4m3 && C == fp8_conversion::fast) {
#pragma unroll
    for (int i = 0; i < E / 4; ++i) {
      float y[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float v = x[4 * i + j];
        // v / d - (v - v): minus +0 for a finite v (the quotient, the sign of a zero kept),
        // minus NaN for an infinity or a NaN, which the conversion then makes a NaN code.
        y[j] = __fsub_rn(fp8_quotient(v, divisor), __fsub_rn(v, v));
      }
      unsigned short lo = 0, hi = 0;
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(y[1]), "f"(y[0]));
      asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(y[3]), "f"(y[2]));
      const std::uint32_t codes = static_cast<std::uint32_t>(lo) | static_cast<std::uint32_t>(hi)
                                                                       << 16;
      // A NaN code (x1111111, and only a NaN gives one: satfinite stops at 0x7e) loses its sign
      // bit: byte + 1 of the low 7 bits carries into bit 7 exactly there.
      const std::uint32_t nan = ((codes & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u;
      out.w[i] = codes & ~nan;
    }
  } else
#endif
  {
#pragma unroll
    for (int i = 0; i < E / 4; ++i) {
      std::uint32_t word = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float v = x[4 * i + j];
        const std::uint32_t code =
            fabsf(v) <= relay::detail::fp8_largest_float
                ? relay::detail::fp8_encode_in_range<F>(fp8_quotient(v, divisor))
                : relay::detail::fp8_nan_code(F);
        word |= code << (8 * j);
      }
      out.w[i] = word;
    }
  }
  return out;
}

// The scale at `at` (an image's fp8_scales_at(count) + 4 b): one 4-byte access where `at` is
// 4-byte aligned, which it is wherever the image is (every wire slot: 16-byte aligned), else byte
// by byte. Little-endian, as the host's bytes of a float are on every target.
__device__ inline float fp8_load_scale(const unsigned char* at) {
  if (reinterpret_cast<std::uintptr_t>(at) % 4 == 0) return *reinterpret_cast<const float*>(at);
  return bits_float(std::uint32_t{at[0]} | std::uint32_t{at[1]} << 8 | std::uint32_t{at[2]} << 16 |
                    std::uint32_t{at[3]} << 24);
}
__device__ inline void fp8_store_scale(unsigned char* at, float s) {
  if (reinterpret_cast<std::uintptr_t>(at) % 4 == 0) {
    *reinterpret_cast<float*>(at) = s;
    return;
  }
  const std::uint32_t u = float_bits(s);
  for (int i = 0; i < 4; ++i)
    at[i] = static_cast<unsigned char>(u >> (8 * i));
}

// Blocks tile * Groups * Unroll .. + Groups * Unroll - 1 of `count` elements, quantized. Whole:
// the tile lies within count and both operands are 16-byte aligned (no bounds to test).
template <class T, fp8_format F, fp8_conversion C, int Unroll, bool Whole>
__device__ inline void fp8_quantize_blocks(const T* src, unsigned char* wire, std::uint64_t count,
                                           std::uint64_t tile) {
  using shape = fp8_shape<T>;
  constexpr int E = shape::E, Lanes = shape::Lanes, Groups = shape::Groups;
  constexpr std::uint64_t B = fp8_block_elements;
  const std::uint64_t blocks = fp8_blocks(count), scales = fp8_scales_at(count);
  const std::uint64_t b0 = tile * (Groups * Unroll) + threadIdx.x / Lanes;
  const int sub = static_cast<int>(threadIdx.x % Lanes);
  const bool vector_in = Whole || reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
  const bool vector_out = Whole || reinterpret_cast<std::uintptr_t>(wire) % 16 == 0;
  float x[Unroll][E];
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::uint64_t first = (b0 + u * Groups) * B + static_cast<std::uint64_t>(sub * E);
    fp8_load_widened<T, C>(src, first, count, vector_in && (Whole || first + E <= count), x[u]);
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::uint64_t b = b0 + u * Groups;
    const float amax = fp8_block_amax<Lanes>(x[u]);
    if (!Whole && b >= blocks) continue;  // the group's lanes agree: the shuffles had them all
    const float scale = fp8_block_scale(F, amax);
    const fp8_code_words<E> codes = fp8_encode<F, C>(x[u], fp8_divisor(scale));
    const std::uint64_t first = b * B + static_cast<std::uint64_t>(sub * E);
    if (vector_out && (Whole || first + E <= count)) {
      using word = fp8_code_word<E>;
      *reinterpret_cast<word*>(wire + first) = __builtin_bit_cast(word, codes);
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e)
        if (first + e < count)
          wire[first + e] = static_cast<unsigned char>(codes.w[e / 4] >> (8 * (e % 4)));
    }
    if (sub == 0) {
      fp8_store_scale(wire + scales + fp8_scale_bytes * b, scale);
      // The last block's lane 0 zeroes the padding (a Whole tile ends at a multiple of 4).
      if (!Whole && b + 1 == blocks)
        for (std::uint64_t i = count; i < scales; ++i)
          wire[i] = 0;
    }
  }
}

// dst[i] = the arrived value of code i (Accumulate: acc[i] + it, in fp32, rounded once), for the
// blocks of one tile (Whole: as for fp8_quantize_blocks).
template <class T, fp8_format F, fp8_conversion C, bool Accumulate, int Unroll, bool Whole>
__device__ inline void fp8_dequantize_blocks(const unsigned char* wire, std::uint64_t count, T* dst,
                                             const T* acc, std::uint64_t tile) {
  using shape = fp8_shape<T>;
  constexpr int E = shape::E, Lanes = shape::Lanes, Groups = shape::Groups;
  constexpr std::uint64_t B = fp8_block_elements;
  const std::uint64_t blocks = fp8_blocks(count), scales = fp8_scales_at(count);
  const std::uint64_t b0 = tile * (Groups * Unroll) + threadIdx.x / Lanes;
  const int sub = static_cast<int>(threadIdx.x % Lanes);
  const bool aligned = Whole || (reinterpret_cast<std::uintptr_t>(wire) % 16 == 0 &&
                                 reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 &&
                                 (!Accumulate || reinterpret_cast<std::uintptr_t>(acc) % 16 == 0));
  fp8_code_words<E> codes[Unroll];
  float base[Unroll][E];
  float scale[Unroll];
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::uint64_t b = b0 + u * Groups;
    const std::uint64_t first = b * B + static_cast<std::uint64_t>(sub * E);
    scale[u] = Whole || b < blocks ? fp8_load_scale(wire + scales + fp8_scale_bytes * b) : 0.0f;
    const bool full = aligned && (Whole || first + E <= count);
    if (full) {
      using word = fp8_code_word<E>;
      codes[u] =
          __builtin_bit_cast(fp8_code_words<E>, *reinterpret_cast<const word*>(wire + first));
    } else {
#pragma unroll
      for (int i = 0; i < E / 4; ++i)
        codes[u].w[i] = 0;
#pragma unroll
      for (int e = 0; e < E; ++e)
        if (first + e < count) codes[u].w[e / 4] |= std::uint32_t{wire[first + e]} << (8 * (e % 4));
    }
    if constexpr (Accumulate) {
      fp8_load_widened<T, C>(acc, first, count, full, base[u]);
    }
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::uint64_t first = (b0 + u * Groups) * B + static_cast<std::uint64_t>(sub * E);
    if (!Whole && first >= count) continue;
    float v[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const float value =
          relay::detail::fp8_decode<F>((codes[u].w[e / 4] >> (8 * (e % 4))) & 0xffu);
      if constexpr (Accumulate)
        v[e] = fp8_add_product(base[u][e], value, scale[u]);
      else
        v[e] = value * scale[u];  // one rounding, or beyond float's range
    }
    fp8_elements<T> out;
    if (Accumulate || scale[u] <= relay::detail::fp8_store_plain_scale<T, F>) {
      out = fp8_round<T, C>(v);
    } else {  // arrivals may leave T's range: fp8_store saturates them
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const auto code = static_cast<std::uint8_t>(codes[u].w[e / 4] >> (8 * (e % 4)));
        out.v[e] = fp8_store<T>(v[e], !fp8_is_nan(F, code));
      }
    }
    if (aligned && (Whole || first + E <= count)) {
      *reinterpret_cast<fp8_vec16*>(dst + first) = __builtin_bit_cast(fp8_vec16, out);
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e)
        if (first + e < count) dst[first + e] = out.v[e];
    }
  }
}

// Whether tile `tile` of `count` elements lies within them, its operands 16-byte aligned.
template <class T, int Unroll>
__device__ inline bool fp8_whole_tile(std::uint64_t count, std::uint64_t tile,
                                      std::uintptr_t ptrs) {
  constexpr std::uint64_t per_tile =
      static_cast<std::uint64_t>(fp8_shape<T>::Groups) * Unroll * fp8_block_elements;
  return (tile + 1) * per_tile <= count && ptrs % 16 == 0;
}

template <class T, fp8_format F, fp8_conversion C, int Unroll>
__device__ inline void fp8_quantize_tile(const T* src, unsigned char* wire, std::uint64_t count,
                                         std::uint64_t tile) {
  const auto ptrs = reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(wire);
  if (fp8_whole_tile<T, Unroll>(count, tile, ptrs))
    fp8_quantize_blocks<T, F, C, Unroll, true>(src, wire, count, tile);
  else
    fp8_quantize_blocks<T, F, C, Unroll, false>(src, wire, count, tile);
}

template <class T, fp8_format F, fp8_conversion C, bool Accumulate, int Unroll>
__device__ inline void fp8_dequantize_tile(const unsigned char* wire, std::uint64_t count, T* dst,
                                           const T* acc, std::uint64_t tile) {
  const auto ptrs = reinterpret_cast<std::uintptr_t>(wire) | reinterpret_cast<std::uintptr_t>(dst) |
                    (Accumulate ? reinterpret_cast<std::uintptr_t>(acc) : 0);
  if (fp8_whole_tile<T, Unroll>(count, tile, ptrs))
    fp8_dequantize_blocks<T, F, C, Accumulate, Unroll, true>(wire, count, dst, acc, tile);
  else
    fp8_dequantize_blocks<T, F, C, Accumulate, Unroll, false>(wire, count, dst, acc, tile);
}

// The tiles of `count` elements.
template <class T, int Unroll>
RELAY_HOST_DEVICE constexpr std::uint64_t fp8_tiles(std::uint64_t count) {
  constexpr std::uint64_t per_tile = static_cast<std::uint64_t>(fp8_shape<T>::Groups) * Unroll;
  return (fp8_blocks(count) + per_tile - 1) / per_tile;
}

}  // namespace detail

// `wire` receives fp8_wire_bytes(count) bytes: the codes, their padding, then the scales.
template <class T, fp8_format F, fp8_conversion C = fp8_conversion::fast, int Unroll = fp8_unroll>
__global__ void __launch_bounds__(fp8_block_threads)
    fp8_quantize_kernel(const T* src, unsigned char* wire, std::uint64_t count) {
  const std::uint64_t tiles = detail::fp8_tiles<T, Unroll>(count);
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x)
    detail::fp8_quantize_tile<T, F, C, Unroll>(src, wire, count, t);
}

// dst[i] = the arrived value of code i (Accumulate: acc[i] + it, in fp32, rounded once).
template <class T, fp8_format F, bool Accumulate, fp8_conversion C = fp8_conversion::fast,
          int Unroll = fp8_unroll>
__global__ void __launch_bounds__(fp8_block_threads)
    fp8_dequantize_kernel(const unsigned char* wire, std::uint64_t count, T* dst, const T* acc) {
  const std::uint64_t tiles = detail::fp8_tiles<T, Unroll>(count);
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x)
    detail::fp8_dequantize_tile<T, F, C, Accumulate, Unroll>(wire, count, dst, acc, t);
}

// The batched forms (gpu/fp8_desc.hpp): tile t of a list belongs to the descriptor whose tiles
// include it, found by binary search as the batched copy finds its copy. The GPU executor launches
// one per lane, phase and element width, for all of that lane's quantizes (or dequantizes). Their
// tiles are fp8_unroll deep, as the host's lists count them (fp8_tile_blocks).
template <class T, fp8_format F, fp8_conversion C = fp8_conversion::fast>
__global__ void __launch_bounds__(fp8_block_threads)
    fp8_quantize_list_kernel(const fp8_desc* descs, std::uint32_t n, std::uint64_t tiles) {
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const fp8_desc& d = descs[detail::find_desc(descs, n, t)];
    detail::fp8_quantize_tile<T, F, C, fp8_unroll>(static_cast<const T*>(d.src),
                                                   static_cast<unsigned char*>(d.dst), d.count,
                                                   t - d.first_tile);
  }
}

template <class T, fp8_format F, fp8_conversion C = fp8_conversion::fast>
__global__ void __launch_bounds__(fp8_block_threads)
    fp8_dequantize_list_kernel(const fp8_desc* descs, std::uint32_t n, std::uint64_t tiles) {
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const fp8_desc& d = descs[detail::find_desc(descs, n, t)];
    detail::fp8_dequantize_tile<T, F, C, false, fp8_unroll>(
        static_cast<const unsigned char*>(d.src), d.count, static_cast<T*>(d.dst),
        static_cast<const T*>(nullptr), t - d.first_tile);
  }
}

// ---- host side ----------------------------------------------------------------------------------

// A thread block per tile, at most 2^20 of them (they loop over the rest).
inline unsigned fp8_grid_of(std::uint64_t tiles) {
  return static_cast<unsigned>(tiles == 0 ? 1 : tiles < (1u << 20) ? tiles : (1u << 20));
}
template <class T>
inline unsigned fp8_grid(std::uint64_t count) {
  return fp8_grid_of(detail::fp8_tiles<T, fp8_unroll>(count));
}

template <class T, fp8_conversion C = fp8_conversion::fast>
inline rt::error_t launch_fp8_quantize(const T* src, unsigned char* wire, std::uint64_t count,
                                       fp8_format f, rt::stream_t stream) {
  constexpr fp8_format e4m3 = fp8_format::e4m3, fnuz = fp8_format::e4m3_fnuz;
  void (*kernel)(const T*, unsigned char*, std::uint64_t) =
      f == e4m3 ? fp8_quantize_kernel<T, e4m3, C> : fp8_quantize_kernel<T, fnuz, C>;
  return rt::launch(kernel, fp8_grid<T>(count), fp8_block_threads, stream, src, wire, count);
}

// acc == nullptr: dequantize into dst; else dst = acc + the arrived values (dst may be acc).
template <class T, fp8_conversion C = fp8_conversion::fast>
inline rt::error_t launch_fp8_dequantize(const unsigned char* wire, std::uint64_t count,
                                         fp8_format f, T* dst, const T* acc, rt::stream_t stream) {
  constexpr fp8_format e4m3 = fp8_format::e4m3, fnuz = fp8_format::e4m3_fnuz;
  void (*kernel)(const unsigned char*, std::uint64_t, T*, const T*) =
      acc == nullptr ? (f == e4m3 ? fp8_dequantize_kernel<T, e4m3, false, C>
                                  : fp8_dequantize_kernel<T, fnuz, false, C>)
                     : (f == e4m3 ? fp8_dequantize_kernel<T, e4m3, true, C>
                                  : fp8_dequantize_kernel<T, fnuz, true, C>);
  return rt::launch(kernel, fp8_grid<T>(count), fp8_block_threads, stream, wire, count, dst, acc);
}

// A list of `n` descriptors on the device, `tiles` in all (fp8_batch): quantize, or dequantize
// (into the elements, no accumulation).
template <class T>
inline rt::error_t launch_fp8_list(bool quantize, const fp8_desc* descs, std::uint32_t n,
                                   std::uint64_t tiles, fp8_format f, rt::stream_t stream) {
  constexpr fp8_format e4m3 = fp8_format::e4m3, fnuz = fp8_format::e4m3_fnuz;
  void (*kernel)(const fp8_desc*, std::uint32_t, std::uint64_t) =
      quantize
          ? (f == e4m3 ? fp8_quantize_list_kernel<T, e4m3> : fp8_quantize_list_kernel<T, fnuz>)
          : (f == e4m3 ? fp8_dequantize_list_kernel<T, e4m3> : fp8_dequantize_list_kernel<T, fnuz>);
  return rt::launch(kernel, fp8_grid_of(tiles), fp8_block_threads, stream, descs, n, tiles);
}

}  // namespace relay::gpu

#undef RELAY_FP8_CVT_E4M3
#undef RELAY_FP8_CVT_16X2

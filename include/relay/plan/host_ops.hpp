// The two operations of a plan on host memory: a copy, and a reduction with the element
// arithmetic of core/reduction.hpp (the GPU kernels use the same, so results are bit-identical).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "relay/core/dtype.hpp"
#include "relay/core/fp8_block.hpp"
#include "relay/core/reduction.hpp"
#include "relay/plan/bind.hpp"
#include "relay/plan/plan.hpp"

namespace relay::detail {

inline void host_copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
}

// dst[i] = (src[0][i] + ... + src[k-1][i]) [/ divisor]. dst may be one of the sources exactly.
inline void host_reduce(dtype type, std::byte* dst, const std::byte* const* src, int k,
                        std::size_t count, int divisor) {
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    std::array<const T*, max_reduce_inputs> typed{};
    for (int s = 0; s < k; ++s)
      typed[static_cast<std::size_t>(s)] = reinterpret_cast<const T*>(src[s]);
    T* out = reinterpret_cast<T*>(dst);
    for (std::size_t i = 0; i < count; ++i)
      out[i] = reduce_element<T>(typed.data(), k, i, divisor);
  });
}

// The same with partial operands (plan_op::partial_mask, bits as in reduce_element_mixed).
inline void host_reduce_mixed(dtype type, std::byte* dst, const std::byte* const* src, int k,
                              std::size_t count, std::uint32_t mask, int divisor) {
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    std::array<const void*, max_reduce_inputs> sources{};
    for (int s = 0; s < k; ++s)
      sources[static_cast<std::size_t>(s)] = src[s];
    for (std::size_t i = 0; i < count; ++i)
      reduce_element_mixed<T>(dst, sources.data(), k, mask, i, divisor);
  });
}

// Element i of a float32, float16 or bfloat16 operand (`partial`: an fp32 partial sum), as float.
inline float host_load_float(dtype type, bool partial, const std::byte* at, std::size_t i) {
  if (partial || type == dtype::float32) {
    float x;
    std::memcpy(&x, at + i * 4, 4);
    return x;
  }
  std::uint16_t bits;
  std::memcpy(&bits, at + i * 2, 2);
  return type == dtype::float16 ? float16::from_bits(bits).to_float()
                                : bfloat16::from_bits(bits).to_float();
}

// Stores an arrived value (fp8_store) as the destination's type: the element type, or float for
// an fp32 partial sum.
inline void host_store_arrived(dtype type, bool partial, std::byte* at, std::size_t i, float v,
                               bool finite) {
  if (partial || type == dtype::float32) {
    const float x = fp8_store<float>(v, finite);
    std::memcpy(at + i * 4, &x, 4);
  } else if (type == dtype::float16) {
    const float16 x = fp8_store<float16>(v, finite);
    std::memcpy(at + i * 2, &x.bits, 2);
  } else {
    const bfloat16 x = fp8_store<bfloat16>(v, finite);
    std::memcpy(at + i * 2, &x.bits, 2);
  }
}

// fp8_value of every code of `f`: the host's dequantization reads a table.
inline const std::array<float, 256>& fp8_values(fp8_format f) {
  static const auto table = [](fp8_format g) {
    std::array<float, 256> t{};
    for (unsigned c = 0; c < 256; ++c)
      t[c] = fp8_value(g, static_cast<std::uint8_t>(c));
    return t;
  };
  static const std::array<float, 256> e4m3 = table(fp8_format::e4m3);
  static const std::array<float, 256> fnuz = table(fp8_format::e4m3_fnuz);
  return f == fp8_format::e4m3 ? e4m3 : fnuz;
}

// The two ends of a copy on an fp8 wire (plan::crosses_wire). The sending end quantizes the
// op's source into an image (fp8_block.hpp: the codes, zero padding to a multiple of 4, then a
// 4-byte scale per block) at `image`; the receiving end dequantizes an image into the op's
// destination. Each reads and writes only what the plan gives it, as a GPU's passes would.
template <class Address>
void host_fp8_quantize(const plan& p, const plan_op& op, void* image, Address&& address) {
  const fp8_format f = fp8_format_of(p.wire.taken);
  const auto* from = address(p.sources_of(op)[0]);
  const std::size_t count = op.count;
  auto* codes = static_cast<std::uint8_t*>(image);
  const std::size_t scales = fp8_scales_at(count);
  for (std::size_t first = 0, block = 0; first < count; first += fp8_block_elements, ++block) {
    const int n = static_cast<int>(std::min<std::size_t>(fp8_block_elements, count - first));
    std::array<float, fp8_block_elements> x{};
    for (int k = 0; k < n; ++k)
      x[static_cast<std::size_t>(k)] = host_load_float(p.type, (op.partial_mask & 1u) != 0, from,
                                                       first + static_cast<std::size_t>(k));
    const float scale = fp8_quantize_block(f, x.data(), n, codes + first);
    std::memcpy(codes + scales + block * fp8_scale_bytes, &scale, fp8_scale_bytes);
  }
  if (scales > count) std::memset(codes + count, 0, scales - count);
}

template <class Address>
void host_fp8_dequantize(const plan& p, const plan_op& op, const void* image, Address&& address) {
  const fp8_format f = fp8_format_of(p.wire.taken);
  const std::size_t count = op.count;
  const auto* codes = static_cast<const std::uint8_t*>(image);
  const bool partial = (op.partial_mask & partial_dst_bit) != 0;
  auto* to = address(op.dst);
  const std::array<float, 256>& value = fp8_values(f);
  const std::size_t scales = fp8_scales_at(count);
  for (std::size_t first = 0, block = 0; first < count; first += fp8_block_elements, ++block) {
    float scale;
    std::memcpy(&scale, codes + scales + block * fp8_scale_bytes, fp8_scale_bytes);
    const std::size_t last = std::min<std::size_t>(count, first + fp8_block_elements);
    for (std::size_t i = first; i < last; ++i)  // fp8_dequantize: the code's value times the scale
      host_store_arrived(p.type, partial, to, i, value[codes[i]] * scale, !fp8_is_nan(f, codes[i]));
  }
}

// A whole fp8 copy, as the host executor runs it on the sending thread: quantize into the
// sender's wire slot, the image across the link into the receiver's slot, dequantize from there.
template <class Address>
void host_fp8_copy(const plan& p, const plan_op& op, Address&& address) {
  const auto i = static_cast<std::size_t>(&op - p.ops.data());
  auto* send = address(wire_send_end(p, i));
  auto* recv = address(wire_recv_end(p, i));
  host_fp8_quantize(p, op, send, address);
  host_copy(recv, send, fp8_wire_bytes(op.count));  // the link
  host_fp8_dequantize(p, op, recv, address);
}

// Runs one operation of `p` on host memory; `address(operand)` says where an operand lives.
// `op` is one of p.ops (its index finds its wire slot).
template <class Address>
void host_run_op(const plan& p, const plan_op& op, Address&& address) {
  const auto sources = p.sources_of(op);
  if (p.crosses_wire(op)) {
    host_fp8_copy(p, op, address);
    return;
  }
  if (op.phase == phase::transfer) {
    host_copy(address(op.dst), address(sources[0]),
              op.count * static_cast<std::size_t>(p.dst_width(op)));
    return;
  }
  std::array<const std::byte*, max_reduce_inputs> src{};
  for (std::size_t s = 0; s < sources.size(); ++s)
    src[s] = address(sources[s]);
  const int divisor = op.finalize ? p.divisor : 1;
  if (op.partial_mask != 0)
    host_reduce_mixed(p.type, address(op.dst), src.data(), op.source_count, op.count,
                      op.partial_mask, divisor);
  else
    host_reduce(p.type, address(op.dst), src.data(), op.source_count, op.count, divisor);
}

}  // namespace relay::detail

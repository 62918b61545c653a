// A reduction as the batched reduce kernel sees it (reduce_desc), and how one is made: from
// pointers (make_reduce), and from a plan's operation (reduce_of), the one way the GPU
// executor's lowering and the nccl and ipc transports turn a reduction into kernel work. Plain
// data and host functions, no GPU runtime (the lowering is unit-tested on the CPU).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "relay/plan/plan.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay::gpu {

// dst[i] = (src[0][i] + ... + src[k-1][i]) [/ divisor] for i < count. When `vector` is set,
// elements [head, head + units * (16 / element size)) go as 16-byte vectors and the rest one by
// one; otherwise every element is one unit. `partial` (plan_op::partial_mask): operands stored as
// accumulators (fp32 partial sums of fp16/bf16). A mixed reduction vectorizes in groups of
// 16 / element size elements (one 16-byte vector of each element operand, two of each
// accumulator operand) when one head aligns every operand, else goes element by element; either
// way its arithmetic is reduce_element_mixed's, in the same order.
struct reduce_desc {
  void* dst = nullptr;
  const void* src[max_reduce_inputs] = {};
  std::uint64_t count = 0;
  std::uint64_t units = 0;
  std::uint64_t first_tile = 0;
  std::uint32_t head = 0;
  std::int32_t k = 0;
  std::int32_t divisor = 1;
  std::int32_t vector = 0;
  std::uint32_t partial = 0;
};

// `srcs` are k pointers; `esize` the element size. Vectorizes when every operand is element-
// aligned and all share one misalignment modulo 16.
inline reduce_desc make_reduce(void* dst, const void* const* srcs, int k, std::uint64_t count,
                               int esize, int divisor, std::uint32_t partial = 0) {
  reduce_desc r;
  r.dst = dst;
  r.k = k;
  r.count = count;
  r.divisor = divisor;
  r.partial = partial;
  const auto mis = reinterpret_cast<std::uintptr_t>(dst) % 16;
  bool same = mis % static_cast<std::uintptr_t>(esize) == 0;
  for (int i = 0; i < k; ++i) {
    r.src[i] = srcs[i];
    same = same && reinterpret_cast<std::uintptr_t>(srcs[i]) % 16 == mis;
  }
  const std::uint64_t per = 16 / static_cast<std::uint64_t>(esize);
  if (same && partial == 0) {
    std::uint64_t head = ((16 - mis) % 16) / static_cast<std::uint64_t>(esize);
    if (head > count) head = count;
    r.vector = 1;
    r.head = static_cast<std::uint32_t>(head);
    r.units = (count - head) / per;
  } else if (partial != 0) {
    // The first head that puts every operand on a 16-byte boundary, each at its own width (an
    // accumulator is twice a 16-bit element, as reduction_traits has it; the plan marks partial
    // operands only where they are wider than the elements).
    const std::uint64_t acc = esize == 2 ? 4 : static_cast<std::uint64_t>(esize);
    auto aligned = [&](const void* at, std::uint32_t bit, std::uint64_t head) {
      const std::uint64_t w = (partial & bit) != 0 ? acc : static_cast<std::uint64_t>(esize);
      return (reinterpret_cast<std::uintptr_t>(at) + head * w) % 16 == 0;
    };
    r.units = count;
    for (std::uint64_t head = 0; head < per; ++head) {
      bool all = aligned(dst, partial_dst_bit, head);
      for (int i = 0; i < k; ++i)
        all = all && aligned(srcs[i], std::uint32_t{1} << i, head);
      if (!all) continue;
      if (head > count) head = count;
      r.vector = 1;
      r.head = static_cast<std::uint32_t>(head);
      r.units = (count - head) / per;
      break;
    }
  } else {
    r.units = count;
  }
  return r;
}

// The descriptor of reduction `o` of `p`, its operands at address(operand): dst = the sum of its
// sources in plan order, divided by the plan's divisor where it finalizes.
template <class Address>
reduce_desc reduce_of(const plan& p, const plan_op& o, Address&& address) {
  std::array<const void*, max_reduce_inputs> src{};
  const auto sources = p.sources_of(o);
  for (std::size_t s = 0; s < sources.size(); ++s)
    src[s] = address(sources[s]);
  return make_reduce(address(o.dst), src.data(), o.source_count, o.count, p.element_size(),
                     o.finalize ? p.divisor : 1, o.partial_mask);
}

}  // namespace relay::gpu

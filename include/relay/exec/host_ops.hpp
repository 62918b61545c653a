// The two operations of a plan on host memory: a copy, and a reduction with the element
// arithmetic of core/reduction.hpp (the GPU kernels use the same, so results are bit-identical).
#pragma once

#include <cstring>

#include "relay/core/dtype.hpp"
#include "relay/core/reduction.hpp"
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

// Runs one operation of `p` on host memory; `address(operand)` says where an operand lives.
template <class Address>
void host_run_op(const plan& p, const plan_op& op, Address&& address) {
  const auto sources = p.sources_of(op);
  const auto bytes = op.count * static_cast<std::size_t>(p.element_size());
  if (op.phase == phase::transfer) {
    host_copy(address(op.dst), address(sources[0]), bytes);
    return;
  }
  std::array<const std::byte*, max_reduce_inputs> src{};
  for (std::size_t s = 0; s < sources.size(); ++s)
    src[s] = address(sources[s]);
  host_reduce(p.type, address(op.dst), src.data(), op.source_count, op.count,
              op.finalize ? p.divisor : 1);
}

}  // namespace relay::detail

// Helpers of the GPU tests: device buffers, random values that are never all zero, a checked
// runtime call, and a plan builder plus a naive plan interpreter on host memory (the reference
// the executor is compared with until a plan comes from make_plan).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/core/dtype.hpp"
#include "relay/core/reduction.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/plan/plan.hpp"
#include "support/plan_builder.hpp"

namespace relay::test {

#define RELAY_GPU_REQUIRE(call)                                  \
  do {                                                           \
    const ::relay::gpu::rt::error_t relay_e_ = (call);           \
    INFO(#call << ": " << ::relay::gpu::rt::describe(relay_e_)); \
    REQUIRE(relay_e_ == ::relay::gpu::rt::success);              \
  } while (0)

inline constexpr unsigned char poison = 0xa5;

// An unsigned environment variable (case counts, seeds), or `fallback`.
inline std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

inline int device_count() {
  int n = 0;
  return gpu::rt::device_count(&n) == gpu::rt::success ? n : 0;
}

// Device memory owned by a test.
class device_buffer {
 public:
  explicit device_buffer(std::size_t bytes) : bytes_(bytes) {
    RELAY_GPU_REQUIRE(gpu::rt::malloc(&p_, bytes == 0 ? 1 : bytes));
  }
  ~device_buffer() { (void)gpu::rt::free(p_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  unsigned char* data() const { return static_cast<unsigned char*>(p_); }
  std::size_t bytes() const { return bytes_; }
  void upload(const std::vector<unsigned char>& h) {
    REQUIRE(h.size() <= bytes_);
    RELAY_GPU_REQUIRE(gpu::rt::memcpy(p_, h.data(), h.size()));
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> h(bytes_);
    RELAY_GPU_REQUIRE(gpu::rt::memcpy(h.data(), p_, bytes_));
    return h;
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// Random elements of type t, bytes of `count` elements. Floats are small non-integers, so sums in
// a different order or precision would round differently; integers use every bit, so sums wrap.
inline std::vector<unsigned char> random_elements(dtype t, std::size_t count,
                                                  std::mt19937_64& rng) {
  std::vector<unsigned char> out(count * static_cast<std::size_t>(size_of(t)));
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  visit_dtype(t, [&](auto x) {
    using T = decltype(x);
    for (std::size_t i = 0; i < count; ++i) {
      T v{};
      if constexpr (std::is_integral_v<T>) {
        v = static_cast<T>(rng());
      } else if constexpr (std::is_floating_point_v<T>) {
        v = static_cast<T>(real(rng));
      } else {  // float16, bfloat16
        v = T::from_float(static_cast<float>(real(rng)));
      }
      std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
  });
  return out;
}

// The first element where two byte arrays differ, or -1.
inline long long first_difference(const std::vector<unsigned char>& a,
                                  const std::vector<unsigned char>& b, int element_size) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long long>(i / static_cast<std::size_t>(element_size));
  return -1;
}

// Each rank's three areas on the host.
struct host_memory {
  std::vector<std::vector<unsigned char>> input, output, scratch;
  std::vector<unsigned char>& area(const plan_operand& o) {
    const auto r = static_cast<std::size_t>(o.rank);
    return o.buf == buffer::input ? input[r] : o.buf == buffer::output ? output[r] : scratch[r];
  }
  const std::vector<unsigned char>& area(const plan_operand& o) const {
    return const_cast<host_memory&>(*this).area(o);
  }
};

// Runs a plan on host memory the plainest way: phase by phase, each operation computed from the
// memory as it was before the phase (the ops of a phase are independent), element by element
// through reduce_element.
inline void interpret(const plan& p, host_memory& m) {
  const auto es = static_cast<std::size_t>(p.element_size());
  for (const plan_phase& ph : p.phases) {
    const host_memory before = m;
    for (const plan_op& o : p.ops_of(ph)) {
      const std::span<const plan_operand> srcs = p.sources_of(o);
      std::vector<unsigned char>& dst = m.area(o.dst);
      visit_dtype(p.type, [&](auto x) {
        using T = decltype(x);
        std::vector<std::vector<T>> in(srcs.size(), std::vector<T>(o.count));
        std::vector<const T*> ptrs;
        for (std::size_t s = 0; s < srcs.size(); ++s) {
          const std::vector<unsigned char>& a = before.area(srcs[s]);
          std::memcpy(in[s].data(), a.data() + srcs[s].offset, o.count * es);
          ptrs.push_back(in[s].data());
        }
        for (std::uint64_t i = 0; i < o.count; ++i) {
          const T v = o.phase == phase::transfer
                          ? in[0][i]
                          : reduce_element<T>(ptrs.data(), static_cast<int>(ptrs.size()), i,
                                              o.finalize ? p.divisor : 1);
          std::memcpy(dst.data() + o.dst.offset + i * es, &v, es);
        }
      });
    }
  }
}

}  // namespace relay::test

#include "data.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace relay::bench {

namespace {

constexpr std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr bool is_unsigned(dtype t) {
  return t == dtype::uint8 || t == dtype::uint32 || t == dtype::uint64;
}

template <class T>
constexpr bool is_half = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

// A value every dtype holds exactly (a small integer, or one over a power of two) in type T.
template <class T>
T from_double(double v) {
  if constexpr (is_half<T>)
    return T::from_float(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

template <class T>
double to_double(T x) {
  if constexpr (is_half<T>)
    return x.to_float();
  else
    return static_cast<double>(x);
}

// Runs body(begin, end) over [0, count) in one slice per core; slices below 64 Ki elements are
// not worth a thread.
template <class F>
void for_slices(std::int64_t count, F&& body) {
  const auto cores = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  const std::int64_t slices = std::clamp<std::int64_t>(count / 65536, 1, cores);
  std::vector<std::thread> threads;
  for (std::int64_t s = 1; s < slices; ++s)
    threads.emplace_back([&, s] { body(count * s / slices, count * (s + 1) / slices); });
  body(0, count / slices);
  for (std::thread& t : threads)
    t.join();
}

}  // namespace

std::int64_t input_value(dtype type, std::uint64_t seed, int rank, std::int64_t index) {
  const std::uint64_t h =
      mix(mix(seed ^ (static_cast<std::uint64_t>(rank) << 56)) ^ static_cast<std::uint64_t>(index));
  const std::uint64_t top = h >> 32;
  return is_unsigned(type) ? static_cast<std::int64_t>((top * 8) >> 32)
                           : static_cast<std::int64_t>((top * 9) >> 32) - 4;
}

void fill_input(dtype type, std::uint64_t seed, int rank, std::int64_t elements, std::byte* dst) {
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    for_slices(elements, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const T x = from_double<T>(static_cast<double>(input_value(type, seed, rank, i)));
        std::memcpy(dst + i * static_cast<std::int64_t>(sizeof(T)), &x, sizeof(T));
      }
    });
  });
}

void poison(std::byte* dst, std::size_t bytes) {
  std::memset(dst, poison_byte, bytes);
}

check_result check_output(collective c, dtype type, reduce_op op, std::span<const int> ranks, int k,
                          std::int64_t n, std::uint64_t seed, const std::byte* out) {
  const int A = static_cast<int>(ranks.size());
  const std::int64_t length = output_elements(c, A, n);
  // The exact right value of output element x.
  auto expected = [&](std::int64_t x) -> std::int64_t {
    switch (c) {
      case collective::all_gather:
        return input_value(type, seed, ranks[static_cast<std::size_t>(x / n)], x % n);
      case collective::all_to_all:
        return input_value(type, seed, ranks[static_cast<std::size_t>(x / n)], k * n + x % n);
      case collective::allreduce:
      case collective::reduce_scatter: break;
    }
    const std::int64_t at = c == collective::reduce_scatter ? k * n + x : x;
    std::int64_t sum = 0;
    for (int rank : ranks)
      sum += input_value(type, seed, rank, at);
    return sum;
  };
  const bool average = op == reduce_op::avg && reduces(c);

  check_result result;
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    auto describe = [&](std::int64_t x, T got, double want) {
      return "rank " + std::to_string(ranks[static_cast<std::size_t>(k)]) + " element " +
             std::to_string(x) + ": got " + std::to_string(to_double(got)) + ", want " +
             std::to_string(want);
    };
    std::mutex lock;
    std::int64_t first_at = length;
    for_slices(length, [&](std::int64_t begin, std::int64_t end) {
      std::int64_t wrong = 0, first = -1;
      T first_got{};
      double first_want = 0;
      for (std::int64_t x = begin; x < end; ++x) {
        const std::int64_t sum = expected(x);
        // Integers: AVG truncates toward zero. Floating: exact, a small integer over A.
        const double want_value = !average                ? static_cast<double>(sum)
                                  : std::is_integral_v<T> ? static_cast<double>(sum / A)
                                                          : static_cast<double>(sum) / A;
        const T want = from_double<T>(want_value);
        T got;
        std::memcpy(&got, out + x * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
        if (std::memcmp(&got, &want, sizeof(T)) == 0) continue;
        if (wrong++ == 0) {
          first = x;
          first_got = got;
          first_want = want_value;
        }
      }
      if (wrong == 0) return;
      std::lock_guard guard(lock);
      result.wrong += wrong;
      if (first < first_at) {
        first_at = first;
        result.first = describe(first, first_got, first_want);
      }
    });
  });
  return result;
}

}  // namespace relay::bench

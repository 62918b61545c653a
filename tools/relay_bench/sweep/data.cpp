#include "sweep/data.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "relay/check/wire_reference.hpp"

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

// Rank `rank`'s draws: one mix per element, the rank's key mixed once.
struct draws {
  std::uint64_t key;
  bool unsigned_values;
  draws(dtype type, std::uint64_t seed, int rank)
      : key(mix(seed ^ (static_cast<std::uint64_t>(rank) << 56))),
        unsigned_values(is_unsigned(type)) {}
  std::int64_t operator()(std::int64_t index) const {
    const std::uint64_t top = mix(key ^ static_cast<std::uint64_t>(index)) >> 32;
    return unsigned_values ? static_cast<std::int64_t>((top * 8) >> 32)
                           : static_cast<std::int64_t>((top * 9) >> 32) - 4;
  }
};

// The draws of each rank of a group, in active order.
std::vector<draws> draws_of(dtype type, std::uint64_t seed, std::span<const int> ranks) {
  std::vector<draws> d;
  for (int r : ranks)
    d.emplace_back(type, seed, r);
  return d;
}

}  // namespace

std::int64_t input_value(dtype type, std::uint64_t seed, int rank, std::int64_t index) {
  return draws(type, seed, rank)(index);
}

void fill_input(dtype type, std::uint64_t seed, int rank, std::int64_t elements, std::byte* dst) {
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    const draws draw(type, seed, rank);
    std::array<T, 9> table{};  // value v at v + 4 (signed) or v (unsigned)
    const std::int64_t low = draw.unsigned_values ? 0 : -4;
    for (std::int64_t v = low; v < low + 9; ++v)
      table[static_cast<std::size_t>(v - low)] = from_double<T>(static_cast<double>(v));
    for_slices(elements, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i)
        std::memcpy(dst + i * static_cast<std::int64_t>(sizeof(T)),
                    &table[static_cast<std::size_t>(draw(i) - low)], sizeof(T));
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
  const std::vector<draws> rank_draws = draws_of(type, seed, ranks);
  const bool sums = reduces(c);
  const bool average = op == reduce_op::avg && sums;
  // What output element x must hold comes from one draw (all-gather, all-to-all) or the sum of
  // A draws; `total(x)` is that integer, and `table` maps it to the element's exact bits.
  auto total = [&](std::int64_t x) -> std::int64_t {
    if (!sums) {
      const std::int64_t j = x / n, y = x % n;
      return rank_draws[static_cast<std::size_t>(j)](c == collective::all_to_all ? k * n + y : y);
    }
    const std::int64_t at = c == collective::reduce_scatter ? k * n + x : x;
    std::int64_t sum = 0;
    for (const draws& d : rank_draws)
      sum += d(at);
    return sum;
  };
  const std::int64_t low = is_unsigned(type) ? 0 : -4 * (sums ? A : 1);
  const std::int64_t high = (is_unsigned(type) ? 7 : 4) * (sums ? A : 1);

  check_result result;
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    // Integers: AVG truncates toward zero. Floating: exact, a small integer over A.
    auto want_value = [&](std::int64_t t) {
      return !average                ? static_cast<double>(t)
             : std::is_integral_v<T> ? static_cast<double>(t / A)
                                     : static_cast<double>(t) / A;
    };
    std::vector<T> table;
    for (std::int64_t t = low; t <= high; ++t)
      table.push_back(from_double<T>(want_value(t)));
    std::mutex lock;
    std::int64_t first_at = length;
    for_slices(length, [&](std::int64_t begin, std::int64_t end) {
      std::int64_t wrong = 0, first = -1;
      for (std::int64_t x = begin; x < end; ++x) {
        const T& want = table[static_cast<std::size_t>(total(x) - low)];
        if (std::memcmp(out + x * static_cast<std::int64_t>(sizeof(T)), &want, sizeof(T)) == 0)
          continue;
        if (wrong++ == 0) first = x;
      }
      if (wrong == 0) return;
      std::lock_guard guard(lock);
      result.wrong += wrong;
      if (first < first_at) {
        first_at = first;
        T got;
        std::memcpy(&got, out + first * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
        result.first = "rank " + std::to_string(ranks[static_cast<std::size_t>(k)]) + " element " +
                       std::to_string(first) + ": got " + std::to_string(to_double(got)) +
                       ", want " + std::to_string(want_value(total(first)));
      }
    });
  });
  return result;
}

check_result check_output_fp8(collective c, dtype type, reduce_op op, std::span<const int> ranks,
                              int k, std::int64_t n, std::uint64_t seed, const std::byte* out,
                              fp8_format f, int hops) {
  const int A = static_cast<int>(ranks.size());
  const std::int64_t length = output_elements(c, A, n);
  const std::vector<draws> rank_draws = draws_of(type, seed, ranks);
  const bool sums = reduces(c);
  const long double contributions = sums ? A : 1;
  const long double divide = sums && op == reduce_op::avg ? A : 1;
  const long double largest = 4;  // every input's magnitude, at most (floating types: -4..4)
  check_result result;
  visit_dtype(type, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (fp8_wire_type<T>) {
      std::mutex lock;
      std::int64_t first_at = length;
      for_slices(length, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t wrong = 0, first = -1;
        double worst = 0;
        for (std::int64_t x = begin; x < end; ++x) {
          long double want = 0, magnitude = 0;
          if (!sums) {
            const std::int64_t j = x / n, y = x % n;
            want = static_cast<long double>(rank_draws[static_cast<std::size_t>(j)](
                c == collective::all_to_all ? k * n + y : y));
            magnitude = std::fabs(want);
          } else {
            const std::int64_t at = c == collective::reduce_scatter ? k * n + x : x;
            for (const draws& d : rank_draws) {
              const auto v = static_cast<long double>(d(at));
              want += v;
              magnitude += std::fabs(v);
            }
          }
          want /= divide;
          T got;
          std::memcpy(&got, out + x * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
          const long double value = to_double(got), error = std::fabs(value - want);
          if (want != 0) worst = std::max(worst, static_cast<double>(error / std::fabs(want)));
          const long double bound = reference::fp8_bound<T>(want, magnitude / divide, largest,
                                                            contributions, divide, f, hops);
          if (std::isfinite(static_cast<double>(value)) && error <= bound) continue;
          if (wrong++ == 0) first = x;
        }
        std::lock_guard guard(lock);
        result.max_relative_error = std::max(result.max_relative_error, worst);
        result.wrong += wrong;
        if (wrong > 0 && first < first_at) {
          first_at = first;
          T got;
          std::memcpy(&got, out + first * static_cast<std::int64_t>(sizeof(T)), sizeof(T));
          result.first = "rank " + std::to_string(ranks[static_cast<std::size_t>(k)]) +
                         " element " + std::to_string(first) + ": got " +
                         std::to_string(to_double(got)) + " (fp8 wire, outside its bound)";
        }
      });
    } else {
      result.wrong = length;
      result.first = "the fp8 wire takes float32, float16 or bfloat16 only";
    }
  });
  return result;
}

check_result check_output_on(wire_format wire, route r, collective c, dtype type, reduce_op op,
                             std::span<const int> ranks, int k, std::int64_t n, std::uint64_t seed,
                             const std::byte* out) {
  if (wire == wire_format::native) return check_output(c, type, op, ranks, k, n, seed, out);
  return check_output_fp8(c, type, op, ranks, k, n, seed, out, fp8_format_of(wire),
                          reference::wire_hops(c, r, static_cast<int>(ranks.size())));
}

}  // namespace relay::bench

// The bench's fast check against the library's naive reference (relay/check/reference.hpp): both
// accept the right outputs, and both count the same wrong elements.
#include "sweep/data.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "relay/check/reference.hpp"

using namespace relay;
using namespace relay::bench;

namespace {

// Right outputs by plain loops, from the bench's inputs (a third way to the same values).
std::vector<std::vector<std::byte>> right_outputs(collective c, dtype t, reduce_op op,
                                                  const std::vector<int>& group, std::int64_t n,
                                                  int ranks, std::uint64_t seed) {
  const int A = static_cast<int>(group.size());
  const int es = size_of(t);
  std::vector<std::vector<std::byte>> out(static_cast<std::size_t>(ranks));
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    auto store = [&](std::vector<std::byte>& b, std::int64_t at, double v) {
      T x{};
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        x = T::from_float(static_cast<float>(v));
      else
        x = static_cast<T>(v);
      std::memcpy(b.data() + at * es, &x, sizeof(T));
    };
    for (int k = 0; k < A; ++k) {
      auto& b = out[static_cast<std::size_t>(group[static_cast<std::size_t>(k)])];
      b.resize(static_cast<std::size_t>(output_elements(c, A, n) * es));
      for (std::int64_t x = 0; x < output_elements(c, A, n); ++x) {
        if (!reduces(c)) {
          const int from = group[static_cast<std::size_t>(x / n)];
          const std::int64_t at = c == collective::all_to_all ? k * n + x % n : x % n;
          store(b, x, static_cast<double>(input_value(t, seed, from, at)));
          continue;
        }
        std::int64_t sum = 0;
        for (int r : group)
          sum += input_value(t, seed, r, c == collective::reduce_scatter ? k * n + x : x);
        double v = static_cast<double>(sum);
        if (op == reduce_op::avg) v = std::is_integral_v<T> ? static_cast<double>(sum / A) : v / A;
        store(b, x, v);
      }
    }
  });
  return out;
}

// Adds one to the element at `p`: a wrong value every check must see.
void bump(dtype t, std::byte* p) {
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    T x;
    std::memcpy(&x, p, sizeof(T));
    if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
      x = T::from_float(x.to_float() + 1.0f);
    else
      x = static_cast<T>(x + 1);
    std::memcpy(p, &x, sizeof(T));
  });
}

}  // namespace

TEST_CASE("input values are small integers, signed and unsigned", "[bench]") {
  std::int64_t lo = 100, hi = -100;
  for (std::int64_t i = 0; i < 10000; ++i) {
    lo = std::min(lo, input_value(dtype::bfloat16, 1, 3, i));
    hi = std::max(hi, input_value(dtype::bfloat16, 1, 3, i));
    CHECK(input_value(dtype::uint8, 1, 3, i) >= 0);
    CHECK(input_value(dtype::uint8, 1, 3, i) <= 7);
  }
  CHECK(lo == -4);
  CHECK(hi == 4);
  // Ranks and seeds give different data.
  int same_rank = 0, same_seed = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    same_rank += input_value(dtype::int32, 1, 0, i) == input_value(dtype::int32, 1, 1, i);
    same_seed += input_value(dtype::int32, 1, 0, i) == input_value(dtype::int32, 2, 0, i);
  }
  CHECK(same_rank < 300);
  CHECK(same_seed < 300);
}

TEST_CASE("fill_input writes input_value in the dtype", "[bench]") {
  std::vector<std::byte> b(100 * 2);
  fill_input(dtype::bfloat16, 7, 2, 100, b.data());
  for (std::int64_t i = 0; i < 100; ++i) {
    bfloat16 x;
    std::memcpy(&x, b.data() + i * 2, 2);
    CHECK(x.to_float() == static_cast<float>(input_value(dtype::bfloat16, 7, 2, i)));
  }
}

TEST_CASE("check_output agrees with the reference, right and wrong", "[bench]") {
  const int ranks = 8;
  const std::vector<std::vector<int>> groups{{1, 6, 3, 4}};  // any ranks, in active order
  const std::int64_t n = 300;
  const std::uint64_t seed = 5;
  for (collective c : all_collectives)
    for (dtype t : {dtype::int8, dtype::uint32, dtype::float16, dtype::bfloat16, dtype::float64})
      for (reduce_op op : {reduce_op::sum, reduce_op::avg}) {
        INFO(name(c) << " " << name(t) << " " << name(op));
        const int es = size_of(t);
        std::vector<std::vector<std::byte>> inputs(ranks);
        for (int r : groups[0]) {
          inputs[static_cast<std::size_t>(r)].resize(
              static_cast<std::size_t>(input_elements(c, 4, n) * es));
          fill_input(t, seed, r, input_elements(c, 4, n),
                     inputs[static_cast<std::size_t>(r)].data());
        }
        auto outputs = right_outputs(c, t, op, groups[0], n, ranks, seed);
        const std::vector<std::int64_t> counts{n};
        CHECK(reference::check_outputs({c, t, op, groups, counts, inputs, outputs}).wrong == 0);
        for (int k = 0; k < 4; ++k)
          CHECK(
              check_output(
                  c, t, op, groups[0], k, n, seed,
                  outputs[static_cast<std::size_t>(groups[0][static_cast<std::size_t>(k)])].data())
                  .wrong == 0);

        // Rank 3 (active index 2): one element poisoned, one off by one unit.
        auto& out3 = outputs[3];
        std::memset(out3.data() + 17 * es, poison_byte, static_cast<std::size_t>(es));
        bump(t, out3.data() + 250 * es);
        const check_result mine = check_output(c, t, op, groups[0], 2, n, seed, out3.data());
        CHECK(mine.wrong == 2);
        CHECK_THAT(mine.first, Catch::StartsWith("rank 3 element 17: got"));
        CHECK(reference::check_outputs({c, t, op, groups, counts, inputs, outputs}).wrong == 2);
      }
}

TEST_CASE("the fp8 check takes right outputs, measures their error and counts wrong ones",
          "[bench][data][wire]") {
  // Right outputs have no error; one within the fp8 bound of A=8 sums of inputs in -4..4 (after
  // 2 hops on e4m3 about ((1 + 2^-4)^2 - 1) * A * 4 = 4.1, and 0.52 for one input) counts as
  // right with its relative error measured; one far outside it counts as wrong.
  const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
  const std::int64_t n = 1000;
  for (collective c : all_collectives) {
    INFO(name(c));
    auto out = right_outputs(c, dtype::float32, reduce_op::sum, group, n, 8, 5);
    check_result r = check_output_fp8(c, dtype::float32, reduce_op::sum, group, 0, n, 5,
                                      out[0].data(), fp8_format::e4m3, 2);
    CHECK(r.wrong == 0);
    CHECK(r.max_relative_error == 0.0);
    float x;
    std::memcpy(&x, out[0].data() + 4 * 17, 4);
    const float want = x, off = reduces(c) ? 2.0f : 0.25f;  // within 4.1 and 0.52
    x = want + off;
    std::memcpy(out[0].data() + 4 * 17, &x, 4);
    r = check_output_fp8(c, dtype::float32, reduce_op::sum, group, 0, n, 5, out[0].data(),
                         fp8_format::e4m3, 2);
    CHECK(r.wrong == 0);
    if (want != 0) CHECK(r.max_relative_error == Approx(off / std::fabs(want)));
    x = want + 100;
    std::memcpy(out[0].data() + 4 * 17, &x, 4);
    r = check_output_fp8(c, dtype::float32, reduce_op::sum, group, 0, n, 5, out[0].data(),
                         fp8_format::e4m3, 2);
    CHECK(r.wrong == 1);
    CHECK(r.first.find("element 17") != std::string::npos);
  }
}

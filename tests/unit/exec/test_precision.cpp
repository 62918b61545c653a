// fp16/bf16 reductions round once: the repro, the exact-sum suite on every reducing
// collective, A and route, the same suite catching double rounding when partials are stored in
// 16 bits (precision::native_partials, the old behaviour), and native partials within their
// documented bound.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/exec/host_executor.hpp"
#include "support/property_suite.hpp"

using namespace relay;

namespace {

// Issue 12's repro: N=8, groups {0,1,2,3} and {4,5,6,7}, bf16 reduce-scatter, rank r's elements
// all (2^-8, 1, 2^-8, 0)[r % 4]. Returns rank `who`'s output, `n` elements, as bit patterns.
std::vector<std::uint16_t> repro(precision p, std::int64_t n, int who) {
  const bfloat16 values[4] = {bfloat16::from_float(0x1p-8f), bfloat16::from_float(1.0f),
                              bfloat16::from_float(0x1p-8f), bfloat16::from_float(0.0f)};
  std::vector<std::vector<bfloat16>> send(8), recv(8);
  std::vector<buffer_view> s(8), r(8);
  for (std::size_t rank = 0; rank < 8; ++rank) {
    send[rank].assign(static_cast<std::size_t>(4 * n), values[rank % 4]);
    recv[rank].assign(static_cast<std::size_t>(n), bfloat16::from_float(-3.0f));  // poison
    s[rank] = {send[rank].data(), send[rank].size() * 2};
    r[rank] = {recv[rank].data(), recv[rank].size() * 2};
  }
  host_executor ex;
  options opt;
  opt.precision = p;
  const std::int64_t counts[2] = {n, n};
  const status st = reduce_scatter(ex, {{0, 1, 2, 3}, {4, 5, 6, 7}}, s, r, counts, dtype::bfloat16,
                                   reduce_op::sum, opt);
  REQUIRE(st);
  std::vector<std::uint16_t> bits(static_cast<std::size_t>(n));
  std::memcpy(bits.data(), recv[static_cast<std::size_t>(who)].data(), bits.size() * 2);
  return bits;
}

constexpr std::uint16_t bf16_one = 0x3F80;           // 1.0
constexpr std::uint16_t bf16_one_plus_ulp = 0x3F81;  // 1 + 2^-7, the exact sum

}  // namespace

TEST_CASE("issue 12's repro: bf16 reduce-scatter A=4 rounds once by default", "[exec][precision]") {
  const std::int64_t n = 4096;  // c = 512: the helpers' slices are [0, 2048) of each block
  for (int rank : {0, 1, 2, 4, 6}) {
    const std::vector<std::uint16_t> got = repro(precision::fp32_partials, n, rank);
    for (std::int64_t i = 0; i < n; ++i)
      if (got[static_cast<std::size_t>(i)] != bf16_one_plus_ulp)
        FAIL("rank " << rank << " element " << i << " holds bits " << got[i]);
  }
}

TEST_CASE("issue 12's repro with 16-bit partials: rank 0 gets 1.0 in half its elements",
          "[exec][precision]") {
  // Owner 0's helpers sum 1 + 2^-8 + 0 (a tie: 1.0), then 2^-8 is added (a tie again: 1.0), in
  // the H*c = 2048 helper elements; the direct region rounds once. Owner 1's partial 2^-7 is
  // exact, so rank 1 is right everywhere.
  const std::int64_t n = 4096;
  const std::vector<std::uint16_t> rank0 = repro(precision::native_partials, n, 0);
  for (std::int64_t i = 0; i < n; ++i)
    CHECK(rank0[static_cast<std::size_t>(i)] == (i < 2048 ? bf16_one : bf16_one_plus_ulp));
  const std::vector<std::uint16_t> rank1 = repro(precision::native_partials, n, 1);
  for (std::uint16_t b : rank1)
    CHECK(b == bf16_one_plus_ulp);
}

TEST_CASE("exact sums come out exact on every reducing collective, A and route",
          "[exec][precision][property]") {
  host_executor ex;
  const std::vector<testing::property_case> cases =
      testing::exact_sum_cases(precision::fp32_partials, 20261201);
  CHECK(cases.size() > 150);
  int failures = 0;
  for (const testing::property_case& c : cases) {
    const testing::property_result r = testing::run_case(ex, c);
    if (!r.ok && failures++ < 10) FAIL_CHECK(r.failure);
  }
  CHECK(failures == 0);
}

TEST_CASE("the exact-sum suite fails where partials are rounded to 16 bits (the old code)",
          "[exec][precision][property]") {
  // native_partials stores every partial as the old code did: the suite must fail exactly on
  // the schedules with partial sums (reduce-scatter on the relay and pipelined routes with
  // A >= 4) and pass on every other, which never round twice either way.
  host_executor ex;
  int with_partials = 0;
  for (const testing::property_case& c :
       testing::exact_sum_cases(precision::native_partials, 20261201)) {
    const bool partials = c.coll == collective::reduce_scatter &&
                          (c.route == route::relay || c.route == route::pipelined) && c.active >= 4;
    with_partials += partials ? 1 : 0;
    const testing::property_result r = testing::run_case(ex, c);
    INFO(c.describe() << ": " << r.failure);
    CHECK(r.ok == !partials);
  }
  // (A,N) in {(4,8),(4,16),(8,16)} x 2 dtypes x 2 ops x (relay fused, relay single, pipelined)
  CHECK(with_partials == 36);
}

TEST_CASE("16-bit partials stay within the documented bound", "[exec][precision][property]") {
  // Random data in [-1, 1] and the adversarial exact-sum data, checked against the fp64 (long
  // double) reference with the native-partials bound of relay/check/reference.hpp.
  host_executor ex;
  std::mt19937_64 rng(20261202);
  int failures = 0, checked = 0;
  for (testing::property_case c : testing::exact_sum_cases(precision::native_partials, 7)) {
    for (bool adversarial : {false, true}) {
      c.exact_sums = adversarial;
      c.bound_only = true;
      c.seed = rng();
      const testing::property_result r = testing::run_case(ex, c);
      ++checked;
      if (!r.ok && failures++ < 10) FAIL_CHECK(r.failure);
    }
  }
  CHECK(checked > 300);
  CHECK(failures == 0);
}

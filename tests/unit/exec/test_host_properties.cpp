// The property suite on the host executor: RELAY_PROPERTY_CASES cases (default 10,000) from
// RELAY_PROPERTY_SEED (default fixed). A failure prints the case, seed included, to replay it.
#include <array>
#include <cstdlib>
#include <random>

#include <catch2/catch.hpp>

#include "relay/exec/host_executor.hpp"
#include "support/property_suite.hpp"

using namespace relay;

namespace {
std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}
}  // namespace

TEST_CASE("host executor equals the naive reference on random cases", "[exec][property]") {
  const std::uint64_t cases = env_or("RELAY_PROPERTY_CASES", 10'000);
  const std::uint64_t seed = env_or("RELAY_PROPERTY_SEED", 20261129);
  std::mt19937_64 rng(seed);
  host_executor ex;
  std::uint64_t failures = 0;
  for (std::uint64_t i = 0; i < cases; ++i) {
    const testing::property_case c = testing::random_case(rng);
    const testing::property_result r = testing::run_case(ex, c);
    if (!r.ok && failures++ < 10)
      FAIL_CHECK("case " << i << " (suite seed " << seed << "): " << r.failure);
  }
  CHECK(failures == 0);
}

TEST_CASE("the property suite catches a wrong result", "[exec][property]") {
  // An executor that runs the plan, then flips a high bit of one output element (an exponent bit
  // of a float, a high bit of an integer): the suite must notice.
  struct flipping_executor : host_executor {
    status run(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
      status s = host_executor::run(p, in, out);
      const auto r = static_cast<std::size_t>(p.groups[0][0]);
      if (s && p.output_bytes[r] > 0)
        static_cast<unsigned char*>(out[r].data)[p.element_size() - 1] ^= 0x40;
      return s;
    }
  };
  flipping_executor ex;
  std::mt19937_64 rng(7);
  int caught = 0, nonempty = 0;
  const int cases = testing::property_cases(200);
  for (int i = 0; i < cases; ++i) {
    const testing::property_case c = testing::random_case(rng);
    if (c.counts[0] == 0) continue;
    ++nonempty;
    if (!testing::run_case(ex, c).ok) ++caught;
  }
  CHECK(nonempty > cases / 2);
  CHECK(caught == nonempty);
}

TEST_CASE("the property suite draws pipelined groups of A=4 for every collective",
          "[exec][property]") {
  // random_case's own draws, not a run: of 2,000 cases, some pipeline a single group of 4 (about
  // 1 in 20: single, A=4 below N, then 1 in 3), in place and out of place, for each collective.
  std::mt19937_64 rng(20261129);
  std::array<int, 4> per_collective{};
  int in_place = 0;
  for (int i = 0; i < 2000; ++i) {
    const testing::property_case c = testing::random_case(rng);
    if (c.route != route::pipelined || c.active != 4) continue;
    ++per_collective[static_cast<std::size_t>(c.coll)];
    in_place += c.in_place ? 1 : 0;
  }
  for (int n : per_collective)
    CHECK(n >= 10);
  CHECK(in_place >= 10);
}

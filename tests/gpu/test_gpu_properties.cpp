// The CPU property suite (tests/support/property_suite.hpp) on the GPU executor: random
// collectives, A, N, modes, routes, dtypes, operators, in/out of place, counts and group layouts
// through relay's collective calls, checked against the naive reference, with poisoned outputs
// and canaries. All ranks on device 0; across devices too where there are several.
//
// RELAY_PROPERTY_CASES (default 2,000 for the default executor, a quarter of that for each other
// engine and lane mode) and RELAY_PROPERTY_SEED replay a run; a failure prints its case.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "gpu_support.hpp"
#include "relay/gpu/gpu_executor.hpp"
#include "support/property_suite.hpp"

using namespace relay;

namespace {

using test::device_count;
using test::env_or;

// One executor per rank count (a case draws N = 4, 8 or 16), ranks spread over `devices`.
class executors {
 public:
  executors(int devices, gpu_options o)
      : devices_(devices), options_(o), by_ranks_(max_ranks + 1) {}
  gpu_executor& operator()(int ranks) {
    std::unique_ptr<gpu_executor>& e = by_ranks_[static_cast<std::size_t>(ranks)];
    if (!e) {
      std::vector<int> map;
      for (int r = 0; r < ranks; ++r)
        map.push_back(r % devices_);
      e = std::make_unique<gpu_executor>(map, options_);
    }
    return *e;
  }

 private:
  int devices_;
  gpu_options options_;
  // Not a std::map: HIP 5.2's clang crashes on a map node holding a unique_ptr.
  std::vector<std::unique_ptr<gpu_executor>> by_ranks_;
};

void run_suite(int devices, gpu_options o, std::uint64_t cases) {
  const std::uint64_t seed = env_or("RELAY_PROPERTY_SEED", 20261129);
  std::mt19937_64 rng(seed);
  executors ex(devices, o);
  std::uint64_t failures = 0;
  for (std::uint64_t i = 0; i < cases; ++i) {
    const testing::property_case c = testing::random_case(rng);
    gpu_executor& e = ex(c.ranks);
    REQUIRE(e.init_status().ok());
    const testing::property_result r = testing::run_case(e, c);
    if (!r.ok && failures++ < 10)
      FAIL_CHECK("case " << i << " (suite seed " << seed << "): " << r.failure);
  }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("GPU executor equals the naive reference on random cases", "[gpu][property]") {
  const std::uint64_t cases = env_or("RELAY_PROPERTY_CASES", 2000);
  SECTION("kernel engine, one stream per device, all ranks on device 0") {
    run_suite(1, {}, cases);
  }
  SECTION("memcpy engine, one stream per rank, all ranks on device 0") {
    run_suite(1, {copy_engine::memcpy, stream_mode::per_rank, true}, cases / 4 + 1);
  }
  SECTION("kernel engine, one stream per rank, runs not synchronized, all ranks on device 0") {
    run_suite(1, {copy_engine::kernel, stream_mode::per_rank, false}, cases / 4 + 1);
  }
  SECTION("kernel engine across every device") {
    if (device_count() < 2) {
      WARN("one GPU: the multi-device property run is skipped");
      return;
    }
    run_suite(device_count(), {}, cases / 2 + 1);
  }
}

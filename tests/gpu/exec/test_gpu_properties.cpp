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

#include "gpu/gpu_support.hpp"
#include "gpu/host_bits.hpp"
#include "relay/exec/gpu/executor.hpp"
#include "relay/exec/host_executor.hpp"
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

// `shape`, where given, changes each drawn case (testing::make_fp8).
void run_suite(int devices, gpu_options o, std::uint64_t cases,
               void (*shape)(testing::property_case&) = nullptr) {
  const std::uint64_t seed = env_or("RELAY_PROPERTY_SEED", 20261129);
  std::mt19937_64 rng(seed);
  executors ex(devices, o);
  std::uint64_t failures = 0;
  for (std::uint64_t i = 0; i < cases; ++i) {
    testing::property_case c = testing::random_case(rng);
    if (shape != nullptr) shape(c);
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

TEST_CASE("GPU executor with mesh emulation equals the naive reference on random cases",
          "[gpu][property][pacing]") {
  // Pacing moves the same bytes later, never other bytes (gpu_options::emulate_mesh): the suite
  // on an emulated mesh of 20 GB/s links, one stream per device and one per rank.
  const std::uint64_t cases = env_or("RELAY_PROPERTY_CASES", 2000) / 8 + 1;
  gpu_options o;
  o.emulate_mesh = 20'000'000'000;
  run_suite(1, o, cases);
  o.streams = stream_mode::per_rank;
  o.synchronize = false;
  run_suite(1, o, cases);
}

TEST_CASE("GPU executor: exact sums come out exact, 16-bit partials round twice",
          "[gpu][property][precision]") {
  // tests/unit/exec/test_precision.cpp on the GPU: the mixed-width reduce path of the kernel
  // (fp32 partial sums of fp16/bf16) must round once, like the host executor; with
  // native_partials exactly the reduce-scatter cases with A >= 4 on the relay and pipelined
  // routes (the schedules with partial sums) must fail.
  executors ex(1, {});
  for (precision p : {precision::fp32_partials, precision::native_partials})
    for (const testing::property_case& c : testing::exact_sum_cases(p, 20261201)) {
      gpu_executor& e = ex(c.ranks);
      REQUIRE(e.init_status().ok());
      const bool partials =
          p == precision::native_partials && c.coll == collective::reduce_scatter &&
          (c.route == route::relay || c.route == route::pipelined) && c.active >= 4;
      const testing::property_result r = testing::run_case(e, c);
      INFO(c.describe() << ": " << r.failure);
      CHECK(r.ok == !partials);
    }
}

namespace {

// `coll` on the GPU executor, N ranks all on device 0, against the host executor's bytes.
void check_host_bits(collective coll, dtype t, int A, int N, const options& opt,
                     std::mt19937_64& rng) {
  gpu_executor gpu(std::vector<int>(static_cast<std::size_t>(N), 0));
  REQUIRE(gpu.init_status().ok());
  test::check_host_bits(gpu, coll, t, A, opt, rng);
}

}  // namespace

TEST_CASE("GPU executor: fp32 partial sums give the host executor's bits on random data",
          "[gpu][precision]") {
  // The mixed-width path (reduce_element_mixed in the reduce kernel) against the host executor:
  // reduce-scatter on the relay route with partial sums, fp16 and bf16, random values in [-1, 1].
  std::mt19937_64 rng(20261203);
  for (dtype t : {dtype::float16, dtype::bfloat16})
    for (auto [A, N] : {std::pair{4, 8}, std::pair{8, 16}, std::pair{4, 16}})
      check_host_bits(collective::reduce_scatter, t, A, N, {}, rng);
}

TEST_CASE("GPU executor on the fp8 wire gives the host executor's bits", "[gpu][fp8]") {
  // The fp8 kernels, batched per lane (quantize lists, dequantize lists), against the host
  // executor's reference path: byte for byte on finite data, every element type (fp32 partial
  // sums crossing the wire where reduce-scatter has them, A >= 4 on the relay route), both
  // encodings.
  std::mt19937_64 rng(20261207);
  for (wire_format w : {wire_format::fp8_e4m3, wire_format::fp8_e4m3_fnuz})
    for (dtype t : {dtype::float32, dtype::float16, dtype::bfloat16})
      for (collective coll : {collective::allreduce, collective::reduce_scatter})
        for (auto [A, N] : {std::pair{2, 8}, std::pair{4, 8}, std::pair{4, 16}}) {
          options opt;
          opt.wire = w;
          opt.wire_threshold = 0;
          INFO((w == wire_format::fp8_e4m3 ? "e4m3" : "e4m3_fnuz"));
          check_host_bits(coll, t, A, N, opt, rng);
        }
}

TEST_CASE("GPU executor on the fp8 wire: random and adversarial cases within the bound",
          "[gpu][property][fp8]") {
  // tests/unit/exec/test_fp8_wire.cpp's suite on the GPU executor: random cases made floating, on
  // both encodings, over the five data kinds (uniform, a wide range in every block, subnormals,
  // NaN and infinities, magnitudes near the type's largest), forced to fp8 at every count.
  run_suite(1, {}, env_or("RELAY_PROPERTY_CASES", 2000) / 4 + 1, testing::make_fp8);
}

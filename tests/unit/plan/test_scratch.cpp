// The spec's worked helper sizes, as constants.
#include "relay/plan/scratch.hpp"

#include <catch2/catch.hpp>

using namespace relay;

TEST_CASE("the spec's passthrough helper sizes", "[plan][scratch]") {
  // Production shape: 12,002,982,488 elements, A=2, numChunks 7:
  // align_down(1,714,711,784, 128) = 1,714,711,680, times 2.
  STATIC_REQUIRE(passthrough_helper_elements(12'002'982'488, 2, 7) == 3'429'423'360);
  // At the exact alignment boundary: 896,000 / 7 = 128,000 = 1000 * 128.
  STATIC_REQUIRE(passthrough_helper_elements(896'000, 2, 7) == 256'000);
  STATIC_REQUIRE(passthrough_helper_elements(895'999, 2, 7) == 255'744);  // one short: 999 units
  // A rank that helps three groups holds three such buffers.
  STATIC_REQUIRE(3 * passthrough_helper_elements(12'002'982'488, 2, 7) == 10'288'270'080);
  // A=4, numChunks 5: align_down(2,400,596,497, 128) = 2,400,596,480, times 4.
  STATIC_REQUIRE(passthrough_helper_elements(12'002'982'488, 4, 5) == 9'602'385'920);
  // The min() clamp, and the zero-chunk case.
  STATIC_REQUIRE(passthrough_helper_elements(100, 8, 1, 1) == 100);
  STATIC_REQUIRE(passthrough_helper_elements(800, 2, 7) == 0);  // 114 < 128
}

TEST_CASE("relay's own helper and active scratch", "[plan][scratch]") {
  const std::int64_t n = 12'002'982'488, c = 1'500'372'736;  // align_down(n/8, 128)
  CHECK(helper_scratch_elements({collective::allreduce, 2, 8}, n) == 2 * c);
  CHECK(helper_scratch_elements({collective::all_gather, 4, 8}, n) == 4 * c);
  CHECK(helper_scratch_elements({collective::reduce_scatter, 4, 8}, n) == 12 * c);
  CHECK(helper_scratch_elements({collective::all_to_all, 2, 8, mode::fused, route::direct}, n) ==
        0);
  // all-to-all A=4: pieces of align_down(n/10, 128) = 1,200,298,240; 12 of them.
  CHECK(helper_scratch_elements({collective::all_to_all, 4, 8}, n) ==
        std::int64_t{12} * 1'200'298'240);
  // reduce-scatter A=2 active: the helper slices (6c) plus one direct region (n - 6c).
  CHECK(active_scratch_elements({collective::reduce_scatter, 2, 8}, n) == n);
  CHECK(helper_scratch_elements({collective::allreduce, 3, 8}, n) == -1);
}

TEST_CASE("partial sums and scratch bytes", "[plan][scratch][precision]") {
  const schedule_spec rs4{collective::reduce_scatter, 4, 8};
  // n = 1,024,000: c = 128,000; a helper holds 4 partials of c, an owner H = 4 returned ones.
  const std::int64_t n = 1'024'000;
  CHECK(partial_sum_elements(rs4, false, n) == 512'000);
  CHECK(partial_sum_elements(rs4, true, n) == 512'000);
  CHECK(partial_sum_elements({collective::reduce_scatter, 2, 8}, false, n) == 0);
  CHECK(partial_sum_elements({collective::allreduce, 4, 8}, false, n) == 0);
  CHECK(partial_sum_elements({collective::allreduce, 3, 8}, false, n) == -1);
  // Helper: 12c bf16 slices (3,072,000 bytes) + 4c fp32 partials (2,048,000 bytes).
  CHECK(helper_scratch_bytes(rs4, n, dtype::bfloat16) == 5'120'000);
  CHECK(helper_scratch_bytes(rs4, n, dtype::bfloat16, precision::native_partials) == 4'096'000);
  CHECK(helper_scratch_bytes(rs4, n, dtype::float16) == 5'120'000);
  CHECK(helper_scratch_bytes(rs4, n, dtype::float32) == 8'192'000);
  // Active: 3 direct regions of n - 4c = 512,000 bf16 + 4c fp32 partials.
  CHECK(active_scratch_bytes(rs4, n, dtype::bfloat16) == 3'072'000 + 2'048'000);
  // Each area is rounded up to 256 bytes, as make_plan lays it out: n = 1 has no relay at all,
  // and the A=2 active's one direct region of 1 bf16 element takes 256 bytes.
  CHECK(active_scratch_bytes({collective::reduce_scatter, 2, 8}, 1, dtype::bfloat16) == 256);
  CHECK(helper_scratch_bytes(rs4, 1, dtype::bfloat16) == 0);
  CHECK(helper_scratch_bytes({collective::allreduce, 3, 8}, n, dtype::bfloat16) == -1);
}

// The prediction column: the cost model's alpha-beta time, worked out by hand for MI300X
// (48 GB/s a link, 10 us a step, no per-operation latency).
#include "sweep/predict.hpp"

#include <catch2/catch.hpp>

using namespace relay;
using namespace relay::bench;

// The link model alone, as worked out below (the memory terms: tests/unit/cost/test_link_cost.cpp).
constexpr topology mi300x_links = links_only(mi300x);

TEST_CASE("call_groups: consecutive ranks, one group in single mode", "[bench]") {
  CHECK(call_groups({collective::allreduce, 2, 8, run_mode::fused}) ==
        std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(call_groups({collective::allreduce, 4, 8, run_mode::parallel}) ==
        std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(call_groups({collective::allreduce, 4, 8, run_mode::single}) ==
        std::vector<std::vector<int>>{{0, 1, 2, 3}});
}

// A=2 relay: 2 steps, and every link direction carries one chunk of n/8 per step in fused mode.
// Four single-group relays at once (parallel) load each link the same way: a rank's scatter in
// step 1 goes to its helpers, their forwards in step 2 come back, and the direction a->b carries
// one group's chunk per step. So all three modes predict 2*10 us + 2*(n/8)*2 B / 48 GB/s, which
// for n = 960000 is 20 us + 10 us.
TEST_CASE("predict_seconds: A=2 allreduce on MI300X", "[bench]") {
  for (run_mode m : {run_mode::fused, run_mode::parallel, run_mode::single}) {
    const call_shape s{collective::allreduce, 2, 8, m};
    INFO(name(m));
    CHECK(predict_seconds(s, route::relay, mi300x_links, 960000, 2) == Approx(30e-6));
    // direct: 1 step, n on the active-to-active link: 10 us + 960000*2 B / 48 GB/s = 50 us.
    CHECK(predict_seconds(s, route::direct, mi300x_links, 960000, 2) == Approx(50e-6));
  }
}

// Parallel on a switch: each GPU's port carries every group's traffic. All-gather A=2, direct:
// each active sends n to its partner; four groups at once still give each port n in and n out:
// 10 us + 2n B / 450 GB/s.
TEST_CASE("predict_seconds: parallel direct on a switched fabric", "[bench]") {
  const call_shape s{collective::all_gather, 2, 8, run_mode::parallel};
  CHECK(predict_seconds(s, route::direct, h200_nvswitch, 450000000, 2) == Approx(10e-6 + 2e-3));
}

TEST_CASE("resolve_route: auto follows the prediction, the rest as asked", "[bench]") {
  const call_shape fused{collective::allreduce, 2, 8, run_mode::fused};
  const call_shape parallel{collective::allreduce, 2, 8, run_mode::parallel};
  // The crossover is at n = 320000 (see tests/unit/cost/test_route.cpp).
  for (const call_shape& s : {fused, parallel}) {
    CHECK(resolve_route(s, route_choice::automatic, mi300x_links, 300000, 2) == route::direct);
    CHECK(resolve_route(s, route_choice::automatic, mi300x_links, 340000, 2) == route::relay);
    CHECK(resolve_route(s, route_choice::relay, mi300x_links, 1, 2) == route::relay);
    CHECK(resolve_route(s, route_choice::legacy, mi300x_links, 1, 2) == route::legacy);
  }
  CHECK(resolve_route(fused, route_choice::automatic, h200_nvswitch, 1 << 28, 2) == route::direct);
}

// Reduce-scatter A=4 on the relay route carries fp32 partial sums of bf16 in its second step
// (docs/cost-model.md): 3n/8 + n/4 at twice the width = 5n/8 of link time, against n/2 when
// partials are priced as elements. For n = 960000 bf16 on MI300X: 2 * 10 us + 5/8 * 1920000 B /
// 48 GB/s = 20 + 25 us; priced as elements 20 + 20 us. The direct route has no partials.
TEST_CASE("predict_seconds: fp32 partial sums priced at their width", "[bench]") {
  const call_shape s{collective::reduce_scatter, 4, 8, run_mode::fused};
  CHECK(predict_seconds(s, route::relay, mi300x_links, 960000, 2, widths_of(dtype::bfloat16)) ==
        Approx(45e-6));
  CHECK(predict_seconds(s, route::relay, mi300x_links, 960000, 2) == Approx(40e-6));
  CHECK(predict_seconds(s, route::relay, mi300x_links, 960000, 4, widths_of(dtype::float32)) ==
        Approx(20e-6 + 0.5 * 3840000 / 48e9));
}

// On the wire the plans took. Natively the same as above. On an fp8 wire (cost/wire.hpp), by
// hand for A=2 relay, bf16, n = 960000 on MI300X's links (its memory too fast to count): each
// of 2 steps carries n/8 elements a link at 33/32 bytes (2 * 123750 B / 48 GB/s = 5.15625 us) and
// adds a quantize and a dequantize pass of 3 us: 20 + 5.15625 + 12 us. Direct: one step of n at
// 33/32 bytes (20.625 us) and its two passes: 10 + 20.625 + 6 us. Parallel stays native.
TEST_CASE("predict_seconds: the fp8 wire's prediction where the plans took it", "[bench][wire]") {
  const call_shape fused{collective::allreduce, 2, 8, run_mode::fused};
  for (wire_format fp8 : {wire_format::fp8_e4m3, wire_format::fp8_e4m3_fnuz}) {
    INFO(name(fp8));
    CHECK(predict_seconds(fused, route::relay, mi300x_links, 960000, dtype::bfloat16, fp8) ==
          Approx(37.15625e-6));
    CHECK(predict_seconds(fused, route::direct, mi300x_links, 960000, dtype::bfloat16, fp8) ==
          Approx(36.625e-6));
    const call_shape parallel{collective::allreduce, 2, 8, run_mode::parallel};
    CHECK(predict_seconds(parallel, route::relay, mi300x_links, 960000, dtype::bfloat16, fp8) ==
          Approx(30e-6));
  }
  CHECK(predict_seconds(fused, route::relay, mi300x_links, 960000, dtype::bfloat16,
                        wire_format::native) == Approx(30e-6));
}

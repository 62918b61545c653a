// choose_route against crossovers worked out by hand on the link model.
#include "relay/cost/route.hpp"

#include <catch2/catch.hpp>
#include <cmath>

using namespace relay;

// The link model alone, as the crossovers below are worked out: MI300X with a memory too fast to
// matter (test_link_cost.cpp checks the memory terms by hand).
constexpr topology mi300x_links = links_only(mi300x);

// MI300X (48 GB/s a link, 10 us a step), allreduce A=2 N=8 fused, bf16 (2 bytes):
//   relay  2 steps, n/4 on the busiest link:  20 us + (n/4)*2 B / 48 GB/s = 20 us + n / 96e9 s
//   direct 1 step,  n on the busiest link:    10 us +  n*2 B    / 48 GB/s = 10 us + n / 24e9 s
// equal where 10 us = n/24e9 - n/96e9 = n/32e9, at n = 320000.
TEST_CASE("choose_route: the allreduce A=2 crossover on MI300X", "[cost][route]") {
  const schedule_spec s{collective::allreduce, 2, 8, mode::fused, route::legacy};
  CHECK(choose_route(s, mi300x_links, 300000, 2) == route::direct);
  CHECK(choose_route(s, mi300x_links, 340000, 2) == route::relay);
  CHECK(choose_route(s, mi300x_links, 1 << 28, 2) == route::relay);
  CHECK(choose_route(s, mi300x_links, 0, 2) == route::direct);

  schedule_spec relay_spec = s, direct_spec = s;
  relay_spec.route = route::relay;
  direct_spec.route = route::direct;
  CHECK(predicted_seconds(relay_spec, mi300x_links, 960000, 2) == Approx(30e-6));
  CHECK(predicted_seconds(direct_spec, mi300x_links, 960000, 2) == Approx(50e-6));
}

// On NVSwitch a GPU's port is the limit: the A=2 relay sends 7 chunks of n/8 in each of its two
// steps (7n/4 in all) where direct sends n, so relaying never pays there.
TEST_CASE("choose_route: direct at every size on a switched fabric", "[cost][route]") {
  const schedule_spec s{collective::all_gather, 2, 8};
  for (std::int64_t n : {std::int64_t{1024}, std::int64_t{1} << 20, std::int64_t{1} << 30})
    CHECK(choose_route(s, h200_nvswitch, n, 2) == route::direct);
}

TEST_CASE("choose_route: a spec with no schedule", "[cost][route]") {
  const schedule_spec bad{collective::allreduce, 3, 8};  // A must be a power of two
  CHECK(std::isinf(predicted_seconds(bad, mi300x_links, 1 << 20, 4)));
  CHECK(choose_route(bad, mi300x_links, 1 << 20, 4) == route::direct);
}

// Usable in constant expressions, as the rest of the cost layer.
static_assert(choose_route({collective::reduce_scatter, 2, 8}, mi350x, 1 << 26, 2) == route::relay);

TEST_CASE("choose_schedule deepens the pipeline as messages grow", "[cost][route]") {
  // All-gather, one group of A=2 on MI300X (48 GB/s, 10 us a step), X = n * 2 bytes:
  //   direct 10 us + X/B; relay 20 us + X/(4B); pipelined T: 10(T+1) us + (T+1)/(7T+1) X/B.
  // By hand: direct < 640 KB < relay < 9.6 MB < T=2 < 34.8 MB < T=4 < 132 MB < T=8 < 515 MB
  // < T=16 < 1.74 GB < T=32.
  const schedule_spec s{collective::all_gather, 2, 8, mode::single};
  auto pick = [&](std::int64_t bytes) { return choose_schedule(s, mi300x_links, bytes / 2, 2); };
  CHECK(pick(64 << 10).route == route::direct);
  CHECK(pick(2 << 20).route == route::relay);
  CHECK(pick(2 << 20).tiles == 0);
  for (auto [bytes, tiles] : {std::pair<std::int64_t, int>{20 << 20, 2},
                              {64 << 20, 4},
                              {256 << 20, 8},
                              {std::int64_t{1} << 30, 16}}) {
    INFO(bytes << " bytes");
    CHECK(pick(bytes).route == route::pipelined);
    CHECK(pick(bytes).tiles == tiles);
  }
  // Fused groups never pipeline: every link direction is busy already.
  const schedule_spec fused{collective::all_gather, 2, 8, mode::fused};
  CHECK(choose_schedule(fused, mi300x_links, std::int64_t{1} << 29, 2).route == route::relay);
  // On a switch nothing beats direct.
  CHECK(choose_schedule(s, h200_nvswitch, std::int64_t{1} << 29, 2).route == route::direct);
}

// bf16 reduce-scatter A=4 N=8 fused on MI300X, X = n * 2 bytes, B = 48 GB/s:
//   relay, fp32 partials: 20 us + (5n/8) X/(nB)  = 20 us + n / 38.4e9 s  (step 2 returns 2c)
//   relay, 16-bit partials: 20 us + (n/2) X/(nB) = 20 us + n / 48e9 s
//   direct:               10 us + n X/(nB)       = 10 us + n / 24e9 s
// crossovers: n/24e9 - n/38.4e9 = n/64e9 = 10 us at n = 640,000; n/48e9 = 10 us at n = 480,000.
TEST_CASE("choose_route prices fp32 partial sums at their width", "[cost][route][precision]") {
  const schedule_spec s{collective::reduce_scatter, 4, 8};
  const element_widths wide = widths_of(dtype::bfloat16);
  const element_widths narrow = widths_of(dtype::bfloat16, precision::native_partials);
  CHECK(wide.partial == ratio{2});
  CHECK(narrow.partial == ratio{1});
  CHECK(choose_route(s, mi300x_links, 560'000, 2, narrow) == route::relay);
  CHECK(choose_route(s, mi300x_links, 560'000, 2, wide) == route::direct);
  CHECK(choose_route(s, mi300x_links, 700'000, 2, wide) == route::relay);
  CHECK(choose_route(s, mi300x_links, 560'000, 2) == route::relay);  // no widths: element width
  CHECK(predicted_seconds(s, mi300x_links, 3'840'000, 2, wide) == Approx(120e-6));
  CHECK(predicted_seconds(s, mi300x_links, 3'840'000, 2, narrow) == Approx(100e-6));
  CHECK(choose_schedule(s, mi300x_links, 560'000, 2, wide).route == route::direct);
}

TEST_CASE("choose_schedule pipelines a single group of A=4 by size", "[cost][route]") {
  // MI300X (48 GB/s a link, 10 us a step), bf16, X = 2n bytes, u = X/B. All-gather, one group of
  // 4 on 8 GPUs (schedules.md): direct 10 us + u; relay 20 us + u/2; pipelined T:
  // 10(T+1) us + (3T+1)/(7T+1) u (7/15, 13/29, 25/57, 49/113, 97/225 for T = 2..32).
  // Crossovers by hand: direct/relay u = 20 us (X = 0.96 MB); relay/T=2 10 = u/30, u = 300 us
  // (14.4 MB); T=2/T=4 20 = 8u/435 (52.2 MB); T=4/T=8 40 = 16u/1653 (198.4 MB); T=8/T=16
  // 80 = 32u/6441 (772.9 MB); T=16/T=32 160 = 64u/25425 (3.05 GB).
  const schedule_spec ag{collective::all_gather, 4, 8, mode::single};
  auto pick = [](const schedule_spec& s, std::int64_t bytes) {
    return choose_schedule(s, mi300x_links, bytes / 2, 2);
  };
  CHECK(pick(ag, 512'000).route == route::direct);
  CHECK(pick(ag, 4'000'000).route == route::relay);
  for (auto [bytes, tiles] : {std::pair<std::int64_t, int>{32'000'000, 2},
                              {128'000'000, 4},
                              {512'000'000, 8},
                              {1'500'000'000, 16},
                              {4'000'000'000, 32}}) {
    INFO(bytes << " bytes");
    CHECK(pick(ag, bytes).route == route::pipelined);
    CHECK(pick(ag, bytes).tiles == tiles);
  }
  // Allreduce: direct (reduce-scatter + all-gather) 20 us + u/2 never beats relay 20 us + u/4;
  // pipelined T: 10(T+1) us + (T+1)/(6T+1) u (3/13, 1/5, 9/49, 17/97 for T = 2..16).
  // Crossovers: relay/T=2 10 = u/52, u = 520 us (24.96 MB); T=2/T=4 20 = 2u/65 (31.2 MB);
  // T=4/T=8 40 = 4u/245 (117.6 MB); T=8/T=16 80 = 40u/4753 (456.3 MB).
  const schedule_spec ar{collective::allreduce, 4, 8, mode::single};
  CHECK(pick(ar, 16'000'000).route == route::relay);
  for (auto [bytes, tiles] : {std::pair<std::int64_t, int>{28'000'000, 2},
                              {64'000'000, 4},
                              {256'000'000, 8},
                              {1'000'000'000, 16}}) {
    INFO(bytes << " bytes");
    CHECK(pick(ar, bytes).route == route::pipelined);
    CHECK(pick(ar, bytes).tiles == tiles);
  }
  // The predictions themselves: at X = 48 MB (u = 1000 us), T=4 all-gather takes
  // 50 + 13000/29 us and T=4 allreduce 50 + 1000/5 = 250 us.
  schedule_spec p = ag;
  p.route = route::pipelined;
  p.tiles = 4;
  CHECK(predicted_seconds(p, mi300x_links, 24'000'000, 2) == Approx(50e-6 + 13e-3 / 29));
  p.coll = collective::allreduce;
  CHECK(predicted_seconds(p, mi300x_links, 24'000'000, 2) == Approx(250e-6));
  // A pipelined spec's own depth is ignored (relay-plan asks with the spec it prints): at 2 MB
  // and 16 MB relay still beats direct and every depth.
  const schedule_spec asked{collective::allreduce, 4, 8, mode::single, route::pipelined, 0, 4};
  CHECK(choose_route(asked, mi300x_links, 1'000'000, 2) == route::relay);
  CHECK(choose_schedule(asked, mi300x_links, 8'000'000, 2).route == route::relay);
  CHECK(choose_schedule(asked, mi300x_links, 8'000'000, 2).tiles == 0);
  // Fused groups of 4 never pipeline.
  const schedule_spec fused{collective::all_gather, 4, 8, mode::fused};
  CHECK(pick(fused, 4'000'000'000).route == route::relay);
}

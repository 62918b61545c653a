// The spec's numbers and the link model's bounds, as constants worked out by hand
// (../shared/design/cost-model.md has the derivations).
#include "relay/cost/link_cost.hpp"
#include "relay/cost/route.hpp"

#include <catch2/catch.hpp>

using namespace relay;

namespace {
ratio cost(collective c, int A, int N, mode m = mode::fused, route r = route::relay,
           int permille = 0, const topology& t = mi300x) {
  return beta_cost(*build_schedule({c, A, N, m, r, permille}), t);
}
}  // namespace

TEST_CASE("A=2, every collective: legacy 3n/7, relay n/4", "[cost]") {
  for (collective c : all_collectives) {
    INFO(name(c));
    CHECK(cost(c, 2, 8, mode::fused, route::legacy) == ratio{3, 7});
    CHECK(cost(c, 2, 8) == ratio{1, 4});
    CHECK(cost(c, 2, 8, mode::single) == ratio{1, 4});
    CHECK(cost(c, 2, 8, mode::fused, route::direct) == ratio{1});
    CHECK(ceiling(*build_schedule({c, 2, 8, mode::fused, route::legacy}), mi300x) == ratio{7, 3});
    CHECK(ceiling(*build_schedule({c, 2, 8}), mi300x) == ratio{4});
  }
}

TEST_CASE("A=2 fused: every link carries exactly one chunk per direction per step", "[cost]") {
  for (collective c : all_collectives) {
    const schedule s = *build_schedule({c, 2, 8});
    for (int step = 1; step <= 2; ++step) {
      const std::vector<ratio> loads = link_loads(s, step);
      for (int a = 0; a < 8; ++a)
        for (int b = 0; b < 8; ++b) {
          INFO(name(c) << " step " << step << " link " << a << "->" << b);
          CHECK(loads[static_cast<std::size_t>(a * 8 + b)] == (a == b ? ratio{0} : ratio{1, 8}));
        }
    }
  }
}

TEST_CASE("A=4 allreduce: 780 permille 1.28x, 500 permille 2.0x", "[cost]") {
  CHECK(cost(collective::allreduce, 4, 8, mode::fused, route::relay, 780) == ratio{39, 100});
  CHECK(ceiling(*build_schedule({collective::allreduce, 4, 8, mode::fused, route::relay, 780}),
                mi300x) == ratio{50, 39});
  CHECK(cost(collective::allreduce, 4, 8, mode::fused, route::relay, 500) == ratio{1, 4});
  CHECK(cost(collective::allreduce, 4, 8) == ratio{1, 4});  // the default is the balanced one
  CHECK(cost(collective::allreduce, 4, 8, mode::fused, route::direct) == ratio{1, 2});
}

TEST_CASE("A=4 reduce-scatter and all-gather: 2.0x, helper scratch 1.5x n", "[cost]") {
  for (collective c : {collective::reduce_scatter, collective::all_gather}) {
    CHECK(cost(c, 4, 8) == ratio{1, 2});
    CHECK(ceiling(*build_schedule({c, 4, 8}), mi300x) == ratio{2});
  }
  const schedule rs = *build_schedule({collective::reduce_scatter, 4, 8});
  const std::int64_t n = 8 * 128 * 1000;                         // c = n/8 exactly
  CHECK(scratch_elements(rs.header, false, n) == 12 * (n / 8));  // A*(A-1) chunks
  CHECK(scratch_elements(rs.header, false, n) * 2 == 3 * n);     // 1.5x recvCount
}

TEST_CASE("A=4 all-to-all: direct 1.0x, helper offload 5/3 with 0.3n per link per step", "[cost]") {
  CHECK(ceiling(*build_schedule({collective::all_to_all, 4, 8, mode::fused, route::direct}),
                mi300x) == ratio{1});
  const schedule s = *build_schedule({collective::all_to_all, 4, 8});
  CHECK(ceiling(s, mi300x) == ratio{5, 3});
  for (int step = 1; step <= 2; ++step) {
    const std::vector<ratio> loads = link_loads(s, step);
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b)
        CHECK(loads[static_cast<std::size_t>(a * 8 + b)] == (a == b ? ratio{0} : ratio{3, 10}));
  }
}

TEST_CASE("fused schedules reach the lower bounds for any N", "[cost]") {
  // all four at A=2: 2n/N; all-gather and reduce-scatter: A*n/N; all-to-all: 2(A-1)n/(N+A-2);
  // allreduce: 2n/N.
  for (int N : {4, 8, 16}) {
    const topology t = mesh(N, 1e9);
    for (collective c : all_collectives)
      CHECK(cost(c, 2, N, mode::fused, route::relay, 0, t) == ratio{2, N});
    CHECK(cost(collective::all_gather, 4, N == 4 ? 8 : N, mode::fused, route::relay, 0,
               mesh(N == 4 ? 8 : N, 1e9)) == ratio{4, N == 4 ? 8 : N});
  }
  CHECK(cost(collective::all_to_all, 4, 16, mode::fused, route::relay, 0, mesh(16, 1e9)) ==
        ratio{6, 18});
  CHECK(cost(collective::allreduce, 4, 16, mode::fused, route::relay, 0, mesh(16, 1e9)) ==
        ratio{2, 16});
}

TEST_CASE("a switched fabric does not reward relaying", "[cost]") {
  // Each GPU's port carries all its traffic: relaying sends the same bytes twice.
  for (collective c : all_collectives) {
    INFO(name(c));
    const ratio relay_cost = cost(c, 2, 8, mode::fused, route::relay, 0, h200_nvswitch);
    const ratio direct_cost = cost(c, 2, 8, mode::fused, route::direct, 0, h200_nvswitch);
    CHECK(direct_cost == ratio{1});
    CHECK(relay_cost > direct_cost);
  }
  // A=2 all-gather relay on a switch: 7 chunks leave each rank per step: 2 * 7/8 = 7/4.
  CHECK(cost(collective::all_gather, 2, 8, mode::fused, route::relay, 0, h200_nvswitch) ==
        ratio{7, 4});
}

TEST_CASE("a link matrix divides load by links and refuses missing links", "[cost]") {
  std::array<std::array<int, 4>, 4> two{};
  for (auto& row : two)
    row.fill(2);
  CHECK(cost(collective::all_gather, 2, 4, mode::fused, route::direct, 0, link_matrix(two, 1e9)) ==
        ratio{1, 2});
  std::array<std::array<int, 4>, 4> sparse{
      {{0, 1, 1, 0}, {1, 0, 0, 1}, {1, 0, 0, 1}, {0, 1, 1, 0}}};
  CHECK(cost(collective::all_gather, 2, 4, mode::fused, route::relay, 0,
             link_matrix(sparse, 1e9)) == unroutable_cost);
}

TEST_CASE("alpha-beta time adds step latency to the link time", "[cost]") {
  const schedule s = *build_schedule({collective::allreduce, 2, 8});
  topology t = mesh(8, 50e9, 10e-6);
  t.memory_bandwidth = 1e18;  // memory far from the limit: the link term alone
  // 2 steps of 10 us + n/4 * 2 bytes / 50 GB/s, n = 100e6 bf16 elements: 20 us + 1 ms.
  CHECK(alpha_beta_seconds(s, t, 100'000'000, 2) == Approx(20e-6 + 1e-3));
}

TEST_CASE("a call's latency is paid once, by every route alike, and chooses nothing", "[cost]") {
  // Relay allreduce A=2 N=8 single: 2 steps, n/4 a link; its direct counterpart: 1 step, the
  // whole input (n) over the actives' one link. With 30 us a call and 10 us a step, n = 1e6 bf16
  // elements on 50 GB/s links (memory far from the limit): relay 30 + 20 + 10 us (500 KB);
  // direct 30 + 10 + 40 us (2 MB).
  const schedule relay_s = *build_schedule({collective::allreduce, 2, 8, mode::single});
  const schedule direct_s =
      *build_schedule({collective::allreduce, 2, 8, mode::single, route::direct});
  topology t = mesh(8, 50e9, 10e-6);
  t.memory_bandwidth = 1e18;
  t.call_latency = 30e-6;
  CHECK(alpha_beta_seconds(relay_s, t, 1'000'000, 2) == Approx(30e-6 + 20e-6 + 10e-6));
  CHECK(alpha_beta_seconds(direct_s, t, 1'000'000, 2) == Approx(30e-6 + 10e-6 + 40e-6));
  // The same routes are chosen with and without it, at every size around the crossover.
  topology none = t;
  none.call_latency = 0;
  for (std::int64_t n : {1000, 100'000, 250'000, 300'000, 1'000'000, 100'000'000})
    CHECK(choose_route({collective::allreduce, 2, 8, mode::single}, t, n, 2) ==
          choose_route({collective::allreduce, 2, 8, mode::single}, none, n, 2));
}

TEST_CASE(
    "device memory: copies overlap the links, reductions follow, shared devices add up, a divided "
    "device's rank runs on its share",
    "[cost]") {
  // Direct reduce-scatter, A=2 N=4 single, one step: ranks 0 and 1 each send n to the other
  // (a copy reads n on its source's device and writes n on its destination's) and reduce
  // output = input + scratch (reads 2n, writes n). Per device, one rank each: copies 2n,
  // reductions 3n. All four ranks on one device: copies 4n, reductions 6n.
  const schedule s =
      *build_schedule({collective::reduce_scatter, 2, 4, mode::single, route::direct});
  topology t = mesh(4, 1e9, 0.0);
  t.memory_bandwidth = 1e11;
  CHECK(step_memory(s, t, 1) == memory_loads{ratio{2}, ratio{3}});
  // n = 1e6 bf16 elements (2 MB): the link 2 ms; copies 4 MB at 100 GB/s = 40 us, under the
  // link; reductions 6 MB = 60 us after it.
  CHECK(alpha_beta_seconds(s, t, 1'000'000, 2) == Approx(2e-3 + 60e-6));
  topology shared = t;
  shared.device.fill(0);
  CHECK(step_memory(s, shared, 1) == memory_loads{ratio{4}, ratio{6}});
  CHECK(alpha_beta_seconds(s, shared, 1'000'000, 2) == Approx(2e-3 + 120e-6));
  // Divided among the ranks on it (the ipc transport's grids): each rank runs at a quarter of
  // the memory, so rank 0's reductions of 3n count as 12n of the whole memory's (n = 1e6 bf16:
  // 24 MB at 100 GB/s = 240 us), and its copies of 2n as 8n (160 us, still under the link).
  topology divided = shared;
  divided.divided_devices = true;
  CHECK(divided.device_share(3) == 4);
  CHECK(step_memory(s, divided, 1) == memory_loads{ratio{8}, ratio{12}});
  CHECK(alpha_beta_seconds(s, divided, 1'000'000, 2) == Approx(2e-3 + 240e-6));
  // Two helpers on devices of their own, the actives sharing device 0: each active on half of
  // it (copies 2n and reductions 3n, twice over: 4n and 6n), as much as their sum there.
  divided.device = one_rank_per_device();
  divided.device[1] = 0;
  CHECK(divided.device_share(0) == 2);
  CHECK(divided.device_share(2) == 1);
  CHECK(step_memory(s, divided, 1) == memory_loads{ratio{4}, ratio{6}});
  // One rank a device: nothing is divided.
  divided.device = one_rank_per_device();
  CHECK(step_memory(s, divided, 1) == step_memory(s, t, 1));
  // A memory slower than the link: the copies' 4 MB at 1 GB/s (4 ms) is the transfer phase.
  t.memory_bandwidth = 1e9;
  CHECK(alpha_beta_seconds(s, t, 1'000'000, 2) == Approx(4e-3 + 6e-3));
  // fp32 partial sums of bf16 are twice as wide in memory as on the wire: the A=4
  // reduce-scatter's helpers write their partials at width 2.
  const schedule rs4 = *build_schedule({collective::reduce_scatter, 4, 8, mode::single});
  const memory_loads narrow = step_memory(rs4, mi300x, 1);
  const memory_loads wide = step_memory(rs4, mi300x, 1, widths_of(dtype::bfloat16));
  CHECK(wide.copies == narrow.copies);         // step 1 moves inputs only
  CHECK(wide.reductions > narrow.reductions);  // helpers write fp32 partials
}

TEST_CASE("pipelined single-group A=2: (T+1)n/(H*T+T+1), towards n/7", "[cost]") {
  auto pipelined = [](collective c, int tiles) {
    return beta_cost(*build_schedule({c, 2, 8, mode::single, route::pipelined, 0, tiles}), mi300x);
  };
  for (collective c : all_collectives) {
    INFO(name(c));
    CHECK(pipelined(c, 2) == ratio{1, 5});   // 3 steps of n/15
    CHECK(pipelined(c, 4) == ratio{5, 29});  // 5 steps of n/29
    CHECK(pipelined(c, 16) == ratio{17, 113});
    CHECK(pipelined(c, 16) > ratio{1, 7});  // the single-group bound
  }
  // Every step of a full pipeline keeps all 7 links of both actives busy both ways.
  const schedule s =
      *build_schedule({collective::allreduce, 2, 8, mode::single, route::pipelined, 0, 4});
  const std::vector<ratio> loads = link_loads(s, 3);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) {
        CHECK(loads[static_cast<std::size_t>(a * 8 + b)] == ratio{1, 29});
        CHECK(loads[static_cast<std::size_t>(b * 8 + a)] == ratio{1, 29});
      }
}

TEST_CASE("the ceiling of a pipelined schedule is against the direct route", "[cost]") {
  const schedule s =
      *build_schedule({collective::allreduce, 2, 8, mode::single, route::pipelined, 0, 4});
  CHECK(ceiling(s, mi300x) == ratio{29, 5});  // direct n over 5n/29
}

#include "relay/cost/bounds.hpp"

#include <catch2/catch.hpp>

#include "relay/cost/link_cost.hpp"

using namespace relay;

TEST_CASE("lower bounds from the link model, by hand", "[cost][bounds]") {
  CHECK(beta_lower_bound(collective::allreduce, 2, 8, mode::fused) == ratio{1, 4});
  CHECK(beta_lower_bound(collective::all_gather, 4, 8, mode::fused) == ratio{1, 2});
  CHECK(beta_lower_bound(collective::all_to_all, 4, 8, mode::fused) == ratio{3, 5});
  CHECK(beta_lower_bound(collective::all_to_all, 2, 16, mode::fused) == ratio{1, 8});
  CHECK(beta_lower_bound(collective::reduce_scatter, 2, 8, mode::single) == ratio{1, 7});
  CHECK(beta_lower_bound(collective::all_gather, 4, 8, mode::single) == ratio{3, 7});
  CHECK_FALSE(beta_lower_bound(collective::all_gather, 3, 8, mode::fused).has_value());  // 8 % 3
  CHECK_FALSE(beta_lower_bound(collective::allreduce, 2, 2, mode::single).has_value());
}

TEST_CASE("allreduce bounds from the counting lemma, by hand", "[cost][bounds]") {
  // Single: 2/(2N-A). A=4, N=8: 2/12, above the cut bound n/7, reached (pipelined) by four
  // helpers summing n/6 each and the actives the last n/3.
  CHECK(beta_lower_bound(collective::allreduce, 4, 8, mode::single) == ratio{1, 6});
  CHECK(beta_lower_bound(collective::allreduce, 4, 16, mode::single) == ratio{1, 14});  // 2/28
  CHECK(beta_lower_bound(collective::allreduce, 8, 16, mode::single) == ratio{1, 12});  // 2/24
  CHECK(beta_lower_bound(collective::allreduce, 3, 8, mode::single) == ratio{2, 13});
  CHECK(beta_lower_bound(collective::allreduce, 7, 8, mode::single) == ratio{2, 9});
  // A=2: 2/(2N-2) is the cut bound n/(N-1), as for the other three collectives.
  CHECK(beta_lower_bound(collective::allreduce, 2, 8, mode::single) == ratio{1, 7});
  // Fused: 2/N for every A that divides N.
  CHECK(beta_lower_bound(collective::allreduce, 4, 8, mode::fused) == ratio{1, 4});
  CHECK(beta_lower_bound(collective::allreduce, 4, 16, mode::fused) == ratio{1, 8});
  CHECK(beta_lower_bound(collective::allreduce, 8, 16, mode::fused) == ratio{1, 8});
  // Above the cut bound 1/(N-1) whenever A > 2: the cut bound is not reachable for allreduce.
  for (int N : {4, 8, 16})
    for (int A = 3; A < N; ++A) {
      INFO("A=" << A << " N=" << N);
      CHECK(*beta_lower_bound(collective::allreduce, A, N, mode::single) > ratio{1, N - 1});
    }
}

TEST_CASE("single-group bounds match the exact LP table", "[cost][bounds]") {
  // The optima scripts/bounds/single_group.py prints (tests/bounds/single_group.expected),
  // copied here as constants: all-gather, reduce-scatter and all-to-all share one value.
  struct row {
    int A, N;
    ratio flows, allreduce;
  };
  const row table[] = {
      {2, 8, {1, 7}, {1, 7}},    {3, 8, {2, 7}, {2, 13}},  {4, 8, {3, 7}, {1, 6}},
      {5, 8, {4, 7}, {2, 11}},   {6, 8, {5, 7}, {1, 5}},   {7, 8, {6, 7}, {2, 9}},
      {2, 16, {1, 15}, {1, 15}}, {4, 16, {1, 5}, {1, 14}}, {8, 16, {7, 15}, {1, 12}},
  };
  for (const row& r : table) {
    INFO("A=" << r.A << " N=" << r.N);
    for (collective c :
         {collective::all_gather, collective::reduce_scatter, collective::all_to_all})
      CHECK(beta_lower_bound(c, r.A, r.N, mode::single) == r.flows);
    CHECK(beta_lower_bound(collective::allreduce, r.A, r.N, mode::single) == r.allreduce);
  }
}

TEST_CASE("every fused relay schedule sits at its lower bound", "[cost][bounds]") {
  for (collective c : all_collectives)
    for (int A : {2, 4})
      for (int N : {4, 8, 16}) {
        if (A >= N || N % A) continue;
        const auto bound = beta_lower_bound(c, A, N, mode::fused);
        if (!bound) continue;
        INFO(name(c) << " A=" << A << " N=" << N);
        CHECK(beta_cost(*build_schedule({c, A, N}), mesh(N, 1e9)) == *bound);
      }
}

TEST_CASE("single-group schedules without pipelining stay above the bound", "[cost][bounds]") {
  // Depth 1: n/4 against the pipelined limit n/7 for A=2 at N=8.
  const ratio relay_cost =
      beta_cost(*build_schedule({collective::all_gather, 2, 8, mode::single}), mi300x);
  CHECK(relay_cost == ratio{1, 4});
  CHECK(*beta_lower_bound(collective::all_gather, 2, 8, mode::single) < relay_cost);
  // A=4 allreduce: the two-step relay route costs n/4 against n/6.
  const ratio allreduce_cost =
      beta_cost(*build_schedule({collective::allreduce, 4, 8, mode::single}), mi300x);
  CHECK(allreduce_cost == ratio{1, 4});
  CHECK(*beta_lower_bound(collective::allreduce, 4, 8, mode::single) < allreduce_cost);
}

TEST_CASE("pipelined single groups come within (T+1)/T of their bounds", "[cost][bounds]") {
  // All-gather, reduce-scatter, all-to-all: bound (A-1)n/(N-1) for every A < N; above it at
  // every depth (the first step's helper-to-active links and the last step's active-to-helper
  // links idle), within (T+1)/T of it.
  int checked = 0;
  for (collective c : {collective::all_gather, collective::reduce_scatter, collective::all_to_all})
    for (auto [A, N] : {std::pair{4, 5}, {4, 6}, {4, 8}, {4, 16}, {8, 9}, {8, 16}})
      for (int T : {2, 4, 8}) {
        const ratio beta = beta_cost(
            *build_schedule({c, A, N, mode::single, route::pipelined, 0, T}), mesh(N, 1e9));
        const ratio bound = *beta_lower_bound(c, A, N, mode::single);
        INFO(name(c) << " A=" << A << " N=" << N << " T=" << T);
        CHECK(bound == ratio{A - 1, N - 1});
        CHECK(beta > bound);
        CHECK(beta <= bound * ratio{T + 1, T});
        ++checked;
      }
  CHECK(checked == 54);
  // Allreduce A=4 N=8: within (T+1)/T of n/6 (helper-reduce), above the cut bound n/7.
  for (int T : {2, 4, 8, 16, 32}) {
    const ratio beta = beta_cost(
        *build_schedule({collective::allreduce, 4, 8, mode::single, route::pipelined, 0, T}),
        mi300x);
    INFO("T=" << T);
    CHECK(beta < ratio{1, 6} * ratio{T + 1, T});
    CHECK(beta > ratio{1, 6});
    CHECK(beta > *beta_lower_bound(collective::allreduce, 4, 8, mode::single));
  }
}

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
  CHECK(beta_lower_bound(collective::allreduce, 4, 8, mode::single) == ratio{1, 7});
  CHECK_FALSE(beta_lower_bound(collective::allreduce, 4, 16, mode::fused).has_value());
  CHECK_FALSE(beta_lower_bound(collective::allreduce, 2, 2, mode::single).has_value());
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
}

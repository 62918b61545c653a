#include "relay/topology/parse.hpp"

#include <catch2/catch.hpp>

using relay::fabric;
using relay::parse_topology;

TEST_CASE("parse_topology: presets by name, resized where they can be") {
  const auto t = parse_topology("mi350x", 16);
  REQUIRE(t);
  CHECK(t->kind == fabric::mesh);
  CHECK(t->ranks == 16);
  CHECK(t->link_bandwidth == 56e9);
  CHECK(parse_topology("mi250x", 8));
  CHECK_FALSE(parse_topology("mi250x", 4));  // a fixed link matrix of 8 GPUs
}

TEST_CASE("parse_topology: mesh and switched with bandwidth, step and operation latency") {
  const auto m = parse_topology("mesh:48", 8);
  REQUIRE(m);
  CHECK(m->kind == fabric::mesh);
  CHECK(m->ranks == 8);
  CHECK(m->link_bandwidth == 48e9);
  CHECK(m->step_latency == Approx(10e-6));  // the default
  CHECK(m->op_latency == 0.0);

  const auto s = parse_topology("switched:362.5:14.25:0.5", 2);
  REQUIRE(s);
  CHECK(s->kind == fabric::switched);
  CHECK(s->ranks == 2);
  CHECK(s->link_bandwidth == Approx(362.5e9));
  CHECK(s->step_latency == Approx(14.25e-6));
  CHECK(s->op_latency == Approx(0.5e-6));
  CHECK(s->link_count(0, 1) == 0);  // a switch limits ports, not pairs

  const auto zero = parse_topology("mesh:50:0", 4);
  REQUIRE(zero);
  CHECK(zero->step_latency == 0.0);
}

TEST_CASE("parse_topology: rejects what it cannot read") {
  for (const char* bad :
       {"", "mi400x", "mesh", "mesh:", "mesh:0", "mesh:-3", "mesh:abc", "mesh:48:", "mesh:48:-1",
        "mesh:48:10:-2", "mesh:48:10:0:7", "ring:48", "switched:1e9x", "mesh:48 "}) {
    INFO("text: '" << bad << "'");
    CHECK_FALSE(parse_topology(bad, 8));
  }
}

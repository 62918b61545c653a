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
  CHECK(zero->memory_bandwidth == Approx(4.3e12));  // the default

  const auto mem = parse_topology("mesh:12:4.47:0.03:3350", 8);
  REQUIRE(mem);
  CHECK(mem->link_bandwidth == Approx(12e9));
  CHECK(mem->memory_bandwidth == Approx(3.35e12));
  CHECK(mem->call_latency == 0.0);  // none unless given

  // The fifth number: microseconds a call costs once.
  const auto call = parse_topology("mesh:12:14:0.08:2864:26.5", 8);
  REQUIRE(call);
  CHECK(call->step_latency == Approx(14e-6));
  CHECK(call->memory_bandwidth == Approx(2.864e12));
  CHECK(call->call_latency == Approx(26.5e-6));
}

TEST_CASE("parse_topology: rejects what it cannot read") {
  for (const char* bad : {"",
                          "mi400x",
                          "mesh",
                          "mesh:",
                          "mesh:0",
                          "mesh:-3",
                          "mesh:abc",
                          "mesh:48:",
                          "mesh:48:-1",
                          "mesh:48:10:-2",
                          "mesh:48:10:0:0",
                          "mesh:48:10:0:nan",
                          "mesh:48:10:0:3000:1:2",
                          "mesh:48:10:0:3000:-1",
                          "mesh:48:10:0:3000:nan",
                          "mesh:48:10:0:3000:1000001",
                          "ring:48",
                          "switched:1e9x",
                          "mesh:48 ",
                          "mesh:inf",
                          "mesh:nan",
                          "mesh:1e-300",
                          "mesh:0.0009",
                          "mesh:1000001",
                          "switched:48:inf",
                          "mesh:48:1000001",
                          "mesh:48:10:nan",
                          "mesh:-inf"}) {
    INFO("text: '" << bad << "'");
    CHECK_FALSE(parse_topology(bad, 8));
  }
}

TEST_CASE("parse_topology: the limits of the numbers are accepted") {
  const auto low = parse_topology("mesh:0.001:0:0", 8);
  REQUIRE(low);
  CHECK(low->link_bandwidth == Approx(1e6));
  const auto high = parse_topology("switched:1000000:1000000:1000000", 8);
  REQUIRE(high);
  CHECK(high->link_bandwidth == Approx(1e15));
  CHECK(high->step_latency == Approx(1.0));
  CHECK(high->op_latency == Approx(1.0));
}

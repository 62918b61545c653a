// gpu_calibrate's fit from measurements to a topology, on hand-made measurements of machines
// whose answer is known.
#include "support/fit_topology.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/topology/parse.hpp"

using relay::fabric;
using relay::examples::fit_topology;
using relay::examples::link_measurements;

namespace {

// `ranks` GPUs, every ordered pair at `pair` GB/s, every GPU at `out` to and `in` from all others.
link_measurements machine(int ranks, double pair, double out, double in, double step_us = 10,
                          double op_us = 0) {
  link_measurements m;
  m.ranks = ranks;
  m.both_directions_gbps.assign(static_cast<std::size_t>(ranks * (ranks - 1)), pair);
  m.fan_out_gbps.assign(static_cast<std::size_t>(ranks), out);
  m.fan_in_gbps.assign(static_cast<std::size_t>(ranks), in);
  m.step_seconds = step_us * 1e-6;
  m.op_seconds = op_us * 1e-6;
  return m;
}

}  // namespace

TEST_CASE("a node whose links add up is a mesh of the pair bandwidth", "[fit_topology]") {
  // MI300X-like: 48 GB/s a pair, 7 links out of every GPU at once (7 x 48 = 336).
  const auto f = fit_topology(machine(8, 48, 330, 334, 10, 0.5));
  CHECK(f.topo.kind == fabric::mesh);
  CHECK(f.topo.ranks == 8);
  CHECK(f.topo.link_bandwidth == 48e9);
  CHECK(f.text == "mesh:48.0:10.00:0.50");
  CHECK(f.cpp("mi300x_here") ==
        "inline constexpr relay::topology mi300x_here = relay::mesh(8, 48.0e9, 10.00e-6, "
        "0.50e-6, \"mi300x_here\");");
}

TEST_CASE("a node whose GPUs cannot exceed one port is a switch of the port bandwidth",
          "[fit_topology]") {
  // NVSwitch-like: 370 GB/s a pair, and no more than 452 out of (448 into) a GPU at once.
  const auto f = fit_topology(machine(8, 370, 452, 448, 12.345, 0.1));
  CHECK(f.topo.kind == fabric::switched);
  CHECK(f.topo.link_bandwidth == 448e9);  // the smaller of fan-out and fan-in
  CHECK(f.text == "switched:448.0:12.35:0.10");
  CHECK(f.link_gbps == 370);
  CHECK(f.port_gbps == 448);
}

TEST_CASE("the mesh threshold is 60% of (ranks - 1) links", "[fit_topology]") {
  CHECK(fit_topology(machine(4, 100, 180, 180)).topo.kind == fabric::mesh);  // 0.6 x 3 x 100
  const auto below = fit_topology(machine(4, 100, 179.9, 200));
  CHECK(below.topo.kind == fabric::switched);
  CHECK(below.text == "switched:179.9:10.00:0.00");
}

TEST_CASE("two GPUs are written as a mesh", "[fit_topology]") {
  // The 2 x H200 of bench/results/2026-11-29-h200-x2-calibration.
  const auto f = fit_topology(machine(2, 363.7, 368.9, 367.8, 10.58));
  CHECK(f.topo.kind == fabric::mesh);
  CHECK(f.text == "mesh:363.7:10.58:0.00");
}

TEST_CASE("one slow pair or one busy GPU does not set the numbers", "[fit_topology]") {
  link_measurements m = machine(8, 48, 330, 330);
  m.both_directions_gbps[5] = 12;  // a degraded link
  m.fan_out_gbps[3] = 40;          // a GPU busy with something else
  const auto f = fit_topology(m);
  CHECK(f.topo.kind == fabric::mesh);
  CHECK(f.topo.link_bandwidth == 48e9);
}

TEST_CASE("the text it writes parses back to the same topology", "[fit_topology]") {
  for (const auto& m : {machine(8, 48.04, 330, 334, 9.996, 0.25), machine(8, 370, 452, 448, 7),
                        machine(2, 363.66, 368, 368, 13.588)}) {
    const auto f = fit_topology(m);
    INFO(f.text);
    const auto back = relay::parse_topology(f.text, m.ranks);
    REQUIRE(back);
    CHECK(back->kind == f.topo.kind);
    CHECK(back->link_bandwidth == Approx(f.topo.link_bandwidth));
    CHECK(back->step_latency == Approx(f.topo.step_latency));
    CHECK(back->op_latency == Approx(f.topo.op_latency).margin(1e-15));
  }
}

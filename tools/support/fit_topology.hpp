// From what gpu_calibrate measured to a relay topology (host code; the tests call it directly).
//
// The link bandwidth is the median pair's, both directions at once (what a relay step asks of a
// link). The fabric is a mesh when a GPU's traffic to (from) all others at once reaches 60% of
// (ranks - 1) such links, a switch otherwise, whose port bandwidth is the median over GPUs of
// the smaller of fan-out and fan-in. With 2 ranks the two price alike: a mesh is written.
// Medians, so that one slow pair or one busy GPU does not set the machine's numbers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "relay/topology/topology.hpp"
#include "support/median.hpp"

namespace relay::examples {

struct link_measurements {
  int ranks = 0;
  std::vector<double> both_directions_gbps;       // per ordered pair, per direction
  std::vector<double> fan_out_gbps, fan_in_gbps;  // per rank: to (from) all others at once
  double step_seconds = 0, op_seconds = 0;
};

struct fitted_topology {
  topology topo;
  double link_gbps = 0, port_gbps = 0;  // the medians it was fitted from
  std::string text;                     // what --topology takes

  // `inline constexpr relay::topology NAME = relay::mesh(...);`
  std::string cpp(const std::string& name) const {
    char b[256];
    std::snprintf(b, sizeof b,
                  "inline constexpr relay::topology %s = relay::%s(%d, %.1fe9, %.2fe-6, %.2fe-6, "
                  "\"%s\");",
                  name.c_str(), topo.kind == fabric::mesh ? "mesh" : "switched", topo.ranks,
                  topo.link_bandwidth / 1e9, topo.step_latency * 1e6, topo.op_latency * 1e6,
                  name.c_str());
    return b;
  }
};

inline fitted_topology fit_topology(const link_measurements& m) {
  fitted_topology f;
  f.link_gbps = median(m.both_directions_gbps);
  std::vector<double> ports;
  for (std::size_t r = 0; r < m.fan_out_gbps.size() && r < m.fan_in_gbps.size(); ++r)
    ports.push_back(std::min(m.fan_out_gbps[r], m.fan_in_gbps[r]));
  f.port_gbps = median(ports);
  const bool is_mesh = m.ranks == 2 || f.port_gbps >= 0.6 * (m.ranks - 1) * f.link_gbps;
  // Rounded as printed (0.1 GB/s, 0.01 us), so the text and the C++ line say the same.
  const double gbps = std::round((is_mesh ? f.link_gbps : f.port_gbps) * 10) / 10;
  const double step_us = std::round(m.step_seconds * 1e8) / 100;
  const double op_us = std::round(m.op_seconds * 1e8) / 100;
  f.topo = is_mesh ? mesh(m.ranks, gbps * 1e9, step_us * 1e-6, op_us * 1e-6, "calibrated")
                   : switched(m.ranks, gbps * 1e9, step_us * 1e-6, op_us * 1e-6, "calibrated");
  char b[128];
  std::snprintf(b, sizeof b, "%s:%.1f:%.2f:%.2f", is_mesh ? "mesh" : "switched", gbps, step_us,
                op_us);
  f.text = b;
  return f;
}

}  // namespace relay::examples

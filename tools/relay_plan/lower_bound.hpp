// The link model's lower bound for a schedule's collective (relay::beta_lower_bound), with what
// a reader needs to know about reaching it. The bounds hold for one link per pair, so only mesh
// topologies get one.
#pragma once

#include <optional>
#include <string>

#include "relay/core/ratio.hpp"
#include "relay/schedule/schedule.hpp"
#include "relay/topology/topology.hpp"

namespace relay_plan {

struct known_bound {
  relay::ratio value;  // a share of n, in units of n * element_size / link bandwidth
  std::string note;    // empty, or why the bound may not be reachable
};

// nullopt where the model knows none (a switch, a link matrix, some A/N/mode combinations).
std::optional<known_bound> lower_bound(const relay::schedule_spec& s, const relay::topology& t);

}  // namespace relay_plan

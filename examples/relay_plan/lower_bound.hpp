// The beta lower bounds the link model knows (../shared/design/cost-model.md derives them: linear
// programs for all-gather, reduce-scatter and all-to-all, link counting and a cut for allreduce),
// for a mesh with one link per pair. They bound every schedule of the collective, not just
// relay's, so the printer can say how far a schedule is from the physical limit.
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

// nullopt where the model knows none (a switch or a link matrix).
std::optional<known_bound> lower_bound(const relay::schedule_spec& s, const relay::topology& t);

}  // namespace relay_plan

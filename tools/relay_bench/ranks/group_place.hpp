// Where a rank sits in a call's groups: what every rank job asks of its groups (its buffers, its
// check, a split into them). Host code, for the CPU and GPU files alike.
#pragma once

#include <cstddef>

#include "relay/api/collectives.hpp"

namespace relay::bench {

// The group's index (-1 where the rank is in none: a helper; split_communicator's no_color) and
// the rank's position in it (0 where in none).
struct group_place {
  int group = -1, index = 0;
};
inline group_place place_in(const group_list& groups, int rank) {
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t k = 0; k < groups[g].size(); ++k)
      if (groups[g][k] == rank) return {static_cast<int>(g), static_cast<int>(k)};
  return {};
}

}  // namespace relay::bench

#include "lower_bound.hpp"

namespace relay_plan {

std::optional<known_bound> lower_bound(const relay::schedule_spec& s, const relay::topology& t) {
  using relay::collective;
  using relay::ratio;
  if (t.kind != relay::fabric::mesh) return std::nullopt;
  const int A = s.active, N = s.ranks;
  if (s.mode == relay::mode::fused) {
    switch (s.coll) {
      case collective::allreduce:
        // A relayed element crosses two link-directions, a direct one one: 2n/N.
        return known_bound{ratio{2, N}, {}};
      case collective::reduce_scatter:
      case collective::all_gather:
        return known_bound{ratio{A, N}, {}};
      case collective::all_to_all:
        // x*n with x = 2(A-1)/(N+A-2), x also the share of each segment sent direct.
        return known_bound{ratio{2 * (A - 1), N + A - 2}, {}};
    }
    return std::nullopt;
  }
  // One group: every link of the actives busy in both directions for all-gather, reduce-scatter
  // and all-to-all; for allreduce a cut (each active must receive n elements' worth over its N-1
  // links). A single group reaches these only by pipelining tiles.
  if (s.coll != collective::allreduce || A == 2)
    return known_bound{ratio{A - 1, N - 1}, "reached only by pipelining"};
  return known_bound{ratio{1, N - 1},
                     "a cut bound, not known to be reachable (the best known reaches n/6 at N=8)"};
}

}  // namespace relay_plan

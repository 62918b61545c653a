// expect: single groups only
// A=4 pipelines as a single group; two fused groups of 4 on 8 ranks
// keep every link direction busy already, so fused pipelining stays refused.
#include "relay/schedule/generate.hpp"

constexpr auto& s = relay::schedule_for<relay::schedule_spec{.coll = relay::collective::all_gather,
                                                             .active = 4,
                                                             .ranks = 8,
                                                             .mode = relay::mode::fused,
                                                             .route = relay::route::pipelined,
                                                             .tiles = 4}>;
int main() {
  return static_cast<int>(s.ops.size());
}

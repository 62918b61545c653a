// expect: single groups only
#include "relay/schedule/generate.hpp"

constexpr auto& s = relay::schedule_for<relay::schedule_spec{.coll = relay::collective::allreduce,
                                                             .active = 2,
                                                             .ranks = 8,
                                                             .mode = relay::mode::fused,
                                                             .route = relay::route::pipelined,
                                                             .tiles = 4}>;
int main() {
  return static_cast<int>(s.ops.size());
}

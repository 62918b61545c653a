// expect: static assert
// A false claim about a schedule must not compile: the legacy A=2 schedule costs 3n/7, not n/4.
#include "relay/cost/link_cost.hpp"

static_assert(relay::beta_cost(relay::schedule_v<relay::collective::allreduce, 2, 8,
                                                 relay::mode::fused, relay::route::legacy>,
                               relay::mi300x) == relay::ratio{1, 4});
int main() {
  return 0;
}

// expect: allreduce relay route only
#include "relay/schedule/generate.hpp"

constexpr auto& s = relay::schedule_v<relay::collective::reduce_scatter, 4, 8, relay::mode::fused,
                                      relay::route::relay, 500>;
int main() {
  return static_cast<int>(s.ops.size());
}

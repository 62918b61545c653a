// expect: A=2 only
#include "relay/schedule/generate.hpp"

constexpr auto& s = relay::schedule_v<relay::collective::all_to_all, 4, 8, relay::mode::fused,
                                      relay::route::legacy>;
int main() {
  return static_cast<int>(s.ops.size());
}

// expect: divide N
#include "relay/schedule/generate.hpp"

constexpr auto& s = relay::schedule_v<relay::collective::all_gather, 4, 6>;
int main() {
  return static_cast<int>(s.ops.size());
}

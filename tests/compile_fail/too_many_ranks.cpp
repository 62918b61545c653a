// expect: at most 64
#include "relay/schedule/generate.hpp"

constexpr auto& s = relay::schedule_v<relay::collective::allreduce, 2, 128>;
int main() {
  return static_cast<int>(s.ops.size());
}

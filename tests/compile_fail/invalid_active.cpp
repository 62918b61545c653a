// expect: power of two
#include "relay/schedule/generate.hpp"

constexpr auto& s = relay::schedule_v<relay::collective::allreduce, 3, 8>;
int main() {
  return static_cast<int>(s.ops.size());
}

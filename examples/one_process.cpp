// The README's examples, compiled with the suite so they cannot rot.
#include <relay/relay.hpp>

#include <cstddef>
#include <cstdio>
#include <vector>

constexpr auto& s = relay::schedule_v<relay::collective::allreduce, 2, 8>;  // A=2, N=8, fused
static_assert(relay::beta_cost(s, relay::mi300x) == relay::ratio{1, 4});    // n/4 of link time
static_assert(relay::ceiling(s, relay::mi300x) == 4);                       // 4x the direct path

int main() {
  std::vector<std::vector<float>> in(8, std::vector<float>(1000, 1.0f)), out = in;
  std::vector<relay::buffer_view> send, recv;
  for (int r = 0; r < 8; ++r) {
    send.push_back({in[r].data(), in[r].size() * sizeof(float)});
    recv.push_back({out[r].data(), out[r].size() * sizeof(float)});
  }
  const std::vector<std::size_t> counts(4, 1000);  // per group; any integer type
  relay::host_executor cpu;
  relay::status st =
      relay::allreduce(cpu, {{0, 1}, {2, 3}, {4, 5}, {6, 7}},  // 4 groups: fused
                       send, recv, counts, relay::dtype::float32, relay::reduce_op::sum);
  if (!st) std::puts(st.to_string().c_str());
  return st && out[5][999] == 2.0f ? 0 : 1;
}

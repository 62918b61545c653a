// One collective call on the host executor, every rank's buffers in this process: the README's
// second quick start, built and run by the suite (examples.one_process).
#include <relay/relay.hpp>

#include <cstddef>
#include <cstdio>
#include <vector>

int main() {
  // Rank r's input and output: 1000 floats each; its input holds r + 1.
  std::vector<std::vector<float>> in(8), out(8, std::vector<float>(1000, -1.0f));
  std::vector<relay::buffer_view> send, recv;  // rank r's {pointer, bytes}
  for (int r = 0; r < 8; ++r) {
    in[r].assign(1000, static_cast<float>(r + 1));
    send.push_back({in[r].data(), in[r].size() * sizeof(float)});
    recv.push_back({out[r].data(), out[r].size() * sizeof(float)});
  }
  const std::vector<std::size_t> counts(4, 1000);  // per group; any integer type
  relay::host_executor cpu;  // or relay::gpu_executor gpu({0, 1, 2, 3, 4, 5, 6, 7});
  relay::status st =
      relay::allreduce(cpu, {{0, 1}, {2, 3}, {4, 5}, {6, 7}},  // 4 groups: fused
                       send, recv, counts, relay::dtype::float32, relay::reduce_op::sum);
  if (!st) std::puts(st.to_string().c_str());
  // Group {4, 5}: ranks 4 and 5 hold 5 and 6, so both outputs are 11.
  return st && out[4][0] == 11.0f && out[5][999] == 11.0f ? 0 : 1;
}

// One collective call on the GPU executor, every rank's buffers in this process, then the same
// call over an emulated mesh: the snippets of docs/gpu.md and docs/mesh-emulation.md. Every rank
// lives on device 0, so any machine with one GPU runs it; GPU builds compile it (nvcc):
//
//   build/examples/gpu_executor
#include "relay/api/collectives.hpp"
#include "relay/exec/gpu/executor.hpp"
#include "relay/gpu/handles.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

int fail(const relay::status& s) {
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return 1;
}

constexpr std::size_t n = 1000, bytes = n * sizeof(float);

// Eight ranks' buffers on device 0: rank r's input holds r + 1, every output holds -1 (poison).
struct buffers {
  std::vector<void*> memory;
  std::vector<relay::buffer_view> send, recv;
  relay::status made = make();  // initialized, not assigned: nvcc flags a discarded status&

  buffers() = default;
  ~buffers() {
    for (void* p : memory)
      relay::gpu::device_free(0, p);
  }
  buffers(const buffers&) = delete;
  buffers& operator=(const buffers&) = delete;

  relay::status make() {
    for (int r = 0; r < 8; ++r) {
      void* in = relay::gpu::device_allocate(0, bytes);
      void* out = relay::gpu::device_allocate(0, bytes);
      memory.insert(memory.end(), {in, out});
      if (in == nullptr || out == nullptr)
        return {relay::errc::out_of_memory, "allocating the ranks' buffers on device 0"};
      const std::vector<float> input(n, static_cast<float>(r + 1)), poison(n, -1.0f);
      if (relay::status s = relay::gpu::device_copy(0, in, input.data(), bytes, "filling an input");
          !s)
        return s;
      if (relay::status s =
              relay::gpu::device_copy(0, out, poison.data(), bytes, "poisoning an output");
          !s)
        return s;
      send.push_back({in, bytes});
      recv.push_back({out, bytes});
    }
    return {};
  }

  // Rank r's group is {r - r % 2, r - r % 2 + 1}: every output holds (first + 1) + (first + 2).
  relay::status check() const {
    std::vector<float> out(n);
    for (int r = 0; r < 8; ++r) {
      const auto rank = static_cast<std::size_t>(r);
      if (relay::status s =
              relay::gpu::device_copy(0, out.data(), recv[rank].data, bytes, "reading an output");
          !s)
        return s;
      const int first = r - r % 2;
      for (float x : out)
        if (x != static_cast<float>((first + 1) + (first + 2)))
          return {relay::errc::invalid_argument, "rank " + std::to_string(r) + ": a wrong element"};
    }
    return {};
  }
};

}  // namespace

int main() {
  const std::vector<std::int64_t> counts(4, static_cast<std::int64_t>(n));
  {
    buffers b;
    if (!b.made) return fail(b.made);
    const auto& send = b.send;
    const auto& recv = b.recv;
    relay::gpu_executor gpu({0, 0, 0, 0, 0, 0, 0, 0});       // rank -> device: here all on 0
    if (!gpu.init_status()) return fail(gpu.init_status());  // no GPU, a bad map: it says which
    relay::status s = relay::allreduce(gpu, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, send, recv, counts,
                                       relay::dtype::float32, relay::reduce_op::sum);
    if (!s) return fail(s);
    if (relay::status c = b.check(); !c) return fail(c);
  }
  {
    buffers b;
    if (!b.made) return fail(b.made);
    relay::gpu_options o;
    o.emulate_mesh = 12'000'000'000;  // 12 GB/s each way per ordered pair; 0 (default): off
    relay::gpu_executor gpu({0, 0, 0, 0, 0, 0, 0, 0}, o);
    if (!gpu.init_status()) return fail(gpu.init_status());
    relay::status s = relay::allreduce(gpu, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, b.send, b.recv,
                                       counts, relay::dtype::float32, relay::reduce_op::sum);
    if (!s) return fail(s);
    if (relay::status c = b.check(); !c) return fail(c);
  }
  std::puts("gpu_executor: both calls right");
  return 0;
}

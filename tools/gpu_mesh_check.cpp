// gpu_mesh_check: the accuracy of mesh emulation (gpu_options::emulate_mesh,
// docs/mesh-emulation.md) on this GPU, through the executor's own path: plans of plain copies
// between ranks, run paced at B bytes per second per link, timed by the device. It measures
//
//   1. one pair alone (rank 0 -> 1): B within the tolerance;
//   2. 7 pairs out of one rank at once (0 -> 1..N-1): each B within the tolerance;
//   3. every ordered pair at once (56 at N = 8): each B within the tolerance, which shows that
//      the GPU's memory is not what limits N(N-1) busy links at this B;
//   4. two copies sharing one pair: B together (not 2B), within the tolerance;
//   5. the device clock's step (what a block waking for its slot may be late by), and the
//      emulator's step latency and per-operation latency (support/step_timing.hpp: paced rings
//      of 1 and 65 steps, as gpu_calibrate measures a real machine's).
//
// Each copy moves --mib MiB from its own source area to its own destination area (no two read
// the same bytes, so no cache serves what a link should carry); a run's rate per link is the
// bytes of its slowest link over the run's device time, the median of --reps runs. A sample of
// every copy is checked to have landed. It prints a table with PASS/FAIL per line, the topology
// the cost model should price (--topology mesh:B:STEP_US:OP_US:MEM_GBPS, the last the memory's
// rate with every rank copying within itself at once) and exits 1 on any FAIL.
//
// Usage: gpu_mesh_check [--gbps B] [--ranks N] [--device D] [--mib M] [--reps R]
//                       [--tolerance F]
//        (default: B = 12, N = 8 ranks all on device 0, 128 MiB a copy, 5 runs, 0.05)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "relay/exec/gpu/executor.hpp"
#include "relay/gpu/runtime.hpp"
#include "support/gpu_check.hpp"
#include "support/median.hpp"
#include "support/step_timing.hpp"

namespace rt = relay::gpu::rt;

namespace {

constexpr relay::examples::exit_with fail{"gpu_mesh_check", 2};

struct options {
  double gbps = 12;
  int ranks = 8;
  int device = 0;
  std::uint64_t bytes = std::uint64_t{128} << 20;
  int reps = 5;
  double tolerance = 0.05;
};

double number(const std::string& flag, const char* v, double lo, double hi) {
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= lo && x <= hi))
    fail(flag + ": '" + v + "' is not a number in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  return x;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc)
      fail("unknown flag or missing value '" + a +
           "'; usage: gpu_mesh_check [--gbps B] [--ranks N] [--device D] [--mib M] [--reps R] "
           "[--tolerance F]");
    const char* v = argv[++i];
    if (a == "--gbps")
      o.gbps = number(a, v, 0.001, 100000);
    else if (a == "--ranks")
      o.ranks = static_cast<int>(number(a, v, 2, 16));
    else if (a == "--device")
      o.device = static_cast<int>(number(a, v, 0, 1023));
    else if (a == "--mib")
      o.bytes = static_cast<std::uint64_t>(number(a, v, 1, 4096)) << 20;
    else if (a == "--reps")
      o.reps = static_cast<int>(number(a, v, 1, 1000));
    else if (a == "--tolerance")
      o.tolerance = number(a, v, 0, 1);
    else
      fail("unknown flag '" + a + "'");
  }
  return o;
}

__global__ void fill_kernel(unsigned char* p, std::uint64_t n, std::uint32_t seed) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<unsigned char>((i * 2654435761u) >> 13 ^ seed);
}

// The device clock the pacing reads (device_clock_ns): one thread reads it until it has changed
// 1000 times or 10^7 reads have passed; out: the smallest and largest change seen (ns) and the
// changes counted. A coarse clock wakes blocks late; docs/mesh-emulation.md says how much the
// pacing tolerates.
__global__ void clock_step_kernel(std::uint64_t* out) {
  std::uint64_t last = relay::gpu::device_clock_ns(), smallest = ~std::uint64_t{0}, largest = 0;
  std::uint64_t changes = 0;
  for (int reads = 0; reads < 10'000'000 && changes < 1000; ++reads) {
    const std::uint64_t now = relay::gpu::device_clock_ns();
    if (now == last) continue;
    smallest = now - last < smallest ? now - last : smallest;
    largest = now - last > largest ? now - last : largest;
    last = now;
    ++changes;
  }
  out[0] = smallest;
  out[1] = largest;
  out[2] = changes;
}

struct pair {
  int src = 0, dst = 0;
};

// A plan of one transfer phase: each listed copy moves `bytes` from its own area of the source's
// input (one per destination) to its own area of the destination's output (one per source and
// copy, so two copies of one pair land apart). uint8 elements: counts are bytes.
relay::plan copies_plan(int ranks, const std::vector<pair>& pairs, std::uint64_t bytes) {
  relay::plan p;
  p.spec.ranks = ranks;
  p.type = relay::dtype::uint8;
  const auto slots = static_cast<std::uint64_t>(2 * ranks);  // up to 2 copies per pair
  p.input_bytes.assign(static_cast<std::size_t>(ranks), slots * bytes);
  p.output_bytes.assign(static_cast<std::size_t>(ranks), slots * bytes);
  p.scratch_bytes.assign(static_cast<std::size_t>(ranks), 0);
  p.phases.push_back({0, relay::phase::transfer, 0, 0});
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const pair& c = pairs[i];
    std::uint64_t again = 0;  // earlier copies of the same pair
    for (std::size_t j = 0; j < i; ++j)
      again += pairs[j].src == c.src && pairs[j].dst == c.dst ? 1 : 0;
    relay::plan_op o;
    o.source_count = 1;
    o.first_source = static_cast<std::uint32_t>(p.sources.size());
    p.sources.push_back({static_cast<std::uint16_t>(c.src), relay::buffer::input,
                         (2 * static_cast<std::uint64_t>(c.dst) + again) * bytes});
    o.dst = {static_cast<std::uint16_t>(c.dst), relay::buffer::output,
             (2 * static_cast<std::uint64_t>(c.src) + again) * bytes};
    o.count = bytes;
    p.ops.push_back(o);
    p.phases.back().size++;
  }
  return p;
}

struct bench {
  relay::gpu_executor& ex;
  const options& o;
  std::vector<relay::buffer_view> in, out;

  // Device seconds of one run of `pairs`, the median of o.reps after one to warm up; checks a
  // sample of each copy landed.
  double seconds(const std::vector<pair>& pairs) {
    const relay::plan p = copies_plan(o.ranks, pairs, o.bytes);
    std::vector<double> t;
    for (int i = 0; i <= o.reps; ++i) {
      if (relay::status s = ex.run(p, in, out); !s) fail("executor run: " + s.to_string());
      if (i > 0) t.push_back(ex.last_run_seconds());
    }
    std::vector<unsigned char> a(4096), b(4096);
    for (const relay::plan_op& op : p.ops) {
      const relay::plan_operand& s = p.sources[op.first_source];
      for (const std::uint64_t at : {std::uint64_t{0}, o.bytes / 2 + 3, o.bytes - a.size()}) {
        const auto* from = static_cast<const unsigned char*>(in[s.rank].data) + s.offset + at;
        const auto* to =
            static_cast<const unsigned char*>(out[op.dst.rank].data) + op.dst.offset + at;
        if (!ex.read(s.rank, a.data(), from, a.size()) ||
            !ex.read(op.dst.rank, b.data(), to, b.size()))
          fail("reading back a sample");
        if (a != b)
          fail("the copy from rank " + std::to_string(s.rank) + " to rank " +
               std::to_string(op.dst.rank) + " did not land (bytes at " + std::to_string(at) +
               " differ)");
      }
    }
    return relay::examples::median(t);
  }
};

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  int count = 0;
  CHECK_RT(rt::device_count(&count));
  if (o.device >= count)
    fail("device " + std::to_string(o.device) + " does not exist (" + std::to_string(count) +
         " visible)");
  std::string device;
  CHECK_RT(rt::device_name(device, o.device));
  const auto rate = static_cast<std::uint64_t>(std::llround(o.gbps * 1e9));
  const std::vector<int> devices(static_cast<std::size_t>(o.ranks), o.device);
  relay::gpu_options go;
  go.time_runs = true;
  go.emulate_mesh = rate;
  relay::gpu_executor ex(devices, go);
  if (!ex.init_status()) fail("executor: " + ex.init_status().to_string());

  const std::uint64_t area = 2 * static_cast<std::uint64_t>(o.ranks) * o.bytes;
  bench b{ex, o, {}, {}};
  for (int r = 0; r < o.ranks; ++r) {
    b.in.push_back({ex.allocate(r, area), area});
    b.out.push_back({ex.allocate(r, area), area});
    if (b.in.back().data == nullptr || b.out.back().data == nullptr)
      fail("no device memory for " + std::to_string(2 * area) + " bytes of rank " +
           std::to_string(r));
    CHECK_RT(rt::set_device(o.device));
    CHECK_RT(rt::launch(fill_kernel, 1024, 256, nullptr,
                        static_cast<unsigned char*>(b.in.back().data), area,
                        static_cast<std::uint32_t>(r + 1)));
  }
  CHECK_RT(rt::device_synchronize());

  std::printf(
      "# gpu_mesh_check: %d ranks on device %d (%s, %s), links of %g GB/s each way, "
      "copies of %llu MiB, median of %d runs, tolerance %g%%\n\n",
      o.ranks, o.device, device.c_str(), rt::platform, o.gbps,
      static_cast<unsigned long long>(o.bytes >> 20), o.reps, o.tolerance * 100);
  std::printf(
      "| check | links busy | time (us) | GB/s per link | of B | result |\n"
      "|---|---|---|---|---|---|\n");
  bool ok = true;
  const double gb = static_cast<double>(o.bytes) / 1e9;
  // `per_link` copies of o.bytes on each of `links` links in one run: the rate each link got.
  auto line = [&](const char* what, const std::vector<pair>& pairs, int links, int per_link) {
    const double s = b.seconds(pairs);
    const double gbps = per_link * gb / s;
    const bool pass = std::abs(gbps / o.gbps - 1) <= o.tolerance;
    ok = ok && pass;
    std::printf("| %s | %d | %.1f | %.3f | %.4f | %s |\n", what, links, s * 1e6, gbps,
                gbps / o.gbps, pass ? "PASS" : "FAIL");
  };
  line("one pair alone (0 -> 1)", {{0, 1}}, 1, 1);
  std::vector<pair> fan, all;
  for (int d = 1; d < o.ranks; ++d)
    fan.push_back({0, d});
  for (int s = 0; s < o.ranks; ++s)
    for (int d = 0; d < o.ranks; ++d)
      if (s != d) all.push_back({s, d});
  const std::string fan_text = std::to_string(o.ranks - 1) + " pairs out of rank 0 at once";
  line(fan_text.c_str(), fan, o.ranks - 1, 1);
  const std::string all_text = "all " + std::to_string(all.size()) + " ordered pairs at once";
  line(all_text.c_str(), all, static_cast<int>(all.size()), 1);
  line("two copies sharing one pair (0 -> 1), together", {{0, 1}, {0, 1}}, 1, 2);
  // The memory's own rate under the executor's copy path: every rank copying within itself at
  // once (no link, so not paced), bytes read plus written; what the cost model's memory term
  // prices the ranks' local copies and reductions at.
  std::vector<pair> local;
  for (int r = 0; r < o.ranks; ++r)
    local.push_back({r, r});
  const double memory_gbps = 2.0 * o.ranks * gb / b.seconds(local);
  std::printf(
      "\nEvery rank copying within itself at once: %.0f GB/s of memory traffic (read and "
      "write)\n",
      memory_gbps);
  const double copy_traffic = static_cast<double>(all.size()) * o.gbps;
  std::printf(
      "\nAll pairs at once move %.0f GB/s of copies (%.0f GB/s of memory traffic, read "
      "and write) through the one device: its memory is %s at this B.\n",
      copy_traffic, 2 * copy_traffic, ok ? "not the limit" : "possibly the limit");

  for (int r = 0; r < o.ranks; ++r) {
    ex.deallocate(r, b.in[static_cast<std::size_t>(r)].data);
    ex.deallocate(r, b.out[static_cast<std::size_t>(r)].data);
  }
  void* sampled = nullptr;
  std::uint64_t ticks[3] = {};
  CHECK_RT(rt::set_device(o.device));
  CHECK_RT(rt::malloc(&sampled, sizeof ticks));
  CHECK_RT(rt::launch(clock_step_kernel, 1, 1, nullptr, static_cast<std::uint64_t*>(sampled)));
  CHECK_RT(rt::memcpy(ticks, sampled, sizeof ticks));
  CHECK_RT(rt::free(sampled));
  std::printf(
      "\nThe device clock (device_clock_ns): %llu changes seen, each of %llu to %llu ns; "
      "%u blocks per link, tiles of 64 KiB (%.2f us a tile at B)\n",
      static_cast<unsigned long long>(ticks[2]), static_cast<unsigned long long>(ticks[0]),
      static_cast<unsigned long long>(ticks[1]), relay::gpu::link_blocks(rate),
      65536 / o.gbps / 1e3);
  const relay::examples::step_timing steps = relay::examples::time_steps(devices, go);
  std::printf(
      "\n## The emulator's latency (paced rings, device-timed)\n\n"
      "one 1-step run: %.2f us; each further step: %.2f us; each further operation in a "
      "step: %.2f us\n\n",
      steps.call * 1e6, steps.step * 1e6, steps.op * 1e6);
  std::printf("--topology mesh:%g:%.2f:%.2f:%.0f\n\n", o.gbps, steps.step * 1e6, steps.op * 1e6,
              memory_gbps);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

// gpu_calibrate: measures this machine's GPU-to-GPU links and the executor's step latency, and
// writes them as a relay topology: the text relay-bench and relay-plan take with --topology, and
// the constexpr C++ line, so the cost model prices this machine rather than a preset.
//
//   1. every ordered pair, one direction at a time: a peer copy of --mib MiB by the copy engine
//      (memcpy peer) and by relay's batched copy kernel on the source (the executor's default
//      engine: the source pushes);
//   2. every pair, both directions at once (what a relay step does to a link), kernel;
//   3. every GPU pushing to all others at once, and all others pushing to it at once, kernel: on
//      a mesh the links add up, on a switch the port is the limit;
//   4. the executor's step latency: rings of 1 and 65 steps (tools/support/ring_plan.hpp) over
//      one rank per device, 256-byte copies, timed by the devices; the difference over 64 steps.
//      With 3 or more ranks, the same with every rank pushing to all others: the cost of one
//      more operation in a step.
//
// tools/support/fit_topology.hpp turns the measurements into the topology (mesh or switch,
// bandwidth, latencies; the rule is written there and unit-tested). Every copy is checked on a
// sample of bytes.
//
// Usage: gpu_calibrate [--devices 0,1,...] [--mib M] [--reps R] [--name NAME] [--json]
//        (default: every visible device, 256 MiB, 5 copies per trial, 7 trials, median)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "relay/exec/gpu/executor.hpp"
#include "relay/gpu/kernels.hpp"
#include "relay/gpu/runtime.hpp"
#include "support/fit_topology.hpp"
#include "support/gpu_check.hpp"
#include "support/step_timing.hpp"

namespace rt = relay::gpu::rt;

namespace {

constexpr relay::examples::exit_with fail{"gpu_calibrate", 1};

struct options {
  std::vector<int> devices;
  std::size_t bytes = 256u << 20;
  int reps = 5;
  std::string name = "calibrated";
  bool json = false;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--devices") {
      const std::string v = value();
      for (std::size_t at = 0; at <= v.size();) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        char* end = nullptr;
        const long d = std::strtol(v.c_str() + at, &end, 10);
        if (end != v.c_str() + comma || comma == at || d < 0) fail("--devices: '" + v + "'");
        o.devices.push_back(static_cast<int>(d));
        at = comma + 1;
      }
    } else if (a == "--mib") {
      const long m = std::atol(value().c_str());
      if (m < 1 || m > 16384) fail("--mib: 1 to 16384");
      o.bytes = static_cast<std::size_t>(m) << 20;
    } else if (a == "--reps") {
      o.reps = std::atoi(value().c_str());
      if (o.reps < 1 || o.reps > 1000) fail("--reps: 1 to 1000");
    } else if (a == "--name") {
      o.name = value();
    } else if (a == "--json") {
      o.json = true;
    } else {
      fail("unknown flag '" + a +
           "'; usage: gpu_calibrate [--devices 0,1,...] [--mib M] [--reps R] [--name NAME] "
           "[--json]");
    }
  }
  return o;
}

// ---- the ranks' memory and streams -------------------------------------------------------------

// Rank r lives on devices[r]: one send buffer of `bytes`, one receive slot of `bytes` per peer
// (slot k-1 receives from rank r-k), one stream per peer it pushes to, and per stream an event
// that marks its end of a timed trial.
struct rank_state {
  int device = 0;
  unsigned char* send = nullptr;
  std::vector<unsigned char*> recv;
  std::vector<rt::stream_t> streams;
  std::vector<rt::event_t> done;
};

__global__ void fill_kernel(unsigned char* p, std::uint64_t n, std::uint32_t seed) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<unsigned char>((i * 2654435761u) >> 13 ^ seed);
}

struct machine {
  std::vector<rank_state> ranks;
  std::size_t bytes = 0;
  rt::event_t start = nullptr, end = nullptr;  // on rank 0's first stream

  int size() const { return static_cast<int>(ranks.size()); }
  int slot(int src, int dst) const { return (dst - src + size()) % size() - 1; }

  machine(const std::vector<int>& devices, std::size_t b) : bytes(b) {
    const int n = static_cast<int>(devices.size());
    for (int d : devices)
      for (int e : devices) {
        if (d == e) continue;
        int can = 0;
        CHECK_RT(rt::can_access_peer(&can, d, e));
        if (can == 0)
          fail("device " + std::to_string(d) + " cannot access device " + std::to_string(e) +
               " (the kernel engine needs peer access)");
        CHECK_RT(rt::set_device(d));
        CHECK_RT(rt::enable_peer_access(e));
      }
    for (int r = 0; r < n; ++r) {
      rank_state s;
      s.device = devices[static_cast<std::size_t>(r)];
      CHECK_RT(rt::set_device(s.device));
      void* p = nullptr;
      CHECK_RT(rt::malloc(&p, bytes));
      s.send = static_cast<unsigned char*>(p);
      CHECK_RT(rt::launch(fill_kernel, 1024, 256, nullptr, s.send, std::uint64_t{bytes},
                          static_cast<std::uint32_t>(r + 1)));
      for (int k = 1; k < n; ++k) {
        CHECK_RT(rt::malloc(&p, bytes));
        CHECK_RT(rt::memset(p, 0xA5, bytes));  // poison: a copy that does not happen shows
        s.recv.push_back(static_cast<unsigned char*>(p));
        rt::stream_t st = nullptr;
        CHECK_RT(rt::stream_create(&st));
        s.streams.push_back(st);
        rt::event_t e = nullptr;
        CHECK_RT(rt::event_create(&e));
        s.done.push_back(e);
      }
      ranks.push_back(s);
    }
    CHECK_RT(rt::set_device(ranks[0].device));
    CHECK_RT(rt::event_create(&start, true));
    CHECK_RT(rt::event_create(&end, true));
    CHECK_RT(rt::device_synchronize());
  }
  ~machine() {
    for (rank_state& s : ranks) {
      (void)rt::set_device(s.device);
      (void)rt::device_synchronize();
      (void)rt::free(s.send);
      for (unsigned char* p : s.recv)
        (void)rt::free(p);
      for (rt::stream_t st : s.streams)
        (void)rt::stream_destroy(st);
      for (rt::event_t e : s.done)
        (void)rt::event_destroy(e);
    }
    (void)rt::event_destroy(start);
    (void)rt::event_destroy(end);
  }
  machine(const machine&) = delete;
  machine& operator=(const machine&) = delete;
};

enum class engine { memcpy, kernel };

// One trial's transfers: each moves `bytes` from its source's send buffer to the destination's
// slot for that source.
struct transfer {
  int src = 0, dst = 0;
};

// The kernel engine's descriptor lists, one per source rank (that rank's pushes in one launch, as
// the executor issues a step), in the source's device memory.
struct launch_list {
  int src = 0;
  void* descs = nullptr;
  std::uint32_t count = 0;
  std::uint64_t tiles = 0;
};

std::vector<launch_list> upload(machine& m, const std::vector<transfer>& ts) {
  std::vector<launch_list> lists;
  for (int r = 0; r < m.size(); ++r) {
    std::vector<relay::gpu::copy_desc> d;
    for (const transfer& t : ts)
      if (t.src == r)
        d.push_back(relay::gpu::make_copy(m.ranks[static_cast<std::size_t>(r)].send,
                                          m.ranks[static_cast<std::size_t>(t.dst)]
                                              .recv[static_cast<std::size_t>(m.slot(r, t.dst))],
                                          m.bytes));
    if (d.empty()) continue;
    launch_list l;
    l.src = r;
    l.count = static_cast<std::uint32_t>(d.size());
    l.tiles = relay::gpu::assign_tiles(
        d.data(), d.size(), std::uint64_t{relay::gpu::default_block} * relay::gpu::default_unroll);
    CHECK_RT(rt::set_device(m.ranks[static_cast<std::size_t>(r)].device));
    CHECK_RT(rt::malloc(&l.descs, d.size() * sizeof(relay::gpu::copy_desc)));
    CHECK_RT(rt::memcpy(l.descs, d.data(), d.size() * sizeof(relay::gpu::copy_desc)));
    lists.push_back(l);
  }
  return lists;
}

// Seconds per round of `ts` (every transfer once, all at once), the median of 7 trials of
// `reps` rounds, timed by events on rank 0's device around everything every stream did.
double time_round(machine& m, const std::vector<transfer>& ts, engine e, int reps) {
  const std::vector<launch_list> lists =
      e == engine::kernel ? upload(m, ts) : std::vector<launch_list>{};
  // The streams a trial uses: the kernel engine one per source, the copy engine one per transfer
  // (so that a source's copies to several peers run at once).
  std::vector<std::pair<int, int>> used;  // (rank, stream index)
  if (e == engine::kernel)
    for (const launch_list& l : lists)
      used.emplace_back(l.src, 0);
  else
    for (const transfer& t : ts)
      used.emplace_back(t.src, m.slot(t.src, t.dst));
  rt::stream_t lead = m.ranks[0].streams[0];
  auto issue_round = [&] {
    if (e == engine::kernel) {
      for (const launch_list& l : lists) {
        const rank_state& s = m.ranks[static_cast<std::size_t>(l.src)];
        CHECK_RT(rt::set_device(s.device));
        CHECK_RT(rt::launch(relay::gpu::batched_copy_kernel<>, relay::gpu::copy_grid(l.tiles),
                            relay::gpu::default_block, s.streams[0],
                            static_cast<const relay::gpu::copy_desc*>(l.descs), l.count, l.tiles));
      }
    } else {
      for (const transfer& t : ts) {
        const rank_state& s = m.ranks[static_cast<std::size_t>(t.src)];
        const rank_state& d = m.ranks[static_cast<std::size_t>(t.dst)];
        const int k = m.slot(t.src, t.dst);
        CHECK_RT(rt::set_device(s.device));
        CHECK_RT(rt::memcpy_peer_async(d.recv[static_cast<std::size_t>(k)], d.device, s.send,
                                       s.device, m.bytes, s.streams[static_cast<std::size_t>(k)]));
      }
    }
  };
  std::vector<double> trials;
  for (int trial = -1; trial < 7; ++trial) {  // trial -1 warms up
    CHECK_RT(rt::set_device(m.ranks[0].device));
    CHECK_RT(rt::event_record(m.start, lead));
    for (const auto& [r, k] : used) {
      CHECK_RT(rt::set_device(m.ranks[static_cast<std::size_t>(r)].device));
      CHECK_RT(rt::stream_wait_event(
          m.ranks[static_cast<std::size_t>(r)].streams[static_cast<std::size_t>(k)], m.start));
    }
    for (int i = 0; i < reps; ++i)
      issue_round();
    for (const auto& [r, k] : used) {
      rank_state& s = m.ranks[static_cast<std::size_t>(r)];
      CHECK_RT(rt::set_device(s.device));
      CHECK_RT(rt::event_record(s.done[static_cast<std::size_t>(k)],
                                s.streams[static_cast<std::size_t>(k)]));
      CHECK_RT(rt::set_device(m.ranks[0].device));
      CHECK_RT(rt::stream_wait_event(lead, s.done[static_cast<std::size_t>(k)]));
    }
    CHECK_RT(rt::set_device(m.ranks[0].device));
    CHECK_RT(rt::event_record(m.end, lead));
    CHECK_RT(rt::event_synchronize(m.end));
    float ms = 0;
    CHECK_RT(rt::event_elapsed_ms(&ms, m.start, m.end));
    if (trial >= 0) trials.push_back(ms * 1e-3 / reps);
  }
  for (const launch_list& l : lists) {
    CHECK_RT(rt::set_device(m.ranks[static_cast<std::size_t>(l.src)].device));
    CHECK_RT(rt::free(l.descs));
  }
  return relay::examples::median(trials);
}

// The transfers landed: a sample of bytes of each destination slot equals its source's.
void check_landed(machine& m, const std::vector<transfer>& ts) {
  const std::size_t probe = 4096;
  std::vector<unsigned char> a(probe), b(probe);
  for (const transfer& t : ts)
    for (const std::size_t at : {std::size_t{0}, m.bytes / 2 + 3, m.bytes - probe}) {
      const rank_state& s = m.ranks[static_cast<std::size_t>(t.src)];
      const rank_state& d = m.ranks[static_cast<std::size_t>(t.dst)];
      CHECK_RT(rt::memcpy(a.data(), s.send + at, probe));
      CHECK_RT(
          rt::memcpy(b.data(), d.recv[static_cast<std::size_t>(m.slot(t.src, t.dst))] + at, probe));
      if (a != b)
        fail("the copy from rank " + std::to_string(t.src) + " to rank " + std::to_string(t.dst) +
             " did not land (bytes at " + std::to_string(at) + " differ)");
    }
}

// ---- the report ---------------------------------------------------------------------------------

struct pair_result {
  int src = 0, dst = 0;
  double memcpy_gbps = 0, kernel_gbps = 0, both_gbps = 0;  // per direction
};

std::string number(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  int count = 0;
  CHECK_RT(rt::device_count(&count));
  if (o.devices.empty())
    for (int d = 0; d < count; ++d)
      o.devices.push_back(d);
  for (int d : o.devices)
    if (d >= count)
      fail("device " + std::to_string(d) + " does not exist (" + std::to_string(count) +
           " visible)");
  const int n = static_cast<int>(o.devices.size());
  if (n < 2) fail("calibration needs 2 or more ranks (--devices 0,1,...)");
  bool shared = false;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      shared = shared ||
               o.devices[static_cast<std::size_t>(a)] == o.devices[static_cast<std::size_t>(b)];

  std::string device;
  CHECK_RT(rt::device_name(device, o.devices[0]));
  const double gb = static_cast<double>(o.bytes) / 1e9;
  std::vector<pair_result> pairs;
  std::vector<double> fan_out(static_cast<std::size_t>(n)), fan_in(static_cast<std::size_t>(n));
  {
    machine m(o.devices, o.bytes);
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        pair_result p;
        p.src = a;
        p.dst = b;
        const std::vector<transfer> one{{a, b}};
        p.memcpy_gbps = gb / time_round(m, one, engine::memcpy, o.reps);
        check_landed(m, one);
        p.kernel_gbps = gb / time_round(m, one, engine::kernel, o.reps);
        check_landed(m, one);
        if (a < b) {
          const std::vector<transfer> both{{a, b}, {b, a}};
          p.both_gbps = gb / time_round(m, both, engine::kernel, o.reps);
          check_landed(m, both);
        }
        pairs.push_back(p);
      }
    // Both directions at once were timed on the (a < b) entry; the (b, a) entry shares it.
    for (pair_result& p : pairs)
      if (p.src > p.dst)
        for (const pair_result& q : pairs)
          if (q.src == p.dst && q.dst == p.src) p.both_gbps = q.both_gbps;
    for (int r = 0; r < n; ++r) {
      std::vector<transfer> out, in;
      for (int k = 0; k < n; ++k)
        if (k != r) {
          out.push_back({r, k});
          in.push_back({k, r});
        }
      fan_out[static_cast<std::size_t>(r)] =
          (n - 1) * gb / time_round(m, out, engine::kernel, o.reps);
      check_landed(m, out);
      fan_in[static_cast<std::size_t>(r)] =
          (n - 1) * gb / time_round(m, in, engine::kernel, o.reps);
      check_landed(m, in);
    }
  }
  const relay::examples::step_timing steps = relay::examples::time_steps(o.devices);

  // The model's numbers (tools/support/fit_topology.hpp).
  relay::examples::link_measurements lm;
  lm.ranks = n;
  for (const pair_result& p : pairs)
    lm.both_directions_gbps.push_back(p.both_gbps);
  lm.fan_out_gbps = fan_out;
  lm.fan_in_gbps = fan_in;
  lm.step_seconds = steps.step;
  lm.op_seconds = steps.op;
  const relay::examples::fitted_topology fit = relay::examples::fit_topology(lm);
  const bool is_mesh = fit.topo.kind == relay::fabric::mesh;
  const double bandwidth = fit.topo.link_bandwidth / 1e9, link = fit.link_gbps;
  const char* kind = is_mesh ? "mesh" : "switched";
  const std::string& text = fit.text;
  const std::string cpp = fit.cpp(o.name);

  if (o.json) {
    std::printf("{\"device\": \"%s\", \"platform\": \"%s\", \"ranks\": %d, \"devices\": [",
                device.c_str(), rt::platform, n);
    for (int r = 0; r < n; ++r)
      std::printf("%s%d", r ? ", " : "", o.devices[static_cast<std::size_t>(r)]);
    std::printf("], \"bytes\": %zu, \"shared_devices\": %s, \"pairs\": [", o.bytes,
                shared ? "true" : "false");
    for (std::size_t i = 0; i < pairs.size(); ++i)
      std::printf(
          "%s{\"src\": %d, \"dst\": %d, \"memcpy_gbps\": %.2f, \"kernel_gbps\": %.2f, "
          "\"both_directions_gbps\": %.2f}",
          i ? ", " : "", pairs[i].src, pairs[i].dst, pairs[i].memcpy_gbps, pairs[i].kernel_gbps,
          pairs[i].both_gbps);
    std::printf("], \"fan_out_gbps\": [");
    for (int r = 0; r < n; ++r)
      std::printf("%s%.2f", r ? ", " : "", fan_out[static_cast<std::size_t>(r)]);
    std::printf("], \"fan_in_gbps\": [");
    for (int r = 0; r < n; ++r)
      std::printf("%s%.2f", r ? ", " : "", fan_in[static_cast<std::size_t>(r)]);
    std::printf(
        "], \"step_latency_us\": %.3f, \"op_latency_us\": %.3f, \"one_step_run_us\": %.3f, "
        "\"fabric\": \"%s\", \"bandwidth_gbps\": %.2f, \"topology\": \"%s\", \"cpp\": \"",
        steps.step * 1e6, steps.op * 1e6, steps.call * 1e6, kind, bandwidth, text.c_str());
    for (char c : cpp)
      std::printf(c == '"' ? "\\\"" : "%c", c);
    std::printf("\"}\n");
    return 0;
  }

  std::printf("# gpu_calibrate: %d ranks on %s (%s), copies of %.0f MiB\n\n", n, device.c_str(),
              rt::platform, static_cast<double>(o.bytes) / (1 << 20));
  if (shared)
    std::printf("Ranks share devices: these are copies within device memory, not links.\n\n");
  std::printf(
      "## Pairs (GB/s per direction)\n\n| src | dst | devices | copy engine | kernel | "
      "kernel, both directions at once |\n|---|---|---|---|---|---|\n");
  for (const pair_result& p : pairs)
    std::printf("| %d | %d | %d -> %d | %.1f | %.1f | %.1f |\n", p.src, p.dst,
                o.devices[static_cast<std::size_t>(p.src)],
                o.devices[static_cast<std::size_t>(p.dst)], p.memcpy_gbps, p.kernel_gbps,
                p.both_gbps);
  std::printf(
      "\n## Each rank with all others at once (GB/s, kernel)\n\n| rank | fan-out | fan-in | "
      "of one pair's link |\n|---|---|---|---|\n");
  for (int r = 0; r < n; ++r)
    std::printf(
        "| %d | %.1f | %.1f | %.2fx |\n", r, fan_out[static_cast<std::size_t>(r)],
        fan_in[static_cast<std::size_t>(r)],
        std::min(fan_out[static_cast<std::size_t>(r)], fan_in[static_cast<std::size_t>(r)]) / link);
  std::printf(
      "\n## Executor steps (device-timed, one rank per listed device)\n\n"
      "one 1-step run: %.2f us; each further step: %.2f us; each further operation in a "
      "step: %s\n\n",
      steps.call * 1e6, steps.step * 1e6,
      n >= 3 ? (number(steps.op * 1e6, 2) + " us").c_str() : "not measured (2 ranks)");
  std::printf(
      "## Topology\n\nfabric: %s, %.1f GB/s per %s and direction%s\n"
      "--topology %s\n%s\n",
      kind, bandwidth, is_mesh ? "link" : "port",
      n == 2 ? " (2 ranks: a mesh and a switch price alike)" : "", text.c_str(), cpp.c_str());
  return 0;
}

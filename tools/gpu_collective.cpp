// gpu_collective: one collective on the GPU executor, checked bit for bit against the host
// (reference) executor, then timed.
//
//   gpu_collective [--collective allreduce] [--active 2] [--ranks 8] [--mode fused|single]
//                  [--route relay|direct|legacy] [--dtype bf16] [--op sum|avg] [--count N]
//                  [--engine kernel|memcpy] [--streams device|rank] [--devices D] [--iters I]
//                  [--in-place] [--seed S] [--emulate-mesh GBPS] [--trace] [--wire W]
//
// --emulate-mesh paces every copy between two ranks to GBPS GB/s per ordered pair
// (gpu_options::emulate_mesh, docs/mesh-emulation.md). --trace runs the prepared plan once more
// with a device event after every launch and prints each one's device time (where a run's time
// goes, phase by phase). --wire fp8 (or fp8_e4m3, fp8_e4m3_fnuz) sends what crosses links as fp8
// blocks at every size; the host executor runs the same arithmetic, so the check stays bit for
// bit. With --emulate-mesh it also counts one run's bytes on every link against the plan's.
//
// Exit status: 0 when every check held; 1 on wrong elements (or a step that failed); 3 when the
// elements are right but a link carried other bytes than the plan's; 2 on a usage error. The
// last line names what failed.
//
// Ranks go to devices round robin over the first D devices (default 1: every rank on device 0).
// It prints the time of one call and two rates: algbw, the bytes of one active rank's output per
// second (nccl-tests' "algbw"), and the device-memory traffic the plan makes (every copy's bytes
// read and written, every reduction's inputs read and output written) per second, which is what
// bounds a run whose ranks share one device.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "relay/api/collectives.hpp"
#include "relay/exec/gpu/executor.hpp"
#include "relay/exec/host_executor.hpp"
#include "support/median.hpp"

using namespace relay;

namespace {

struct args {
  collective coll = collective::allreduce;
  int active = 2, ranks = 8, devices = 1, iters = 20;
  relay::mode mode = mode::fused;
  relay::route route = route::relay;
  dtype type = dtype::bfloat16;
  reduce_op op = reduce_op::sum;
  std::int64_t count = 64 << 20;
  copy_engine engine = copy_engine::kernel;
  stream_mode streams = stream_mode::per_device;
  bool in_place = false, trace = false;
  std::uint64_t seed = 1;
  std::uint64_t emulate_mesh = 0;  // bytes per second per link; 0: off
  wire_format wire = wire_format::native;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "gpu_collective: %s (see the comment at the top of gpu_collective.cpp)\n",
               why.c_str());
  std::exit(2);
}

args parse(int argc, char** argv) {
  args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--in-place" || k == "--trace") {
      (k == "--trace" ? a.trace : a.in_place) = true;
      continue;
    }
    if (i + 1 >= argc) usage(k + " needs a value");
    const std::string v = argv[++i];
    auto number = [&] { return std::strtoll(v.c_str(), nullptr, 10); };
    // The value relay's parse function read, or a usage error naming `what`.
    auto named = [&](auto parsed, const char* what) {
      if (!parsed) usage("unknown " + std::string(what) + " " + v);
      return *parsed;
    };
    // Options whose value is one of relay's names (hipcc 5.2's clang crashes on a map of
    // std::function here: an index into a list of flags instead).
    static constexpr const char* named_flags[] = {"--collective", "--mode",  "--op",
                                                  "--route",      "--dtype", "--wire"};
    switch (std::find(std::begin(named_flags), std::end(named_flags), k) -
            std::begin(named_flags)) {
      case 0: a.coll = named(parse_collective(v), "collective"); continue;
      case 1: a.mode = named(parse_mode(v), "mode"); continue;
      case 2: a.op = named(parse_reduce_op(v), "operator"); continue;
      case 3: a.route = named(parse_route(v), "route"); continue;
      case 4: a.type = named(parse_dtype(v), "dtype"); continue;
      case 5: a.wire = named(parse_wire(v), "wire format"); continue;
      default: break;
    }
    if (k == "--engine") {
      if (v != "kernel" && v != "memcpy") usage("--engine is kernel or memcpy");
      a.engine = v == "kernel" ? copy_engine::kernel : copy_engine::memcpy;
    } else if (k == "--streams") {
      if (v != "device" && v != "rank") usage("--streams is device or rank");
      a.streams = v == "device" ? stream_mode::per_device : stream_mode::per_rank;
    } else if (k == "--active") {
      a.active = static_cast<int>(number());
    } else if (k == "--ranks") {
      a.ranks = static_cast<int>(number());
    } else if (k == "--devices") {
      a.devices = static_cast<int>(number());
    } else if (k == "--iters") {
      a.iters = static_cast<int>(number());
    } else if (k == "--count") {
      a.count = number();
    } else if (k == "--seed") {
      a.seed = static_cast<std::uint64_t>(number());
    } else if (k == "--emulate-mesh") {
      a.emulate_mesh = static_cast<std::uint64_t>(std::strtod(v.c_str(), nullptr) * 1e9);
    } else {
      usage("unknown option " + k);
    }
  }
  if (a.devices < 1 || a.iters < 1 || a.active < 1 || a.ranks < 1) usage("bad number");
  return a;
}

// Every byte of every copy read and written, every reduction's inputs read and output written.
double plan_traffic(const plan& p) {
  double bytes = 0;
  for (const plan_op& o : p.ops)
    bytes += static_cast<double>(o.count) * p.element_size() * (o.source_count + 1);
  return bytes;
}

void require(const status& s, const char* what) {
  if (s) return;
  std::fprintf(stderr, "gpu_collective: %s: %s\n", what, s.to_string().c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const args a = parse(argc, argv);
  // Groups: fused, N/A groups of consecutive ranks; single, ranks 0..A-1 (the rest help).
  group_list groups;
  const int ngroups = a.mode == mode::fused ? a.ranks / std::max(a.active, 1) : 1;
  for (int g = 0; g < ngroups; ++g) {
    groups.emplace_back();
    for (int k = 0; k < a.active; ++k)
      groups.back().push_back(g * a.active + k);
  }
  const std::vector<std::int64_t> counts(groups.size(), a.count);
  const auto es = static_cast<std::size_t>(size_of(a.type));

  // Each active rank's frame holds its input and output, laid out in place as NCCL does when
  // --in-place is given.
  const auto R = static_cast<std::size_t>(a.ranks);
  std::vector<std::size_t> frame(R, 0), in_at(R, 0), out_at(R, 0), in_bytes(R, 0), out_bytes(R, 0);
  for (const auto& g : groups)
    for (std::size_t k = 0; k < g.size(); ++k) {
      const auto r = static_cast<std::size_t>(g[k]);
      if (r >= R) usage("more active ranks than ranks");
      in_bytes[r] = static_cast<std::size_t>(input_elements(a.coll, a.active, a.count)) * es;
      out_bytes[r] = static_cast<std::size_t>(output_elements(a.coll, a.active, a.count)) * es;
      if (a.in_place) {
        const in_place_offsets at = in_place_layout(a.coll, static_cast<int>(k), a.count);
        in_at[r] = static_cast<std::size_t>(at.input) * es;
        out_at[r] = static_cast<std::size_t>(at.output) * es;
      } else {
        out_at[r] = in_bytes[r];
      }
      frame[r] = std::max(in_at[r] + in_bytes[r], out_at[r] + out_bytes[r]);
    }

  // Random inputs (integers: every bit; floats: small non-integers), the same for both executors.
  std::mt19937_64 rng(a.seed);
  std::vector<std::vector<unsigned char>> host(R);
  for (std::size_t r = 0; r < R; ++r) {
    host[r].assign(frame[r], 0xa5);
    visit_dtype(a.type, [&](auto zero) {
      using T = decltype(zero);
      std::uniform_real_distribution<float> real(-1.0f, 1.0f);
      for (std::size_t i = 0; i < in_bytes[r] / es; ++i) {
        T x{};
        if constexpr (std::is_integral_v<T>)
          x = static_cast<T>(rng());
        else if constexpr (std::is_floating_point_v<T>)
          x = static_cast<T>(real(rng));
        else
          x = T::from_float(real(rng));
        std::memcpy(host[r].data() + in_at[r] + i * es, &x, es);
      }
    });
  }

  // The reference: the host executor on host memory.
  host_executor cpu;
  std::vector<std::vector<unsigned char>> want = host;
  std::vector<buffer_view> hsend(R), hrecv(R);
  for (std::size_t r = 0; r < R; ++r)
    if (frame[r] > 0) {
      hsend[r] = {want[r].data() + in_at[r], in_bytes[r]};
      hrecv[r] = {want[r].data() + out_at[r], out_bytes[r]};
    }
  options opt;
  opt.route = a.route;
  opt.wire = a.wire;
  opt.wire_threshold = 0;  // --wire fp8 at every size
  require(run_collective(cpu, a.coll, groups, hsend, hrecv, counts, a.type, a.op, opt),
          "the host executor");

  // The GPU executor.
  std::vector<int> map;
  for (int r = 0; r < a.ranks; ++r)
    map.push_back(r % a.devices);
  gpu_options go{a.engine, a.streams, false};
  go.emulate_mesh = a.emulate_mesh;
  go.time_runs = go.time_actions = a.trace;
  gpu_executor gpu(map, go);
  require(gpu.init_status(), "starting the GPU executor");
  std::vector<void*> mem(R, nullptr);
  std::vector<buffer_view> send(R), recv(R);
  for (std::size_t r = 0; r < R; ++r)
    if (frame[r] > 0) {
      mem[r] = gpu.allocate(static_cast<int>(r), frame[r]);
      if (mem[r] == nullptr) usage("out of device memory");
      require(gpu.write(static_cast<int>(r), mem[r], host[r].data(), frame[r]), "writing inputs");
      send[r] = {static_cast<unsigned char*>(mem[r]) + in_at[r], in_bytes[r]};
      recv[r] = {static_cast<unsigned char*>(mem[r]) + out_at[r], out_bytes[r]};
    }
  require(run_collective(gpu, a.coll, groups, send, recv, counts, a.type, a.op, opt),
          "the GPU executor");
  require(gpu.synchronize(), "the GPU executor");
  std::size_t wrong = 0, first = 0;
  for (std::size_t r = 0; r < R; ++r) {
    if (frame[r] == 0) continue;
    std::vector<unsigned char> got(frame[r]);
    require(gpu.read(static_cast<int>(r), got.data(), mem[r], frame[r]), "reading");
    for (std::size_t i = out_at[r]; i < out_at[r] + out_bytes[r]; i += es)
      if (std::memcmp(got.data() + i, want[r].data() + i, es) != 0 && wrong++ == 0) first = r;
  }

  // Timing: calls through the API (a plan made per call) and runs of one prepared plan.
  plan_request req = call_request(a.coll, groups, a.ranks, counts, a.type, a.op, opt);
  req.in_place = buffers_in_place(a.coll, groups, counts, static_cast<int>(es), send, recv);
  plan p;
  require(make_plan(req, p), "planning");
  auto timed = [&](auto&& call) {
    std::vector<double> trials;
    for (int t = 0; t < 5; ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < a.iters; ++i)
        require(call(), "a timed call");
      require(gpu.synchronize(), "a timed call");
      const auto t1 = std::chrono::steady_clock::now();
      trials.push_back(std::chrono::duration<double>(t1 - t0).count() / a.iters);
    }
    return relay::examples::median(trials);
  };
  const double api_s = timed(
      [&] { return run_collective(gpu, a.coll, groups, send, recv, counts, a.type, a.op, opt); });
  const double run_s = timed([&] { return gpu.run(p, send, recv); });

  std::string device;
  const bool named = gpu::rt::device_name(device, 0) == gpu::rt::success;
  const double out_rank = static_cast<double>(output_elements(a.coll, a.active, a.count) * es);
  std::printf(
      "%s %s A=%d N=%d %s %s %s count=%lld%s on %d device(s) (%s, %s), %s engine, "
      "streams %s\n",
      std::string(name(a.coll)).c_str(), std::string(name(a.mode)).c_str(), a.active, a.ranks,
      std::string(name(a.route)).c_str(), std::string(name(a.type)).c_str(),
      std::string(name(a.op)).c_str(), static_cast<long long>(a.count),
      a.in_place ? " in place" : "", a.devices, named ? device.c_str() : "?", gpu::rt::platform,
      a.engine == copy_engine::kernel ? "kernel" : "memcpy",
      a.streams == stream_mode::per_device ? "per device" : "per rank");
  std::printf("plan: %zu phases, %zu operations, %.1f MiB of device traffic\n", p.phases.size(),
              p.ops.size(), plan_traffic(p) / (1 << 20));
  std::printf("check against the host executor: %s", wrong == 0 ? "bit-exact\n" : "");
  if (wrong != 0) std::printf("%zu WRONG elements (first on rank %zu)\n", wrong, first);
  for (auto [what, s] : {std::pair{"through the collective call", api_s},
                         std::pair{"run of the prepared plan", run_s}})
    std::printf("%-28s %10.1f us   algbw %7.1f GB/s   device traffic %7.1f GB/s\n", what, s * 1e6,
                out_rank / s / 1e9, plan_traffic(p) / s / 1e9);
  bool links_differ = false;
  if (a.emulate_mesh != 0) {  // one more run, its link traffic against the plan's
    std::vector<std::uint64_t> moved;
    require(gpu.take_link_bytes(moved), "reading the link counters");
    require(gpu.run(p, send, recv), "a counted run");
    require(gpu.take_link_bytes(moved), "reading the link counters");
    const std::vector<std::uint64_t> plan_bytes = link_bytes(p);
    std::uint64_t total = 0, planned = 0;
    for (std::size_t k = 0; k < moved.size(); ++k)
      total += moved[k], planned += plan_bytes[k];
    std::printf("link bytes of one run: %llu on the emulated links, %llu in the plan (%s)\n",
                static_cast<unsigned long long>(total), static_cast<unsigned long long>(planned),
                moved == plan_bytes ? "equal on every link" : "DIFFERENT");
    links_differ = moved != plan_bytes;
    for (std::size_t k = 0; k < std::min(moved.size(), plan_bytes.size()); ++k)
      if (moved[k] != plan_bytes[k]) {
        std::printf("first link that differs: %zu -> %zu, %llu bytes moved, %llu planned\n", k / R,
                    k % R, static_cast<unsigned long long>(moved[k]),
                    static_cast<unsigned long long>(plan_bytes[k]));
        break;
      }
  }
  if (a.trace) {
    require(gpu.run(p, send, recv), "the traced run");
    require(gpu.synchronize(), "the traced run");
    std::printf("trace of one run (us on the device, from the run's start on each lane):\n");
    for (const gpu_action_time& t : gpu.last_run_actions())
      std::printf("  lane %d %10.1f %10.1f %10.1f  %s (%u descriptors)\n", t.lane, t.start_us,
                  t.end_us, t.end_us - t.start_us, t.what, t.count);
  }
  for (std::size_t r = 0; r < R; ++r)
    if (mem[r] != nullptr) gpu.deallocate(static_cast<int>(r), mem[r]);
  // Wrong elements outrank a link count: the data is what a caller gets.
  if (wrong != 0 || links_differ)
    std::printf("FAILED:%s%s\n", wrong != 0 ? " wrong elements" : "",
                links_differ ? " link bytes differ from the plan's" : "");
  return wrong != 0 ? 1 : links_differ ? 3 : 0;
}

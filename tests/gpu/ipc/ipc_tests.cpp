// The ipc transport across processes (include/relay/transport/ipc.hpp), one process per rank
// under relay-run, every rank on the device ipc_factory picks (RELAY_DEVICE, which relay-run sets
// to the local rank, modulo the devices there: 8 ranks share one GPU where there is one):
//
//   relay-run -n 8 -- relay_ipc_tests property [CALLS] [SEED]   the multi-process property suite
//                                                               through device memory
//   relay-run -n 8 -- relay_ipc_tests graph [K] [REPLAYS]       K calls captured into a graph,
//                                                               replayed; every output exact
//                                                               against the eager run's bits and
//                                                               the naive reference
//   relay-run -n 8 -- relay_ipc_tests stall                     rank 3 never calls: the others
//                                                               report it, nothing hangs
//   relay-run -n 8 -- relay_ipc_tests refused                   rank 5 passes a null buffer
//
// Without a GPU every rank exits 77 (skipped). Each failure prints the seed, the call and the
// case.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "multiprocess/mp_support.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/transport/ipc.hpp"

using namespace relay;
using namespace relay::testing;

namespace {

int failed(const std::string& why) {
  std::fprintf(stderr, "FAILED: %s\n", why.c_str());
  return 1;
}

// A runtime call that must succeed, else the rank stops with the call's text.
#define IPC_CHECK(call)                                                          \
  do {                                                                           \
    const ::relay::gpu::rt::error_t e_ = (call);                                 \
    if (e_ != ::relay::gpu::rt::success)                                         \
      return failed(std::string(#call) + ": " + ::relay::gpu::rt::describe(e_)); \
  } while (0)

// The device memory of one rank's frames, grow-only, and its stream.
struct device_side {
  gpu::rt::stream_t stream = nullptr;
  void* memory = nullptr;
  std::size_t capacity = 0;
  ~device_side() {
    if (stream != nullptr) (void)gpu::rt::stream_synchronize(stream);
    if (memory != nullptr) (void)gpu::rt::free(memory);
    if (stream != nullptr) (void)gpu::rt::stream_destroy(stream);
  }
  status reserve(std::size_t bytes) {
    if (bytes <= capacity) return {};
    if (memory != nullptr) (void)gpu::rt::free(memory);
    memory = nullptr;
    capacity = 0;
    if (gpu::rt::error_t e = gpu::rt::malloc(&memory, bytes); e != gpu::rt::success)
      return gpu::failure("allocating the test's buffers", 0, e);
    capacity = bytes;
    return {};
  }
};

ipc_transport& link_of(communicator& comm) {
  return static_cast<ipc_transport&>(comm.link());
}

// Waits for the stream; the call's status is then the device's verdict too.
status finish(communicator& comm, device_side& d, status s) {
  if (gpu::rt::error_t e = gpu::rt::stream_synchronize(d.stream); e != gpu::rt::success)
    return gpu::failure("synchronizing the stream", 0, e);
  if (!s) return s;
  return link_of(comm).device_status();
}

// One property case through device memory: the frame up, the call, the frame back.
status device_call(communicator& comm, device_side& d, const property_case& c, rank_frame& f) {
  if (f.bytes.empty()) return finish(comm, d, call(comm, c, {}, {}, d.stream));
  if (status s = d.reserve(f.bytes.size()); !s) return s;
  if (gpu::rt::error_t e = gpu::rt::upload(d.memory, f.bytes.data(), f.bytes.size());
      e != gpu::rt::success)
    return gpu::failure("uploading the frame", 0, e);
  auto* base = static_cast<std::byte*>(d.memory);
  const buffer_view send{base + f.in_off, f.in_bytes}, recv{base + f.out_off, f.out_bytes};
  const status s = finish(comm, d, call(comm, c, send, recv, d.stream));
  if (gpu::rt::error_t e = gpu::rt::memcpy(f.bytes.data(), d.memory, f.bytes.size());
      e != gpu::rt::success)
    return gpu::failure("downloading the frame", 0, e);
  return s;
}

int property(communicator& comm, int argc, char** argv) {
  const int calls = argc > 2 ? std::atoi(argv[2]) : 500;
  const std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20261201;
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  return property_run(
      comm, calls, seed, 20'000, " through the ipc transport",
      [&](const property_case& c, rank_frame& f) { return device_call(comm, d, c, f); });
}

// The graph test's shapes: every collective, fused and single, integer and floating types.
std::vector<property_case> graph_shapes() {
  auto shape = [](collective coll, int active, relay::mode m, dtype t, std::int64_t n) {
    property_case c;
    c.coll = coll;
    c.active = active;
    c.ranks = 8;
    c.mode = m;
    c.type = t;
    if (m == mode::fused) {
      for (int g = 0; g < 8 / active; ++g) {
        c.groups.emplace_back();
        for (int k = 0; k < active; ++k)
          c.groups.back().push_back(g * active + k);
      }
    } else {
      c.groups.assign(1, {});
      for (int k = 0; k < active; ++k)
        c.groups[0].push_back(2 * k + 1);  // not the first ranks: helpers below and between
    }
    c.counts.assign(c.groups.size(), n);
    return c;
  };
  return {shape(collective::allreduce, 2, mode::fused, dtype::int32, 3001),
          shape(collective::allreduce, 2, mode::single, dtype::bfloat16, 4096),
          shape(collective::reduce_scatter, 4, mode::fused, dtype::float32, 1027),
          shape(collective::all_gather, 4, mode::single, dtype::int64, 777),
          shape(collective::all_to_all, 2, mode::fused, dtype::uint8, 4099)};
}

// K calls of one shape, each with its own input and output; eager first, then captured and
// replayed. Returns the number of wrong outputs (this rank's view; every rank checks all).
int graph_case(communicator& comm, property_case c, int K, int replays, std::uint64_t seed) {
  const int me = comm.rank();
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  std::vector<std::vector<std::vector<std::byte>>> inputs(static_cast<std::size_t>(K));
  std::vector<rank_frame> frames;
  std::size_t total = 0;
  std::vector<std::size_t> at;
  for (int k = 0; k < K; ++k) {
    c.seed = seed + static_cast<std::uint64_t>(k);
    inputs[static_cast<std::size_t>(k)] = all_inputs(c);
    frames.emplace_back(c, me, inputs[static_cast<std::size_t>(k)][static_cast<std::size_t>(me)]);
    at.push_back(total);
    total += (frames.back().bytes.size() + 255) / 256 * 256;
  }
  if (status s = d.reserve(std::max<std::size_t>(total, 256)); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  auto upload = [&]() -> int {
    for (int k = 0; k < K; ++k)
      IPC_CHECK(gpu::rt::upload(base + at[static_cast<std::size_t>(k)],
                                frames[static_cast<std::size_t>(k)].bytes.data(),
                                frames[static_cast<std::size_t>(k)].bytes.size()));
    return 0;
  };
  auto issue = [&]() -> status {
    for (int k = 0; k < K; ++k) {
      rank_frame& f = frames[static_cast<std::size_t>(k)];
      std::byte* b = base + at[static_cast<std::size_t>(k)];
      const buffer_view send =
          f.bytes.empty() ? buffer_view{} : buffer_view{b + f.in_off, f.in_bytes};
      const buffer_view recv =
          f.bytes.empty() ? buffer_view{} : buffer_view{b + f.out_off, f.out_bytes};
      if (status s = call(comm, c, send, recv, d.stream); !s) return s;
    }
    return {};
  };
  // This rank's outputs now, and whether every rank's are right (checked on every rank).
  auto outputs = [&](std::vector<std::vector<std::byte>>& mine, const char* when) -> int {
    mine.assign(static_cast<std::size_t>(K), {});
    int wrong = 0;
    for (int k = 0; k < K; ++k) {
      rank_frame& f = frames[static_cast<std::size_t>(k)];
      std::vector<std::byte> image(f.bytes.size());
      if (!image.empty())
        IPC_CHECK(
            gpu::rt::memcpy(image.data(), base + at[static_cast<std::size_t>(k)], image.size()));
      mine[static_cast<std::size_t>(k)].assign(
          image.begin() + static_cast<std::ptrdiff_t>(f.out_off),
          image.begin() + static_cast<std::ptrdiff_t>(f.out_off + f.out_bytes));
      std::vector<std::vector<std::byte>> all;
      if (status s = comm.boot().all_gather(mine[static_cast<std::size_t>(k)], all,
                                            std::chrono::seconds(60));
          !s)
        return failed(s.to_string());
      const reference::mismatch_report m = reference::check_outputs(
          c.coll, c.type, c.op, c.groups, c.counts, inputs[static_cast<std::size_t>(k)], all);
      if (m.wrong > 0) {
        std::fprintf(stderr, "%s: call %d of %s: %lld wrong, first %s\n", when, k,
                     c.describe().c_str(), static_cast<long long>(m.wrong), m.first.c_str());
        ++wrong;
      }
    }
    return wrong;
  };
  if (upload() != 0) return 1;
  // Eager: the first calls of the shape also prepare it (which must happen outside capture).
  if (status s = finish(comm, d, issue()); !s) return failed("eager: " + s.to_string());
  std::vector<std::vector<std::byte>> eager, replayed;
  if (int w = outputs(eager, "eager"); w != 0) return w;
  // The host's time to issue a prepared call (K of them back to back, nothing waited for).
  if (upload() != 0) return 1;
  const auto issue_start = std::chrono::steady_clock::now();
  const status issued = issue();
  const double issue_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - issue_start)
          .count() /
      K;
  if (status s = finish(comm, d, issued); !s) return failed("eager again: " + s.to_string());
  if (me == 0)
    std::printf("%s: host issue time %.2f us per call (%d calls back to back)\n",
                c.describe().c_str(), issue_us, K);
  // Captured: K calls in one graph; before each replay every output is poisoned again.
  gpu::rt::graph_t graph = nullptr;
  gpu::rt::graph_exec_t exec = nullptr;
  IPC_CHECK(gpu::rt::begin_capture(d.stream));
  const status captured = issue();
  IPC_CHECK(gpu::rt::end_capture(d.stream, &graph));
  if (!captured) return failed("capture: " + captured.to_string());
  IPC_CHECK(gpu::rt::graph_instantiate(&exec, graph));
  int wrong = 0;
  for (int r = 0; r < replays && wrong == 0; ++r) {
    if (upload() != 0) return 1;
    IPC_CHECK(gpu::rt::graph_launch(exec, d.stream));
    if (status s = finish(comm, d, {}); !s)
      return failed("replay " + std::to_string(r) + ": " + s.to_string());
    wrong += outputs(replayed, "replay");
    for (int k = 0; k < K && wrong == 0; ++k)
      if (replayed[static_cast<std::size_t>(k)] != eager[static_cast<std::size_t>(k)]) {
        std::fprintf(stderr, "replay %d, call %d of %s: not the eager run's bits\n", r, k,
                     c.describe().c_str());
        ++wrong;
      }
  }
  IPC_CHECK(gpu::rt::graph_exec_destroy(exec));
  IPC_CHECK(gpu::rt::graph_destroy(graph));
  return wrong;
}

int graph(communicator& comm, int argc, char** argv) {
  const int K = argc > 2 ? std::atoi(argv[2]) : 100;
  const int replays = argc > 3 ? std::atoi(argv[3]) : 100;
  const std::uint64_t seed = 20261201;
  const auto start = std::chrono::steady_clock::now();
  for (const property_case& c : graph_shapes())
    if (int w = graph_case(comm, c, K, replays, seed); w != 0)
      return failed("graph test, seed " + std::to_string(seed) + ": " + c.describe());
  if (comm.rank() == 0)
    std::printf(
        "graph test: %zu shapes, %d calls captured, %d replays each, every output exact "
        "(%.1f s)\n",
        graph_shapes().size(), K, replays,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

// One rank misbehaves (stall: never calls; refused: a null input). Every other rank's call must
// end within the timeout and a margin, with an error naming a rank, and user memory untouched;
// at least one rank must name the culprit itself.
int misbehave(communicator& comm, bool stall) {
  const int me = comm.rank(), culprit = stall ? 3 : 5;
  property_case c;
  c.coll = collective::allreduce;
  c.active = 2;
  c.groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  c.counts.assign(4, 5000);
  c.type = dtype::float32;
  c.seed = 7;
  const auto inputs = all_inputs(c);
  rank_frame f(c, me, inputs[static_cast<std::size_t>(me)]);
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  if (status s = d.reserve(f.bytes.size()); !s) return failed(s.to_string());
  IPC_CHECK(gpu::rt::upload(d.memory, f.bytes.data(), f.bytes.size()));
  auto* base = static_cast<std::byte*>(d.memory);
  buffer_view send{base + f.in_off, f.in_bytes}, recv{base + f.out_off, f.out_bytes};
  // A first call of the shape that every rank makes: the communicator compares a shape's
  // arguments through the bootstrap on its first call, which is not what this test is about.
  if (status s = finish(comm, d, call(comm, c, send, recv, d.stream)); !s)
    return failed("the first call: " + s.to_string());
  IPC_CHECK(gpu::rt::upload(d.memory, f.bytes.data(), f.bytes.size()));  // poisoned output again
  std::string verdict = "silent";  // the stalled rank stays alive until the others are done
  if (!(stall && me == culprit)) {
    if (!stall && me == culprit) send.data = nullptr;
    const auto start = std::chrono::steady_clock::now();
    const status s = finish(comm, d, call(comm, c, send, recv, d.stream));
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double limit = static_cast<double>(comm.config().timeout.count()) / 1000 + 30;
    if (s) return failed("rank " + std::to_string(me) + "'s call succeeded");
    if (waited > limit)
      return failed("the failed call took " + std::to_string(waited) + " s (limit " +
                    std::to_string(limit) + ")");
    verdict = std::string(relay::name(s.code())) + ": " + s.message();
    // A later call fails at once, without touching anything.
    if (status again = call(comm, c, send, recv, d.stream); again)
      return failed("a call after the failure succeeded");
    IPC_CHECK(gpu::rt::stream_synchronize(d.stream));
    std::vector<std::byte> image(f.bytes.size());
    IPC_CHECK(gpu::rt::memcpy(image.data(), d.memory, image.size()));
    if (!std::equal(image.begin() + static_cast<std::ptrdiff_t>(f.out_off),
                    image.begin() + static_cast<std::ptrdiff_t>(f.out_off + f.out_bytes),
                    f.bytes.begin() + static_cast<std::ptrdiff_t>(f.out_off)))
      return failed("a failed call wrote its output: " + verdict);
  }
  std::vector<std::vector<std::byte>> all;
  if (status s =
          comm.boot().all_gather(std::as_bytes(std::span(verdict)), all, std::chrono::seconds(120));
      !s)
    return failed(s.to_string());
  if (me != 0) return 0;
  const std::string named = "rank " + std::to_string(culprit) + (stall ? " did not" : " gave up");
  bool someone_named_it = false;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const std::string v(reinterpret_cast<const char*>(all[r].data()), all[r].size());
    std::printf("rank %zu: %s\n", r, v.c_str());
    if (static_cast<int>(r) != culprit && v.find("rank ") == std::string::npos)
      return failed("rank " + std::to_string(r) + " named no rank");
    someone_named_it = someone_named_it || v.find(named) != std::string::npos;
  }
  if (!someone_named_it) return failed("no rank said '" + named + "'");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (gpu::rt::device_count(&devices) != gpu::rt::success || devices == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  const std::string what = argc > 1 ? argv[1] : "property";
  auto comm = connect_or_exit(ipc_factory());
  if (what == "property") return property(*comm, argc, argv);
  if (what == "graph") return graph(*comm, argc, argv);
  if (what == "stall" || what == "refused") return misbehave(*comm, what == "stall");
  return failed("unknown scenario '" + what + "' (property, graph, stall, refused)");
}

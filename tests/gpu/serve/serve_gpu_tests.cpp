// Serving ranks over the ipc transport (serve/serve.hpp, serve/device_graphs.hpp), one process
// per rank under relay-run, every rank on the device ipc_factory picks (8 ranks share one GPU
// where there is one: run them under MPS). Ranks 0..A-1 call; the others serve on a stream of
// their own, following the callers' graphs with device_graphs.
//
//   relay-run -n 8 -- relay_serve_gpu_tests property A [CALLS] [SEED]
//       CALLS random calls of one group of A (serve_support.hpp: every collective and dtype, its
//       routes and route::automatic, the fp8 wire, three machines), each active rank's output
//       against the naive reference; the serving ranks return ok having served every call
//   relay-run -n 8 -- relay_serve_gpu_tests graph A [K] [REPLAYS]
//       K calls of varying shapes made eagerly, then captured into a graph (serve::begin_capture,
//       end_capture) and replayed REPLAYS times (serve::announce_replay), every replay's outputs
//       poisoned before and checked after against the eager run's bits and the reference, while
//       the serving ranks capture and replay theirs; then a shape new under capture, refused on
//       every rank alike (the plane stays in step: an eager call after it is right); then a
//       replay that serving rank A cannot follow (its graph lost): every rank's call fails
//       within the timeout plus 1 s, none hangs
//   relay-run -n 8 -- relay_serve_gpu_tests killed A
//       serving rank 7 vanishes as it reads call 20 (_Exit(0): its communicator never closed, as
//       a kill, with the status relay-run lets pass): the active ranks' call fails naming it
//       within 1 s, and every failed call leaves its output unwritten
//
// Without a GPU every rank exits 77 (skipped). tests/gpu/serve/run.sh runs all of them.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/serve_support.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/serve/device_graphs.hpp"
#include "relay/serve/serve.hpp"
#include "relay/transport/ipc/factory.hpp"

using namespace relay;
using namespace relay::testing;

namespace {

int failed(const std::string& why) {
  std::fprintf(stderr, "FAILED: %s\n", why.c_str());
  return 1;
}

#define SERVE_CHECK(call)                                                        \
  do {                                                                           \
    const ::relay::gpu::rt::error_t e_ = (call);                                 \
    if (e_ != ::relay::gpu::rt::success)                                         \
      return failed(std::string(#call) + ": " + ::relay::gpu::rt::describe(e_)); \
  } while (0)

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A stream and device memory for one rank's frames (grow-only).
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

// Waits for the stream; the call's status is then the device's verdict too.
status finish(communicator& comm, device_side& d, status s) {
  if (gpu::rt::error_t e = gpu::rt::stream_synchronize(d.stream); e != gpu::rt::success)
    return gpu::failure("synchronizing the stream", 0, e);
  if (!s) return s;
  return comm.async_status();
}

options options_of(const served_case_t& d) {
  options opt;
  opt.route = d.c.route;
  opt.alignment = d.c.alignment;
  opt.tiles = d.c.tiles;
  opt.precision = d.c.precision;
  opt.wire = d.c.wire;
  opt.wire_threshold = 0;
  opt.machine = d.machine;
  return opt;
}

// This rank's output of `d` (in `frame`, downloaded) against the reference; empty where right.
std::string check(const served_case_t& d, int me, const std::vector<std::vector<std::byte>>& inputs,
                  const rank_frame& frame) {
  const property_case& c = d.c;
  if (!frame.canaries_intact()) return "a canary byte changed";
  std::vector<std::vector<std::byte>> outputs(inputs.size());
  outputs[static_cast<std::size_t>(me)] = frame.output();
  const reference::call_data data{c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs};
  if (c.wire != wire_format::native) {
    const fp8_format f = c.wire == wire_format::fp8
                             ? (d.machine != nullptr ? *d.machine : mi300x).fp8
                             : fp8_format_of(c.wire);
    const reference::wire_check m =
        reference::check_outputs_fp8(data, f, reference::wire_hops(c.coll, c.route, c.active), me);
    return m.wrong == 0 ? "" : std::to_string(m.wrong) + " outside the fp8 bound: " + m.first;
  }
  const reference::mismatch_report m = reference::check_outputs(data, c.precision, false, me);
  return m.wrong == 0 ? "" : std::to_string(m.wrong) + " wrong: " + m.first;
}

// A serving rank: serve() on its own stream with device graphs (or `graphs`), then its stream.
int serve_here(communicator& comm, serve::graph_runtime* graphs, bool expect_ok,
               std::uint64_t* served = nullptr) {
  device_side d;
  SERVE_CHECK(gpu::rt::stream_create(&d.stream));
  serve::device_graphs own(comm.device());
  serve::serve_options o;
  o.stream = d.stream;
  o.graphs = graphs != nullptr ? graphs : &own;
  serve::serve_report report;
  const auto start = std::chrono::steady_clock::now();
  const status s = finish(comm, d, serve::serve(comm, o, &report));
  if (served != nullptr) *served = report.calls;
  std::printf(
      "rank %d served %llu calls (%llu failed alike everywhere), %llu captures, %llu "
      "replays: %s (%.1f s)\n",
      comm.rank(), static_cast<unsigned long long>(report.calls),
      static_cast<unsigned long long>(report.failed),
      static_cast<unsigned long long>(report.captures),
      static_cast<unsigned long long>(report.replays), s.to_string().c_str(), seconds_since(start));
  if (expect_ok && !s) return failed("serve(): " + s.to_string());
  return 0;
}

int property(communicator& comm, int A, int calls, std::uint64_t seed) {
  const int me = comm.rank();
  std::vector<int> actives(static_cast<std::size_t>(A));
  for (int r = 0; r < A; ++r)
    actives[static_cast<std::size_t>(r)] = r;
  if (status s =
          serve::attach_plane(comm, me < A ? serve::plane_role::call : serve::plane_role::serve);
      !s)
    return failed("attach_plane: " + s.to_string());
  if (me >= A) {
    std::uint64_t served = 0;
    if (int rc = serve_here(comm, nullptr, true, &served); rc != 0) return rc;
    return served == static_cast<std::uint64_t>(calls) ? 0 : failed("served too few calls");
  }
  device_side d;
  SERVE_CHECK(gpu::rt::stream_create(&d.stream));
  std::mt19937_64 cases(seed);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    const served_case_t c = served_case(cases, actives, comm.size(), 20'000);
    const auto inputs = all_inputs(c.c);
    rank_frame frame(c.c, me, inputs[static_cast<std::size_t>(me)]);
    if (status s = d.reserve(frame.bytes.size()); !s) return failed(s.to_string());
    auto* base = static_cast<std::byte*>(d.memory);
    SERVE_CHECK(gpu::rt::upload(d.memory, frame.bytes.data(), frame.bytes.size()));
    const status s =
        finish(comm, d,
               run_collective(comm, c.c.coll, c.c.groups, {base + frame.in_off, frame.in_bytes},
                              {base + frame.out_off, frame.out_bytes}, c.c.counts, c.c.type, c.c.op,
                              options_of(c), d.stream));
    SERVE_CHECK(gpu::rt::memcpy(frame.bytes.data(), d.memory, frame.bytes.size()));
    std::string f = s ? check(c, me, inputs, frame) : "the call failed: " + s.to_string();
    if (!f.empty())
      return failed("call " + std::to_string(i) + " of seed " + std::to_string(seed) + ": " +
                    c.c.describe() + ": " + f);
  }
  if (status s = serve::stop_serving(comm); !s) return failed("stop: " + s.to_string());
  if (me == 0)
    std::printf("A=%d: %d calls over ipc, every output right, %d ranks serving (%.1f s)\n", A,
                calls, comm.size() - A, seconds_since(start));
  return 0;
}

// A serving rank's graphs that lose graph `lost` before its `at`-th launch.
class losing_graphs final : public serve::graph_runtime {
 public:
  losing_graphs(int device, std::uint64_t lost, int at) : inner_(device), lost_(lost), at_(at) {}
  status begin_capture(void* s) override { return inner_.begin_capture(s); }
  status end_capture(void* s, std::uint64_t id) override { return inner_.end_capture(s, id); }
  status launch(std::uint64_t id, void* s) override {
    if (id == lost_ && ++launches_ == at_) inner_.forget(id);
    return inner_.launch(id, s);
  }

 private:
  serve::device_graphs inner_;
  std::uint64_t lost_;
  int at_, launches_ = 0;
};

int graph(communicator& comm, int A, int K, int replays) {
  const int me = comm.rank();
  if (status s =
          serve::attach_plane(comm, me < A ? serve::plane_role::call : serve::plane_role::serve);
      !s)
    return failed("attach_plane: " + s.to_string());
  // Rank A loses graph 1 before the last replay (replays + 1: one more than the checked ones).
  if (me >= A) {
    losing_graphs lossy(comm.device(), 1, replays + 1);
    return serve_here(comm, me == A ? &lossy : nullptr, false);
  }
  std::vector<int> actives(static_cast<std::size_t>(A));
  for (int r = 0; r < A; ++r)
    actives[static_cast<std::size_t>(r)] = r;
  // K calls of varying shapes (no route::automatic or fp8 draws skipped: any shape replays).
  std::mt19937_64 cases(20261209);
  std::vector<served_case_t> calls;
  std::vector<std::vector<std::vector<std::byte>>> inputs;
  std::vector<rank_frame> frames;
  std::vector<std::size_t> at;
  std::size_t total = 0;
  for (int k = 0; k < K; ++k) {
    calls.push_back(served_case(cases, actives, comm.size(), 20'000));
    inputs.push_back(all_inputs(calls.back().c));
    frames.emplace_back(calls.back().c, me, inputs.back()[static_cast<std::size_t>(me)]);
    at.push_back(total);
    total += (frames.back().bytes.size() + 255) / 256 * 256;
  }
  device_side d;
  SERVE_CHECK(gpu::rt::stream_create(&d.stream));
  if (status s = d.reserve(std::max<std::size_t>(total, 256)); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  auto upload = [&]() -> int {
    for (int k = 0; k < K; ++k)
      SERVE_CHECK(gpu::rt::upload(base + at[static_cast<std::size_t>(k)],
                                  frames[static_cast<std::size_t>(k)].bytes.data(),
                                  frames[static_cast<std::size_t>(k)].bytes.size()));
    return 0;
  };
  auto issue = [&]() -> status {
    for (int k = 0; k < K; ++k) {
      const served_case_t& c = calls[static_cast<std::size_t>(k)];
      rank_frame& f = frames[static_cast<std::size_t>(k)];
      std::byte* b = base + at[static_cast<std::size_t>(k)];
      if (status s = run_collective(comm, c.c.coll, c.c.groups, {b + f.in_off, f.in_bytes},
                                    {b + f.out_off, f.out_bytes}, c.c.counts, c.c.type, c.c.op,
                                    options_of(c), d.stream);
          !s)
        return s;
    }
    return {};
  };
  // Every output now: right, and (after the eager run) the eager run's bits.
  std::vector<std::vector<std::byte>> eager(static_cast<std::size_t>(K));
  auto outputs = [&](const char* when, bool keep) -> int {
    for (int k = 0; k < K; ++k) {
      rank_frame image = frames[static_cast<std::size_t>(k)];
      SERVE_CHECK(gpu::rt::memcpy(image.bytes.data(), base + at[static_cast<std::size_t>(k)],
                                  image.bytes.size()));
      const served_case_t& c = calls[static_cast<std::size_t>(k)];
      if (std::string f = check(c, me, inputs[static_cast<std::size_t>(k)], image); !f.empty())
        return failed(std::string(when) + ": call " + std::to_string(k) + " of " + c.c.describe() +
                      ": " + f);
      if (keep)
        eager[static_cast<std::size_t>(k)] = image.output();
      else if (image.output() != eager[static_cast<std::size_t>(k)])
        return failed(std::string(when) + ": call " + std::to_string(k) +
                      " is not the eager run's bits");
    }
    return 0;
  };
  if (upload() != 0) return 1;
  if (status s = finish(comm, d, issue()); !s) return failed("eager: " + s.to_string());
  if (int rc = outputs("eager", true); rc != 0) return rc;
  std::uint64_t id = 0;
  if (status s = serve::begin_capture(comm, id); !s) return failed(s.to_string());
  gpu::rt::graph_t g = nullptr;
  gpu::rt::graph_exec_t exec = nullptr;
  SERVE_CHECK(gpu::rt::begin_capture(d.stream));
  const status captured = issue();
  SERVE_CHECK(gpu::rt::end_capture(d.stream, &g));
  if (status s = serve::end_capture(comm); !s) return failed(s.to_string());
  if (!captured) return failed("capture: " + captured.to_string());
  SERVE_CHECK(gpu::rt::graph_instantiate(&exec, g));
  for (int r = 0; r < replays; ++r) {
    if (upload() != 0) return 1;  // outputs poisoned again
    if (status s = serve::announce_replay(comm, id); !s) return failed(s.to_string());
    SERVE_CHECK(gpu::rt::graph_launch(exec, d.stream));
    if (status s = finish(comm, d, {}); !s)
      return failed("replay " + std::to_string(r) + ": " + s.to_string());
    if (int rc = outputs("replay", false); rc != 0) return rc;
  }
  // A shape new under capture: refused by the transport on every rank alike, serving ranks
  // included; the plane stays in step (an eager call after it is right).
  {
    std::uint64_t fresh = 0;
    if (status s = serve::begin_capture(comm, fresh); !s) return failed(s.to_string());
    served_case_t c = calls[0];
    c.c.counts = {c.c.counts[0] + 12345};
    rank_frame nf(c.c, me, all_inputs(c.c)[static_cast<std::size_t>(me)]);
    device_side nd;
    if (status e = nd.reserve(nf.bytes.size()); !e) return failed(e.to_string());
    SERVE_CHECK(gpu::rt::upload(nd.memory, nf.bytes.data(), nf.bytes.size()));
    auto* nb = static_cast<std::byte*>(nd.memory);
    gpu::rt::graph_t unused = nullptr;
    SERVE_CHECK(gpu::rt::begin_capture(d.stream));
    const status s = run_collective(comm, c.c.coll, c.c.groups, {nb + nf.in_off, nf.in_bytes},
                                    {nb + nf.out_off, nf.out_bytes}, c.c.counts, c.c.type, c.c.op,
                                    options_of(c), d.stream);
    SERVE_CHECK(gpu::rt::end_capture(d.stream, &unused));
    if (unused != nullptr) (void)gpu::rt::graph_destroy(unused);
    if (status e = serve::end_capture(comm); !e) return failed(e.to_string());
    if (s.ok()) return failed("a shape new under capture was captured");
    if (me == 0) std::printf("a shape new under capture, every rank: %s\n", s.to_string().c_str());
    if (upload() != 0) return 1;
    if (status e = finish(comm, d, issue()); !e) return failed("eager after: " + e.to_string());
    if (int rc = outputs("eager after the refused capture", false); rc != 0) return rc;
  }
  // A replay serving rank A cannot follow: every rank's replayed call fails, none hangs.
  if (upload() != 0) return 1;
  if (status s = serve::announce_replay(comm, id); !s) return failed(s.to_string());
  const auto start = std::chrono::steady_clock::now();
  SERVE_CHECK(gpu::rt::graph_launch(exec, d.stream));
  const status lost = finish(comm, d, {});
  const double waited = seconds_since(start);
  std::printf("rank %d, a replay rank %d cannot follow: %s (%.0f ms)\n", me, A,
              lost.to_string().c_str(), waited * 1000);
  (void)gpu::rt::graph_exec_destroy(exec);
  (void)gpu::rt::graph_destroy(g);
  if (lost.ok()) return failed("the replay rank " + std::to_string(A) + " lost succeeded");
  if (waited > comm.config().timeout.count() / 1000.0 + 1.0)
    return failed("the lost replay failed after " + std::to_string(waited) + " s");
  return 0;
}

int killed(communicator& comm, int A) {
  const int me = comm.rank(), culprit = comm.size() - 1;
  if (status s =
          serve::attach_plane(comm, me < A ? serve::plane_role::call : serve::plane_role::serve);
      !s)
    return failed("attach_plane: " + s.to_string());
  if (me >= A) {
    if (me == culprit)
      serve::detail::after_reading = [](call_shape&, std::uint64_t sequence) {
        if (sequence == 20) std::_Exit(0);
      };
    return serve_here(comm, nullptr, false);
  }
  std::vector<int> actives(static_cast<std::size_t>(A));
  for (int r = 0; r < A; ++r)
    actives[static_cast<std::size_t>(r)] = r;
  device_side d;
  SERVE_CHECK(gpu::rt::stream_create(&d.stream));
  std::mt19937_64 cases(20261210);
  for (int i = 0; i < 1000; ++i) {
    const served_case_t c = served_case(cases, actives, comm.size(), 20'000);
    const auto inputs = all_inputs(c.c);
    rank_frame frame(c.c, me, inputs[static_cast<std::size_t>(me)]);
    if (status s = d.reserve(frame.bytes.size()); !s) return failed(s.to_string());
    auto* base = static_cast<std::byte*>(d.memory);
    SERVE_CHECK(gpu::rt::upload(d.memory, frame.bytes.data(), frame.bytes.size()));
    const std::vector<std::byte> before = frame.bytes;
    const auto start = std::chrono::steady_clock::now();
    const status s =
        finish(comm, d,
               run_collective(comm, c.c.coll, c.c.groups, {base + frame.in_off, frame.in_bytes},
                              {base + frame.out_off, frame.out_bytes}, c.c.counts, c.c.type, c.c.op,
                              options_of(c), d.stream));
    const double waited = seconds_since(start);
    SERVE_CHECK(gpu::rt::memcpy(frame.bytes.data(), d.memory, frame.bytes.size()));
    if (s.ok()) {
      if (std::string f = check(c, me, inputs, frame); !f.empty())
        return failed("call " + std::to_string(i) + ": " + f);
      continue;
    }
    std::printf("rank %d, call %d: %s (%.0f ms)\n", me, i, s.to_string().c_str(), waited * 1000);
    if (i < 19) return failed("a call before the kill failed");
    if (s.peer() != culprit)
      return failed("the failure does not name rank " + std::to_string(culprit));
    if (waited > 1.0) return failed("named after " + std::to_string(waited) + " s, not within 1 s");
    if (frame.bytes != before) return failed("the failed call wrote its output");
    return 0;
  }
  return failed("no call failed after rank " + std::to_string(culprit) + " was killed");
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (gpu::rt::device_count(&devices) != gpu::rt::success || devices == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  const std::string what = argc > 1 ? argv[1] : "property";
  const int A = argc > 2 ? std::atoi(argv[2]) : 2;
  auto comm = connect_or_exit(ipc_factory());
  if (what == "property")
    return property(*comm, A, argc > 3 ? std::atoi(argv[3]) : 500,
                    argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 20261207);
  if (what == "graph")
    return graph(*comm, A, argc > 3 ? std::atoi(argv[3]) : 20, argc > 4 ? std::atoi(argv[4]) : 10);
  if (what == "killed") return killed(*comm, A);
  return failed("unknown scenario '" + what + "' (property, graph, killed)");
}

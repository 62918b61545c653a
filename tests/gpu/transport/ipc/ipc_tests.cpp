// The ipc transport across processes (include/relay/transport/ipc/transport.hpp), one process per
// rank under relay-run, every rank on the device ipc_factory picks (RELAY_DEVICE, which relay-run
// sets to the local rank, modulo the devices there: 8 ranks share one GPU where there is one):
//
//   relay-run -n 8 -- relay_ipc_tests property [CALLS] [SEED]   the multi-process property suite
//                                                               through device memory
//   relay-run -n 8 -- relay_ipc_tests property_fp8 [CALLS] [SEED]
//                                                               the same, every call on the fp8
//                                                               wire, against the fp8 bound
//   relay-run -n 8 -- relay_ipc_tests graph [K] [REPLAYS]       K calls captured into a graph,
//                                                               replayed; every output exact
//                                                               against the eager run's bits and
//                                                               the naive reference (the fp8
//                                                               shape: within its bound); half
//                                                               the replays after
//                                                               register_graph_inputs, one after
//                                                               deregister_graph_inputs
//   relay-run -n 8 -- relay_ipc_tests stall                     rank 3 never calls: the others
//                                                               report it, nothing hangs
//   relay-run -n 8 -- relay_ipc_tests late                      rank 3 calls after the others
//                                                               gave up: it fails too
//   relay-run -n 8 -- relay_ipc_tests refused                   rank 5 passes a null buffer
//   relay-run -n 8 -- relay_ipc_tests refuse_plan               rank 2 passes arguments
//                                                               make_plan refuses (no plan)
//   relay-run -n 8 -- relay_ipc_tests refuse_early              rank 2 refuses with no arguments
//   relay-run -n 8 -- relay_ipc_tests mismatch                  rank 2 calls another shape
//   relay-run -n 8 -- relay_ipc_tests exited                    helper rank 7 exits mid-job:
//                                                               every rank names it within 1 s
//                                                               (hosted helpers: the last
//                                                               process, with the ranks it ran)
//   relay-run -n 8 -- relay_ipc_tests abort                     helper rank 4 aborts: the same
//   relay-run -n 8 -- relay_ipc_tests pieces [STRIDE]          calls of 1x to 9.5x the area
//                                                               (multiprocess/pieces_suite.hpp;
//                                                               RELAY_IPC_BYTES=65536)
//   relay-run -n 8 -- relay_ipc_tests property_registered [CALLS] [SEED]
//                                                the property suite with every rank's frames in
//                                                one registered allocation: outputs written in
//                                                user memory (in and out of place), inputs read
//                                                there; the ranks' counts of such calls printed
//   relay-run -n 8 -- relay_ipc_tests graph_registered [K] [REPLAYS]
//                                                the graph test on registered buffers
//   relay-run -n 8 -- relay_ipc_tests registration
//                                                pool memory (cudaMallocAsync) is refused with a
//                                                message saying why; plain memory registers (two
//                                                buffers of one allocation), a call on it runs
//                                                without staging, deregistration, staged after
//   relay-run -n 2 -- relay_ipc_tests soak [BYTES] [SECONDS]
//                                                eager allreduce A=2 bf16 back to back for SECONDS,
//                                                the rate every 1000 calls, a stall named as one
//   relay-run -n 2 -- relay_ipc_tests trace [BYTES] [REGISTERED]
//                                                the pull form's device trace (a build with
//                                                RELAY_IPC_TRACE=1): per phase, block 0's median
//                                                time since its kernel began, eager and replayed
//   RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_IPC_EMULATE_MESH=12 relay-run -n 2 --
//   relay_ipc_tests stages [COLLECTIVE] [BYTES] [REGISTERED]
//                                                mesh emulation's stages, traced (a build with
//                                                RELAY_IPC_TRACE=1): per rank and stage of the
//                                                relay route, when it ran, its links' idle time
//                                                between tiles and its walkers' moves
//   relay-run -n 8 -- relay_ipc_tests hosted_record A [CALLS] [SEED] [FILE] [native]
//   RELAY_HELPER_DEVICES=0,0,0,0,0,0 relay-run -n A -- relay_ipc_tests hosted A [CALLS] [SEED]
//   [FILE] [native]
//                                                hosted helpers (docs/hosted-helpers.md): the
//                                                calls of one group of the A process ranks
//                                                (multiprocess/hosted_suite.hpp) with 8 helper
//                                                processes, their digests written to FILE.<rank>;
//                                                then from A processes hosting the helpers (every
//                                                helper on device 0 where there is one GPU):
//                                                against the naive reference and bit for bit the
//                                                record. graph and graph_registered on such a
//                                                job capture calls of one group of its
//                                                processes. native: no call on the fp8 wire (both
//                                                steps alike), for a paced run
//                                                (RELAY_IPC_EMULATE_MESH) against its unpaced
//                                                record
//   RELAY_HELPER_DEVICES=... relay-run -n 2 -- relay_ipc_tests hosted_bad_device
//                                                a helper on a device the processes do not see:
//                                                creation fails on both, naming the hosted rank
//   relay-run -n 2 -- relay_ipc_tests paced
//                                                mesh emulation at 4 GB/s: a pair's 4 MiB
//                                                all-gather no faster than its link, every byte
//                                                right; a small direct allreduce runs stepped
//   relay-run -n 2 -- relay_ipc_tests paced_mismatch
//                                                RELAY_IPC_EMULATE_MESH on one rank alone:
//                                                creation refused on both, naming it
//   relay-run -n 2 -- relay_ipc_tests hostpath [CALLS] [BATCH]
//                                                host time to issue CALLS prepared calls, back to
//                                                back in batches of BATCH (default 100; none
//                                                waited for within a batch), A=2 allreduce bf16
//                                                4-64 KB, staged and registered, and the heap
//                                                allocations they make (0 expected); beside
//                                                them, a bare launch's host time
//
// Without a GPU every rank exits 77 (skipped). Each failure prints the seed, the call and the
// case.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "multiprocess/hosted_suite.hpp"
#include "multiprocess/mp_support.hpp"
#include "multiprocess/pieces_suite.hpp"
#include "relay/gpu/runtime.hpp"
#include "relay/hosted/transport.hpp"
#include "relay/transport/ipc/factory.hpp"
#include "relay/transport/ipc/stage_trace.hpp"
#include "support/alloc_counter.hpp"

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

// The ipc transport of this process's own rank (of a communicator with hosted helpers too).
ipc_transport& link_of(communicator& comm) {
  if (auto* h = dynamic_cast<hosted::transport*>(&comm.transport()))
    return static_cast<ipc_transport&>(h->own());
  return static_cast<ipc_transport&>(comm.transport());
}

// The processes of a communicator with hosted helpers (docs/hosted-helpers.md), else 0.
int hosting_processes(communicator& comm) {
  const auto* h = dynamic_cast<const hosted::transport*>(&comm.transport());
  return h != nullptr ? h->group().rule().processes : 0;
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

// fp8: every call on the fp8 wire (make_fp8; the receiver ends of plan/slice.hpp).
int property(communicator& comm, int argc, char** argv, bool fp8) {
  const int calls = argc > 2 ? std::atoi(argv[2]) : 500;
  const std::uint64_t seed =
      argc > 3 ? std::strtoull(argv[3], nullptr, 10) : (fp8 ? 20261205 : 20261201);
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  return property_run(
      comm, calls, seed, 20'000,
      fp8 ? " through the ipc transport on the fp8 wire" : " through the ipc transport",
      [&](const property_case& c, rank_frame& f) { return device_call(comm, d, c, f); }, fp8);
}

// Calls larger than the area, in pieces (multiprocess/pieces_suite.hpp), through device memory.
int pieces(communicator& comm, int argc, char** argv) {
  const int stride = argc > 2 ? std::atoi(argv[2]) : 1;
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  return pieces_run(
      comm, stride, " through the ipc transport",
      [&](const property_case& c, rank_frame& f) { return device_call(comm, d, c, f); });
}

// The calls that ran on user memory (ipc::call_counts), summed over the ranks.
struct direct_sums {
  std::uint64_t calls = 0, inputs = 0, outputs = 0, one_shot = 0, pull = 0, ll = 0;
  std::uint64_t captured_inputs = 0, graph_inputs = 0;  // ipc::call_counts'
};

// Gathers every rank's counts into `sums` (every rank gets them); rank 0 prints them after `what`.
int direct_totals(communicator& comm, const std::string& what, direct_sums& sums) {
  const ipc::call_counts& c = link_of(comm).counts();
  const std::uint64_t mine[8] = {c.calls, c.inputs,          c.outputs,      c.one_shot,
                                 c.pull,  c.captured_inputs, c.graph_inputs, c.ll};
  std::vector<std::vector<std::byte>> all;
  if (status s =
          comm.boot().all_gather(std::as_bytes(std::span(mine)), all, std::chrono::seconds(60));
      !s)
    return failed(s.to_string());
  sums = {};
  for (const auto& a : all) {
    std::uint64_t v[8] = {};
    if (a.size() == sizeof v) std::memcpy(v, a.data(), sizeof v);
    sums.calls += v[0], sums.inputs += v[1], sums.outputs += v[2], sums.one_shot += v[3];
    sums.pull += v[4], sums.captured_inputs += v[5], sums.graph_inputs += v[6], sums.ll += v[7];
  }
  if (comm.rank() == 0)
    std::printf(
        "%s: %llu rank-calls, %llu read their input in place, %llu wrote their output in user "
        "memory, %llu one-shot (%llu of them pulled, %llu in the ll form)\n",
        what.c_str(), static_cast<unsigned long long>(sums.calls),
        static_cast<unsigned long long>(sums.inputs), static_cast<unsigned long long>(sums.outputs),
        static_cast<unsigned long long>(sums.one_shot), static_cast<unsigned long long>(sums.pull),
        static_cast<unsigned long long>(sums.ll));
  return 0;
}

// The property suite with every frame in one registered allocation (its size fixed: a frame that
// outgrew it would be reallocated, unregistered). Frames start 16-byte aligned and outputs follow
// inputs, so outputs run in user memory where the input's size is a multiple of 16 bytes or the
// call is in place, and staged otherwise: both paths, and ranks that differ, in one run.
int property_registered(communicator& comm, int argc, char** argv) {
  const int calls = argc > 2 ? std::atoi(argv[2]) : 500;
  const std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20261202;
  constexpr std::size_t bytes = std::size_t{16} << 20;
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  if (status s = d.reserve(bytes); !s) return failed(s.to_string());
  if (status s = comm.register_buffer(d.memory, bytes); !s)
    return failed("registering the frames: " + s.to_string());
  const int rc = property_run(
      comm, calls, seed, 20'000, " through the ipc transport, registered buffers",
      [&](const property_case& c, rank_frame& f) {
        if (f.bytes.size() > bytes)
          return status{errc::invalid_argument, "a frame outgrew the registered buffer"};
        return device_call(comm, d, c, f);
      });
  if (rc != 0) return rc;
  direct_sums sums;
  if (int r = direct_totals(comm, "registered", sums); r != 0) return r;
  if (sums.inputs == 0 || sums.outputs == 0 || sums.outputs == sums.calls)
    return failed(
        "expected some calls with direct inputs, some with direct outputs and some "
        "staged outputs");
  if (status s = comm.deregister_buffer(d.memory); !s) return failed(s.to_string());
  return 0;
}

// The graph test's shapes: every collective, fused and single, integer and floating types, with
// 8 ranks; with any other number, one group of every rank per collective on the direct route
// (the allreduce in the ll form, or the pull form), as a job of 2 can run them.
std::vector<property_case> graph_shapes(int ranks) {
  if (ranks != 8) {
    std::vector<property_case> whole;
    const std::pair<collective, dtype> calls[] = {{collective::allreduce, dtype::int32},
                                                  {collective::reduce_scatter, dtype::float32},
                                                  {collective::all_gather, dtype::int64},
                                                  {collective::all_to_all, dtype::uint8}};
    for (const auto& [coll, type] : calls) {
      property_case c;
      c.coll = coll;
      c.active = c.ranks = ranks;
      c.mode = mode::single;
      c.route = route::direct;
      c.type = type;
      c.groups.assign(1, {});
      for (int r = ranks - 1; r >= 0; --r)  // not in rank order: any order must work
        c.groups[0].push_back(r);
      c.counts.assign(1, 3001);
      whole.push_back(c);
    }
    return whole;
  }
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
  // And one on the fp8 wire (arrival stages and their marks inside the graph), checked against
  // the fp8 bound, replays against the eager run's bits.
  property_case fp8 = shape(collective::reduce_scatter, 4, mode::fused, dtype::bfloat16, 4133);
  fp8.wire = wire_format::fp8_e4m3;
  fp8.wire_data = 1;  // a wide dynamic range in every block
  // The allreduces on both routes: the ll form runs a direct route's (the pull form with
  // RELAY_IPC_FORM=pull; cost/choose.hpp), the plan's one-shot form a relay route's.
  auto direct = [](property_case c) {
    c.route = route::direct;
    return c;
  };
  return {shape(collective::allreduce, 2, mode::fused, dtype::int32, 3001),
          direct(shape(collective::allreduce, 2, mode::fused, dtype::int32, 3001)),
          shape(collective::allreduce, 2, mode::single, dtype::bfloat16, 4096),
          direct(shape(collective::allreduce, 2, mode::single, dtype::bfloat16, 4096)),
          shape(collective::reduce_scatter, 4, mode::fused, dtype::float32, 1027),
          shape(collective::all_gather, 4, mode::single, dtype::int64, 777),
          shape(collective::all_to_all, 2, mode::fused, dtype::uint8, 4099),
          fp8};
}

// The graph test's shapes on a communicator whose A processes host its other ranks: one group
// of the processes' ranks (not in rank order) per collective, the allreduce on both routes (the
// ll or pull form and the plan's), one on the fp8 wire.
std::vector<property_case> graph_shapes_hosted(int A) {
  auto shape = [A](collective coll, dtype t, std::int64_t n, relay::route r) {
    property_case c;
    c.coll = coll;
    c.active = A;
    c.ranks = hosted_ranks;
    c.mode = mode::single;
    c.route = r;
    c.type = t;
    c.groups.assign(1, {});
    for (int k = A - 1; k >= 0; --k)
      c.groups[0].push_back(k);
    c.counts.assign(1, n);
    return c;
  };
  property_case fp8 = shape(collective::reduce_scatter, dtype::bfloat16, 4133, route::relay);
  fp8.wire = wire_format::fp8_e4m3;
  fp8.wire_data = 1;
  return {shape(collective::allreduce, dtype::int32, 3001, route::relay),
          shape(collective::allreduce, dtype::bfloat16, 4096, route::direct),
          shape(collective::reduce_scatter, dtype::float32, 1027, route::relay),
          shape(collective::all_gather, dtype::int64, 777, route::relay),
          shape(collective::all_to_all, dtype::uint8, 4099, route::relay),
          fp8};
}

// The nodes of a captured graph: kernels, copies, all.
struct captured_nodes {
  std::size_t kernels = 0, copies = 0, all = 0;
};
captured_nodes nodes_of(gpu::rt::graph_t graph) {
  captured_nodes n;
#if defined(RELAY_GPU_HIP)
  if (hipGraphGetNodes(graph, nullptr, &n.all) != hipSuccess) return n;
  std::vector<hipGraphNode_t> nodes(n.all);
  if (hipGraphGetNodes(graph, nodes.data(), &n.all) != hipSuccess) return n;
  for (hipGraphNode_t x : nodes) {
    hipGraphNodeType t{};
    if (hipGraphNodeGetType(x, &t) != hipSuccess) continue;
    n.kernels += t == hipGraphNodeTypeKernel ? 1 : 0;
    n.copies += t == hipGraphNodeTypeMemcpy ? 1 : 0;
  }
#else
  if (cudaGraphGetNodes(graph, nullptr, &n.all) != cudaSuccess) return n;
  std::vector<cudaGraphNode_t> nodes(n.all);
  if (cudaGraphGetNodes(graph, nodes.data(), &n.all) != cudaSuccess) return n;
  for (cudaGraphNode_t x : nodes) {
    cudaGraphNodeType t{};
    if (cudaGraphNodeGetType(x, &t) != cudaSuccess) continue;
    n.kernels += t == cudaGraphNodeTypeKernel ? 1 : 0;
    n.copies += t == cudaGraphNodeTypeMemcpy ? 1 : 0;
  }
#endif
  return n;
}

// K calls of one shape, each with its own input and output; eager first, then captured and
// replayed. Returns the number of wrong outputs (this rank's view; every rank checks all).
int graph_case(communicator& comm, property_case c, int K, int replays, std::uint64_t seed,
               bool registered) {
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
  if (registered)
    if (status s = comm.register_buffer(d.memory, d.capacity); !s)
      return failed("registering the graph's buffers: " + s.to_string());
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
      const reference::call_data call{
          c.coll, c.type, c.op, c.groups, c.counts, inputs[static_cast<std::size_t>(k)], all};
      reference::mismatch_report m;
      if (c.wire == wire_format::native) {
        m = reference::check_outputs(call);
      } else {
        const reference::wire_check w = reference::check_outputs_fp8(
            call, fp8_format_of(c.wire), reference::wire_hops(c.coll, c.route, c.active));
        m = {w.wrong, w.first};
      }
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
  if (me == 0) {
    const captured_nodes n = nodes_of(graph);
    std::printf(
        "%s: a captured call is %.1f kernel launches and %.1f copies (%d calls: %zu "
        "kernels, %zu copies, %zu nodes in all)\n",
        c.describe().c_str(), static_cast<double>(n.kernels) / K, static_cast<double>(n.copies) / K,
        K, n.kernels, n.copies, n.all);
  }
  IPC_CHECK(gpu::rt::graph_instantiate(&exec, graph));
  int wrong = 0;
  // Staged buffers: the first half of the replays stage the inputs as captured, the second half
  // read them in place once register_graph_inputs has registered them, and one more after
  // deregister_graph_inputs stages them again; every one must be the eager run's bits.
  for (int r = 0; r < replays + (registered ? 0 : 1) && wrong == 0; ++r) {
    if (!registered && r == replays / 2)
      if (status s = comm.register_graph_inputs(); !s)
        return failed("registering the graph's inputs: " + s.to_string());
    if (!registered && r == replays)
      if (status s = comm.deregister_graph_inputs(); !s)
        return failed("ending the graph's inputs' registrations: " + s.to_string());
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
  if (registered)
    if (status s = comm.deregister_buffer(d.memory); !s) return failed(s.to_string());
  return wrong;
}

int graph(communicator& comm, int argc, char** argv, bool registered) {
  const int K = argc > 2 ? std::atoi(argv[2]) : 100;
  const int replays = argc > 3 ? std::atoi(argv[3]) : 100;
  const std::uint64_t seed = 20261201;
  const auto start = std::chrono::steady_clock::now();
  const int hosts = hosting_processes(comm);
  const std::vector<property_case> shapes =
      hosts > 0 ? graph_shapes_hosted(hosts) : graph_shapes(comm.size());
  for (const property_case& c : shapes)
    if (int w = graph_case(comm, c, K, replays, seed, registered); w != 0)
      return failed("graph test, seed " + std::to_string(seed) + ": " + c.describe());
  const std::string which = registered ? "graph test (registered buffers)" : "graph test";
  if (comm.rank() == 0)
    std::printf(
        "%s: %zu shapes, %d calls captured, %d replays each, every output right (exact; "
        "the fp8 shape within its bound) and every replay the eager run's bits (%.1f s)\n",
        which.c_str(), shapes.size(), K, replays,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  direct_sums sums;
  if (int r = direct_totals(comm, which + ", eager calls", sums); r != 0) return r;
  if (registered && sums.outputs == 0) return failed("no call wrote its output in user memory");
  if (sums.pull + sums.ll == 0)
    return failed("no call ran in the pull or ll form (the direct allreduces)");
  // Staged, in the pull form: some captured inputs were read in place after
  // register_graph_inputs (the pull form's shapes of graph_shapes; the ll form stages nothing).
  if (!registered && sums.pull > 0) {
    if (comm.rank() == 0)
      std::printf(
          "%s: %llu rank-calls captured with a staged input, %llu of them read in place "
          "after register_graph_inputs\n",
          which.c_str(), static_cast<unsigned long long>(sums.captured_inputs),
          static_cast<unsigned long long>(sums.graph_inputs));
    if (sums.graph_inputs == 0)
      return failed("no captured input was read in place after registration");
  }
  return 0;
}

// Hosted helpers' suite (multiprocess/hosted_suite.hpp) through device memory: `record` with 8
// helper processes, else from the processes hosting them.
int hosted_calls(communicator& comm, int argc, char** argv, bool record) {
  const int A = argc > 2 ? std::atoi(argv[2]) : 2;
  const int calls = argc > 3 ? std::atoi(argv[3]) : 300;
  const std::uint64_t seed = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 20261221;
  const std::string file = argc > 5 ? argv[5] : "hosted_ipc_a" + std::to_string(A);
  const bool native = argc > 6 && std::string(argv[6]) == "native";  // no fp8 wire
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  return hosted_suite(
      comm, !record, A, calls, seed, file, " through the ipc transport",
      [&](const property_case& c, rank_frame& f) { return device_call(comm, d, c, f); }, !native);
}

// A helper on a device past the ones this process sees (RELAY_HELPER_DEVICES set here, the last
// helper on it): creation fails on every process, its host's with the hosted rank's own error,
// the others with errc::peer_error naming that rank.
int hosted_bad_device() {
  environment env;
  if (status s = environment_from_process(env); !s) return failed(s.to_string());
  int devices = 0;
  IPC_CHECK(gpu::rt::device_count(&devices));
  hosting rule;
  rule.processes = env.size;
  rule.devices = {0, 0, devices};
  ::setenv("RELAY_HELPER_DEVICES", devices_text(rule.devices).c_str(), 1);
  const int bad = rule.ranks() - 1;
  std::unique_ptr<communicator> comm;
  const status s = communicator_from_environment(ipc_factory(), comm);
  const bool host = rule.host_of(bad) == env.rank;
  const std::string said = "helper device " + std::to_string(devices) +
                           " is not a device of this process (it sees " + std::to_string(devices) +
                           ")";
  if (s.ok() || s.peer() != bad || s.code() != (host ? errc::invalid_argument : errc::peer_error) ||
      s.message().find(said) == std::string::npos || s.message().find(rank_name(rule, bad)) != 0)
    return failed("creation with " + rank_name(rule, bad) + " on device " +
                  std::to_string(devices) + " returned " + s.to_string());
  if (env.rank == 0)
    std::printf("hosted_bad_device: every process named it: %s\n", s.message().c_str());
  return 0;
}

// Pairs {0,1}, {2,3}, ... of the job (an even number of ranks).
group_list pairs_of(int ranks) {
  group_list g;
  for (int r = 0; r + 1 < ranks; r += 2)
    g.push_back({r, r + 1});
  return g;
}

// The failure scenarios: one rank does one wrong thing in the second call of a shape (the first,
// which every rank makes, prepares it). Every call goes straight to the transport, as the
// communicator hands one over (run_direct): its plan and slice, or none where make_plan refuses
// the arguments, this rank's own refusal in call.local, the fingerprint of the arguments. So the
// transport's part of the contract is what is shown, whatever the communicator above it checks.
struct direct_call {
  plan p;
  plan_slice slice;
  call_context ctx;
};
status run_direct(communicator& comm, const group_list& groups, std::vector<std::int64_t> counts,
                  buffer_view send, buffer_view recv, void* stream, direct_call& keep) {
  const collective coll = collective::allreduce;
  const dtype type = dtype::float32;
  // The relay route where the groups leave helpers; a group of every rank (2 processes) has none.
  options opt;
  opt.route = groups.size() == 1 && static_cast<int>(groups.front().size()) == comm.size()
                  ? route::direct
                  : route::relay;
  plan_request q = call_request(coll, groups, comm.size(), counts, type, reduce_op::sum, opt);
  q.in_place = false;
  const call_choice chosen = choose(q);
  const placement where =
      placement_of(coll, groups, counts, size_of(type), comm.rank(), send, recv);
  keep.ctx = {};
  if (status made = make_plan(q, chosen, keep.p); made) {
    keep.slice = slice_plan(keep.p, comm.rank(), comm.transport().wire_ends());
    keep.ctx.p = &keep.p;
    keep.ctx.slice = &keep.slice;
    keep.ctx.local = validate_rank_buffers(keep.p, comm.rank(), send, recv, where);
  } else {
    keep.ctx.local = made;  // no plan: the call is this rank's refusal alone
  }
  keep.ctx.send = send;
  keep.ctx.recv = recv;
  keep.ctx.placement = where;
  keep.ctx.fingerprint = relay::detail::fnv1a(describe(as_chosen(q, chosen)));
  keep.ctx.timeout = comm.config().timeout;
  keep.ctx.stream = stream;
  return comm.transport().run(keep.ctx);
}

// One rank's part of a failure scenario: its buffers for allreduce A=2 float32 over the pairs of
// the job (or one pair, the other ranks helpers), poisoned outputs, and the calls.
struct scene {
  communicator& comm;
  group_list groups;
  std::int64_t count;
  property_case c;
  std::vector<std::vector<std::byte>> inputs;
  rank_frame frame;
  device_side d;
  direct_call keep;
  std::byte* base = nullptr;

  scene(communicator& cm, group_list g, std::int64_t n)
      : comm(cm),
        groups(std::move(g)),
        count(n),
        c(case_of(groups, n, cm.size())),
        inputs(all_inputs(c)),
        frame(c, cm.rank(), inputs[static_cast<std::size_t>(cm.rank())]) {}
  static property_case case_of(const group_list& g, std::int64_t n, int ranks) {
    property_case c;
    c.coll = collective::allreduce;
    c.active = 2;
    c.ranks = ranks;
    c.mode = g.size() == 1 ? mode::single : mode::fused;
    c.groups = g;
    c.counts.assign(g.size(), n);
    c.type = dtype::float32;
    c.seed = 7;
    return c;
  }
  // The buffers on the device (room for `extra` more elements of output for a larger call).
  status upload(std::size_t extra = 0) {
    if (status s = d.reserve(std::max<std::size_t>(256, frame.bytes.size() + 8 * extra)); !s)
      return s;
    base = static_cast<std::byte*>(d.memory);
    if (frame.bytes.empty()) return {};
    if (gpu::rt::error_t e = gpu::rt::upload(base, frame.bytes.data(), frame.bytes.size());
        e != gpu::rt::success)
      return gpu::failure("uploading the frame", 0, e);
    return {};
  }
  buffer_view send() const {
    return frame.bytes.empty() ? buffer_view{} : buffer_view{base + frame.in_off, frame.in_bytes};
  }
  buffer_view recv() const {
    return frame.bytes.empty() ? buffer_view{} : buffer_view{base + frame.out_off, frame.out_bytes};
  }
  // This rank's call with `counts` (default: the scene's) and its buffers (default: its own).
  status call(std::vector<std::int64_t> counts = {}, buffer_view in = {nullptr, 1},
              buffer_view out = {nullptr, 1}) {
    if (counts.empty()) counts.assign(groups.size(), count);
    if (in.data == nullptr && in.bytes == 1) in = send();
    if (out.data == nullptr && out.bytes == 1) out = recv();
    return run_direct(comm, groups, std::move(counts), in, out, d.stream, keep);
  }
  // Waits for the calls issued; their failure: this rank's own (`issued`), the transport's
  // (broken), or a call its device skipped on a verdict that was not `go`.
  status finish(status issued) {
    if (gpu::rt::error_t e = gpu::rt::stream_synchronize(d.stream); e != gpu::rt::success)
      return gpu::failure("synchronizing the stream", 0, e);
    if (!issued) return issued;
    if (status s = comm.transport().async_status(); !s) return s;
    return comm.transport().take_failed_call();
  }
  // Whether this rank's output is right (against the naive reference of its inputs).
  bool right() {
    if (frame.bytes.empty()) return true;
    std::vector<std::byte> image(frame.bytes.size());
    if (gpu::rt::memcpy(image.data(), base, image.size()) != gpu::rt::success) return false;
    const int me = comm.rank();
    int peer = -1;
    for (const auto& g : groups)
      for (std::size_t k = 0; k < g.size(); ++k)
        if (g[k] == me) peer = g[1 - k];
    std::vector<float> a(static_cast<std::size_t>(count)), b(a.size()), got(a.size());
    std::memcpy(a.data(), inputs[static_cast<std::size_t>(me)].data(), a.size() * 4);
    std::memcpy(b.data(), inputs[static_cast<std::size_t>(peer)].data(), b.size() * 4);
    std::memcpy(got.data(), image.data() + frame.out_off, got.size() * 4);
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i] != a[i] + b[i]) return false;
    return true;
  }
  // Whether this rank's output still holds its poison (a failed call wrote nothing).
  bool untouched() {
    if (frame.bytes.empty()) return true;
    std::vector<std::byte> image(frame.bytes.size());
    if (gpu::rt::memcpy(image.data(), base, image.size()) != gpu::rt::success) return false;
    const auto at = static_cast<std::ptrdiff_t>(frame.out_off);
    return std::equal(image.begin() + at,
                      image.begin() + at + static_cast<std::ptrdiff_t>(frame.out_bytes),
                      frame.bytes.begin() + at);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// What every rank says, gathered; rank 0 prints it. Returns the verdicts (empty on rank != 0).
std::vector<std::string> gather_verdicts(communicator& comm, const std::string& mine) {
  std::vector<std::vector<std::byte>> all;
  if (status s =
          comm.boot().all_gather(std::as_bytes(std::span(mine)), all, std::chrono::seconds(120));
      !s) {
    std::fprintf(stderr, "gathering the verdicts: %s\n", s.to_string().c_str());
    return {};
  }
  std::vector<std::string> v;
  for (std::size_t r = 0; r < all.size(); ++r) {
    v.emplace_back(reinterpret_cast<const char*>(all[r].data()), all[r].size());
    if (comm.rank() == 0) std::printf("rank %zu: %s\n", r, v.back().c_str());
  }
  return v;
}

// One rank misbehaves in the second call:
//   refuse_plan  rank 2 passes counts make_plan refuses (a negative count): no plan on rank 2
//                (call.p null); rank 2 returns its invalid count at once, every other rank
//                errc::mismatch naming rank 2 (its arguments differ, which judge() puts first);
//   refuse_early rank 2 refuses before it has arguments (call.p null, fingerprint 0, as
//                communicator::refuse): every other rank peer_error naming rank 2, its errc and
//                its reason;
//   mismatch     rank 2 passes another count, a valid shape of its own: errc::mismatch on every
//                rank naming rank 2;
//   refused      rank 5 passes a null input: rank 5 invalid_buffer, every other rank peer_error
//                naming rank 5 and its reason;
//   stall        rank 3 never calls (it stays alive): every other rank errc::timeout naming rank
//                3 after about the timeout; 4 calls queued back to back all fall through at once
//                after the first gives up (the whole takes one timeout, not four);
//   late         rank 3 calls once the others gave up on it: its call fails too, as theirs,
//                naming its own missing entry (one outcome per call: no rank returns ok);
// In every case no user memory is written on any rank. After a refusal or a mismatch (a verdict
// that is not `go`: the device skipped the call on every rank) the transport goes on: the peers'
// failure names call #2 (take_failed_call), nothing else failed, and a third call runs and is
// right on every rank. After a stall or a late rank (a timeout) a later call fails at once on
// every rank that made one, with the same status (the transport stays broken). With fewer ranks
// than that, the culprit is the last rank (with 2, an active of the one pair).
int misbehave(communicator& comm, const std::string& what) {
  const int me = comm.rank(), N = comm.size();
  const int culprit = std::min(what == "stall" || what == "late" ? 3
                               : what == "refused"               ? 5
                                                                 : 2,
                               N - 1);
  const std::string who = std::to_string(culprit);
  scene sc(comm, pairs_of(N), 5000);
  IPC_CHECK(gpu::rt::stream_create(&sc.d.stream));
  if (status s = sc.upload(2000); !s) return failed(s.to_string());
  if (status s = sc.finish(sc.call()); !s) return failed("the first call: " + s.to_string());
  if (!sc.right()) return failed("the first call's output is wrong");
  if (status s = sc.upload(); !s) return failed(s.to_string());  // poisoned output again
  const double limit = static_cast<double>(comm.config().timeout.count()) / 1000 + 3;
  std::string verdict = "silent";  // the stalled rank stays alive until the others are done
  if (!(what == "stall" && me == culprit)) {
    if (what == "late" && me == culprit)  // the others give up on it at their timeout
      std::this_thread::sleep_for(comm.config().timeout + std::chrono::milliseconds(1500));
    const auto start = std::chrono::steady_clock::now();
    status s;
    if (me != culprit || what == "late") {
      s = sc.call();
    } else if (what == "refuse_plan") {
      std::vector<std::int64_t> bad(sc.groups.size(), 5000);
      bad[0] = -1;
      s = sc.call(bad);
      if (s.code() != errc::invalid_count || sc.keep.ctx.p != nullptr)
        return failed("rank " + who + "'s own call: expected invalid count with no plan, got " +
                      s.to_string());
    } else if (what == "refuse_early") {
      // As communicator::refuse passes a call refused before it had arguments to show.
      call_context ctx;
      ctx.local = {errc::invalid_argument, "no groups were given"};
      ctx.timeout = comm.config().timeout;
      ctx.stream = sc.d.stream;
      s = comm.transport().run(ctx);
    } else if (what == "mismatch") {
      // Room for 6000 elements: its buffers are right for its own call.
      const std::size_t bytes = 6000 * 4;
      s = sc.call(std::vector<std::int64_t>(sc.groups.size(), 6000), {sc.base, bytes},
                  {sc.base + bytes, bytes});
    } else {
      s = sc.call({}, buffer_view{nullptr, sc.frame.in_bytes});
    }
    // Stall: more calls queued behind the first; they fall through once it gives up.
    std::vector<status> queued;
    for (int k = 0; what == "stall" && k < 3; ++k)
      queued.push_back(sc.call());
    const status done = sc.finish(s);
    const double waited = seconds_since(start);
    if (done) return failed("rank " + std::to_string(me) + "'s call succeeded");
    if (waited > limit)
      return failed("the failed call took " + std::to_string(waited) + " s (limit " +
                    std::to_string(limit) + ")");
    verdict = std::string(relay::name(done.code())) + ": " + done.message() + " (" +
              std::to_string(static_cast<int>(waited * 1000)) + " ms)";
    if (!sc.untouched()) return failed("a failed call wrote its output: " + verdict);
    if (what == "stall" || what == "late") {
      // A later call fails at once with the same status: the transport is broken.
      const status again = sc.call();
      if (again.ok()) return failed("a call after the failure succeeded");
      if (again.to_string() != done.to_string())
        return failed("a later call says '" + again.to_string() + "', the failed one said '" +
                      done.to_string() + "'");
      IPC_CHECK(gpu::rt::stream_synchronize(sc.d.stream));
      if (!sc.untouched()) return failed("a call after a failed one wrote its output");
    } else {
      // Skipped on every rank: the failure (it names call #2: checked below) is reported once;
      // the transport goes on.
      if (status more = comm.transport().take_failed_call(); !more)
        return failed("a second failure reported: " + more.to_string());
      if (status up = sc.upload(); !up) return failed(up.to_string());  // poisoned output again
      if (status next = sc.finish(sc.call()); !next)
        return failed("the call after the skipped one: " + next.to_string());
      if (!sc.right()) return failed("the call after the skipped one is wrong");
    }
  }
  const std::vector<std::string> all = gather_verdicts(comm, verdict);
  if (me != 0) return 0;
  if (all.size() != static_cast<std::size_t>(N)) return failed("no verdicts");
  const std::string rank = "rank " + std::to_string(culprit);
  for (int r = 0; r < N; ++r) {
    const std::string& v = all[static_cast<std::size_t>(r)];
    std::string want;  // what every rank's status must say
    if (what == "stall")
      want = r == culprit ? "silent" : "";  // its own timeout, or a peer's passed on
    else if (what == "late")                // the cause first, on every rank, the late one included
      want = "timeout: " + rank + " did not enter call #2";
    else if (what == "mismatch")
      want =
          "mismatch: rank(s) " + who + " called call #2 with arguments that differ from rank 0's";
    else if (what == "refuse_plan")  // its arguments differ from the others': judge() says so
      want = r == culprit ? "invalid count"
                          : "mismatch: rank(s) " + who +
                                " called call #2 with arguments that differ from rank 0's";
    else if (what == "refuse_early")  // no fingerprint to compare: its refusal
      want = r == culprit ? "invalid argument: no groups were given"
                          : "peer error: rank " + who +
                                " refused call #2: invalid argument: no groups were given";
    else
      want = r == culprit ? "invalid buffer: the input of rank " + who + " is null"
                          : "peer error: rank " + who + " refused call #2: invalid buffer: the " +
                                "input of rank " + who + " is null";
    if (v.rfind(want, 0) != 0)
      return failed("rank " + std::to_string(r) + " says '" + v + "', not '" + want + "...'");
    if (what == "stall" && r != culprit &&
        v.find(rank + " did not enter call #2") == std::string::npos)
      return failed("rank " + std::to_string(r) + " does not name rank " + who +
                    "'s missing entry: " + v);
  }
  std::printf("%s: every rank's error as promised, no output written\n", what.c_str());
  return 0;
}

// A rank leaves in the second call of a shape while the others make it, with RELAY_TIMEOUT well
// above a second:
//   exited  rank 7, a helper of the one pair {0, 1} (route relay), exits (no teardown: as a
//           killed process, without relay-run stopping the job);
//   abort   rank 4, a helper, calls abort() on its transport instead of the call.
// Every other rank's call must fail within 1 s naming it (errc::timeout "rank 7 (pid ...) exited",
// errc::peer_error "rank 4 left the job"), with no output written. No gathering at the end: the
// exited rank's bootstrap is gone. With fewer than 8 ranks the last one leaves (with 2, the other
// member of the pair).
int leave(communicator& comm, bool exits) {
  const int me = comm.rank(), N = comm.size();
  // With hosted helpers (docs/hosted-helpers.md) the last process goes, and its hosted ranks
  // with it: they are named too.
  const int hosts = hosting_processes(comm);
  const int culprit = hosts > 0 ? hosts - 1 : N >= 8 ? (exits ? 7 : 4) : N - 1;
  const std::string who = "rank " + std::to_string(culprit);
  if (N < 2) return failed("the leave scenarios need 2 ranks or more");
  scene sc(comm, {{0, 1}}, 1 << 16);
  IPC_CHECK(gpu::rt::stream_create(&sc.d.stream));
  if (status s = sc.upload(); !s) return failed(s.to_string());
  if (status s = sc.finish(sc.call()); !s) return failed("the first call: " + s.to_string());
  if (!sc.right()) return failed("the first call's output is wrong");
  if (status s = sc.upload(); !s) return failed(s.to_string());
  if (status s = comm.boot().barrier(std::chrono::seconds(60)); !s) return failed(s.to_string());
  if (me == culprit) {
    if (exits) {
      std::fflush(nullptr);
      std::_Exit(0);
    }
    comm.transport().abort({errc::system_error, "the test aborts " + who});
    const status after = sc.call();
    if (after.code() != errc::system_error)
      return failed(who + "'s call after its abort: " + after.to_string());
    std::printf("%s aborted; its next call: %s\n", who.c_str(), after.to_string().c_str());
    std::this_thread::sleep_for(std::chrono::seconds(2));  // alive while the others look
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  const status done = sc.finish(sc.call());
  const double waited = seconds_since(start);
  const std::string named = exits ? who + " (pid " : who + " left the job";
  if (hosts > 0 && exits && done.message().find(", which also ran rank") == std::string::npos)
    return failed("rank " + std::to_string(me) + " does not name the ranks " + who + " hosted");
  std::printf("rank %d: %s (%.0f ms)\n", me, done.to_string().c_str(), waited * 1000);
  if (done) return failed("rank " + std::to_string(me) + "'s call succeeded");
  if (done.message().find(named) == std::string::npos)
    return failed("rank " + std::to_string(me) + " does not name '" + named + "'");
  if (waited > 1.0) return failed("named after " + std::to_string(waited) + " s, not within 1 s");
  if (!sc.untouched()) return failed("a failed call wrote its output");
  return 0;
}

// Pool memory is refused with a message saying why; plain memory registers (two buffers of one
// allocation, the second reusing the first's export); an allreduce whose output lies in the
// second runs without the copy out (and reads its input, in the pool memory, in place), right;
// an output outside every registration is staged, right; after deregistration the first output
// is staged too, and deregistering again is an error.
int registration(communicator& comm) {
  const int me = comm.rank(), N = comm.size();
  if (N % 2 != 0) return failed("the registration test needs an even number of ranks");
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  constexpr std::size_t pool_bytes = std::size_t{1} << 20;
  void* pool = nullptr;
  IPC_CHECK(gpu::rt::malloc_async(&pool, pool_bytes, d.stream));
  IPC_CHECK(gpu::rt::stream_synchronize(d.stream));
  const status refused = comm.register_buffer(pool, pool_bytes);
  if (refused.code() != errc::invalid_buffer ||
      refused.message().find("cannot be exported") == std::string::npos)
    return failed("pool memory: expected an invalid buffer that cannot be exported, got " +
                  refused.to_string());
  if (me == 0) std::printf("pool memory refused: %s\n", refused.to_string().c_str());
  if (status s = d.reserve(std::size_t{1} << 20); !s) return failed(s.to_string());
  auto* plain = static_cast<std::byte*>(d.memory);
  std::byte* first = plain + 4096;
  std::byte* second = plain + 131072;
  if (status s = comm.register_buffer(first, 65536); !s)
    return failed("registering plain memory: " + s.to_string());
  if (status s = comm.register_buffer(second, 65536); !s)
    return failed("registering a second buffer of the allocation: " + s.to_string());

  constexpr std::int64_t count = 4096;  // int32: 16 KiB
  constexpr std::size_t bytes = count * 4;
  const group_list pairs = pairs_of(N);
  const std::vector<std::int64_t> counts(pairs.size(), count);
  std::vector<std::int32_t> in(count);
  for (std::int64_t i = 0; i < count; ++i)
    in[static_cast<std::size_t>(i)] = (me + 1) * 100000 + static_cast<std::int32_t>(i);
  // The plan's forms read an input in place wherever it is and write an output in user memory
  // where it is registered; the pull form (an allreduce this small, RELAY_IPC_FORM=pull) writes
  // every output in place and lets its peers read an input in place where it is registered; the
  // ll form (the default at this size) reads every input and writes every output in place.
  auto check = [&](const char* when, std::byte* input, std::byte* out, bool registered_in,
                   bool registered_out) -> int {
    IPC_CHECK(gpu::rt::upload(input, in.data(), bytes));
    IPC_CHECK(gpu::rt::memset(out, 0xFF, bytes));  // poisoned
    IPC_CHECK(gpu::rt::device_synchronize());
    const ipc::call_counts before = link_of(comm).counts();
    const status s = finish(comm, d,
                            relay::allreduce(comm, pairs, {input, bytes}, {out, bytes}, counts,
                                             dtype::int32, reduce_op::sum, {}, d.stream));
    if (!s) return failed(std::string(when) + ": " + s.to_string());
    const ipc::call_counts after = link_of(comm).counts();
    // The ll form reads the input and writes the output where they are, registered or not.
    const bool pulled = after.pull > before.pull, ll = after.ll > before.ll;
    const bool direct_output = pulled || ll || registered_out;
    const bool direct_input = !pulled || registered_in;
    if ((after.outputs - before.outputs == 1) != direct_output ||
        (after.inputs - before.inputs == 1) != direct_input)
      return failed(std::string(when) + ": the output was " +
                    (after.outputs > before.outputs ? "" : "not ") +
                    "written in user memory, the input " +
                    (after.inputs > before.inputs ? "" : "not ") + "read in place");
    std::vector<std::int32_t> got(count);
    IPC_CHECK(gpu::rt::memcpy(got.data(), out, bytes));
    const int peer = me ^ 1;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int32_t want =
          (me + 1) * 100000 + (peer + 1) * 100000 + 2 * static_cast<std::int32_t>(i);
      if (got[static_cast<std::size_t>(i)] != want)
        return failed(std::string(when) + ": element " + std::to_string(i) + " is " +
                      std::to_string(got[static_cast<std::size_t>(i)]) + ", not " +
                      std::to_string(want));
    }
    return 0;
  };
  auto* pool_bytes_at = static_cast<std::byte*>(pool);
  if (int r = check("registered output", pool_bytes_at, second, false, true); r != 0) return r;
  if (int r =
          check("output outside the registrations", pool_bytes_at, plain + 262144, false, false);
      r != 0)
    return r;
  if (int r = check("registered input", first, plain + 262144, true, false); r != 0) return r;
  if (status s = comm.deregister_buffer(second); !s) return failed(s.to_string());
  if (status s = comm.deregister_buffer(first); !s) return failed(s.to_string());
  if (int r = check("after deregistration", pool_bytes_at, second, false, false); r != 0) return r;
  if (int r = check("input after deregistration", first, plain + 262144, false, false); r != 0)
    return r;
  const status again = comm.deregister_buffer(first);
  if (again.code() != errc::invalid_argument)
    return failed("deregistering twice: expected invalid_argument, got " + again.to_string());
  IPC_CHECK(gpu::rt::free_async(pool, d.stream));
  IPC_CHECK(gpu::rt::stream_synchronize(d.stream));
  if (me == 0)
    std::printf(
        "registration: refused pool memory, registered two buffers of one allocation, "
        "calls right in user memory and staged, deregistered\n");
  return 0;
}

// Buffers aligned to their elements only, and sizes that are no multiple of 16 bytes: an A=2
// allreduce over the job's pairs (direct route, the ll form by default at these sizes) with the
// input and the output at every combination of offsets 0, 4 and 8 bytes past a 16-byte boundary,
// int32 (exact), 1001 elements, then 4 KiB + 4 bytes, in place too. The output is poisoned, the
// bytes around it too, and checked against the sum worked out here; nothing outside it changes.
int unaligned(communicator& comm) {
  const int me = comm.rank(), N = comm.size();
  if (N % 2 != 0) return failed("the unaligned test needs an even number of ranks");
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  constexpr std::size_t room = 65536;
  if (status s = d.reserve(2 * room); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  const group_list pairs = pairs_of(N);
  const int peer = me ^ 1;
  options direct;
  direct.route = route::direct;
  int runs = 0;
  for (const std::int64_t count : {std::int64_t{1001}, std::int64_t{1025}})
    for (const std::size_t in_at : {0, 4, 8})
      for (const std::size_t out_at : {0, 4, 8, 99}) {  // 99: in place at the input's offset
        const bool in_place = out_at == 99;
        const std::size_t bytes = static_cast<std::size_t>(count) * 4;
        std::vector<std::int32_t> in(static_cast<std::size_t>(count));
        for (std::int64_t i = 0; i < count; ++i)
          in[static_cast<std::size_t>(i)] = (me + 1) * 1000000 + 7 * static_cast<std::int32_t>(i);
        std::vector<std::byte> poison(2 * room, std::byte{0xA5});
        IPC_CHECK(gpu::rt::upload(base, poison.data(), poison.size()));
        std::byte* input = base + in_at;
        std::byte* output = in_place ? input : base + room + out_at;
        IPC_CHECK(gpu::rt::upload(input, in.data(), bytes));
        IPC_CHECK(gpu::rt::device_synchronize());
        const std::vector<std::int64_t> counts(pairs.size(), count);
        const std::uint64_t ll_before = link_of(comm).counts().ll;
        const status s =
            finish(comm, d,
                   relay::allreduce(comm, pairs, {input, bytes}, {output, bytes}, counts,
                                    dtype::int32, reduce_op::sum, direct, d.stream));
        const std::string what = "count " + std::to_string(count) + ", input at +" +
                                 std::to_string(in_at) + ", output " +
                                 (in_place ? "in place" : "at +" + std::to_string(out_at));
        if (!s) return failed(what + ": " + s.to_string());
        if (std::getenv("RELAY_IPC_FORM") == nullptr && link_of(comm).counts().ll == ll_before)
          return failed(what + ": the call did not run in the ll form");
        std::vector<std::byte> after(2 * room);
        IPC_CHECK(gpu::rt::memcpy(after.data(), base, after.size()));
        const std::size_t out_off = static_cast<std::size_t>(output - base);
        for (std::size_t b = 0; b < after.size(); ++b) {
          const bool in_output = b >= out_off && b < out_off + bytes;
          const bool in_input = b >= in_at && b < in_at + bytes;
          if (in_output) continue;
          const std::byte want =
              in_input ? reinterpret_cast<const std::byte*>(in.data())[b - in_at] : std::byte{0xA5};
          if (after[b] != want)
            return failed(what + ": byte " + std::to_string(b) + " outside the output changed");
        }
        for (std::int64_t i = 0; i < count; ++i) {
          std::int32_t got = 0;
          std::memcpy(&got, after.data() + out_off + static_cast<std::size_t>(i) * 4, 4);
          const std::int32_t want =
              (me + 1) * 1000000 + (peer + 1) * 1000000 + 14 * static_cast<std::int32_t>(i);
          if (got != want)
            return failed(what + ": element " + std::to_string(i) + " is " + std::to_string(got) +
                          ", not " + std::to_string(want));
        }
        ++runs;
      }
  if (me == 0)
    std::printf(
        "unaligned: %d calls right (inputs and outputs at +0, +4, +8; in place), nothing "
        "outside the output written\n",
        runs);
  return 0;
}

// The small call hostpath and trace issue: an A=2 allreduce bf16 over the job's pairs (`counts`:
// one per pair), direct route (with N = 2 there is no helper to relay through). Nothing allocated.
status pair_allreduce(communicator& comm, device_side& d, const group_list& pairs,
                      const std::vector<std::int64_t>& counts, buffer_view send, buffer_view recv) {
  options direct;
  direct.route = route::direct;
  return relay::allreduce(comm, pairs, send, recv, counts, dtype::bfloat16, reduce_op::sum, direct,
                          d.stream);
}

// The host's time to issue a prepared call: CALLS calls of one shape (after one that prepares
// it), issued back to back in batches of BATCH with nothing waited for inside a batch, on the
// steady clock (the stream is drained between batches, untimed, so that a full launch queue
// never blocks a launch: ranks time-slicing one GPU would keep it full otherwise); the mean and
// the median of single calls, and the heap allocations they made. Staged buffers first, then
// registered ones (outputs in user memory).
// A launch and nothing else, for hostpath's comparison: a kernel that does nothing with arguments
// of `Bytes` (the pull kernel's argument bytes, or one word).
template <std::size_t Bytes>
struct bare_args {
  unsigned char bytes[Bytes];
};
template <std::size_t Bytes>
__global__ void bare_kernel(bare_args<Bytes> a) {
  if (a.bytes[0] == 0xA5 && threadIdx.x == 1024) a.bytes[1] = 0;  // never: an empty body
}
inline constexpr std::size_t pull_argument_bytes = sizeof(ipc::ipc_pull) + sizeof(ipc::ipc_peers) +
                                                   sizeof(gpu::copy_desc) + sizeof(std::uint64_t) +
                                                   sizeof(ipc::ipc_env);

// The host time of `calls` bare launches on `stream` (batches of `batch`, as hostpath's calls),
// a mean per launch in us.
template <std::size_t Bytes>
double bare_launch_us(gpu::rt::stream_t stream, int calls, int batch, int grid) {
  bare_args<Bytes> a{};
  double total = 0;
  for (int first = 0; first < calls; first += batch) {
    const int last = std::min(calls, first + batch);
    const auto start = std::chrono::steady_clock::now();
    for (int i = first; i < last; ++i)
      if (gpu::rt::launch(bare_kernel<Bytes>, static_cast<unsigned>(grid), 512, stream, a) !=
          gpu::rt::success)
        return -1;
    total +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (gpu::rt::stream_synchronize(stream) != gpu::rt::success) return -1;
  }
  return total / calls;
}

int hostpath(communicator& comm, int argc, char** argv) {
  const int calls = argc > 2 ? std::max(1, std::atoi(argv[2])) : 1000;
  const int batch = argc > 3 ? std::max(1, std::atoi(argv[3])) : 100;
  const int me = comm.rank(), N = comm.size();
  if (N % 2 != 0) return failed("hostpath needs an even number of ranks");
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  constexpr std::size_t half = std::size_t{1} << 20;
  if (status s = d.reserve(2 * half); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  IPC_CHECK(gpu::rt::memset(base, 0, 2 * half));
  const group_list pairs = pairs_of(N);
  std::vector<double> each(static_cast<std::size_t>(calls));
  bool allocated = false;
  for (const bool registered : {false, true}) {
    if (registered)
      if (status s = comm.register_buffer(base, 2 * half); !s) return failed(s.to_string());
    for (const std::size_t bytes : {std::size_t{4096}, std::size_t{16384}, std::size_t{65536}}) {
      const std::vector<std::int64_t> counts(pairs.size(), static_cast<std::int64_t>(bytes / 2));
      const buffer_view send{base, bytes}, recv{base + half, bytes};
      auto issue = [&]() { return pair_allreduce(comm, d, pairs, counts, send, recv); };
      if (status s = finish(comm, d, issue()); !s) return failed(s.to_string());
      const std::uint64_t one_shot = link_of(comm).counts().one_shot;
      const std::uint64_t pulled_before = link_of(comm).counts().pull;
      const std::uint64_t ll_before = link_of(comm).counts().ll;
      const std::size_t allocated_before = testing::allocations();
      double total = 0;
      for (int first = 0; first < calls; first += batch) {
        const int last = std::min(calls, first + batch);
        const auto start = std::chrono::steady_clock::now();
        for (int i = first; i < last; ++i) {
          const auto t = std::chrono::steady_clock::now();
          if (status s = issue(); !s) return failed(s.to_string());
          each[static_cast<std::size_t>(i)] =
              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t)
                  .count();
        }
        total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count();
        IPC_CHECK(gpu::rt::stream_synchronize(d.stream));
      }
      const double mean = total / calls;
      const std::size_t made = testing::allocations() - allocated_before;
      const bool one = link_of(comm).counts().one_shot > one_shot;
      const bool pulled = link_of(comm).counts().pull > pulled_before;
      const bool ll = link_of(comm).counts().ll > ll_before;
      if (status s = finish(comm, d, {}); !s) return failed(s.to_string());
      std::sort(each.begin(), each.end());
      std::printf(
          "rank %d: allreduce A=2 bf16 %zu KB, %s, %s form: host issue %.2f us a call "
          "(mean of %d, back to back in batches of %d), median %.2f us, %zu allocations\n",
          me, bytes / 1024, registered ? "registered" : "staged",
          ll       ? "ll"
          : pulled ? "pull"
          : one    ? "one-shot"
                   : "stepped",
          mean, calls, batch, each[each.size() / 2], made);
      allocated = allocated || made > 0;
    }
    if (registered)
      if (status s = comm.deregister_buffer(base); !s) return failed(s.to_string());
  }
  // What a launch alone costs here, beside the calls: the pull kernel's argument bytes, one word.
  const double pull_like = bare_launch_us<pull_argument_bytes>(d.stream, calls, batch, 1);
  const double word = bare_launch_us<8>(d.stream, calls, batch, 1);
  if (pull_like < 0 || word < 0) return failed("a bare launch failed");
  std::printf(
      "rank %d: a bare launch of an empty kernel: %.2f us with the pull kernel's %zu "
      "argument bytes, %.2f us with 8 (mean of %d, batches of %d)\n",
      me, pull_like, pull_argument_bytes, word, calls, batch);
  return allocated ? failed("a repeated call allocated") : 0;
}

// The median of `v` (the upper one of an even count; 0 for none).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The per-phase device times of the pull or the ll form: ipc::trace_calls calls of an A=2 allreduce
// bf16 of BYTES over the pairs, eager back to back, then captured into a graph and replayed; per
// trace point the median over the calls of block 0's time since its kernel began, and the median
// time from one call's start to the next one's. Rank 0 and 1 print theirs.
int trace(communicator& comm, int argc, char** argv) {
  const std::size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
  const bool registered = argc > 3 && std::atoi(argv[3]) != 0;
  const int me = comm.rank(), N = comm.size();
  if (N % 2 != 0) return failed("trace needs an even number of ranks");
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  if (status s = d.reserve(2 * bytes); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  IPC_CHECK(gpu::rt::memset(base, 0, 2 * bytes));
  if (registered)
    if (status s = comm.register_buffer(base, 2 * bytes); !s) return failed(s.to_string());
  const group_list pairs = pairs_of(N);
  const std::vector<std::int64_t> counts(pairs.size(), static_cast<std::int64_t>(bytes / 2));
  const buffer_view send{base, bytes}, recv{base + bytes, bytes};
  auto issue = [&]() { return pair_allreduce(comm, d, pairs, counts, send, recv); };
  if (status s = finish(comm, d, issue()); !s) return failed(s.to_string());
  const bool ll = link_of(comm).counts().ll > 0;
  if (link_of(comm).counts().pull == 0 && !ll)
    return failed("the call did not run in the pull or the ll form");
  constexpr int K = ipc::trace_calls;
  auto report = [&](const char* how) -> int {
    std::uint64_t t[K][ipc::trace_points];
    link_of(comm).device_trace(t);
    std::vector<std::uint64_t> starts;
    std::vector<std::vector<double>> at(ipc::trace_points);
    for (int c = 0; c < K; ++c) {
      if (t[c][0] == 0) return failed("no trace: build with RELAY_IPC_TRACE=1");
      starts.push_back(t[c][0]);
      for (int i = 1; i < ipc::trace_points; ++i)
        at[static_cast<std::size_t>(i)].push_back(static_cast<double>(t[c][i] - t[c][0]) / 1e3);
    }
    std::sort(starts.begin(), starts.end());
    std::vector<double> gaps;
    for (std::size_t i = 1; i < starts.size(); ++i)
      gaps.push_back(static_cast<double>(starts[i] - starts[i - 1]) / 1e3);
    static const char* pull_names[ipc::trace_points] = {"start",     "announced",    "entries read",
                                                        "judged",    "inputs ready", "summed",
                                                        "done told", "readers done", "end"};
    static const char* ll_names[ipc::trace_points] = {"start",        "announced and pushed",
                                                      "words landed", "entries read",
                                                      "last look",    "voted",
                                                      "judged",       "summed",
                                                      "end"};
    const char* const* names = ll ? ll_names : pull_names;
    std::string line;
    for (int i = 1; i < ipc::trace_points; ++i) {
      char part[64];
      std::snprintf(part, sizeof part, " %s %.2f", names[i],
                    median(at[static_cast<std::size_t>(i)]));
      line += part;
    }
    if (me < 2)
      std::printf("rank %d, %zu B, %s, %s: us since start:%s; start to start %.2f us\n", me, bytes,
                  registered ? "registered" : "staged", how, line.c_str(), median(gaps));
    std::fflush(stdout);
    return 0;
  };
  for (int k = 0; k < K; ++k)
    if (status s = issue(); !s) return failed(s.to_string());
  if (status s = finish(comm, d, {}); !s) return failed(s.to_string());
  if (int r = report("eager"); r != 0) return r;
  gpu::rt::graph_t graph = nullptr;
  gpu::rt::graph_exec_t exec = nullptr;
  IPC_CHECK(gpu::rt::begin_capture(d.stream));
  status captured;
  for (int k = 0; k < K && captured; ++k)
    captured = issue();
  IPC_CHECK(gpu::rt::end_capture(d.stream, &graph));
  if (!captured) return failed("capture: " + captured.to_string());
  IPC_CHECK(gpu::rt::graph_instantiate(&exec, graph));
  for (int r = 0; r < 3; ++r)
    IPC_CHECK(gpu::rt::graph_launch(exec, d.stream));
  if (status s = finish(comm, d, {}); !s) return failed(s.to_string());
  if (int r = report("graph replay"); r != 0) return r;
  IPC_CHECK(gpu::rt::graph_exec_destroy(exec));
  IPC_CHECK(gpu::rt::graph_destroy(graph));
  if (registered)
    if (status s = comm.deregister_buffer(base); !s) return failed(s.to_string());
  return 0;
}

// Mesh emulation's stages, traced (a build with RELAY_IPC_TRACE=1; ipc/stage_trace.hpp): the relay
// route of COLLECTIVE among ranks 0 .. P-1 (the processes; the others are the helpers they host,
// RELAY_HELPER_DEVICES, or helper processes), bf16, BYTES the larger of an active rank's buffers,
// registered or staged; one call prepares the shape, then ipc::stage_trace_calls calls run back to
// back. Per rank of this process (its own and those it hosts) and stage of the program, the
// medians over the calls: when the stage began, its waits ended, its first paced slot started,
// its last one finished and its last block left (us since the process's own rank passed the
// entry's agreement), its
// paced tiles, the time its links sat idle between a walker's tiles (summed, and the longest), and
// a walker's mean time moving a tile. Every rank on one device reads one clock, so the rows line
// up across ranks to within the entry's spread.
int stages(communicator& comm, int argc, char** argv) {
  const std::string what = argc > 2 ? argv[2] : "all-gather";
  const std::size_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : std::size_t{1} << 24;
  const bool registered = argc > 4 && std::atoi(argv[4]) != 0;
  const std::optional<collective> coll = parse_collective(what);
  if (!coll)
    return failed("stages: unknown collective '" + what +
                  "' (allreduce, reduce-scatter, all-gather, all-to-all)");
  const int me = comm.rank();
  const int P = hosting_processes(comm) > 0 ? hosting_processes(comm) : 2;
  group_list groups{std::vector<int>(static_cast<std::size_t>(P))};
  std::iota(groups[0].begin(), groups[0].end(), 0);
  const bool active = me < P;
  // The per-group count whose larger buffer holds `bytes` of bf16, and each buffer's elements
  // (core/collective.hpp's rule).
  const std::int64_t count = static_cast<std::int64_t>(bytes / 2) /
                             std::max(input_elements(*coll, P, 1), output_elements(*coll, P, 1));
  const std::int64_t in = input_elements(*coll, P, count), out = output_elements(*coll, P, count);
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  const std::size_t total = static_cast<std::size_t>(in + out) * 2;
  if (status s = d.reserve(total); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  IPC_CHECK(gpu::rt::memset(base, 0x3c, total));  // bf16 1.0 and its neighbours: finite sums
  // Registration is collective: a helper process registers nothing, but takes part.
  if (registered)
    if (status s = comm.register_buffer(active ? base : nullptr, active ? total : 0); !s)
      return failed(s.to_string());
  const std::vector<std::int64_t> counts{count};
  const buffer_view send =
      active ? buffer_view{base, static_cast<std::size_t>(in) * 2} : buffer_view{};
  const buffer_view recv =
      active ? buffer_view{base + in * 2, static_cast<std::size_t>(out) * 2} : buffer_view{};
  options relay_route;
  relay_route.route = route::relay;
  auto issue = [&] {
    return run_collective(comm, *coll, groups, send, recv, counts, dtype::bfloat16, reduce_op::sum,
                          relay_route, d.stream);
  };
  if (status s = finish(comm, d, issue()); !s) return failed("the first call: " + s.to_string());
  constexpr int K = ipc::stage_trace_calls;
  for (int k = 0; k < K; ++k)
    if (status s = issue(); !s) return failed(s.to_string());
  if (status s = finish(comm, d, {}); !s) return failed(s.to_string());
  // This process's ranks: its own, then those it hosts.
  std::vector<std::pair<int, ipc_transport*>> ranks;
  if (auto* h = dynamic_cast<hosted::transport*>(&comm.transport())) {
    const std::vector<int>& local = h->group().local_ranks();
    for (std::size_t k = 0; k < local.size(); ++k)
      ranks.emplace_back(local[k], &static_cast<ipc_transport&>(h->local(k)));
  } else {
    ranks.emplace_back(me, &link_of(comm));
  }
  // Each call's times count from the moment the process's own rank passed its entry's agreement,
  // which every rank passes within a few us of the others.
  std::uint64_t since[K] = {};
  {
    std::uint64_t t[ipc::trace_calls][ipc::trace_points];
    link_of(comm).device_trace(t);
    for (int c = 0; c < K; ++c) {
      since[c] = t[c * ipc::stage_trace_stages][ipc::stage_waited];
      if (since[c] == 0) return failed("no trace: build with RELAY_IPC_TRACE=1");
    }
  }
  std::string text;
  for (const auto& [rank, link] : ranks) {
    std::uint64_t t[ipc::trace_calls][ipc::trace_points];
    link->device_trace(t);
    for (int stage = 0; stage < ipc::stage_trace_stages; ++stage) {
      std::vector<double> at[ipc::trace_points];
      for (int c = 0; c < K; ++c) {
        const std::uint64_t* row = t[c * ipc::stage_trace_stages + stage];
        if (row[ipc::stage_start] == 0) continue;  // no such stage
        auto us = [&](int point) {
          return row[point] == 0
                     ? 0.0
                     : (static_cast<double>(row[point]) - static_cast<double>(since[c])) / 1e3;
        };
        for (int point : {ipc::stage_start, ipc::stage_waited, ipc::stage_first, ipc::stage_last,
                          ipc::stage_end})
          at[point].push_back(us(point));
        at[ipc::stage_idle].push_back(static_cast<double>(row[ipc::stage_idle]) / 1e3);
        at[ipc::stage_tiles].push_back(static_cast<double>(row[ipc::stage_tiles]));
        at[ipc::stage_idle_most].push_back(static_cast<double>(row[ipc::stage_idle_most]) / 1e3);
        at[ipc::stage_moving].push_back(row[ipc::stage_tiles] == 0
                                            ? 0.0
                                            : static_cast<double>(row[ipc::stage_moving]) / 1e3 /
                                                  static_cast<double>(row[ipc::stage_tiles]));
      }
      if (at[ipc::stage_start].empty()) continue;
      char line[320];
      std::snprintf(line, sizeof line,
                    "stages %s %zu B %s: rank %d stage %d: start %.1f waited %.1f first slot %.1f "
                    "last slot %.1f end %.1f us; %.0f tiles, links idle %.1f us (longest %.2f), "
                    "a tile moved in %.2f us\n",
                    what.c_str(), bytes, registered ? "registered" : "staged", rank, stage,
                    median(at[ipc::stage_start]), median(at[ipc::stage_waited]),
                    median(at[ipc::stage_first]), median(at[ipc::stage_last]),
                    median(at[ipc::stage_end]), median(at[ipc::stage_tiles]),
                    median(at[ipc::stage_idle]), median(at[ipc::stage_idle_most]),
                    median(at[ipc::stage_moving]));
      text += line;
    }
  }
  std::printf("%s", text.c_str());
  std::fflush(stdout);
  if (registered)
    if (status s = comm.deregister_buffer(active ? base : nullptr); !s)
      return failed(s.to_string());
  return 0;
}

// A long eager run (a stall once seen only after thousands of calls: bench/results/
// 2026-12-01-h200-ipc-agreement): allreduce A=2 bf16 of BYTES per rank over the pairs
// of the job, direct route, back to back in batches of 100 calls (the stream drained between
// batches), for SECONDS; a line every 1000 calls with the rate and the slowest batch, and on a
// failure the call and how long its batch took, so that a stall shows as what it is. The
// output of the last batch's last call is checked.
int soak(communicator& comm, int argc, char** argv) {
  const std::size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : std::size_t{64} << 20;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 60;
  const int me = comm.rank(), N = comm.size();
  if (N % 2 != 0) return failed("soak needs an even number of ranks");
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  if (status s = d.reserve(2 * bytes); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  const std::int64_t n = static_cast<std::int64_t>(bytes / 2);
  std::vector<std::uint16_t> in(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)  // bf16 of small integers: exact sums
    in[static_cast<std::size_t>(i)] =
        static_cast<std::uint16_t>(bfloat16::from_float(static_cast<float>((i + me) % 7 - 3)).bits);
  IPC_CHECK(gpu::rt::upload(base, in.data(), bytes));
  const group_list pairs = pairs_of(N);
  const std::vector<std::int64_t> counts(pairs.size(), n);
  options direct;
  direct.route = route::direct;
  auto issue = [&]() {
    return relay::allreduce(comm, pairs, {base, bytes}, {base + bytes, bytes}, counts,
                            dtype::bfloat16, reduce_op::sum, direct, d.stream);
  };
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t calls = 0;
  double slowest = 0;
  while (seconds_since(start) < seconds) {
    const auto t = std::chrono::steady_clock::now();
    status s;
    for (int i = 0; i < 100 && s; ++i, ++calls)
      s = issue();
    s = finish(comm, d, s);
    const double took = seconds_since(t);
    slowest = std::max(slowest, took);
    if (!s) {
      std::printf("rank %d: failed after %llu calls, %.1f s in; the batch took %.3f s: %s\n", me,
                  static_cast<unsigned long long>(calls), seconds_since(start), took,
                  s.to_string().c_str());
      return 1;
    }
    if (me == 0 && calls % 1000 == 0)
      std::printf("%llu calls, %.1f s: %.1f us a call, slowest batch of 100 %.1f ms\n",
                  static_cast<unsigned long long>(calls), seconds_since(start),
                  seconds_since(start) * 1e6 / static_cast<double>(calls), slowest * 1e3);
  }
  std::vector<std::uint16_t> out(static_cast<std::size_t>(n));
  IPC_CHECK(gpu::rt::memcpy(out.data(), base + bytes, bytes));
  for (std::int64_t i = 0; i < n; ++i) {
    const float want = static_cast<float>((i + me) % 7 - 3 + (i + (me ^ 1)) % 7 - 3);
    bfloat16 got;
    got.bits = out[static_cast<std::size_t>(i)];
    if (got.to_float() != want)
      return failed("element " + std::to_string(i) + " is wrong after " + std::to_string(calls) +
                    " calls");
  }
  std::printf("rank %d: %llu calls in %.1f s, the last one right\n", me,
              static_cast<unsigned long long>(calls), seconds_since(start));
  return 0;
}

// Mesh emulation (RELAY_IPC_EMULATE_MESH, set here on every rank at 4 GB/s; 2 ranks or more):
// an all-gather of one pair, each rank's 4 MiB pushed over its one link to the other, is never
// done before a link of 4 GB/s could have moved it (4194304 / 4e9 = 1.049 ms, device events
// around the call on each rank), and gives every byte of both inputs; a pair's small direct
// allreduce, which takes the pull form unpaced, takes the stepped form (the pull reads peers'
// memory, which nothing paces; only the step kernel has a paced form) and sums right. The other
// ranks help. Paced runs bit for bit the unpaced ones: the hosted suite under
// RELAY_IPC_EMULATE_MESH against its unpaced record (device_run.sh's paced steps).
int paced(communicator& comm) {
  constexpr double rate = 4e9;
  constexpr std::int64_t n = std::int64_t{1} << 22;  // bytes of uint8 a rank
  const int me = comm.rank();
  const group_list pair{{0, 1}};
  const bool member = me < 2;
  device_side d;
  IPC_CHECK(gpu::rt::stream_create(&d.stream));
  if (status s = d.reserve(3 * n); !s) return failed(s.to_string());
  auto* base = static_cast<std::byte*>(d.memory);
  std::vector<unsigned char> host(3 * n);
  auto input_byte = [](int rank, std::int64_t i) {
    return static_cast<unsigned char>((i * 131 + rank * 71 + 5) % 251);
  };
  for (std::int64_t i = 0; i < n; ++i)
    host[static_cast<std::size_t>(i)] = input_byte(me, i);
  std::fill(host.begin() + n, host.end(), static_cast<unsigned char>(0xA5));  // poisoned output
  IPC_CHECK(gpu::rt::upload(base, host.data(), host.size()));
  const std::vector<std::int64_t> counts{n};
  options direct;
  direct.route = route::direct;
  const buffer_view send = member ? buffer_view{base, static_cast<std::size_t>(n)} : buffer_view{};
  const buffer_view recv =
      member ? buffer_view{base + n, static_cast<std::size_t>(2 * n)} : buffer_view{};
  auto gather = [&] {
    return relay::all_gather(comm, pair, send, recv, counts, dtype::uint8, direct, d.stream);
  };
  // The first call prepares the shape (its program); the second, on a poisoned output again, is
  // timed and checked.
  if (status s = finish(comm, d, gather()); !s)
    return failed("the first all-gather: " + s.to_string());
  IPC_CHECK(gpu::rt::upload(base, host.data(), host.size()));
  gpu::rt::event_t start = nullptr, end = nullptr;
  IPC_CHECK(gpu::rt::event_create(&start, true));
  IPC_CHECK(gpu::rt::event_create(&end, true));
  IPC_CHECK(gpu::rt::event_record(start, d.stream));
  const status s = gather();
  IPC_CHECK(gpu::rt::event_record(end, d.stream));
  if (status f = finish(comm, d, s); !f) return failed("the timed all-gather: " + f.to_string());
  float ms = 0;
  IPC_CHECK(gpu::rt::event_elapsed_ms(&ms, start, end));
  (void)gpu::rt::event_destroy(start);
  (void)gpu::rt::event_destroy(end);
  const double least = static_cast<double>(n) / rate * 1e3;
  if (member) {
    std::printf("rank %d: 4 MiB over a 4 GB/s link in %.3f ms (at least %.3f)\n", me, ms, least);
    if (ms < least) return failed("the paced all-gather was faster than its link");
    IPC_CHECK(gpu::rt::memcpy(host.data(), base, host.size()));
    for (int q = 0; q < 2; ++q)
      for (std::int64_t i = 0; i < n; ++i)
        if (host[static_cast<std::size_t>(n + q * n + i)] != input_byte(q, i))
          return failed("rank " + std::to_string(me) + ": the all-gather's byte " +
                        std::to_string(i) + " of rank " + std::to_string(q) + " is wrong");
  }
  // A pair's direct allreduce of 1 KiB of float32 (the pull form's, unpaced): stepped, right.
  constexpr std::int64_t k = 256;
  std::vector<float> sum(2 * k);
  for (std::int64_t i = 0; i < k; ++i) {
    sum[static_cast<std::size_t>(i)] = static_cast<float>(me + 1) * static_cast<float>(i % 9);
    sum[static_cast<std::size_t>(k + i)] = -1.0f;  // poisoned output
  }
  IPC_CHECK(gpu::rt::upload(base, sum.data(), sum.size() * sizeof(float)));
  const std::uint64_t one_shot = link_of(comm).counts().one_shot;  // the pull's included
  const std::vector<std::int64_t> ks{k};
  const buffer_view in = member ? buffer_view{base, k * sizeof(float)} : buffer_view{};
  const buffer_view out =
      member ? buffer_view{base + k * sizeof(float), k * sizeof(float)} : buffer_view{};
  if (status r = finish(comm, d,
                        relay::allreduce(comm, pair, in, out, ks, dtype::float32, reduce_op::sum,
                                         direct, d.stream));
      !r)
    return failed("the allreduce: " + r.to_string());
  if (link_of(comm).counts().one_shot != one_shot)
    return failed("the allreduce took the pull or the one-shot form, which are not paced");
  if (member) {
    IPC_CHECK(gpu::rt::memcpy(sum.data(), base, sum.size() * sizeof(float)));
    for (std::int64_t i = 0; i < k; ++i)  // 1 * x + 2 * x, small integers: exact
      if (sum[static_cast<std::size_t>(k + i)] != 3.0f * static_cast<float>(i % 9))
        return failed("the allreduce's element " + std::to_string(i) + " is wrong");
  }
  if (me == 0) std::printf("paced: never faster than the link, every byte right, stepped\n");
  return 0;
}

// Ranks that emulate different meshes (RELAY_IPC_EMULATE_MESH: 12 GB/s on rank 1 only): creation
// fails on every rank, naming the variable.
int paced_mismatch() {
  environment env;
  if (status s = environment_from_process(env); !s) return failed(s.to_string());
  ::setenv("RELAY_IPC_EMULATE_MESH", env.rank == 1 ? "12" : "0", 1);
  std::unique_ptr<communicator> comm;
  const status s = communicator_from_environment(ipc_factory(), comm);
  if (s.ok() || s.message().find("RELAY_IPC_EMULATE_MESH") == std::string::npos ||
      s.message().find("emulates a mesh of") == std::string::npos)
    return failed("creation with RELAY_IPC_EMULATE_MESH on rank 1 alone returned " + s.to_string());
  if (env.rank == 0)
    std::printf("paced_mismatch: refused on every rank: %s\n", s.message().c_str());
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
  if (what == "hosted_bad_device") return hosted_bad_device();
  if (what == "paced_mismatch") return paced_mismatch();
  if (what == "paced") ::setenv("RELAY_IPC_EMULATE_MESH", "4", 1);
  auto comm = connect_or_exit(ipc_factory());
  if (what == "paced") return paced(*comm);
  if (what == "property" || what == "property_fp8")
    return property(*comm, argc, argv, what == "property_fp8");
  if (what == "graph") return graph(*comm, argc, argv, false);
  if (what == "pieces") return pieces(*comm, argc, argv);
  if (what == "stall" || what == "late" || what == "refused" || what == "refuse_plan" ||
      what == "refuse_early" || what == "mismatch")
    return misbehave(*comm, what);
  if (what == "exited" || what == "abort") return leave(*comm, what == "exited");
  if (what == "property_registered") return property_registered(*comm, argc, argv);
  if (what == "graph_registered") return graph(*comm, argc, argv, true);
  if (what == "registration") return registration(*comm);
  if (what == "unaligned") return unaligned(*comm);
  if (what == "hostpath") return hostpath(*comm, argc, argv);
  if (what == "trace") return trace(*comm, argc, argv);
  if (what == "stages") return stages(*comm, argc, argv);
  if (what == "soak") return soak(*comm, argc, argv);
  if (what == "hosted" || what == "hosted_record")
    return hosted_calls(*comm, argc, argv, what == "hosted_record");
  return failed("unknown scenario '" + what +
                "' (property, property_fp8, graph, stall, late, refused, refuse_plan, "
                "refuse_early, mismatch, "
                "exited, abort, pieces, "
                "property_registered, graph_registered, registration, unaligned, hostpath, soak, "
                "hosted_record, hosted, hosted_bad_device, paced, paced_mismatch, stages)");
}

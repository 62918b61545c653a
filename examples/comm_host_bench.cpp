// The communicator's host time per call, without a device or peers: what a rank-local collective
// costs on the host before its transport runs (issue 11's target is 3 us for a whole repeated
// call of the ipc transport, launches included).
//
//   comm-host-bench [--calls N] [--check]
//
// One process plays rank 0 of N = 8: a callback bootstrap answers the first call of each shape
// with this rank's own bytes for every rank (so the shapes agree), and a null transport returns
// at once, so the time is the communicator's alone: the cache lookup, the placement, this rank's
// buffer checks and the call record. Each row times N back-to-back calls of one shape after its
// first call (which plans and is not timed), on the steady clock, and counts the heap
// allocations of those calls (this program replaces operator new to count them).
//
// The last row times, per call, what the communicator built on every call before the fixed key
// (issue 11): the request (a copy of the groups and counts), route::automatic made concrete, and
// the shape's text, which was the cache's key.
//
// --check: exit 1 if a repeated call allocates (the suite runs it: examples.comm_host_bench).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "relay/bootstrap/callback_bootstrap.hpp"
#include "relay/comm/collectives.hpp"
#define RELAY_ALLOC_COUNTER_DEFINE
#include "support/alloc_counter.hpp"

namespace {

using namespace relay;

class null_transport final : public transport {
 public:
  std::string_view name() const override { return "null"; }
  bool broken() const override { return false; }
  void abort(const status&) override {}
  status run(const call_context& c) override { return c.local; }
};

struct row {
  const char* what;
  collective coll;
  group_list groups;
  std::int64_t count;  // per group
  dtype type;
  route path;
};

struct result {
  double ns = 0;
  double allocations = 0;
};

// `calls` runs of `body`: the time and the allocations per run.
template <class Body>
result per_call(long calls, Body&& body) {
  const std::size_t before = testing::allocations();
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i)
    body();
  const auto end = std::chrono::steady_clock::now();
  result out;
  out.ns =
      std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(calls);
  out.allocations =
      static_cast<double>(testing::allocations() - before) / static_cast<double>(calls);
  return out;
}

constexpr int ranks = 8;

result time_calls(communicator& comm, const row& r, long calls, std::vector<std::byte>& memory) {
  const std::vector<std::int64_t> counts(r.groups.size(), r.count);
  const auto bytes = static_cast<std::size_t>(r.count) * static_cast<std::size_t>(size_of(r.type));
  // Generous sizes: all-gather's output and all-to-all's buffers are A times the count.
  const std::size_t span = bytes * 8;
  memory.assign(2 * span + 256, std::byte{0});
  const buffer_view send{memory.data(), span}, recv{memory.data() + span, span};
  options opt;
  opt.route = r.path;
  auto once = [&]() {
    return run_collective(comm, r.coll, r.groups, send, recv, counts, r.type, reduce_op::sum, opt);
  };
  if (status s = once(); !s) {
    std::fprintf(stderr, "%s: %s\n", r.what, s.to_string().c_str());
    std::exit(2);
  }
  return per_call(calls, [&]() {
    if (!once()) std::exit(2);
  });
}

// What the communicator built per call before the fixed key: the request, the route, the text.
result time_old_key(const row& r, long calls) {
  const std::vector<std::int64_t> counts(r.groups.size(), r.count);
  options opt;
  opt.route = r.path;
  std::size_t sink = 0;
  const result out = per_call(calls, [&]() {
    plan_request q = call_request(r.coll, r.groups, ranks, counts, r.type, reduce_op::sum, opt);
    q = with_chosen_route(std::move(q));
    sink += detail::describe_shape(q).size();
  });
  if (sink == 0) std::exit(3);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 200'000;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) {
      check = true;
    } else if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::strtol(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: comm-host-bench [--calls N] [--check]\n");
      return 2;
    }
  }
  if (calls < 1) calls = 1;
  auto gather = [](std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                   std::chrono::milliseconds) {
    all.assign(ranks, std::vector<std::byte>(mine.begin(), mine.end()));
    return status{};
  };
  communicator comm(std::make_shared<callback_bootstrap>(0, ranks, gather),
                    std::make_unique<null_transport>(), comm_config{});
  const group_list pairs{{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const group_list quads{{0, 1, 2, 3}, {4, 5, 6, 7}};
  const std::vector<row> rows{
      {"allreduce A=2 fused bf16 4 KB", collective::allreduce, pairs, 2048, dtype::bfloat16,
       route::relay},
      {"allreduce A=2 fused bf16 64 KB", collective::allreduce, pairs, 32768, dtype::bfloat16,
       route::relay},
      {"allreduce A=2 single bf16 64 KB",
       collective::allreduce,
       {{0, 1}},
       32768,
       dtype::bfloat16,
       route::direct},
      {"allreduce A=2 fused bf16 64 KB, route automatic", collective::allreduce, pairs, 32768,
       dtype::bfloat16, route::automatic},
      {"all-gather A=4 fused int32 16 KB", collective::all_gather, quads, 4096, dtype::int32,
       route::relay},
      {"all-to-all A=4 fused float32 16 KB", collective::all_to_all, quads, 4096, dtype::float32,
       route::direct},
  };
  std::printf(
      "communicator host time per repeated call, rank 0 of %d, null transport, %ld calls "
      "a row\n",
      ranks, calls);
  std::printf("%-52s %12s %14s\n", "call", "ns per call", "allocs per call");
  std::vector<std::byte> memory;
  bool allocating = false;
  for (const row& r : rows) {
    const result x = time_calls(comm, r, calls, memory);
    std::printf("%-52s %12.1f %14.2f\n", r.what, x.ns, x.allocations);
    allocating = allocating || x.allocations > 0;
  }
  for (int k : {1, 3}) {
    const row& r = rows[static_cast<std::size_t>(k)];
    const result x = time_old_key(r, calls);
    std::printf("%-52s %12.1f %14.2f\n",
                (std::string("previous per-call key: ") + (k == 1 ? "relay" : "automatic")).c_str(),
                x.ns, x.allocations);
  }
  if (check && allocating) {
    std::fprintf(stderr, "FAILED: a repeated call allocated\n");
    return 1;
  }
  return 0;
}

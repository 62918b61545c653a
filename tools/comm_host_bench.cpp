// The communicator's host time per call, without a device or peers: what a rank-local collective
// costs on the host before its transport runs (the target is 3 us for a whole repeated call of
// the ipc transport, launches included), and what relay's C ABI adds to it.
//
//   comm-host-bench [--calls N] [--batches B] [--check]
//
// One process plays rank 0 of N = 8: a callback bootstrap answers the first call of each shape
// with this rank's own bytes for every rank (so the shapes agree), and a null transport returns
// at once, so the time is the communicator's alone: the cache lookup, the placement, this rank's
// buffer checks and the call record. Each row times B batches (default 5) of N back-to-back calls
// of one shape after its first call (which plans and is not timed), on the steady clock, and
// reports the least batch's time per call (other work on the machine only ever adds) and the
// heap allocations of all of them (this program replaces operator new to count them).
//
// The rows after it time, per call, what the communicator built on every call before its cache
// had a fixed key: the request (a copy of the groups and counts), route::automatic made concrete,
// and the shape's text, which was the cache's key.
//
// The C ABI's table: the same calls through relay_allreduce (13 arguments) and relay_run_call (a
// relay_call filled once) on a handle over such a communicator (capi/'s own sources are compiled
// into this program), beside the C++ call. Then one repeated call taken apart, each part timed
// on its own over the same arguments: the handle's lookup, the reading of the flat arguments, the
// call record, the shape cache's lookup (a repeated call's shape compared with the last one's),
// the placement, this rank's buffer checks and the agreement's record; "the rest" is the whole call
// through relay_run_call less those parts (the calls between them, the status's return).
//
// --check: exit 1 if a repeated call allocates (the suite runs it: tools.comm_host_bench).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "handles.hpp"
#include "relay/bootstrap/callback_bootstrap.hpp"
#include "relay/c/relay.h"
#include "relay/comm/collectives.hpp"
#include "vocabulary.hpp"
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

// Batches of `calls` runs of `body` timed (the least of them: on a shared machine other work
// only ever adds) and their allocations counted (all of them).
int batches = 5;

// The time and the allocations per run of `body`, over `batches` batches of `calls` runs. Before
// each run the compiler must assume that memory changed, so that a part timed on its own is
// computed on every run and not once for the loop.
template <class Body>
result per_call(long calls, Body&& body) {
  result out;
  out.ns = -1;
  std::size_t allocated = 0;
  for (int b = 0; b < batches; ++b) {
    const std::size_t before = testing::allocations();
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) {
      asm volatile("" ::: "memory");
      body();
    }
    const auto end = std::chrono::steady_clock::now();
    allocated += testing::allocations() - before;
    const double ns =
        std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(calls);
    out.ns = out.ns < 0 ? ns : std::min(out.ns, ns);
  }
  out.allocations = static_cast<double>(allocated) / static_cast<double>(calls * batches);
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
    const plan_request q =
        call_request(r.coll, r.groups, ranks, counts, r.type, reduce_op::sum, opt);
    sink += describe(as_chosen(q, choose(q))).size();
  });
  if (sink == 0) std::exit(3);
  return out;
}

// What keeps the optimizer from dropping a part timed on its own: each part's result is kept.
volatile std::uint64_t sink = 0;
void keep(std::uint64_t v) {
  sink = sink + v;
}

// One row's call as the C ABI takes it: flat groups, counts, the relay_call over them.
struct flat_call {
  std::vector<std::int32_t> ranks, sizes;
  std::vector<std::int64_t> counts;
  relay_call call{};
  relay_options options{};

  flat_call(const row& r, void* send, void* recv, std::size_t bytes) {
    for (const std::vector<int>& g : r.groups) {
      ranks.insert(ranks.end(), g.begin(), g.end());
      sizes.push_back(static_cast<std::int32_t>(g.size()));
    }
    counts.assign(r.groups.size(), r.count);
    relay_options_init(&options);
    options.route = static_cast<std::int32_t>(r.path);
    relay_call_init(&call);
    call.collective = static_cast<std::int32_t>(r.coll);
    call.dtype = static_cast<std::int32_t>(r.type);
    call.op = RELAY_SUM;
    call.num_groups = static_cast<std::int32_t>(sizes.size());
    call.group_ranks = ranks.data();
    call.group_sizes = sizes.data();
    call.counts = counts.data();
    call.send = send;
    call.send_bytes = bytes;
    call.recv = recv;
    call.recv_bytes = bytes;
    call.options = &options;
  }
};

struct abi_result {
  result entry, prepared, cpp;
};

// The row's allreduce through relay_allreduce and relay_run_call on `h`, and as a C++ call on its
// communicator.
abi_result time_abi(relay_comm* h, const row& r, long calls, std::vector<std::byte>& memory) {
  const auto bytes = static_cast<std::size_t>(r.count) * static_cast<std::size_t>(size_of(r.type));
  memory.assign(2 * bytes + 256, std::byte{0});
  flat_call f(r, memory.data(), memory.data() + bytes + 128, bytes);
  const relay_call& c = f.call;
  auto entry = [&] {
    return relay_allreduce(h, c.send, c.send_bytes, c.recv, c.recv_bytes, c.group_ranks,
                           c.group_sizes, c.num_groups, c.counts, c.dtype, c.op, c.options,
                           nullptr);
  };
  auto prepared = [&] { return relay_run_call(h, &c, nullptr); };
  options opt;
  opt.route = r.path;
  auto cpp = [&] {
    return run_collective(*h->comm, r.coll, r.groups, {memory.data(), bytes},
                          {memory.data() + bytes + 128, bytes}, f.counts, r.type, reduce_op::sum,
                          opt);
  };
  for (int i = 0; i < 2; ++i)
    if (entry() != RELAY_OK || prepared() != RELAY_OK || !cpp()) {
      std::fprintf(stderr, "%s: %s\n", r.what, relay_last_error());
      std::exit(2);
    }
  abi_result out;
  out.entry = per_call(calls, [&] {
    if (entry() != RELAY_OK) std::exit(2);
  });
  out.prepared = per_call(calls, [&] {
    if (prepared() != RELAY_OK) std::exit(2);
  });
  out.cpp = per_call(calls, [&] {
    if (!cpp()) std::exit(2);
  });
  return out;
}

// One repeated call of `r` through relay_run_call, each part timed on its own (see the top).
void print_parts(relay_comm* h, const row& r, long calls, std::vector<std::byte>& memory) {
  const auto bytes = static_cast<std::size_t>(r.count) * static_cast<std::size_t>(size_of(r.type));
  memory.assign(2 * bytes + 256, std::byte{0});
  flat_call f(r, memory.data(), memory.data() + bytes + 128, bytes);
  const relay_call& c = f.call;
  const buffer_view send{memory.data(), bytes}, recv{memory.data() + bytes + 128, bytes};
  options opt;
  opt.route = r.path;
  opt.machine = &h->machine;
  // The shape as the communicator records it, and the cached copy a hit compares it with.
  plan_request asked = call_request(r.coll, r.groups, ranks, f.counts, r.type, reduce_op::sum, opt);
  const plan_request cached = asked;
  plan p;
  if (status s = make_plan(asked, choose(asked), p); !s) {
    std::fprintf(stderr, "%s: %s\n", r.what, s.to_string().c_str());
    std::exit(2);
  }
  const int es = size_of(r.type);
  const placement where = placement_of(r.coll, r.groups, f.counts, es, 0, send, recv);
  struct part {
    const char* what;
    result x;
  };
  std::vector<part> parts;
  parts.push_back({"C ABI: the handle's lookup (the live set)", per_call(calls, [&] {
                     relay_comm* out = nullptr;
                     keep(c_abi::live(h, out).ok() ? 1 : 0);
                   })});
  parts.push_back(
      {"C ABI: reading the flat arguments", per_call(calls, [&] {
         collective coll{};
         dtype t{};
         reduce_op op{};
         options o;
         wire_choice chosen;
         relay_wire_report* report = nullptr;
         status st = c_abi::read_call(&c, coll);
         if (st) st = c_abi::check_flat_groups(c.group_ranks, c.group_sizes, c.num_groups);
         if (st) st = c_abi::read_dtype(c.dtype, t);
         if (st) st = c_abi::read_op(c.op, op);
         if (st)
           st = c_abi::read_options(c.options, static_cast<std::size_t>(c.num_groups), o, chosen,
                                    report);
         keep(st.ok() ? c_abi::groups_of(*h, c.group_ranks, c.group_sizes, c.num_groups).size()
                      : 0);
       })});
  parts.push_back({"communicator: the call record", per_call(calls, [&] {
                     assign_call(asked, r.coll, r.groups, ranks, f.counts, r.type, reduce_op::sum,
                                 opt);
                     keep(asked.counts.size());
                   })});
  parts.push_back({"communicator: the shape cache's lookup",
                   per_call(calls, [&] { keep(asked == cached ? 1 : 0); })});
  parts.push_back(
      {"communicator: the placement", per_call(calls, [&] {
         keep(static_cast<unsigned>(placement_of(r.coll, r.groups, f.counts, es, 0, send, recv)));
       })});
  parts.push_back({"communicator: this rank's buffer checks", per_call(calls, [&] {
                     keep(validate_rank_buffers(p, 0, send, recv, where).ok() ? 1 : 0);
                   })});
  parts.push_back({"transport: the agreement's record", per_call(calls, [&] {
                     call_context ctx;
                     ctx.p = &p;
                     ctx.send = send;
                     ctx.recv = recv;
                     ctx.placement = where;
                     ctx.sequence = sink;  // read from memory: not folded into a constant
                     ctx.fingerprint = 0x1234;
                     const entry_record rec = record_of(ctx);
                     keep(rec.sequence + rec.fingerprint + rec.code + rec.placement);
                   })});
  const result whole = per_call(calls, [&] {
    if (relay_run_call(h, &c, nullptr) != RELAY_OK) std::exit(2);
  });
  double rest = whole.ns;
  std::printf("\none repeated call taken apart: %s, relay_run_call\n", r.what);
  std::printf("%-52s %12s %14s\n", "part", "ns per call", "allocs per call");
  for (const part& x : parts) {
    std::printf("%-52s %12.1f %14.2f\n", x.what, x.x.ns, x.x.allocations);
    rest -= x.x.ns;
  }
  std::printf("%-52s %12.1f\n", "the rest", rest);
  std::printf("%-52s %12.1f %14.2f\n", "the whole call", whole.ns, whole.allocations);
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
    } else if (std::strcmp(argv[i], "--batches") == 0 && i + 1 < argc) {
      batches = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: comm-host-bench [--calls N] [--batches B] [--check]\n");
      return 2;
    }
  }
  if (calls < 1) calls = 1;
  auto gather = [](std::span<const std::byte> mine, std::vector<std::vector<std::byte>>& all,
                   std::chrono::milliseconds) {
    all.assign(ranks, std::vector<std::byte>(mine.begin(), mine.end()));
    return status{};
  };
  relay_comm* handle = nullptr;
  c_abi::publish(
      std::make_unique<communicator>(std::make_shared<callback_bootstrap>(0, ranks, gather),
                                     std::make_unique<null_transport>(), comm_config{}),
      "null", 0, &handle);
  communicator& comm = *handle->comm;
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
      "communicator host time per repeated call, rank 0 of %d, null transport, the least of %d "
      "batches of %ld calls a row\n",
      ranks, batches, calls);
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
  std::printf("\nthe C ABI: the same calls (allreduce rows) on a handle, per repeated call\n");
  std::printf("%-52s %12s %12s %12s %8s\n", "call", "relay_allreduce", "relay_run_call", "C++",
              "allocs");
  for (const row& r : rows) {
    if (r.coll != collective::allreduce) continue;
    const abi_result x = time_abi(handle, r, calls, memory);
    const double allocs = x.entry.allocations + x.prepared.allocations + x.cpp.allocations;
    std::printf("%-52s %12.1f %12.1f %12.1f %8.2f\n", r.what, x.entry.ns, x.prepared.ns, x.cpp.ns,
                allocs);
    allocating = allocating || allocs > 0;
  }
  print_parts(handle, rows[0], calls, memory);
  print_parts(handle, rows[2], calls, memory);
  relay_comm_destroy(handle);
  if (check && allocating) {
    std::fprintf(stderr, "FAILED: a repeated call allocated\n");
    return 1;
  }
  return 0;
}

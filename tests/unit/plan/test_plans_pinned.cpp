// Plans pinned: a digest of every byte make_plan produces (or of the refusal it returns) for a
// fixed sample of requests, across every collective, route (route::automatic included), mode,
// dtype, operator, precision, in-place form, wire and machine. The other plan tests say what a
// plan must hold; this one says that a change to how a plan is reached (the request, the
// choice of route and wire, validation, the making) leaves every plan as it was, byte for byte.
// The expected digest was recorded from the tree before the request/choose/make split. A change
// meant to alter plans re-records it in the same commit and says why.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "relay/cost/choose.hpp"

using namespace relay;

namespace {

struct digest {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i)
      h = (h ^ b[i]) * 0x100000001b3ull;
  }
  void num(std::uint64_t v) { bytes(&v, sizeof v); }
  void text(std::string_view s) {
    num(s.size());
    bytes(s.data(), s.size());
  }
};

void add(digest& d, const plan_operand& o) {
  d.num(o.rank);
  d.num(static_cast<std::uint64_t>(o.buf));
  d.num(o.offset);
}

void add(digest& d, const plan& p) {
  const schedule_spec& s = p.spec;
  for (int v : {static_cast<int>(s.coll), s.active, s.ranks, static_cast<int>(s.mode),
                static_cast<int>(s.route), s.permille, s.tiles})
    d.num(static_cast<std::uint64_t>(v));
  d.num(static_cast<std::uint64_t>(p.type));
  d.num(static_cast<std::uint64_t>(p.op));
  d.num(p.in_place);
  d.num(static_cast<std::uint64_t>(p.alignment));
  d.num(static_cast<std::uint64_t>(p.divisor));
  d.num(static_cast<std::uint64_t>(p.precision));
  d.num(static_cast<std::uint64_t>(p.partial_size));
  for (const auto& g : p.groups) {
    d.num(g.size());
    for (int r : g)
      d.num(static_cast<std::uint64_t>(r));
  }
  for (std::int64_t n : p.counts)
    d.num(static_cast<std::uint64_t>(n));
  for (const plan_phase& ph : p.phases) {
    d.num(ph.step);
    d.num(static_cast<std::uint64_t>(ph.phase));
    d.num(ph.first);
    d.num(ph.size);
  }
  for (const plan_op& o : p.ops) {
    d.num(static_cast<std::uint64_t>(o.step));
    d.num(static_cast<std::uint64_t>(o.phase));
    d.num(o.first_source);
    d.num(o.source_count);
    add(d, o.dst);
    d.num(o.count);
    d.num(o.finalize);
    d.num(static_cast<std::uint64_t>(o.group));
    d.num(o.partial_mask);
  }
  for (const plan_operand& o : p.sources)
    add(d, o);
  for (const auto* v : {&p.input_bytes, &p.output_bytes, &p.scratch_bytes})
    for (std::uint64_t b : *v)
      d.num(b);
  d.num(static_cast<std::uint64_t>(p.wire.requested));
  d.num(static_cast<std::uint64_t>(p.wire.taken));
  d.num(p.wire.bytes);
  d.num(p.wire.threshold_bytes);
  for (const wire_slot& w : p.wire_slots) {
    d.num(w.send);
    d.num(w.recv);
  }
}

// Raw draws of the engine (its output is fixed by the standard; its distributions are not).
struct draw {
  std::mt19937_64 rng;
  std::uint64_t below(std::uint64_t n) { return rng() % n; }
  template <class T, std::size_t K>
  T pick(const T (&from)[K]) {
    return from[below(K)];
  }
};

// One request of the sample: mostly valid ones, with the refusals the choices run into.
plan_request sample(draw& g) {
  const collective colls[] = {collective::allreduce, collective::reduce_scatter,
                              collective::all_gather, collective::all_to_all};
  const int shapes[][2] = {{2, 4},  {2, 8},  {2, 8},  {4, 8}, {4, 8},
                           {2, 16}, {4, 16}, {8, 16}, {4, 4}, {3, 8}};
  const route routes[] = {route::relay, route::direct, route::legacy, route::pipelined,
                          route::automatic};
  const dtype types[] = {dtype::float32, dtype::bfloat16, dtype::float16, dtype::int32,
                         dtype::int8};
  const std::int64_t counts[] = {0, 1, 127, 128, 1000, 4096, 77777, 1 << 20, 3 << 22};
  const topology* machines[] = {nullptr, &mi300x, &mi350x, &h200_nvswitch};
  plan_request r;
  r.coll = g.pick(colls);
  const auto& shape = shapes[g.below(std::size(shapes))];
  const int A = shape[0], N = shape[1];
  r.ranks = N;
  r.mode = g.below(2) ? mode::single : mode::fused;
  r.route = g.pick(routes);
  if (r.coll == collective::allreduce && g.below(4) == 0)
    r.permille = 1 + static_cast<int>(g.below(999));
  if (r.route == route::pipelined) r.tiles = static_cast<int>(g.below(5));
  std::vector<int> order(static_cast<std::size_t>(N));
  for (int i = 0; i < N; ++i)
    order[static_cast<std::size_t>(i)] = i;
  if (g.below(2))
    for (std::size_t i = order.size() - 1; i > 0; --i)
      std::swap(order[i], order[g.below(i + 1)]);
  const int groups = r.mode == mode::fused ? N / A : 1;
  for (int k = 0; k < groups; ++k) {
    r.groups.emplace_back();
    for (int j = 0; j < A; ++j)
      r.groups.back().push_back(order[static_cast<std::size_t>(k * A + j)]);
    r.counts.push_back(g.pick(counts));
  }
  r.type = g.pick(types);
  r.op = g.below(3) == 0 ? reduce_op::avg : reduce_op::sum;
  r.in_place = g.below(3) == 0;
  r.alignment = g.below(4) == 0 ? 1 + static_cast<std::int64_t>(g.below(300)) : default_alignment;
  r.precision = g.below(3) == 0 ? precision::native_partials : precision::fp32_partials;
  r.machine = machines[g.below(std::size(machines))];
  const std::uint64_t w = g.below(6);
  r.wire = w < 3    ? wire_format::native
           : w == 3 ? wire_format::fp8
           : w == 4 ? wire_format::fp8_e4m3
                    : wire_format::fp8_e4m3_fnuz;
  if (r.wire != wire_format::native && g.below(2))
    r.wire_threshold = static_cast<std::int64_t>(g.below(4) * 4096);
  switch (g.below(40)) {  // a few of the caller's mistakes
    case 0: r.groups.back().back() = r.groups.front().front(); break;
    case 1: r.counts.push_back(1); break;
    case 2: r.counts.back() = -1; break;
    default: break;
  }
  return r;
}

}  // namespace

TEST_CASE("plans and refusals are what they were before the request/choose/make split",
          "[plan][pinned]") {
  draw g{std::mt19937_64(20261201)};
  digest d;
  int made = 0, refused = 0;
  for (int i = 0; i < 2000; ++i) {
    const plan_request r = sample(g);
    plan p;
    const status s = make_plan(r, p);
    d.num(static_cast<std::uint64_t>(s.code()));
    d.text(s.message());
    if (s) {
      add(d, p);
      ++made;
    } else {
      ++refused;
    }
  }
  INFO(made << " plans made, " << refused << " refused");
  CHECK(made > 800);
  CHECK(refused > 200);
  CHECK(d.h == 0x65b3fec707bd4580ull);
}

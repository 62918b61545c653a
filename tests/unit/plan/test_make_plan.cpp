#include "relay/cost/choose.hpp"

#include <catch2/catch.hpp>

#include "relay/plan/buffers.hpp"
#include "relay/plan/scratch.hpp"

using namespace relay;

namespace {

plan_request request(collective c, int A, int N, mode m = mode::fused) {
  plan_request r;
  r.coll = c;
  r.mode = m;
  r.ranks = N;
  const int groups = m == mode::fused ? N / A : 1;
  for (int g = 0; g < groups; ++g) {
    r.groups.emplace_back();
    for (int j = 0; j < A; ++j)
      r.groups.back().push_back(g * A + j);
    r.counts.push_back(4096);
  }
  return r;
}

status fails(const plan_request& r) {
  plan p;
  p.divisor = 42;  // a marker: a failed make_plan must leave the plan as it was
  const status s = make_plan(r, p);
  CHECK(p.divisor == 42);
  return s;
}

}  // namespace

TEST_CASE("make_plan names every invalid request", "[plan]") {
  auto expect = [](plan_request r, errc code, const char* text) {
    const status s = fails(r);
    INFO(s.to_string());
    CHECK(s.code() == code);
    CHECK_THAT(s.message(), Catch::Contains(text));
  };
  plan_request r = request(collective::allreduce, 2, 8);
  r.groups = {{0, 1, 2}, {3, 4, 5}};  // A = 3
  r.counts = {1, 1};
  r.mode = mode::single;
  r.groups.pop_back();
  r.counts.pop_back();
  expect(r, errc::invalid_schedule, "power of two");
  expect(request(collective::allreduce, 8, 8, mode::single), errc::invalid_schedule,
         "at least one helper");
  r = request(collective::allreduce, 4, 8);
  r.ranks = 6;
  r.groups = {{0, 1, 2, 3}};
  r.counts = {1};
  r.mode = mode::fused;
  expect(r, errc::invalid_schedule, "divide N");
  r = request(collective::allreduce, 2, 8);
  r.groups[1] = {1, 2};
  expect(r, errc::invalid_group, "active in two groups");
  r = request(collective::allreduce, 2, 8);
  r.groups[1] = {2, 2};
  expect(r, errc::invalid_group, "appears twice");
  r = request(collective::allreduce, 2, 8);
  r.groups[3] = {6, 8};
  expect(r, errc::invalid_group, "outside 0..7");
  r = request(collective::allreduce, 2, 8);
  r.groups.pop_back();
  r.counts.pop_back();
  expect(r, errc::invalid_group, "covering every rank");
  r = request(collective::allreduce, 2, 8);
  r.counts.pop_back();
  expect(r, errc::invalid_count, "one count per group");
  r = request(collective::allreduce, 2, 8);
  r.counts[2] = -1;
  expect(r, errc::invalid_count, "negative");
  r = request(collective::all_to_all, 2, 8);
  r.in_place = true;
  expect(r, errc::unsupported, "no in-place form");
  r = request(collective::allreduce, 2, 8);
  r.type = static_cast<dtype>(99);
  expect(r, errc::unsupported, "unknown dtype");
  r = request(collective::allreduce, 2, 8);
  r.op = static_cast<reduce_op>(7);
  expect(r, errc::unsupported, "unknown reduction operator");
  r = request(collective::allreduce, 2, 8);
  r.alignment = 0;
  expect(r, errc::invalid_argument, "alignment");
}

TEST_CASE("a single-mode plan maps helpers onto the ranks outside the group", "[plan]") {
  plan_request r = request(collective::all_gather, 2, 4, mode::single);
  r.groups = {{3, 1}};  // active 0 is rank 3, active 1 is rank 1; helpers are 0 and 2
  r.counts = {4 * 128};
  plan p;
  REQUIRE(make_plan(r, p).ok());
  CHECK(p.input_bytes == std::vector<std::uint64_t>{0, 4 * 128 * 4, 0, 4 * 128 * 4});
  CHECK(p.scratch_bytes[0] == 2 * 128 * 4);  // two slices of c = n/4 = 128 floats
  CHECK(p.scratch_bytes[2] == 2 * 128 * 4);
  CHECK(p.scratch_bytes[1] == 0);
  for (const plan_op& op : p.ops)
    for (const plan_operand& src : p.sources_of(op))
      if (src.buf == buffer::scratch) CHECK((src.rank == 0 || src.rank == 2));
}

TEST_CASE("an in-place all-gather drops the copy of a rank onto itself", "[plan]") {
  plan_request r = request(collective::all_gather, 2, 8);
  plan out_of_place, in_place;
  REQUIRE(make_plan(r, out_of_place).ok());
  r.in_place = true;
  REQUIRE(make_plan(r, in_place).ok());
  CHECK(out_of_place.ops.size() == in_place.ops.size() + 8);  // one self-copy per rank
  // In place, the all-gather's input is named as the output it sits in.
  for (const plan_op& op : in_place.ops) {
    CHECK(op.dst.buf != buffer::input);
    for (const plan_operand& src : in_place.sources_of(op))
      CHECK(src.buf != buffer::input);
  }
}

TEST_CASE("validate_buffers names the rank and the problem", "[plan]") {
  plan_request r = request(collective::allreduce, 2, 4);
  r.counts = {100, 100};
  plan p;
  REQUIRE(make_plan(r, p).ok());
  std::vector<float> storage(4 * 200 + 16);
  std::vector<buffer_view> in(4), out(4);
  for (std::size_t k = 0; k < 4; ++k) {
    in[k] = {storage.data() + k * 200, 400};
    out[k] = {storage.data() + k * 200 + 100, 400};
  }
  CHECK(validate_buffers(p, in, out).ok());
  auto expect = [&](auto edit, const char* text) {
    auto i = in, o = out;
    edit(i, o);
    const status s = validate_buffers(p, i, o);
    INFO(s.to_string());
    CHECK(s.code() == errc::invalid_buffer);
    CHECK_THAT(s.message(), Catch::Contains(text));
  };
  expect([](auto& i, auto&) { i[2].data = nullptr; }, "input of rank 2 is null");
  expect([](auto&, auto& o) { o[1].bytes = 399; }, "output of rank 1 holds 399 bytes");
  expect([](auto&, auto& o) { o[3].data = static_cast<char*>(o[3].data) + 1; }, "not aligned");
  expect([](auto& i, auto& o) { o[0].data = i[1].data; }, "overlaps the input of rank 1");
  expect([](auto&, auto& o) { o[0] = o[1]; }, "outputs of ranks 0 and 1 overlap");
  expect([](auto& i, auto&) { i.pop_back(); }, "3 inputs");
}

TEST_CASE("fp16/bf16 partial sums are laid out and moved at fp32 width", "[plan][precision]") {
  // Reduce-scatter A=4, N=8, count 4096: c = 512, helper slices S = 4c = 2048, direct D = 2048.
  plan_request r = request(collective::reduce_scatter, 4, 8);
  r.type = dtype::bfloat16;
  plan p;
  REQUIRE(make_plan(r, p).ok());
  CHECK(p.partial_size == 4);
  int helper_sums = 0, returns = 0, owner_sums = 0;
  for (const plan_op& op : p.ops) {
    if (op.partial_mask == 0) continue;
    if (op.phase == phase::reduce && op.partial_mask == partial_dst_bit) {
      ++helper_sums;  // A-1 bf16 slices into one fp32 partial
      CHECK(op.source_count == 3);
      CHECK(op.count == 512);
      CHECK_FALSE(op.finalize);
      CHECK(p.dst_width(op) == 4);
      CHECK(p.source_width(op, 0) == 2);
    } else if (op.phase == phase::transfer) {
      ++returns;  // helper -> owner, fp32
      CHECK(op.partial_mask == (partial_dst_bit | 1u));
      CHECK(op.count == 512);
    } else {
      ++owner_sums;  // the owner's input (bf16) + the returned partials (fp32) -> output (bf16)
      CHECK(op.partial_mask == 2u);
      CHECK(op.count == 2048);
      CHECK(op.finalize);
      CHECK(p.dst_width(op) == 2);
    }
  }
  CHECK(helper_sums == 32);  // 4 helpers x 4 owners x 2 groups
  CHECK(returns == 32);
  CHECK(owner_sums == 8);
  // Rank 0: active in group 0 (scratch 3*D bf16 + partial S fp32), helper in group 1 (scratch
  // 12c bf16 + partial 4c fp32): 12288 + 8192 + 12288 + 8192 bytes.
  CHECK(p.scratch_bytes[0] == 40960);
  CHECK(p.scratch_bytes[0] ==
        static_cast<std::uint64_t>(
            active_scratch_bytes({collective::reduce_scatter, 4, 8}, 4096, dtype::bfloat16) +
            helper_scratch_bytes({collective::reduce_scatter, 4, 8}, 4096, dtype::bfloat16)));

  r.precision = precision::native_partials;  // 16-bit partials: the spec's layout and bytes
  REQUIRE(make_plan(r, p).ok());
  CHECK(p.partial_size == 2);
  CHECK(p.scratch_bytes[0] == 12288 + 4096 + 12288 + 4096);
  for (const plan_op& op : p.ops)
    CHECK(op.partial_mask == 0);

  r.precision = precision::fp32_partials;
  r.type = dtype::float32;  // partials as wide as elements: nothing is marked
  REQUIRE(make_plan(r, p).ok());
  CHECK(p.partial_size == 4);
  CHECK(p.scratch_bytes[0] == 2 * (24576 + 8192));
  for (const plan_op& op : p.ops)
    CHECK(op.partial_mask == 0);

  r.precision = static_cast<precision>(7);
  const status s = fails(r);
  CHECK(s.code() == errc::unsupported);
  CHECK_THAT(s.message(), Catch::Contains("unknown precision"));
}

// route::automatic against the alpha-beta model, by hand. MI300X: B = 48 GB/s a link, 10 us a
// step. Allreduce A=2 N=8 fused, float32 (X = 4n bytes):
//   relay  2 steps, n/4 on the busiest link: 20 us + (n/4) * 4 B / B = 20 us + n / 48e9 s
//   direct 1 step,  n on the busiest link:   10 us +  n    * 4 B / B = 10 us + n / 12e9 s
// equal where 10 us = n/12e9 - n/48e9 = n/16e9: n = 160,000. At n = 1,000 direct takes 10.08 us
// and relay 20.02 us; at n = 2^20 direct 97.4 us and relay 41.8 us.
TEST_CASE("route::automatic takes the model's faster route for the call's count", "[plan]") {
  plan_request r = request(collective::allreduce, 2, 8);
  r.route = route::automatic;
  r.permille = 0;
  plan p;
  r.counts.assign(4, 1000);
  REQUIRE(make_plan(r, p));
  CHECK(p.spec.route == route::direct);
  r.counts.assign(4, 1 << 20);
  REQUIRE(make_plan(r, p));
  CHECK(p.spec.route == route::relay);
  // Heterogeneous groups: the largest count decides (the group that finishes last).
  r.counts = {1000, 1000, 1 << 20, 0};
  REQUIRE(make_plan(r, p));
  CHECK(p.spec.route == route::relay);
  // On a switch a GPU's port is the limit and relaying never pays: direct at 2^20 too.
  r.machine = &h200_nvswitch;
  REQUIRE(make_plan(r, p));
  CHECK(p.spec.route == route::direct);
  r.machine = nullptr;

  // bf16 reduce-scatter A=4 N=8 fused, n = 600,000 (X = 2n bytes; tests/unit/cost/test_route.cpp):
  //   relay, fp32 partials:   20 us + (5n/8) * 2 B / B = 20 us + n / 38.4e9 s = 35.6 us
  //   relay, 16-bit partials: 20 us + (n/2)  * 2 B / B = 20 us + n / 48e9 s   = 32.5 us
  //   direct:                 10 us +  n     * 2 B / B = 10 us + n / 24e9 s   = 35.0 us
  // so the partials' width decides: direct with fp32 partials, relay with native ones.
  plan_request rs = request(collective::reduce_scatter, 4, 8);
  rs.route = route::automatic;
  rs.type = dtype::bfloat16;
  rs.counts.assign(2, 600'000);
  REQUIRE(make_plan(rs, p));
  CHECK(p.spec.route == route::direct);
  rs.precision = precision::native_partials;
  REQUIRE(make_plan(rs, p));
  CHECK(p.spec.route == route::relay);

  // One group of A=2 pipelines large messages. All-gather bf16 (X = 2n bytes): pipelined T tiles
  // take 10(T+1) us + (T+1)/(7T+1) X/B, relay 20 us + X/(4B), direct 10 us + X/B. At X = 20 MiB
  // (n = 10,485,760, X/B = 436.9 us): direct 446.9 us, relay 20 + 109.2 = 129.2 us, T=2
  // 30 + 436.9 * 3/15 = 117.4 us, T=4 50 + 436.9 * 5/29 = 125.3 us, T=8 90 + 436.9 * 9/57 = 159 us.
  plan_request ag = request(collective::all_gather, 2, 8, mode::single);
  ag.route = route::automatic;
  ag.type = dtype::bfloat16;
  ag.counts = {10 << 20};
  REQUIRE(make_plan(ag, p));
  CHECK(p.spec.route == route::pipelined);
  CHECK(p.spec.tiles == 2);

  // A single group of 4 too: all-gather bf16 at X = 64 MB is in T=4's range, between
  // 52.2 MB and 198.4 MB (tests/unit/cost/test_route.cpp works out the crossovers).
  plan_request ag4 = request(collective::all_gather, 4, 8, mode::single);
  ag4.route = route::automatic;
  ag4.type = dtype::bfloat16;
  ag4.counts = {32'000'000};
  REQUIRE(make_plan(ag4, p));
  CHECK(p.spec.route == route::pipelined);
  CHECK(p.spec.tiles == 4);

  // A = N: direct, the only route. A request relay refuses keeps relay's message.
  plan_request whole = request(collective::allreduce, 4, 4, mode::single);
  whole.route = route::automatic;
  REQUIRE(make_plan(whole, p));
  CHECK(p.spec.route == route::direct);
  plan_request three = request(collective::allreduce, 2, 8, mode::single);
  three.route = route::automatic;
  three.groups = {{0, 1, 2}};
  CHECK(fails(three).message() == "the active count A must be a power of two (2, 4, 8, 16)");
  // The route itself names no schedule.
  CHECK(std::string(spec_error({collective::allreduce, 2, 8, mode::fused, route::automatic})) ==
        "route automatic names no schedule: a call chooses one by its count (choose_schedule)");
}

TEST_CASE("request_of(p) makes p again, request_for takes the schedule's fields", "[plan]") {
  plan_request r = request(collective::reduce_scatter, 4, 8);
  r.type = dtype::bfloat16;
  r.op = reduce_op::avg;
  r.in_place = true;
  r.alignment = 64;
  r.precision = precision::native_partials;
  r.counts = {1000, 3};
  plan p, again;
  REQUIRE(make_plan(r, p));
  REQUIRE(make_plan(request_of(p), again));
  CHECK(again == p);
  // With route::automatic, the plan keeps the route taken, and so does its request.
  r.route = route::automatic;
  REQUIRE(make_plan(r, p));
  CHECK(request_of(p).route == p.spec.route);
  CHECK(p.spec.route != route::automatic);

  const schedule_spec s{collective::all_gather, 2, 8, mode::single, route::pipelined, 0, 4};
  const plan_request q = request_for(s, {{3, 5}}, {77});
  CHECK(q.coll == collective::all_gather);
  CHECK(q.mode == mode::single);
  CHECK(q.route == route::pipelined);
  CHECK(q.tiles == 4);
  CHECK(q.ranks == 8);
  CHECK(q.groups == std::vector<std::vector<int>>{{3, 5}});
  CHECK(q.counts == std::vector<std::int64_t>{77});
  CHECK(make_plan(q, p));
}

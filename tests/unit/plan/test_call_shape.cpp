// A call's shape as one value: every field takes part in ==, in hash() and in describe(); the
// options that shape a call are the call_options part of both options and call_shape.
#include "relay/plan/call_shape.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

using namespace relay;

namespace {

call_shape base() {
  call_shape s;
  s.coll = collective::reduce_scatter;
  s.mode = mode::fused;
  s.ranks = 4;
  s.groups = {{0, 1}, {2, 3}};
  s.counts = {100, 200};
  s.type = dtype::bfloat16;
  s.op = reduce_op::sum;
  return s;
}

}  // namespace

TEST_CASE("every field of a shape takes part in ==, hash() and describe()", "[plan]") {
  const call_shape a = base();
  CHECK(a == base());
  CHECK(hash(a) == hash(base()));
  const std::vector<std::function<void(call_shape&)>> changes{
      [](call_shape& s) { s.coll = collective::allreduce; },
      [](call_shape& s) { s.mode = mode::single; },
      [](call_shape& s) { s.ranks = 8; },
      [](call_shape& s) {
        s.groups = {{1, 0}, {2, 3}};
      },
      [](call_shape& s) {
        s.groups = {{0, 1}, {2}};
      },
      [](call_shape& s) {
        s.counts = {100, 201};
      },
      [](call_shape& s) { s.counts = {100}; },
      [](call_shape& s) { s.type = dtype::float16; },
      [](call_shape& s) { s.op = reduce_op::avg; },
      [](call_shape& s) { s.in_place = true; },
      [](call_shape& s) { s.route = route::automatic; },
      [](call_shape& s) { s.permille = 700; },
      [](call_shape& s) { s.tiles = 4; },
      [](call_shape& s) { s.alignment = 64; },
      [](call_shape& s) { s.precision = precision::native_partials; },
      [](call_shape& s) { s.wire = wire_format::fp8; },
      [](call_shape& s) { s.wire_threshold = 0; },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    INFO("change " << i);
    call_shape b = base();
    changes[i](b);
    CHECK_FALSE(a == b);
    CHECK(hash(a) != hash(b));
    // The in-place form is no part of the text: a rank-local plan is the out-of-place one.
    if (!b.in_place) CHECK(describe(a) != describe(b));
  }
}

TEST_CASE("a call's shape comes from its arguments and the options that shape it", "[plan]") {
  options opt;
  opt.route = route::automatic;
  opt.permille = 600;
  opt.tiles = 8;
  opt.alignment = 32;
  opt.precision = precision::native_partials;
  opt.wire = wire_format::fp8_e4m3;
  opt.wire_threshold = 4096;
  opt.machine = &mi350x;
  const group_list one{{5, 2}};
  const std::vector<std::int64_t> counts{77};
  const plan_request r =
      call_request(collective::all_gather, one, 8, counts, dtype::float32, reduce_op::avg, opt);
  CHECK(r.coll == collective::all_gather);
  CHECK(r.mode == mode::single);  // one group
  CHECK(r.ranks == 8);
  CHECK(r.groups == one);
  CHECK(r.counts == counts);
  CHECK(r.type == dtype::float32);
  CHECK(r.op == reduce_op::sum);  // all-gather does not reduce
  CHECK_FALSE(r.in_place);
  CHECK(static_cast<const call_options&>(r) == static_cast<const call_options&>(opt));
  CHECK(r.machine == &mi350x);
  CHECK(describe(r) ==
        "all-gather single automatic permille=600 tiles=8 N=8 float32 sum alignment=32 "
        "precision=1 wire=2:4096 groups=5,2 counts=77");

  // Written into a shape that held another call: what it held before is gone.
  call_shape s = base();
  s.in_place = true;
  assign_call(s, collective::allreduce, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, 8,
              std::vector<std::int64_t>{1, 2, 3, 4}, dtype::int32, reduce_op::avg, call_options{});
  CHECK(describe(s) ==
        "allreduce fused relay permille=0 tiles=0 N=8 int32 avg alignment=128 precision=0 "
        "wire=0:-1 groups=0,1|2,3|4,5|6,7 counts=1,2,3,4");
  CHECK_FALSE(s.in_place);
}

// The control plane's records (serve/record.hpp): every field of a call, a refusal, a forward's
// plan and torchcomms' five fields comes back as written, checked against constants worked out
// here (distinct values in every field of one type, so that two fields swapped on the way show);
// a record cut short, or with bytes past its end, is an error, never a partly read shape.
#include "relay/serve/record.hpp"

#include <catch2/catch.hpp>
#include <vector>

using namespace relay;
using namespace relay::serve;

namespace {

// A shape whose fields all differ from their defaults and from each other where they share a type.
call_shape every_field() {
  call_shape s;
  s.route = route::pipelined;
  s.permille = 625;
  s.tiles = 3;
  s.alignment = 16;
  s.precision = precision::native_partials;
  s.wire = wire_format::fp8_e4m3;
  s.wire_threshold = 4096;
  s.coll = collective::reduce_scatter;
  s.mode = mode::single;
  s.ranks = 8;
  s.groups = {{6, 2, 5}};
  s.counts = {1234567};
  s.type = dtype::bfloat16;
  s.op = reduce_op::avg;
  return s;
}

}  // namespace

TEST_CASE("a call record carries every field of the shape and the choice", "[serve]") {
  std::vector<std::byte> bytes(4096);
  record_head h;
  h.kind = record_kind::call;
  h.publisher = 3;
  h.sequence = 41;
  h.capture = 7;
  served_call c{every_field(), {}};
  c.choice.route = route::direct;
  c.choice.permille = 500;
  c.choice.tiles = 4;
  c.choice.wire = {wire_format::fp8_e4m3_fnuz, wire_format::native, 9000, 11000};
  bool fits = false;
  const std::size_t n = write_call(bytes, h, c, fits);
  REQUIRE(fits);
  // 24 bytes of head, 36 of the shape's fixed fields, 4 + 4 + 3 * 4 of groups, 4 + 8 of counts,
  // 28 of choice.
  CHECK(n == 24 + 36 + 4 + 4 + 12 + 4 + 8 + 28);
  const std::span<const std::byte> record(bytes.data(), n);
  record_head back;
  REQUIRE(read_head(record, back).ok());
  CHECK(back.kind == record_kind::call);
  CHECK(back.publisher == 3);
  CHECK(back.sequence == 41);
  CHECK(back.capture == 7);
  served_call got;
  REQUIRE(read_call(record, got).ok());
  const call_shape& s = got.shape;
  CHECK(s.route == route::pipelined);
  CHECK(s.permille == 625);
  CHECK(s.tiles == 3);
  CHECK(s.alignment == 16);
  CHECK(s.precision == precision::native_partials);
  CHECK(s.wire == wire_format::fp8_e4m3);
  CHECK(s.wire_threshold == 4096);
  CHECK(s.coll == collective::reduce_scatter);
  CHECK(s.mode == mode::single);
  CHECK(s.ranks == 8);
  CHECK(s.groups == std::vector<std::vector<int>>{{6, 2, 5}});
  CHECK(s.counts == std::vector<std::int64_t>{1234567});
  CHECK(s.type == dtype::bfloat16);
  CHECK(s.op == reduce_op::avg);
  CHECK_FALSE(s.in_place);
  CHECK(got.choice.route == route::direct);
  CHECK(got.choice.permille == 500);
  CHECK(got.choice.tiles == 4);
  CHECK(got.choice.wire.requested == wire_format::fp8_e4m3_fnuz);
  CHECK(got.choice.wire.taken == wire_format::native);
  CHECK(got.choice.wire.bytes == 9000);
  CHECK(got.choice.wire.threshold_bytes == 11000);

  // Every prefix is refused, and so is a byte past the end.
  for (std::size_t k = 0; k < n; ++k) {
    INFO("cut at " << k);
    CHECK_FALSE(read_call(record.first(k), got).ok());
  }
  CHECK_FALSE(read_call(std::span<const std::byte>(bytes.data(), n + 1), got).ok());
}

TEST_CASE("a record that does not fit says so", "[serve]") {
  std::vector<std::byte> bytes(60);
  bool fits = true;
  (void)write_call(bytes, {}, served_call{every_field(), {}}, fits);
  CHECK_FALSE(fits);
  call_shape big = every_field();
  big.counts.assign(1000, 1);
  std::vector<std::byte> room(1024);
  (void)write_forward(room, {}, forward_plan{{big}, false}, fits);
  CHECK_FALSE(fits);
}

TEST_CASE("a refusal record carries its code, root and reason", "[serve]") {
  std::vector<std::byte> bytes(1024);
  bool fits = false;
  const std::size_t n =
      write_refusal(bytes, {record_kind::refusal, 0, 5, 0},
                    {errc::invalid_buffer, "the output of rank 0 is null", 2}, fits);
  REQUIRE(fits);
  served_refusal got;
  REQUIRE(read_refusal(std::span<const std::byte>(bytes.data(), n), got).ok());
  CHECK(got.code == errc::invalid_buffer);
  CHECK(got.root == 2);
  CHECK(got.reason == "the output of rank 0 is null");
}

TEST_CASE("a forward's plan carries its calls in order", "[serve]") {
  forward_plan p;
  p.calls.push_back(every_field());
  call_shape second;
  second.coll = collective::all_to_all;
  second.groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  second.counts = {0, 1, 2, 3};
  second.type = dtype::int8;
  p.calls.push_back(second);
  std::vector<std::byte> bytes(4096);
  bool fits = false;
  const std::size_t n = write_forward(bytes, {record_kind::forward, 0, 9, 0}, p, fits);
  REQUIRE(fits);
  forward_plan got;
  REQUIRE(read_forward(std::span<const std::byte>(bytes.data(), n), got).ok());
  REQUIRE(got.calls.size() == 2);
  CHECK(got.calls[0] == every_field());
  CHECK(got.calls[1].coll == collective::all_to_all);
  CHECK(got.calls[1].groups == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(got.calls[1].counts == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(got.calls[1].type == dtype::int8);
  CHECK_FALSE(got.stop);
  for (std::size_t k = 0; k < n; ++k)
    CHECK_FALSE(read_forward(std::span<const std::byte>(bytes.data(), k), got).ok());
}

// torchcomms' five fields: op_code 3 (all_gather), dtype 7 (ncclFloat32), red_op 2 (ncclMax),
// flags 0: four distinct values of one type, so a swap of any two of them changes what comes back.
TEST_CASE("torchcomms' plan carries its five fields, each where it was put", "[serve]") {
  control_plan p;
  p.op_code = 3;
  p.dtype = 7;
  p.red_op = 2;
  p.flags = 0;
  p.counts = {1024, 512, 256};
  std::vector<std::byte> bytes(1024);
  bool fits = false;
  const std::size_t n = write_control(bytes, {record_kind::control, 0, 4, 0}, p, fits);
  REQUIRE(fits);
  CHECK(n == 24 + 4 * 4 + 4 + 3 * 8);
  control_plan got;
  REQUIRE(read_control(std::span<const std::byte>(bytes.data(), n), got).ok());
  CHECK(got.op_code == 3);
  CHECK(got.dtype == 7);
  CHECK(got.red_op == 2);
  CHECK(got.flags == 0);
  CHECK(got.counts == std::vector<std::int64_t>{1024, 512, 256});
}

// What a plan slot holds, worked out by hand: a forward's record is 24 bytes of head, 1 of stop, 4
// of the call count, then per call 36 of fixed fields, 4 + 4 + 4 * 2 for one group of 2 and 4 + 8
// for its count: 29 + 64 a call. 15 such calls take 989 bytes; 65,536 bytes hold 1,023.
TEST_CASE("a forward's record takes 29 bytes and 64 a call of one group of 2", "[serve]") {
  call_shape pair;
  pair.coll = collective::allreduce;
  pair.mode = mode::single;
  pair.ranks = 8;
  pair.groups = {{0, 1}};
  pair.counts = {4096};
  const forward_plan fifteen{std::vector<call_shape>(15, pair), false};
  CHECK(forward_plan_bytes(fifteen) == 989);
  CHECK(forward_plan_bytes(forward_plan{std::vector<call_shape>(1023, pair), false}) == 65501);
  CHECK(forward_plan_bytes(forward_plan{std::vector<call_shape>(1024, pair), false}) == 65565);
  bool fits = false;
  std::vector<std::byte> room(989);
  CHECK(write_forward(room, {}, fifteen, fits) == 989);
  CHECK(fits);
  room.resize(988);
  (void)write_forward(room, {}, fifteen, fits);
  CHECK_FALSE(fits);
}

// A torchcomms plan's record is 44 bytes and 8 a count: 65,536 bytes hold (65,536 - 44) / 8 =
// 8,186 counts, the plane's default slots; 1,068 bytes hold RCCLX's default limit of 128.
TEST_CASE("plan slots hold 8,186 counts of a torchcomms plan", "[serve]") {
  CHECK(control_counts_held(65536) == 8186);
  CHECK(control_counts_held(1068) == 128);
  CHECK(control_counts_held(1067) == 127);
  control_plan p{1, 7, 0, 0, std::vector<std::int64_t>(8186, 3)};
  std::vector<std::byte> slot(65536);
  bool fits = false;
  CHECK(write_control(slot, {}, p, fits) == 65532);
  CHECK(fits);
  p.counts.push_back(3);
  (void)write_control(slot, {}, p, fits);
  CHECK_FALSE(fits);
}

// docs/serving.md's other forwards: a call of one group of 4 takes 44 + 12 + 16 = 72 bytes (909
// fit 65,536 bytes: 29 + 909 * 72 = 65,477), of 4 groups of 2 44 + 48 + 32 = 124 (528: 65,501).
TEST_CASE("65,536 bytes hold 909 calls of one group of 4, 528 of 4 groups of 2", "[serve]") {
  call_shape four;
  four.ranks = 8;
  four.groups = {{0, 1, 2, 3}};
  four.counts = {7};
  call_shape fused = four;
  fused.groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  fused.counts = {1, 2, 3, 4};
  CHECK(forward_plan_bytes(forward_plan{std::vector<call_shape>(909, four), false}) == 65477);
  CHECK(forward_plan_bytes(forward_plan{std::vector<call_shape>(910, four), false}) > 65536);
  CHECK(forward_plan_bytes(forward_plan{std::vector<call_shape>(528, fused), false}) == 65501);
  CHECK(forward_plan_bytes(forward_plan{std::vector<call_shape>(529, fused), false}) > 65536);
}

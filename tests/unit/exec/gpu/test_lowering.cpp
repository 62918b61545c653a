// The lowering from plan to lane work (exec/gpu/lowering.hpp) on the CPU: which lane runs what,
// which copies go by kernel or memcpy, and which works wait for which. Plans are built by hand, so
// every expected address, wait and event below is worked out from the plan.
#include "relay/exec/gpu/lowering.hpp"

#include "relay/gpu/fp8_desc.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"
#include "support/plan_builder.hpp"

using namespace relay;
using gpu::work_ref;

namespace {

// Each rank's input, output and scratch as host arrays: the lowering only takes their addresses.
struct memory {
  std::vector<std::vector<unsigned char>> in, out, scratch;
  std::vector<buffer_view> in_views, out_views;
  std::vector<unsigned char*> scratch_bases;
  explicit memory(int ranks, std::size_t bytes = 4096) {
    for (int r = 0; r < ranks; ++r) {
      in.emplace_back(bytes, 0x11);
      out.emplace_back(bytes, 0x22);
      scratch.emplace_back(bytes, 0x33);
    }
    for (int r = 0; r < ranks; ++r) {
      const auto i = static_cast<std::size_t>(r);
      in_views.push_back({in[i].data(), bytes});
      out_views.push_back({out[i].data(), bytes});
      scratch_bases.push_back(scratch[i].data());
    }
  }
  gpu::bound_memory bound() const { return {in_views, out_views, scratch_bases}; }
};

// ranks -> lanes and devices; every pair of devices may copy by kernel unless told otherwise.
gpu::lane_layout layout(std::vector<int> lane_of_rank, std::vector<int> device_of_rank, int lanes,
                        int devices) {
  gpu::lane_layout at;
  at.lane_of_rank = std::move(lane_of_rank);
  at.device_of_rank = std::move(device_of_rank);
  at.lanes = lanes;
  at.devices = devices;
  at.kernel_copy.assign(static_cast<std::size_t>(devices * devices), true);
  return at;
}

// The exchange-and-sum of two ranks: each pushes its input into the other's scratch, then each
// sums its input and scratch into its output (finalizing: divided by the plan's divisor).
test::plan_builder exchange_and_sum(int divisor = 1) {
  test::plan_builder b(2, dtype::float32, divisor);
  b.sizes(0, 4000, 4000, 4000);
  b.sizes(1, 4000, 4000, 4000);
  b.copy({0, buffer::input, 0}, {1, buffer::scratch, 0}, 1000);
  b.copy({1, buffer::input, 0}, {0, buffer::scratch, 0}, 1000);
  b.reduce({{0, buffer::input, 0}, {0, buffer::scratch, 0}}, {0, buffer::output, 0}, 1000, true);
  b.reduce({{1, buffer::input, 0}, {1, buffer::scratch, 0}}, {1, buffer::output, 0}, 1000, false);
  return b;
}

}  // namespace

TEST_CASE("lowering: two devices, a lane each, wait only on the other's push", "[gpu][lowering]") {
  const test::plan_builder b = exchange_and_sum(2);
  memory m(2);
  const gpu::lowered_plan low = gpu::lower(b.get(), layout({0, 1}, {0, 1}, 2, 2), m.bound());

  REQUIRE(low.phases.size() == 2);
  REQUIRE(low.phases[0].size() == 2);
  const gpu::lane_work& push0 = low.phases[0][0];
  const gpu::lane_work& push1 = low.phases[0][1];
  CHECK(push0.lane == 0);  // a copy runs on its source's lane
  CHECK(push1.lane == 1);
  REQUIRE(push0.copies.size() == 1);
  CHECK(push0.memcpys.empty());
  CHECK(push0.copies[0].src == m.in[0].data());
  CHECK(push0.copies[0].dst == m.scratch[1].data());
  CHECK(push0.copies[0].bytes == 4000);
  CHECK(push0.copies[0].src_device == 0);
  CHECK(push0.copies[0].dst_device == 1);
  CHECK(push0.copies[0].src_rank == 0);  // its link, for mesh emulation (exec/gpu/pacing.hpp)
  CHECK(push0.copies[0].dst_rank == 1);
  CHECK(push1.copies[0].src_rank == 1);
  CHECK(push1.copies[0].dst_rank == 0);
  CHECK(push0.waits.empty());
  CHECK(push1.waits.empty());
  // Each reduction reads the scratch the other lane pushed into: both pushes are recorded.
  CHECK(push0.record);
  CHECK(push1.record);
  CHECK(push0.event == 0);
  CHECK(push1.event == 0);

  REQUIRE(low.phases[1].size() == 2);
  const gpu::lane_work& sum0 = low.phases[1][0];
  const gpu::lane_work& sum1 = low.phases[1][1];
  REQUIRE(sum0.reductions.size() == 1);
  CHECK(sum0.reductions[0].dst == m.out[0].data());
  CHECK(sum0.reductions[0].k == 2);
  CHECK(sum0.reductions[0].src[0] == m.in[0].data());
  CHECK(sum0.reductions[0].src[1] == m.scratch[0].data());
  CHECK(sum0.reductions[0].count == 1000);
  CHECK(sum0.reductions[0].divisor == 2);  // finalizing
  CHECK(sum1.reductions[0].divisor == 1);  // not finalizing
  CHECK(sum0.waits == std::vector<work_ref>{{0, 1}});
  CHECK(sum1.waits == std::vector<work_ref>{{0, 0}});
  CHECK_FALSE(sum0.record);
  CHECK(low.events == std::vector<int>{1, 1});
  CHECK(low.uses_lane == std::vector<bool>{true, true});
}

TEST_CASE("lowering: ranks sharing one lane need no waits", "[gpu][lowering]") {
  const test::plan_builder b = exchange_and_sum();
  memory m(2);
  const gpu::lowered_plan low = gpu::lower(b.get(), layout({0, 0}, {0, 0}, 1, 1), m.bound());
  REQUIRE(low.phases.size() == 2);
  REQUIRE(low.phases[0].size() == 1);  // both ranks' copies in one work: one launch
  CHECK(low.phases[0][0].copies.size() == 2);
  REQUIRE(low.phases[1].size() == 1);
  CHECK(low.phases[1][0].reductions.size() == 2);
  CHECK(low.phases[1][0].waits.empty());
  CHECK_FALSE(low.phases[0][0].record);
  CHECK(low.events == std::vector<int>{0});
}

TEST_CASE("lowering: copies without peer access go by memcpy", "[gpu][lowering]") {
  const test::plan_builder b = exchange_and_sum();
  memory m(2);
  gpu::lane_layout at = layout({0, 1}, {0, 1}, 2, 2);
  at.kernel_copy = {true, false, true, true};  // device 0 cannot write device 1
  const gpu::lowered_plan low = gpu::lower(b.get(), at, m.bound());
  const gpu::lane_work& push0 = low.phases[0][0];
  const gpu::lane_work& push1 = low.phases[0][1];
  CHECK(push0.copies.empty());
  REQUIRE(push0.memcpys.size() == 1);
  CHECK(push0.memcpys[0].src_device == 0);
  CHECK(push0.memcpys[0].dst_device == 1);
  CHECK(push0.memcpys[0].bytes == 4000);
  CHECK(push1.copies.size() == 1);  // 1 -> 0 still by kernel
  CHECK(push1.memcpys.empty());
}

TEST_CASE("lowering: operations of no elements vanish", "[gpu][lowering]") {
  test::plan_builder b(2, dtype::float32);
  b.sizes(0, 4000, 4000, 0);
  b.sizes(1, 4000, 4000, 0);
  b.copy({0, buffer::input, 0}, {1, buffer::output, 0}, 0);
  b.copy({1, buffer::input, 0}, {0, buffer::output, 0}, 10);
  memory m(2);
  const gpu::lowered_plan low = gpu::lower(b.get(), layout({0, 1}, {0, 1}, 2, 2), m.bound());
  REQUIRE(low.phases.size() == 1);
  REQUIRE(low.phases[0].size() == 1);
  CHECK(low.phases[0][0].lane == 1);
  CHECK(low.phases[0][0].copies[0].bytes == 40);
  CHECK(low.uses_lane == std::vector<bool>{false, true});
}

namespace {

// Lane 1 (rank 1) writes X into rank 2's scratch in phase 0, reading its own scratch; lane 0
// (rank 0) writes Y into rank 2's scratch in phase 1; lane 2 (rank 2) then reduces X and Y.
// With `overwrite`, lane 0 also overwrites what lane 1 read in phase 0, so lane 0 waits for
// lane 1, and lane 2, waiting for lane 0, is ordered after lane 1 too.
test::plan_builder three_lanes(bool overwrite) {
  test::plan_builder b(3, dtype::int32);
  for (int r = 0; r < 3; ++r)
    b.sizes(r, 400, 400, 400);
  b.copy({1, buffer::scratch, 0}, {2, buffer::scratch, 0}, 50);  // phase 0, lane 1: X
  b.begin(phase::transfer);                                      // phase 1
  if (overwrite) b.copy({0, buffer::input, 0}, {1, buffer::scratch, 0}, 50);
  b.copy({0, buffer::input, 0}, {2, buffer::scratch, 200}, 50);  // lane 0: Y
  b.reduce({{2, buffer::scratch, 0}, {2, buffer::scratch, 200}}, {2, buffer::output, 0}, 50,
           true);  // phase 2, lane 2
  return b;
}

}  // namespace

TEST_CASE("lowering: a lane ordered after another through a third does not wait again",
          "[gpu][lowering]") {
  memory m(3);
  const gpu::lane_layout at = layout({0, 1, 2}, {0, 1, 2}, 3, 3);
  const gpu::lowered_plan apart = gpu::lower(three_lanes(false).get(), at, m.bound());
  REQUIRE(apart.phases.size() == 3);
  CHECK(apart.phases[1][0].waits.empty());
  CHECK(apart.phases[2][0].waits == std::vector<work_ref>{{1, 0}, {0, 0}});
  CHECK(apart.events == std::vector<int>{1, 1, 0});

  const gpu::lowered_plan chained = gpu::lower(three_lanes(true).get(), at, m.bound());
  REQUIRE(chained.phases.size() == 3);
  CHECK(chained.phases[1][0].waits == std::vector<work_ref>{{0, 0}});  // write after read
  CHECK(chained.phases[2][0].waits == std::vector<work_ref>{{1, 0}});  // lane 1 pruned
  CHECK(chained.events == std::vector<int>{1, 1, 0});
}

namespace {

// A = N = 2 direct allreduce of 1000 bf16 elements on the fp8 wire (e4m3), whatever its size.
plan_request fp8_exchange_request() {
  plan_request q = request_for({collective::allreduce, 2, 2, mode::fused, route::direct, 0, 0},
                               {{0, 1}}, {1000});
  q.type = dtype::bfloat16;
  q.wire = wire_format::fp8_e4m3;
  q.wire_threshold = 0;
  return q;
}

}  // namespace

TEST_CASE("lowering: an fp8 copy is quantize, push of its image, dequantize", "[gpu][lowering]") {
  // The exchange-and-sum of two bf16 ranks on the fp8 wire (e4m3), made by make_plan: A = N = 2
  // direct allreduce of 1000 elements. Its transfer phase becomes three: each rank quantizes its
  // input into its send slot, pushes the image (1000 codes and 8 scales of 4 bytes: 1032 bytes)
  // to the other's receive slot, and the other dequantizes it into its scratch; then the
  // reductions, as before.
  plan p;
  plan_request q = fp8_exchange_request();
  REQUIRE(make_plan(q, p));
  REQUIRE(p.wire_slots.size() == p.ops.size());
  memory m(2, 8192);
  REQUIRE(p.scratch_bytes[0] <= 8192);
  const gpu::lowered_plan low = gpu::lower(p, layout({0, 1}, {0, 1}, 2, 2), m.bound());
  REQUIRE(low.phases.size() == 4);  // quantize, push, dequantize, reduce
  for (int r = 0; r < 2; ++r) {
    const int other = 1 - r;
    INFO("rank " << r);
    const auto& q0 = low.phases[0];
    const auto& push = low.phases[1];
    const auto& dq = low.phases[2];
    REQUIRE(q0.size() == 2);
    REQUIRE(push.size() == 2);
    REQUIRE(dq.size() == 2);
    // Rank r's copy: its input into its send slot, on its lane.
    std::size_t copy_index = 0;
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      if (p.crosses_wire(p.ops[i]) && p.sources_of(p.ops[i])[0].rank == r) copy_index = i;
    const wire_slot& slot = p.wire_slots[copy_index];
    unsigned char* send = m.scratch[static_cast<std::size_t>(r)].data() + slot.send;
    unsigned char* recv = m.scratch[static_cast<std::size_t>(other)].data() + slot.recv;
    const gpu::lane_work& quantize = q0[static_cast<std::size_t>(r)];
    CHECK(quantize.lane == r);
    REQUIRE(quantize.quantizes.size() == 1);
    CHECK(quantize.quantizes[0].src == m.in[static_cast<std::size_t>(r)].data());
    CHECK(quantize.quantizes[0].dst == send);
    CHECK(quantize.quantizes[0].count == 1000);
    CHECK(!quantize.quantizes[0].wide);
    const gpu::lane_work& pushed = push[static_cast<std::size_t>(r)];
    CHECK(pushed.lane == r);
    REQUIRE(pushed.copies.size() == 1);
    CHECK(pushed.copies[0].src == send);
    CHECK(pushed.copies[0].dst == recv);
    CHECK(pushed.copies[0].bytes == 1032);
    CHECK(pushed.copies[0].src_rank == r);  // its link, for mesh emulation
    CHECK(pushed.copies[0].dst_rank == other);
    // The receiver dequantizes into the scratch the reduction reads, after the push landed.
    const gpu::lane_work* deq = nullptr;
    for (const gpu::lane_work& w : dq)
      if (w.lane == other) deq = &w;
    REQUIRE(deq != nullptr);
    REQUIRE(deq->dequantizes.size() == 1);
    CHECK(deq->dequantizes[0].src == recv);
    CHECK(deq->dequantizes[0].dst ==
          m.scratch[static_cast<std::size_t>(other)].data() + p.ops[copy_index].dst.offset);
    const bool waits_for_push =
        std::find(deq->waits.begin(), deq->waits.end(), work_ref{1, static_cast<std::size_t>(r)}) !=
        deq->waits.end();
    CHECK(waits_for_push);
  }
  // A native plan of the same call keeps its one transfer phase.
  q.wire = wire_format::native;
  REQUIRE(make_plan(q, p));
  CHECK(gpu::lower(p, layout({0, 1}, {0, 1}, 2, 2), m.bound()).phases.size() == 2);
}

TEST_CASE("lowering: an fp8 image between two ranks of one device still names its ranks",
          "[gpu][lowering]") {
  // Both ranks on device 0, one lane: the image's copy is between devices 0 and 0, but between
  // ranks 0 and 1, which is the link mesh emulation paces (a copy of rank r to rank r is not).
  plan p;
  plan_request q = request_for({collective::allreduce, 2, 2, mode::fused, route::direct, 0, 0},
                               {{0, 1}}, {1000});
  q.type = dtype::bfloat16;
  q.wire = wire_format::fp8_e4m3;
  q.wire_threshold = 0;
  REQUIRE(make_plan(q, p));
  memory m(2, 8192);
  const gpu::lowered_plan low = gpu::lower(p, layout({0, 0}, {0, 0}, 1, 1), m.bound());
  int images = 0;
  for (const auto& phase : low.phases)
    for (const gpu::lane_work& w : phase)
      for (const gpu::lowered_copy& c : w.copies) {
        CHECK(c.src_device == 0);
        CHECK(c.dst_device == 0);
        CHECK(c.src_rank != c.dst_rank);
        CHECK(c.bytes == 1032);
        ++images;
      }
  CHECK(images == 2);
}

TEST_CASE("lowering: a lane's fp8 ends go as one list per element width", "[gpu][lowering]") {
  // Tiles of 64 blocks of 128 (8192 elements) for 16-bit ends, 32 blocks (4096) for floats; every
  // end takes at least one tile, in order; the 16-bit list first.
  int x[8];
  const std::vector<gpu::lowered_fp8> ends = {
      {&x[0], &x[1], 1000, false},          // 8 blocks: 1 tile
      {&x[2], &x[3], 4096, true},           // 32 blocks: 1 tile
      {&x[4], &x[5], 3 * 8192 + 1, false},  // 193 blocks: 4 tiles
      {&x[6], &x[7], 0, false},             // none: 1 tile, which writes nothing
      {&x[1], &x[0], 4097, true},           // 33 blocks: 2 tiles
  };
  const std::vector<gpu::fp8_batch> lists = gpu::batch_fp8(ends, 2);
  REQUIRE(lists.size() == 2);
  CHECK(!lists[0].wide);
  REQUIRE(lists[0].descs.size() == 3);
  CHECK(lists[0].tiles == 6);
  const std::uint64_t narrow_first[] = {0, 1, 5};
  const std::size_t narrow_end[] = {0, 2, 3};
  for (std::size_t i = 0; i < 3; ++i) {
    const gpu::lowered_fp8& e = ends[narrow_end[i]];
    CHECK(lists[0].descs[i].src == e.src);
    CHECK(lists[0].descs[i].dst == e.dst);
    CHECK(lists[0].descs[i].count == e.count);
    CHECK(lists[0].descs[i].first_tile == narrow_first[i]);
  }
  CHECK(lists[1].wide);
  REQUIRE(lists[1].descs.size() == 2);
  CHECK(lists[1].tiles == 3);
  CHECK(lists[1].descs[0].src == &x[2]);
  CHECK(lists[1].descs[0].first_tile == 0);
  CHECK(lists[1].descs[1].src == &x[1]);
  CHECK(lists[1].descs[1].first_tile == 1);
  // Only one width: one list; none: none.
  CHECK(gpu::batch_fp8(std::span(ends).first(1), 2).size() == 1);
  CHECK(gpu::batch_fp8({}, 2).empty());
}

TEST_CASE("lowering: fp8 ends of ranks sharing a lane batch into one launch each",
          "[gpu][lowering]") {
  // The A = N = 2 bf16 allreduce on the fp8 wire, both ranks on one lane: the lane's two
  // quantizes (and its two dequantizes) are one work, hence one list of two descriptors.
  plan p;
  plan_request q = fp8_exchange_request();
  REQUIRE(make_plan(q, p));
  memory m(2, 8192);
  const gpu::lowered_plan low = gpu::lower(p, layout({0, 0}, {0, 0}, 1, 1), m.bound());
  REQUIRE(low.phases.size() == 4);  // quantize, push, dequantize, reduce
  REQUIRE(low.phases[0].size() == 1);
  REQUIRE(low.phases[2].size() == 1);
  for (const auto* ends : {&low.phases[0][0].quantizes, &low.phases[2][0].dequantizes}) {
    const std::vector<gpu::fp8_batch> lists = gpu::batch_fp8(*ends, p.element_size());
    REQUIRE(lists.size() == 1);
    CHECK(!lists[0].wide);
    REQUIRE(lists[0].descs.size() == 2);
    CHECK(lists[0].descs[0].count == 1000);
    CHECK(lists[0].descs[1].first_tile == 1);
    CHECK(lists[0].tiles == 2);
    CHECK(lists[0].descs[0].dst != lists[0].descs[1].dst);
  }
}

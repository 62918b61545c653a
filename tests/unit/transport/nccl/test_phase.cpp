// What the nccl transport enqueues in a transfer phase (transport/nccl/phase.hpp), without a
// device: native sends and receives at the copy's width, fp8 copies as a quantize into the send
// slot, the image (fp8_wire_bytes(count) bytes) over NCCL into the receive slot and a dequantize
// into the destination, local copies never quantized, and the two ends of every pair in the same
// order.
#include "relay/transport/nccl/phase.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <ostream>
#include <random>
#include <tuple>
#include <vector>

#include "relay/cost/choose.hpp"
#include "relay/plan/validate.hpp"
#include "support/plan_builder.hpp"
#include "support/property_suite.hpp"

// Readable failures: Catch2 prints the lists through these.
namespace relay {

std::ostream& operator<<(std::ostream& os, const plan_operand& o) {
  return os << "(rank " << o.rank << " " << detail::buffer_name(o.buf) << " " << o.offset << ")";
}
std::ostream& operator<<(std::ostream& os, const nccl_quantize& q) {
  return os << "quantize op " << q.op << " " << q.src << " -> slot " << q.slot << ", " << q.count
            << (q.wide ? " wide" : "");
}
std::ostream& operator<<(std::ostream& os, const nccl_transfer& t) {
  return os << "op " << t.op << " peer " << t.peer << " " << t.at << " " << t.bytes << " bytes";
}
std::ostream& operator<<(std::ostream& os, const nccl_local_copy& c) {
  return os << "copy op " << c.op << " " << c.src << " -> " << c.dst << " " << c.bytes << " bytes";
}
std::ostream& operator<<(std::ostream& os, const nccl_dequantize& d) {
  return os << "dequantize op " << d.op << " slot " << d.slot << " -> " << d.dst << ", " << d.count
            << (d.wide ? " wide" : "");
}

}  // namespace relay

using namespace relay;

namespace {

// The phase work of `rank` in plan phase `index` (a transfer phase the rank takes part in).
nccl_phase_work work_of(const plan& p, int rank, std::uint32_t index) {
  const plan_slice s = slice_plan(p, rank);
  for (const slice_phase& sp : s.phases)
    if (sp.index == index) return nccl_phase(p, sp, rank);
  FAIL("rank " << rank << " has no phase " << index);
  return {};
}

plan_operand at(int rank, buffer b, std::uint64_t offset) {
  return {static_cast<std::uint16_t>(rank), b, offset};
}

// The bytes of an fp8 image of `count` elements, written out: the codes, padded to a multiple of
// 4, and a 4-byte scale per started block of 128.
std::uint64_t image_bytes(std::uint64_t count) {
  return (count + 3) / 4 * 4 + 4 * ((count + 127) / 128);
}

// Two ranks, bf16 with fp32 partial sums, one transfer phase:
//   op 0  rank 0's partial (scratch 0) -> rank 1's scratch 0, 10 partials (both partial bits)
//   op 1  rank 0's input 0 -> rank 1's output 0, 10 elements
//   op 2  rank 0's input 0 -> rank 0's output 0, 3 elements (local)
//   op 3  rank 1's input 0 -> rank 0's output 32, 10 elements
//   op 4  rank 0's input 0 -> rank 1's output 0, no elements
// With `fp8`, an e4m3 wire whose slots (16 bytes an image: 10 codes, 2 zeros and a 4-byte scale)
// lie after the 64 bytes of other scratch, 16 bytes apart: rank 0 sends op 0 from 64 and op 1
// from 80 and receives op 3 at 96; rank 1 sends op 3 from 64 and receives op 0 at 80 and op 1 at
// 96.
plan two_ranks(bool fp8) {
  test::plan_builder b(2, dtype::bfloat16);
  b.sizes(0, 20, 64, fp8 ? 128 : 64);
  b.sizes(1, 20, 20, fp8 ? 128 : 64);
  b.copy(at(0, buffer::scratch, 0), at(1, buffer::scratch, 0), 10);
  b.copy(at(0, buffer::input, 0), at(1, buffer::output, 0), 10);
  b.copy(at(0, buffer::input, 0), at(0, buffer::output, 0), 3);
  b.copy(at(1, buffer::input, 0), at(0, buffer::output, 32), 10);
  b.copy(at(0, buffer::input, 0), at(1, buffer::output, 0), 0);
  plan p = b.get();
  p.partial_size = 4;
  p.ops[0].partial_mask = 1u | partial_dst_bit;
  if (fp8) {
    p.wire.requested = p.wire.taken = wire_format::fp8_e4m3;
    p.wire_slots = {{64, 80}, {80, 96}, {0, 0}, {64, 96}, {0, 0}};
  }
  return p;
}

}  // namespace

TEST_CASE("a native phase sends and receives the elements at the copy's width",
          "[transport][nccl]") {
  const plan p = two_ranks(false);
  REQUIRE(validate_plan(p));
  const nccl_phase_work r0 = work_of(p, 0, 0);
  // The partial sums move 4 bytes an element, the bf16 elements 2; op 4 moves nothing and is
  // left out on both ends.
  CHECK(r0.sends == std::vector<nccl_transfer>{{0, 1, at(0, buffer::scratch, 0), 40},
                                               {1, 1, at(0, buffer::input, 0), 20}});
  CHECK(r0.receives == std::vector<nccl_transfer>{{3, 1, at(0, buffer::output, 32), 20}});
  CHECK(r0.copies ==
        std::vector<nccl_local_copy>{{2, at(0, buffer::input, 0), at(0, buffer::output, 0), 6}});
  CHECK(r0.quantizes.empty());
  CHECK(r0.dequantizes.empty());
  const nccl_phase_work r1 = work_of(p, 1, 0);
  CHECK(r1.sends == std::vector<nccl_transfer>{{3, 0, at(1, buffer::input, 0), 20}});
  CHECK(r1.receives == std::vector<nccl_transfer>{{0, 0, at(1, buffer::scratch, 0), 40},
                                                  {1, 0, at(1, buffer::output, 0), 20}});
  CHECK(r1.copies.empty());
  CHECK(r1.quantizes.empty());
  CHECK(r1.dequantizes.empty());
}

TEST_CASE("an fp8 phase quantizes into the send slot and dequantizes from the receive slot",
          "[transport][nccl][fp8]") {
  const plan p = two_ranks(true);
  REQUIRE(validate_plan(p));
  const nccl_phase_work r0 = work_of(p, 0, 0);
  // op 0's partial sums are floats (wide) although the plan is bf16; op 1's are bf16.
  CHECK(r0.quantizes == std::vector<nccl_quantize>{{0, at(0, buffer::scratch, 0), 64, 10, true},
                                                   {1, at(0, buffer::input, 0), 80, 10, false}});
  CHECK(r0.sends == std::vector<nccl_transfer>{{0, 1, at(0, buffer::scratch, 64), 16},
                                               {1, 1, at(0, buffer::scratch, 80), 16}});
  CHECK(r0.receives == std::vector<nccl_transfer>{{3, 1, at(0, buffer::scratch, 96), 16}});
  // The local copy crosses no link: native, 3 bf16.
  CHECK(r0.copies ==
        std::vector<nccl_local_copy>{{2, at(0, buffer::input, 0), at(0, buffer::output, 0), 6}});
  CHECK(r0.dequantizes ==
        std::vector<nccl_dequantize>{{3, 96, at(0, buffer::output, 32), 10, false}});
  const nccl_phase_work r1 = work_of(p, 1, 0);
  CHECK(r1.quantizes == std::vector<nccl_quantize>{{3, at(1, buffer::input, 0), 64, 10, false}});
  CHECK(r1.sends == std::vector<nccl_transfer>{{3, 0, at(1, buffer::scratch, 64), 16}});
  CHECK(r1.receives == std::vector<nccl_transfer>{{0, 0, at(1, buffer::scratch, 80), 16},
                                                  {1, 0, at(1, buffer::scratch, 96), 16}});
  CHECK(r1.copies.empty());
  CHECK(r1.dequantizes ==
        std::vector<nccl_dequantize>{{0, 80, at(1, buffer::scratch, 0), 10, true},
                                     {1, 96, at(1, buffer::output, 0), 10, false}});
}

TEST_CASE("make_plan's fp8 allreduce: float32 images of 104 bytes in the slots after scratch",
          "[transport][nccl][fp8]") {
  // A = N = 2, direct allreduce of 100 float32: each rank sends its input to the other's scratch
  // (400 bytes natively, a 512-byte area), then reduces. On fp8 each image is 100 codes and one
  // 4-byte scale, 104 bytes in a 112-byte slot after the 512: each rank's first slot (at 512) is
  // the one it takes first in plan order (rank 0 its send of op 0, rank 1 its receive of op 0),
  // its second (at 624) the other.
  plan_request q = test::direct_allreduce(mode::single, 2, {{0, 1}}, {100});
  q.type = dtype::float32;
  q.wire = wire_format::fp8_e4m3;
  q.wire_threshold = 0;
  plan p;
  REQUIRE(make_plan(q, p));
  REQUIRE(p.wire.taken == wire_format::fp8_e4m3);
  REQUIRE(p.ops.size() == 4);  // the two copies, then the two reductions
  const nccl_phase_work r0 = work_of(p, 0, 0);
  CHECK(r0.quantizes == std::vector<nccl_quantize>{{0, at(0, buffer::input, 0), 512, 100, true}});
  CHECK(r0.sends == std::vector<nccl_transfer>{{0, 1, at(0, buffer::scratch, 512), 104}});
  CHECK(r0.receives == std::vector<nccl_transfer>{{1, 1, at(0, buffer::scratch, 624), 104}});
  CHECK(r0.dequantizes ==
        std::vector<nccl_dequantize>{{1, 624, at(0, buffer::scratch, 0), 100, true}});
  CHECK(r0.copies.empty());
  const nccl_phase_work r1 = work_of(p, 1, 0);
  CHECK(r1.sends == std::vector<nccl_transfer>{{1, 0, at(1, buffer::scratch, 624), 104}});
  CHECK(r1.receives == std::vector<nccl_transfer>{{0, 0, at(1, buffer::scratch, 512), 104}});
  CHECK(r1.dequantizes ==
        std::vector<nccl_dequantize>{{0, 512, at(1, buffer::scratch, 0), 100, true}});
  // The slots are the plan's.
  CHECK(p.wire_slots[0] == wire_slot{512, 512});
  CHECK(p.wire_slots[1] == wire_slot{624, 624});
  // The reduce phase enqueues none of this.
  const plan_slice s = slice_plan(p, 0);
  REQUIRE(s.phases.size() == 2);
  REQUIRE(s.phases[1].kind == phase::reduce);
  const nccl_phase_work reduce = nccl_phase(p, s.phases[1], 0);
  CHECK((reduce.sends.empty() && reduce.receives.empty() && reduce.quantizes.empty() &&
         reduce.dequantizes.empty() && reduce.copies.empty()));
  // Natively the same copies move 400 bytes from and into the operands.
  q.wire = wire_format::native;
  REQUIRE(make_plan(q, p));
  const nccl_phase_work native = work_of(p, 0, 0);
  CHECK(native.sends == std::vector<nccl_transfer>{{0, 1, at(0, buffer::input, 0), 400}});
  CHECK(native.receives == std::vector<nccl_transfer>{{1, 1, at(0, buffer::scratch, 0), 400}});
  CHECK(native.quantizes.empty());
  CHECK(native.dequantizes.empty());
}

TEST_CASE("make_plan's fp8 all-gather: 32 float16 a 36-byte image, the local copy native",
          "[transport][nccl][fp8]") {
  // A = N = 2, direct all-gather of 32 float16: rank r copies its input into its own output at
  // 64 r (locally) and into the peer's. The plan has no other scratch, so the slots start at 0:
  // a 36-byte image (32 codes and one 4-byte scale) takes a 48-byte slot.
  plan_request q = test::direct_allreduce(mode::single, 2, {{0, 1}}, {32});
  q.coll = collective::all_gather;
  q.type = dtype::float16;
  q.wire = wire_format::fp8_e4m3_fnuz;
  q.wire_threshold = 0;
  plan p;
  REQUIRE(make_plan(q, p));
  REQUIRE(p.wire.taken == wire_format::fp8_e4m3_fnuz);
  const nccl_phase_work r0 = work_of(p, 0, 0);
  CHECK(r0.copies ==
        std::vector<nccl_local_copy>{{0, at(0, buffer::input, 0), at(0, buffer::output, 0), 64}});
  CHECK(r0.quantizes == std::vector<nccl_quantize>{{1, at(0, buffer::input, 0), 0, 32, false}});
  CHECK(r0.sends == std::vector<nccl_transfer>{{1, 1, at(0, buffer::scratch, 0), 36}});
  CHECK(r0.receives == std::vector<nccl_transfer>{{2, 1, at(0, buffer::scratch, 48), 36}});
  CHECK(r0.dequantizes ==
        std::vector<nccl_dequantize>{{2, 48, at(0, buffer::output, 64), 32, false}});
  const nccl_phase_work r1 = work_of(p, 1, 0);
  CHECK(r1.copies ==
        std::vector<nccl_local_copy>{{3, at(1, buffer::input, 0), at(1, buffer::output, 64), 64}});
  CHECK(r1.quantizes == std::vector<nccl_quantize>{{2, at(1, buffer::input, 0), 48, 32, false}});
  CHECK(r1.sends == std::vector<nccl_transfer>{{2, 0, at(1, buffer::scratch, 48), 36}});
  CHECK(r1.receives == std::vector<nccl_transfer>{{1, 0, at(1, buffer::scratch, 0), 36}});
  CHECK(r1.dequantizes ==
        std::vector<nccl_dequantize>{{1, 0, at(1, buffer::output, 0), 32, false}});
}

TEST_CASE("fp32 partial sums of a bf16 plan travel wide", "[transport][nccl][fp8]") {
  // Reduce-scatter on the relay route, A = 4 of N = 8, bf16: at A >= 3 the helpers (ranks 4..7)
  // sum three slices into fp32 partials and return them to the owners in step 2 (schedule/
  // reduce_scatter.hpp). Rank 0 receives one such partial from each helper: dequantized as
  // floats, into a partial slot of its scratch; its other step-2 arrivals are bf16.
  plan_request q = test::direct_allreduce(mode::single, 8, {{0, 1, 2, 3}}, {4096});
  q.coll = collective::reduce_scatter;
  q.route = route::relay;
  q.type = dtype::bfloat16;
  q.wire = wire_format::fp8_e4m3;
  q.wire_threshold = 0;
  plan p;
  REQUIRE(make_plan(q, p));
  int wide = 0, narrow = 0;
  for (const slice_phase& sp : slice_plan(p, 0).phases) {
    const nccl_phase_work w = nccl_phase(p, sp, 0);
    for (const nccl_dequantize& d : w.dequantizes) {
      const int from = p.sources_of(p.ops[d.op])[0].rank;
      INFO("op " << d.op << " from rank " << from);
      CHECK(d.wide == (from >= 4));
      (d.wide ? wide : narrow) += 1;
    }
  }
  CHECK(wide == 4);
  CHECK(narrow > 0);
  for (int helper = 4; helper < 8; ++helper) {
    int quantized_wide = 0;
    for (const slice_phase& sp : slice_plan(p, helper).phases)
      for (const nccl_quantize& z : nccl_phase(p, sp, helper).quantizes)
        quantized_wide += z.wide ? 1 : 0;
    CHECK(quantized_wide == 4);  // its partial to each of the four owners
  }
}

TEST_CASE("both ends of every pair list the same copies in plan order, in their slots",
          "[transport][nccl][fp8]") {
  // Over the property suite's random cases (every collective and route, A = 2 and 4, fused and
  // single), natively and on an fp8 wire: rank a's sends to b in a phase and rank b's receives
  // from a are, on both sides, the phase's copies from a to b with elements, in plan order (the
  // reference: a walk of the phase's operations), of the same bytes; fp8 copies are quantized
  // once by their source into the plan's send slot and dequantized once by their destination
  // from the plan's receive slot, both inside the rank's scratch.
  std::mt19937_64 cases(20261202);
  for (int k = 0; k < 120; ++k) {
    testing::property_case c = testing::random_case(cases);
    for (auto& n : c.counts)
      n = std::min<std::int64_t>(n, 3000);
    const bool fp8 = k % 2 == 1;
    if (fp8) testing::make_fp8(c);
    INFO("seed 20261202, case " << k << ": " << c.describe() << (fp8 ? " fp8" : " native"));
    plan_request q =
        request_for({c.coll, c.active, c.ranks, c.mode, c.route, 0, c.tiles}, c.groups, c.counts);
    q.type = c.type;
    q.alignment = c.alignment;
    q.wire = c.wire;
    q.wire_threshold = fp8 ? 0 : -1;
    plan p;
    REQUIRE(make_plan(q, p));
    REQUIRE(validate_plan(p));
    using key = std::tuple<std::uint32_t, int, int>;  // phase, from, to
    std::map<key, std::vector<std::pair<std::uint32_t, std::uint64_t>>> sent, received, expected;
    std::vector<int> quantized(p.ops.size(), 0), dequantized(p.ops.size(), 0);
    for (int r = 0; r < p.ranks(); ++r)
      for (const slice_phase& sp : slice_plan(p, r).phases) {
        const nccl_phase_work w = nccl_phase(p, sp, r);
        for (const nccl_transfer& t : w.sends) {
          REQUIRE(t.at.rank == r);
          sent[{sp.index, r, t.peer}].push_back({t.op, t.bytes});
        }
        for (const nccl_transfer& t : w.receives) {
          REQUIRE(t.at.rank == r);
          received[{sp.index, t.peer, r}].push_back({t.op, t.bytes});
        }
        for (const nccl_quantize& z : w.quantizes) {
          ++quantized[z.op];
          CHECK(z.slot == p.wire_slots[z.op].send);
          CHECK(z.slot + image_bytes(z.count) <= p.scratch_bytes[r]);
        }
        for (const nccl_dequantize& d : w.dequantizes) {
          ++dequantized[d.op];
          CHECK(d.slot == p.wire_slots[d.op].recv);
          CHECK(d.dst == p.ops[d.op].dst);
          CHECK(d.slot + image_bytes(d.count) <= p.scratch_bytes[r]);
        }
        for (const nccl_local_copy& l : w.copies)
          CHECK(p.ops[l.op].dst.rank == p.sources_of(p.ops[l.op])[0].rank);
      }
    for (std::uint32_t ph = 0; ph < p.phases.size(); ++ph)
      for (std::uint32_t i = p.phases[ph].first; i < p.phases[ph].first + p.phases[ph].size; ++i) {
        const plan_op& o = p.ops[i];
        const int from = p.sources_of(o)[0].rank;
        const bool moves = o.phase == phase::transfer && o.count > 0 && from != o.dst.rank;
        if (moves) {
          const std::uint64_t bytes =
              fp8 ? image_bytes(o.count) : o.count * static_cast<std::uint64_t>(p.dst_width(o));
          expected[{ph, from, o.dst.rank}].push_back({i, bytes});
        }
        CHECK(quantized[i] == (moves && fp8 ? 1 : 0));
        CHECK(dequantized[i] == (moves && fp8 ? 1 : 0));
      }
    CHECK(sent == expected);
    CHECK(received == expected);
  }
}

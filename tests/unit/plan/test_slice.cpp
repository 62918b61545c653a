// slice_plan: hand-worked slices of small plans, and a property: any interleaving of all ranks'
// slices that respects their waits computes the collective (checked by the naive reference).
#include "relay/plan/slice.hpp"

#include <catch2/catch.hpp>
#include <random>

#include "relay/check/wire_reference.hpp"
#include "relay/cost/choose.hpp"
#include "relay/plan/host_ops.hpp"
#include "support/property_suite.hpp"

using namespace relay;

namespace {

plan single_pair_allreduce(route r) {
  // A=2 of N=4, one group {0,1}, 4 int32 elements, alignment 1.
  plan_request q;
  q.coll = collective::allreduce;
  q.mode = mode::single;
  q.route = r;
  q.ranks = 4;
  q.groups = {{0, 1}};
  q.counts = {4};
  q.type = dtype::int32;
  q.alignment = 1;
  plan p;
  REQUIRE(make_plan(q, p));
  return p;
}

using waits = std::vector<slice_wait>;

}  // namespace

TEST_CASE("slice of the direct A=2 allreduce: push, wait for the peer's push, reduce",
          "[plan][slice]") {
  // The plan: phase 0 (transfer) rank 0 pushes its input into rank 1's scratch and rank 1 into
  // rank 0's; phase 1 (reduce) each reduces its input with that scratch into its output.
  const plan p = single_pair_allreduce(route::direct);
  REQUIRE(p.phases.size() == 2);
  const plan_slice s0 = slice_plan(p, 0);
  REQUIRE(s0.phases.size() == 2);
  // Before pushing into rank 1, rank 1 must have entered the call.
  CHECK(s0.phases[0].waits == waits{{1, call_entry}});
  REQUIRE(s0.phases[0].issued.size() == 1);
  CHECK(p.ops[s0.phases[0].issued[0]].dst.rank == 1);
  REQUIRE(s0.phases[0].receives.size() == 1);
  CHECK(s0.phases[0].receives[0].peer == 1);
  CHECK(s0.phases[0].receives[0].dst.buf == buffer::scratch);
  CHECK(s0.phases[0].receives[0].count == 4);
  // The reduction reads the scratch rank 1 wrote in phase 0: read after write.
  CHECK(s0.phases[1].waits == waits{{1, 0}});
  CHECK(s0.phases[1].receives.empty());
  // That wait already covers everything rank 1 writes into rank 0: no exit wait.
  CHECK(s0.exit_waits.empty());
  CHECK(s0.sends_to == std::vector<int>{1});
  CHECK(s0.receives_from == std::vector<int>{1});
  // The helpers take no part.
  const plan_slice s2 = slice_plan(p, 2);
  CHECK(s2.phases.empty());
  CHECK(s2.exit_waits.empty());
  CHECK(s2.sends_to.empty());
}

TEST_CASE("slice of the relay A=2 of N=4 allreduce: helpers reduce and push back",
          "[plan][slice]") {
  // Worked from the plan (count 4, alignment 1): phase 0 the actives push pieces 0 and 1 of their
  // inputs to helpers 2 and 3 and swap piece 2/3 with each other; phase 1 every rank reduces
  // (helpers in scratch, actives into their outputs); phase 2 the helpers push their sums to
  // both actives and the actives swap their reduced pieces.
  const plan p = single_pair_allreduce(route::relay);
  REQUIRE(p.phases.size() == 3);
  const plan_slice s0 = slice_plan(p, 0), s2 = slice_plan(p, 2);

  REQUIRE(s0.phases.size() == 3);
  CHECK(s0.phases[0].waits == waits{{1, call_entry}, {2, call_entry}, {3, call_entry}});
  CHECK(s0.phases[0].issued.size() == 3);
  CHECK(s0.phases[0].receives.size() == 1);    // rank 1's piece for rank 0 to reduce
  CHECK(s0.phases[1].waits == waits{{1, 0}});  // that piece must have landed
  CHECK(s0.phases[1].issued.size() == 1);
  // Phase 2: rank 0 pushes its reduced piece into rank 1's output, which nobody touched before:
  // no wait. It receives three pieces (from both helpers and rank 1).
  CHECK(s0.phases[2].waits.empty());
  CHECK(s0.phases[2].issued.size() == 1);
  CHECK(s0.phases[2].receives.size() == 3);
  // Before its output is read, everything rank 1 and the helpers push in phase 2 has landed.
  CHECK(s0.exit_waits == waits{{1, 2}, {2, 2}, {3, 2}});
  CHECK(s0.sends_to == std::vector<int>{1, 2, 3});
  CHECK(s0.receives_from == std::vector<int>{1, 2, 3});

  // Helper 2 receives in phase 0 and issues nothing there; it reduces once both actives' pieces
  // landed; it pushes to both actives without waiting again (their entry is implied).
  REQUIRE(s2.phases.size() == 3);
  CHECK(s2.phases[0].issued.empty());
  CHECK(s2.phases[0].waits.empty());
  CHECK(s2.phases[0].receives.size() == 2);
  CHECK(s2.phases[1].waits == waits{{0, 0}, {1, 0}});
  CHECK(s2.phases[2].waits.empty());
  CHECK(s2.phases[2].issued.size() == 2);
  CHECK(s2.exit_waits.empty());
  CHECK(s2.sends_to == std::vector<int>{0, 1});
  CHECK(s2.receives_from == std::vector<int>{0, 1});
}

TEST_CASE("a push into memory the peer still reads waits for the peer (write after read)",
          "[plan][slice]") {
  // A hand-made plan over 2 ranks: phase 0 rank 1 reduces its scratch [0,8) into its output;
  // phase 1 rank 0 pushes into rank 1's scratch [4,12). Rank 0 must wait for rank 1's phase 0.
  plan p;
  p.spec.ranks = 2;
  p.type = dtype::int32;
  p.sources = {{1, buffer::scratch, 0}, {0, buffer::input, 0}};
  p.ops = {{0, phase::reduce, 1, 0, {1, buffer::output, 0}, 2, false},
           {1, phase::transfer, 1, 1, {1, buffer::scratch, 4}, 2, false}};
  p.phases = {{0, phase::reduce, 0, 1}, {1, phase::transfer, 1, 1}};
  const plan_slice s0 = slice_plan(p, 0);
  REQUIRE(s0.phases.size() == 1);
  CHECK(s0.phases[0].index == 1);
  CHECK(s0.phases[0].waits == waits{{1, 0}});
  // Disjoint bytes ([8,16) instead): only the entry wait remains.
  p.ops[1].dst.offset = 8;
  CHECK(slice_plan(p, 0).phases[0].waits == waits{{1, call_entry}});
}

namespace {

// Three ranks, float32, an fp8 wire. Phase 0: rank 0 pushes 64 elements into rank 2's output
// [0, 256); phase 1: rank 1 pushes 64 into rank 2's output [256, 512). The outputs are apart,
// but both images (64 codes + a 4-byte scale) go through rank 2's receive slot at scratch
// [0, 68), reused from phase to phase; the send slots are at 0 in the senders' scratch.
plan two_images_one_slot() {
  plan p;
  p.spec.ranks = 3;
  p.type = dtype::float32;
  p.sources = {{0, buffer::input, 0}, {1, buffer::input, 0}};
  p.ops = {{0, phase::transfer, 1, 0, {2, buffer::output, 0}, 64, false},
           {1, phase::transfer, 1, 1, {2, buffer::output, 256}, 64, false}};
  p.phases = {{0, phase::transfer, 0, 1}, {1, phase::transfer, 1, 1}};
  p.wire.taken = wire_format::fp8_e4m3;
  p.wire_slots = {{0, 0}, {0, 0}};
  return p;
}

}  // namespace

TEST_CASE("an fp8 image into a receive slot a slower peer still fills waits for it",
          "[plan][slice][wire]") {
  // two_images_one_slot, the sender ends: rank 1 must wait for rank 0's phase 0.
  plan p = two_images_one_slot();
  REQUIRE(p.crosses_wire(p.ops[1]));
  const plan_slice s1 = slice_plan(p, 1);
  REQUIRE(s1.phases.size() == 1);
  CHECK(s1.phases[0].waits == waits{{0, 0}, {2, call_entry}});
  // A receive slot of its own (at 80, past the first image's 68 bytes): only the entry wait.
  p.wire_slots[1].recv = 80;
  CHECK(slice_plan(p, 1).phases[0].waits == waits{{2, call_entry}});
  // Natively the two pushes never meet.
  p.wire.taken = wire_format::native;
  CHECK(slice_plan(p, 1).phases[0].waits == waits{{2, call_entry}});
}

TEST_CASE(
    "receiver ends: the receiver dequantizes in an arrival of its own, a mark after the phase",
    "[plan][slice][wire]") {
  // two_images_one_slot with the ipc transport's ends: the senders quantize into rank 2's
  // receive slot [0, 68), rank 2 dequantizes each image into its output in the phase's arrival.
  plan p = two_images_one_slot();
  const plan_slice s0 = slice_plan(p, 0, fp8_ends::receiver);
  const plan_slice s1 = slice_plan(p, 1, fp8_ends::receiver);
  const plan_slice s2 = slice_plan(p, 2, fp8_ends::receiver);
  CHECK(s2.marks_per_phase == 2);
  // Marks: entered 0; phase p finished 2p + 1, its arrivals 2p + 2.
  CHECK(slice_mark(s2, {0, call_entry, false}) == 0);
  CHECK(slice_mark(s2, {1, 1, false}) == 3);
  CHECK(slice_mark(s2, {1, 1, true}) == 4);
  CHECK(slice_mark(slice_plan(p, 2), {1, 1, false}) == 2);  // the sender ends: a mark per phase

  REQUIRE(s0.phases.size() == 1);
  CHECK(s0.phases[0].waits == waits{{2, call_entry}});
  CHECK_FALSE(s0.phases[0].arrival);
  // Rank 1 refills the slot: after rank 2's arrival of phase 0 read it (write after read), and
  // after rank 0 wrote it (write after write; implied, but the slice does not look across peers).
  REQUIRE(s1.phases.size() == 1);
  CHECK(s1.phases[0].waits == waits{{0, 0, false}, {2, 0, true}});
  // Rank 2: each phase's receive, then its arrival, which waits for that image's sender.
  REQUIRE(s2.phases.size() == 4);
  CHECK((s2.phases[0].index == 0 && !s2.phases[0].arrival && s2.phases[0].issued.empty()));
  CHECK(s2.phases[0].receives.size() == 1);
  CHECK((s2.phases[1].index == 0 && s2.phases[1].arrival));
  CHECK(s2.phases[1].issued == std::vector<std::uint32_t>{0});
  CHECK(s2.phases[1].receives.empty());
  CHECK(s2.phases[1].waits == waits{{0, 0, false}});
  CHECK((s2.phases[3].index == 1 && s2.phases[3].arrival));
  CHECK(s2.phases[3].issued == std::vector<std::uint32_t>{1});
  CHECK(s2.phases[3].waits == waits{{1, 1, false}});
  // Its arrivals wrote the output itself, after waiting for both senders: no exit wait.
  CHECK(s2.exit_waits.empty());
  CHECK(s2.receives_from == std::vector<int>{0, 1});
  // The sender ends: rank 1 waits for rank 0's phase 0 only (rank 0 did all of its copy).
  CHECK(slice_plan(p, 1).phases[0].waits == waits{{0, 0}, {2, call_entry}});
  // A native wire has no arrivals, whatever the ends.
  p.wire.taken = wire_format::native;
  CHECK(slice_plan(p, 2, fp8_ends::receiver).marks_per_phase == 1);
  CHECK(slice_plan(p, 2, fp8_ends::receiver).phases.size() == 2);
}

namespace {

// Runs every rank's slice of `p` single-threaded, one operation at a time, choosing at random
// among the ranks whose next operation's waits are met. Before a rank enters the call its memory
// holds junk (the previous call's), and entering overwrites output and scratch with poison
// and stages the input: a push that arrives too early is lost, and a missing wait shows up as a
// wrong result. Returns false on a deadlock.
struct simulated_rank {
  std::vector<std::byte> frame, scratch;
  std::size_t in_off = 0, out_off = 0;
  std::int64_t progress = -1;  // the last published mark (slice_mark): 0 once entered
  std::size_t phase = 0, op = 0;
  bool exited = false;
};

// On an fp8 wire with fp8_ends::receiver, a sender's copy quantizes straight into the
// receiver's wire slot and the receiver's arrival dequantizes it (host_ops.hpp's two ends).
bool simulate(const plan& p, const testing::property_case& c,
              const std::vector<std::vector<std::byte>>& inputs,
              std::vector<std::vector<std::byte>>& outputs, std::mt19937_64& rng,
              fp8_ends ends = fp8_ends::sender) {
  const auto R = static_cast<std::size_t>(p.ranks());
  const auto es = static_cast<std::size_t>(p.element_size());
  std::vector<plan_slice> slices;
  std::vector<simulated_rank> ranks(R);
  for (std::size_t r = 0; r < R; ++r) {
    slices.push_back(slice_plan(p, static_cast<int>(r), ends));
    ranks[r].scratch.assign(p.scratch_bytes[r], std::byte{0x5A});
  }
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    for (std::size_t k = 0; k < c.groups[g].size(); ++k) {
      simulated_rank& x = ranks[static_cast<std::size_t>(c.groups[g][k])];
      const auto r = static_cast<std::size_t>(c.groups[g][k]);
      if (c.in_place) {
        const in_place_offsets at = in_place_layout(c.coll, static_cast<int>(k), c.counts[g]);
        x.in_off = static_cast<std::size_t>(at.input) * es;
        x.out_off = static_cast<std::size_t>(at.output) * es;
      } else {
        x.out_off = p.input_bytes[r];
      }
      x.frame.assign(std::max(x.in_off + p.input_bytes[r], x.out_off + p.output_bytes[r]),
                     std::byte{0x5A});
    }
  auto address = [&](const plan_operand& o) {
    simulated_rank& x = ranks[o.rank];
    return (o.buf == buffer::scratch
                ? x.scratch.data()
                : x.frame.data() + (o.buf == buffer::input ? x.in_off : x.out_off)) +
           o.offset;
  };
  auto met = [&](const std::vector<slice_wait>& ws) {
    for (const slice_wait& w : ws)
      if (ranks[w.peer].progress < static_cast<std::int64_t>(slice_mark(slices[w.peer], w)))
        return false;
    return true;
  };
  std::vector<std::size_t> runnable;
  for (;;) {
    runnable.clear();
    for (std::size_t r = 0; r < R; ++r) {
      const simulated_rank& x = ranks[r];
      const plan_slice& s = slices[r];
      if (x.exited) continue;
      if (x.progress < 0 || (x.phase == s.phases.size() && met(s.exit_waits)) ||
          (x.phase < s.phases.size() && (x.op > 0 || met(s.phases[x.phase].waits))))
        runnable.push_back(r);
    }
    if (runnable.empty()) break;
    const std::size_t r =
        runnable[std::uniform_int_distribution<std::size_t>(0, runnable.size() - 1)(rng)];
    simulated_rank& x = ranks[r];
    const plan_slice& s = slices[r];
    if (x.progress < 0) {  // enter: poison, then stage the input
      std::fill(x.frame.begin(), x.frame.end(), std::byte{0xA5});
      std::fill(x.scratch.begin(), x.scratch.end(), std::byte{0xA5});
      std::copy(inputs[r].begin(), inputs[r].end(),
                x.frame.begin() + static_cast<std::ptrdiff_t>(x.in_off));
      x.progress = 0;
      continue;
    }
    if (x.phase == s.phases.size()) {  // exit: read the output
      outputs[r].assign(
          x.frame.begin() + static_cast<std::ptrdiff_t>(x.out_off),
          x.frame.begin() + static_cast<std::ptrdiff_t>(x.out_off + p.output_bytes[r]));
      x.exited = true;
      continue;
    }
    const slice_phase& ph = s.phases[x.phase];
    if (x.op < ph.issued.size()) {
      const std::uint32_t i = ph.issued[x.op];
      const plan_op& o = p.ops[i];
      const plan_operand slot{o.dst.rank, buffer::scratch,
                              p.wire_slots.empty() ? 0 : p.wire_slots[i].recv};
      if (s.marks_per_phase == 1 || !p.crosses_wire(o))
        detail::host_run_op(p, o, address);
      else if (ph.arrival)
        detail::host_fp8_dequantize(p, o, address(slot), address);
      else
        detail::host_fp8_quantize(p, o, address(slot), address);
      ++x.op;
    }
    if (x.op == ph.issued.size()) {
      x.progress = static_cast<std::int64_t>(slice_mark(
          s, {static_cast<std::uint16_t>(r), static_cast<std::int32_t>(ph.index), ph.arrival}));
      ++x.phase;
      x.op = 0;
    }
  }
  return std::all_of(ranks.begin(), ranks.end(), [](const simulated_rank& x) { return x.exited; });
}

// The plan of a property case (on its wire, taken at every count).
plan plan_of(const testing::property_case& c) {
  plan_request q =
      request_for({c.coll, c.active, c.ranks, c.mode, c.route, 0, c.tiles}, c.groups, c.counts);
  q.type = c.type;
  q.op = c.op;
  q.in_place = c.in_place;
  q.alignment = c.alignment;
  q.wire = c.wire;
  q.wire_threshold = 0;
  plan p;
  REQUIRE(make_plan(q, p));
  return p;
}

}  // namespace

TEST_CASE("on an fp8 wire, any interleaving of either ends' slices gives the plan's bytes",
          "[plan][slice][property][wire]") {
  // Random calls on an fp8 wire (make_fp8: dtype, encoding, data kind), run as interleavings of
  // the slices with the sender ends and with the receiver ends: every run gives the same bytes
  // (the same quantizations and sums, in the same order per element), within the fp8 bound of
  // the naive reference. A missing wait would let an image be overwritten or read early, which
  // the poisoned slots (0xA5 on entry) turn into wrong bytes; a wait too many, into a deadlock.
  std::mt19937_64 cases(20261205);
  int ran = 0;
  for (int i = 0; i < 160; ++i) {
    testing::property_case c = testing::random_case(cases);
    if (c.ranks == 16) continue;
    testing::make_fp8(c);
    for (auto& n : c.counts)
      n = std::min<std::int64_t>(n, 3000);
    INFO(c.describe());
    const plan p = plan_of(c);
    REQUIRE(p.wire.taken == c.wire);
    std::mt19937_64 data(c.seed);
    std::vector<std::vector<std::byte>> inputs(static_cast<std::size_t>(c.ranks)), first, outputs;
    for (std::size_t r = 0; r < inputs.size(); ++r) {
      inputs[r].resize(p.input_bytes[r]);
      visit_dtype(c.type, [&](auto zero) {
        using T = decltype(zero);
        if constexpr (fp8_wire_type<T>)
          testing::detail::fill_fp8<T>(inputs[r], data, c.wire_data,
                                       reduces(c.coll) ? 2 * c.active : 1);
      });
    }
    for (int order = 0; order < 4; ++order) {
      const fp8_ends ends = order % 2 == 0 ? fp8_ends::sender : fp8_ends::receiver;
      INFO("interleaving " << order << (ends == fp8_ends::receiver ? ", receiver" : ", sender")
                           << " ends");
      outputs.assign(static_cast<std::size_t>(c.ranks), {});
      REQUIRE(simulate(p, c, inputs, outputs, data, ends));
      if (order == 0) {
        first = outputs;
        const reference::wire_check m = reference::check_outputs_fp8(
            {c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs}, fp8_format_of(c.wire),
            reference::wire_hops(c.coll, c.route, c.active));
        CHECK(m.wrong == 0);
        if (m.wrong > 0) FAIL(m.first);
      }
      CHECK(outputs == first);
    }
    ++ran;
  }
  CHECK(ran > 60);
}

TEST_CASE("any interleaving of the slices that respects their waits computes the collective",
          "[plan][slice][property]") {
  std::mt19937_64 cases(20261130);
  for (int i = 0; i < 400; ++i) {
    testing::property_case c = testing::random_case(cases);
    if (c.ranks == 16) continue;  // keep the suite quick; 4 and 8 cover both A
    for (auto& n : c.counts)
      n = std::min<std::int64_t>(n, 5000);
    INFO(c.describe());
    const plan p = plan_of(c);
    std::mt19937_64 data(c.seed);
    std::vector<std::vector<std::byte>> inputs(static_cast<std::size_t>(c.ranks)),
        outputs(static_cast<std::size_t>(c.ranks));
    for (std::size_t r = 0; r < inputs.size(); ++r) {
      inputs[r].resize(p.input_bytes[r]);
      visit_dtype(c.type, [&](auto zero) {
        testing::detail::fill_random<decltype(zero)>(inputs[r], data);
      });
    }
    for (int order = 0; order < 3; ++order) {
      INFO("interleaving " << order);
      REQUIRE(simulate(p, c, inputs, outputs, data));
      const reference::mismatch_report m =
          reference::check_outputs({c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs});
      CHECK(m.wrong == 0);
      if (m.wrong > 0) FAIL(m.first);
    }
  }
}

// The ipc transport's program of a plan (transport/ipc/program.hpp), without a device: every
// stage's waits, copies, reductions, fp8 ends and tags at the addresses of two rank areas placed
// by hand, the form chosen, the pull program, and the program packed for device memory. Plans
// are built by hand (support/plan_builder.hpp), so every expected address is worked out below.
#include "relay/transport/ipc/program.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <cstring>

#include "support/plan_builder.hpp"

using namespace relay;
using namespace relay::ipc;

namespace {

// The two ranks' data areas as this process would map them (never dereferenced).
constexpr std::uintptr_t A0 = 0x100000, A1 = 0x200000;
unsigned char* area(std::uintptr_t a) {
  return reinterpret_cast<unsigned char*>(a);
}
const std::array<unsigned char*, 2> areas{area(A0), area(A1)};

std::uintptr_t at(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

plan_operand op(int rank, buffer b, std::uint64_t offset) {
  return {static_cast<std::uint16_t>(rank), b, offset};
}

// A direct allreduce of one pair, 10 int32 (40 bytes) a rank, laid out by hand:
//   phase 0 (transfer)  op 0: rank 0's input -> rank 1's scratch 0; op 1: rank 1's -> rank 0's
//   phase 1 (reduce)    op 2: rank 0's input + scratch 0 -> its output; op 3: rank 1's alike
// Each area (plan/area_layout.hpp) lays out the input at 0 and the output at 256 (40 rounded up
// to 256); the scratch follows the output rounded up to 256: at 512 on rank 0 (an output of 40
// bytes), at 768 on rank 1, whose output area is 300 bytes (only its first 40 written).
plan pair_allreduce() {
  test::plan_builder b(2, dtype::int32);
  b.sizes(0, 40, 40, 64);
  b.sizes(1, 40, 300, 64);
  b.copy(op(0, buffer::input, 0), op(1, buffer::scratch, 0), 10);
  b.copy(op(1, buffer::input, 0), op(0, buffer::scratch, 0), 10);
  b.reduce({op(0, buffer::input, 0), op(0, buffer::scratch, 0)}, op(0, buffer::output, 0), 10,
           true);
  b.reduce({op(1, buffer::input, 0), op(1, buffer::scratch, 0)}, op(1, buffer::output, 0), 10,
           true);
  plan p = b.get();
  p.spec.coll = collective::allreduce;
  p.spec.route = route::direct;
  p.groups = {{0, 1}};
  p.counts = {10};
  return p;
}

// Each rank sends its 32 bf16 (64 bytes) into the other's output over an OCP e4m3 wire; an
// image is 36 bytes (32 codes and a 4-byte scale), its receiving slot at 48 of the receiver's
// scratch: rank 0's scratch at 512 of its area (input at 0, output at 256), rank 1's at 768
// (its output area of 300 bytes rounds up to 512).
plan fp8_pair() {
  test::plan_builder b(2, dtype::bfloat16);
  b.sizes(0, 64, 64, 96);
  b.sizes(1, 64, 300, 96);
  b.copy(op(0, buffer::input, 0), op(1, buffer::output, 0), 32);
  b.copy(op(1, buffer::input, 0), op(0, buffer::output, 0), 32);
  plan p = b.get();
  p.wire.requested = p.wire.taken = wire_format::fp8_e4m3;
  p.wire_slots = {{0, 48}, {0, 48}};
  return p;
}

// The forms' inputs of 2 processes on one H200 (priced grids 132 / 2 and 1056 / 2), the fitted
// constants, the default cap.
program_setting setting(call_form form = call_form::automatic) {
  program_setting s;
  s.areas = areas;
  s.form = form;
  s.one_shot_tiles = 4096;
  s.one_shot_grid = 66;
  s.stepped_grid = 528;
  return s;
}

program built(const plan& p, int rank, const program_setting& s, fp8_ends ends) {
  program pr;
  REQUIRE(build_program(p, slice_plan(p, rank, ends), s, pr));
  return pr;
}

std::string form_name(const form_choice& f) {
  return f.ll ? "ll" : f.pull ? "pull" : f.one_shot ? "one-shot" : "stepped";
}

}  // namespace

TEST_CASE("a program's stages at the areas' addresses, worked by hand", "[transport][ipc]") {
  const plan p = pair_allreduce();
  REQUIRE(check_plan(p, 2, 1 << 20));
  const program pr = built(p, 0, setting(call_form::stepped), fp8_ends::receiver);
  // Every operand stays where the plan puts it or follows the caller's buffers: user memory.
  CHECK(pr.user_memory);
  REQUIRE(pr.stages.size() == 4);  // entry, phase 0, phase 1, exit
  const stage_lists& entry = pr.stages[0];
  CHECK(entry.head.enter == 1);
  CHECK(entry.head.leave == 0);
  CHECK(entry.waits.empty());
  CHECK(entry.copies.empty());
  CHECK(entry.reduces.empty());

  // Phase 0: the push of rank 0's input (A0 + 0) into rank 1's scratch (A1 + 768), 40 bytes in
  // 16-byte units (both ends 16-byte aligned: 2 units and an 8-byte tail), one tile; the entry
  // wait for rank 1 is the entry stage's. It publishes mark 1 (phase 0 done).
  const stage_lists& push = pr.stages[1];
  CHECK(push.waits.empty());
  CHECK(push.head.publish == 1);
  REQUIRE(push.copies.size() == 1);
  const gpu::copy_desc& c = push.copies[0];
  CHECK(at(c.src) == A0);
  CHECK(at(c.dst) == A1 + 768);
  CHECK(c.width == 16);
  CHECK(c.units == 2);
  CHECK(c.head + c.units * c.width + c.tail == 40);
  CHECK(push.head.copy_tiles == 1);
  // Its source is this rank's input (tag 1), its destination a peer's scratch (fixed, 0).
  REQUIRE(push.copy_tags.size() == 1);
  CHECK(push.copy_tags[0].src == tag_my_input);
  CHECK(push.copy_tags[0].dst == tag_fixed);
  CHECK(push.head.push_mask == 0);  // no peer's output is written
  CHECK(push.moves);

  // Phase 1: after rank 1's phase 0 (its push into A0 + 512: mark 1), the sum of rank 0's input
  // (A0) and that scratch into its output (A0 + 256), 10 elements, finalized (divisor 1); it
  // publishes mark 2.
  const stage_lists& sum = pr.stages[2];
  REQUIRE(sum.waits.size() == 1);
  CHECK(sum.waits[0].peer == 1);
  CHECK(sum.waits[0].phase == 0);
  CHECK(sum.waits[0].step == 0);
  CHECK(sum.waits[0].kind == wait_transfer);
  CHECK(sum.waits[0].done == 1);
  CHECK(sum.head.publish == 2);
  REQUIRE(sum.reduces.size() == 1);
  const gpu::reduce_desc& r = sum.reduces[0];
  CHECK(at(r.dst) == A0 + 256);
  CHECK(r.k == 2);
  CHECK(at(r.src[0]) == A0);
  CHECK(at(r.src[1]) == A0 + 512);
  CHECK(r.count == 10);
  CHECK(r.divisor == 1);
  REQUIRE(sum.reduce_tags.size() == 1);
  CHECK(sum.reduce_tags[0].dst == tag_my_output);
  CHECK(sum.reduce_tags[0].src[0] == tag_my_input);
  CHECK(sum.reduce_tags[0].src[1] == tag_fixed);

  // The exit: nothing to wait for (no peer reads or writes rank 0's output); the call's last
  // launch, so it looks for a peer that gave up on the call before the output is written.
  CHECK(pr.stages[3].waits.empty());
  CHECK(pr.stages[3].head.enter == 0);
  CHECK(pr.stages[3].head.leave == 1);
  CHECK(pr.stages[1].head.leave == 0);
  CHECK(pr.stages[2].head.leave == 0);
  // Where each rank's staged output is here: A0 + 256, A1 + 256.
  CHECK(pr.peer_out == std::vector<std::uint64_t>{A0 + 256, A1 + 256});

  // Rank 1's push is the mirror: its input (A1) into rank 0's scratch (A0 + 512).
  const program pr1 = built(p, 1, setting(call_form::stepped), fp8_ends::receiver);
  REQUIRE(pr1.stages.size() == 4);
  REQUIRE(pr1.stages[1].copies.size() == 1);
  CHECK(at(pr1.stages[1].copies[0].src) == A1);
  CHECK(at(pr1.stages[1].copies[0].dst) == A0 + 512);
  CHECK(at(pr1.stages[2].reduces.at(0).dst) == A1 + 256);
}

TEST_CASE("a push into a peer's output is tagged with that peer, and marks its stage",
          "[transport][ipc]") {
  // Rank 0 writes rank 1's output directly (as the plans' last step of an all-gather does): the
  // destination follows rank 1's published place (tag 3 + 1), and the stage's push mask has bit 1.
  test::plan_builder b(2, dtype::int32);
  b.sizes(0, 40, 40, 0);
  b.sizes(1, 40, 40, 0);
  b.copy(op(0, buffer::input, 0), op(1, buffer::output, 0), 10);
  b.copy(op(1, buffer::input, 0), op(0, buffer::output, 0), 10);
  const program pr = built(b.get(), 0, setting(call_form::stepped), fp8_ends::receiver);
  REQUIRE(pr.stages.size() == 3);
  const stage_lists& push = pr.stages[1];
  REQUIRE(push.copy_tags.size() == 1);
  CHECK(push.copy_tags[0].dst == tag_peer_output + 1);
  CHECK(push.head.push_mask == 0b10);
  CHECK(at(push.copies[0].dst) == A1 + 256);
}

TEST_CASE("the form chosen for a program, on every path", "[transport][ipc]") {
  plan p = pair_allreduce();
  // Stages of 1 tile each (40 bytes): stepped 4 * 3.7 + 4 * 0.3 = 16.0 us, one-shot
  // 3.7 + 3 * 1.5 + 4 * 0.3 = 9.4 us. The pull applies (an allreduce of one pair of 2 <= 8, native
  // wire) and fits (its stage, 1 tile x 2 members, within 4096), and so does ll (40 bytes a slot).
  struct row {
    route on;
    call_form asked;
    std::uint64_t cap;
    std::string expected;
  };
  const row rows[] = {
      {route::direct, call_form::automatic, 4096, "ll"},
      {route::relay, call_form::automatic, 4096, "one-shot"},  // never ll or pull on a relay route
      {route::direct, call_form::automatic, 0, "stepped"},     // a cap of 0: no one launch
      {route::relay, call_form::pull, 4096, "pull"},           // forced: any route
      {route::direct, call_form::pull, 4096, "pull"},
      {route::relay, call_form::ll, 4096, "ll"},
      {route::direct, call_form::ll, 0, "stepped"},
      {route::direct, call_form::one_shot, 4096, "one-shot"},
      {route::direct, call_form::stepped, 4096, "stepped"},
      {route::direct, call_form::pull, 0, "stepped"},
  };
  for (const row& x : rows) {
    p.spec.route = x.on;
    program_setting s = setting(x.asked);
    s.one_shot_tiles = x.cap;
    INFO("route " << static_cast<int>(x.on) << ", form " << static_cast<int>(x.asked) << ", cap "
                  << x.cap);
    CHECK(form_name(built(p, 0, s, fp8_ends::receiver).form) == x.expected);
  }
  // A barrier dearer than a launch: stepped (4 * 1 + 4 * 0.3 = 5.2 us against
  // 1 + 3 * 5 + 4 * 0.3 = 17.2 us) on the relay route, where the pull is not taken.
  p.spec.route = route::relay;
  program_setting dear = setting();
  dear.costs = {1e-6, 5e-6, 0.3e-6};
  CHECK(form_name(built(p, 0, dear, fp8_ends::receiver).form) == "stepped");
  // A stage of more tiles than the cap: inputs and outputs of 40 KiB (3 tiles of 16 KiB each)
  // against a cap of 2: stepped.
  plan big = pair_allreduce();
  big.input_bytes = {40960, 40960};
  big.output_bytes = {40960, 40960};
  program_setting one = setting();
  one.one_shot_tiles = 2;
  CHECK(form_name(built(big, 0, one, fp8_ends::receiver).form) == "stepped");
  // An input larger than an ll slot (256 KiB + 4 bytes: 65537 int32): the pull.
  plan past = pair_allreduce();
  past.counts = {65537};
  past.input_bytes = {262148, 262148};
  past.output_bytes = {262148, 262148};
  CHECK(form_name(built(past, 0, setting(), fp8_ends::receiver).form) == "pull");
}

TEST_CASE("the pull program reads each member's staged input where its area is",
          "[transport][ipc]") {
  const plan p = pair_allreduce();
  const program pr = built(p, 1, setting(), fp8_ends::receiver);
  REQUIRE(pr.form.pull);
  const ipc_pull& a = pr.pull;
  CHECK(a.members == 2);
  CHECK(a.member[0] == 0);
  CHECK(a.member[1] == 1);
  CHECK(a.mine == 1);
  CHECK(at(a.src[0]) == A0);     // rank 0's staged input
  CHECK(at(a.src[1]) == A1);     // its own
  CHECK(at(a.dst) == A1 + 256);  // its staged output
  CHECK(a.count == 10);
  CHECK(a.readers == 0b01);  // rank 0 reads rank 1's input
  CHECK(a.grid == 1);        // 40 bytes: one tile of 8 KiB
  CHECK(a.divisor == 1);
}

TEST_CASE(
    "an fp8 program: the sender quantizes into the receiver's slot, the receiver's "
    "arrival dequantizes",
    "[transport][ipc][fp8]") {
  // fp8_pair: each rank's 32 bf16 into the other's output over an OCP e4m3 wire.
  const plan p = fp8_pair();
  REQUIRE(check_plan(p, 2, 1 << 20));
  const program pr = built(p, 0, setting(), fp8_ends::receiver);
  CHECK_FALSE(pr.user_memory);  // the slots are in the areas: staged
  CHECK_FALSE(pr.form.one_shot);
  REQUIRE(pr.stages.size() == 4);  // entry, phase 0, its arrival, exit
  const stage_lists& send = pr.stages[1];
  CHECK(send.copies.empty());
  REQUIRE(send.fp8[0].size() == 1);
  CHECK(send.fp8[1].empty());
  CHECK(at(send.fp8[0][0].src) == A0);
  CHECK(at(send.fp8[0][0].dst) == A1 + 768 + 48);
  CHECK(send.fp8[0][0].count == 32);
  CHECK(send.head.fp8_dequantize == 0);
  CHECK(send.head.publish == 1);  // phase 0's mark: 2 * 0 + 1
  CHECK(send.head.fp8_format == static_cast<std::uint32_t>(fp8_format::e4m3));
  // The arrival waits for rank 1's phase 0 (its image in this rank's slot), then dequantizes it
  // into this rank's output, and publishes its own mark, 2.
  const stage_lists& arrival = pr.stages[2];
  REQUIRE(arrival.waits.size() == 1);
  CHECK(arrival.waits[0].peer == 1);
  CHECK(arrival.waits[0].done == 1);
  REQUIRE(arrival.fp8[0].size() == 1);
  CHECK(at(arrival.fp8[0][0].src) == A0 + 512 + 48);
  CHECK(at(arrival.fp8[0][0].dst) == A0 + 256);
  CHECK(arrival.head.fp8_dequantize == 1);
  CHECK(arrival.head.publish == 2);
  // A slice cut with the sender's ends (one mark a phase) is refused, not cut again.
  program refused;
  const status s = build_program(p, slice_plan(p, 0, fp8_ends::sender), setting(), refused);
  CHECK(s.code() == errc::invalid_argument);
  CHECK_THAT(s.message(), Catch::Contains("wire_ends"));
}

TEST_CASE(
    "a program packed for device memory: headers first, then each list, pointers at the "
    "device's address",
    "[transport][ipc]") {
  const program pr = built(pair_allreduce(), 0, setting(call_form::stepped), fp8_ends::receiver);
  constexpr std::uintptr_t D = 0x7000000;
  const packed_program pk = pack(pr, area(D));
  // 4 headers; then peer_out (2 words, 16 bytes); then phase 0's copy and its tags; then phase
  // 1's wait, reduction and tags; each list 16-byte aligned.
  const std::size_t heads = (4 * sizeof(ipc_stage) + 15) / 16 * 16;
  auto up = [](std::size_t x) { return (x + 15) / 16 * 16; };
  const std::size_t copy_at = heads + 16, copy_tags_at = copy_at + up(sizeof(gpu::copy_desc));
  const std::size_t wait_at = copy_tags_at + up(sizeof(ipc_copy_tags));
  const std::size_t reduce_at = wait_at + up(sizeof(ipc_wait));
  const std::size_t reduce_tags_at = reduce_at + up(sizeof(gpu::reduce_desc));
  CHECK(pk.bytes.size() == reduce_tags_at + up(sizeof(ipc_reduce_tags)));
  CHECK(pk.bytes.size() == packed_size(pr));
  auto head = [&](std::size_t i) {
    ipc_stage s;
    std::memcpy(&s, pk.bytes.data() + i * sizeof(ipc_stage), sizeof s);
    return s;
  };
  const ipc_stage push = head(1), sum = head(2);
  CHECK(at(push.copies) == D + copy_at);
  CHECK(at(push.copy_tags) == D + copy_tags_at);
  CHECK(push.copy_count == 1);
  CHECK(at(push.peer_out) == D + heads);
  CHECK(push.reduce_tags == nullptr);  // moves, but no reductions
  CHECK(at(sum.waits) == D + wait_at);
  CHECK(sum.wait_count == 1);
  CHECK(at(sum.reduces) == D + reduce_at);
  CHECK(at(sum.reduce_tags) == D + reduce_tags_at);
  CHECK(head(0).enter == 1);
  CHECK(head(3).wait_count == 0);
  CHECK(head(3).leave == 1);  // the exit's flag travels with the program
  // The lists' bytes are the program's.
  gpu::copy_desc c;
  std::memcpy(&c, pk.bytes.data() + copy_at, sizeof c);
  CHECK(at(c.dst) == A1 + 768);
  std::uint64_t out1 = 0;
  std::memcpy(&out1, pk.bytes.data() + heads + 8, sizeof out1);
  CHECK(out1 == A1 + 256);
  // Where the stages are, and their tiles.
  CHECK(at(pk.entry.device) == D);
  REQUIRE(pk.phases.size() == 2);
  CHECK(at(pk.phases[1].device) == D + 2 * sizeof(ipc_stage));
  CHECK(at(pk.exit.device) == D + 3 * sizeof(ipc_stage));
  CHECK(pk.phases[0].tiles == 1);
  CHECK(pk.most_tiles == 1);
  CHECK_FALSE(pk.phases[0].fp8);
}

TEST_CASE("what a plan alone makes the transport refuse", "[transport][ipc]") {
  plan p = pair_allreduce();
  CHECK(check_plan(p, 2, 832));  // the largest area: rank 1's, 768 + 64
  status s = check_plan(p, 2, 831);
  CHECK(s.code() == errc::out_of_memory);
  CHECK_THAT(s.message(), Catch::Contains("needs 832 bytes") && Catch::Contains("RELAY_IPC_BYTES"));
  CHECK(check_plan(p, 4, 1 << 20).code() == errc::invalid_argument);
  p.in_place = true;
  CHECK(check_plan(p, 2, 1 << 20).code() == errc::invalid_argument);
}

TEST_CASE("under mesh emulation a push goes to the paced list, with its link, and local work stays",
          "[transport][ipc][pacing]") {
  // Rank 0 copies its input into its own output (rank-local: not a link) and pushes it into rank
  // 1's output (link (0, 1)); rank 1 mirrors it. At 12 GB/s a push has 2 walkers
  // (gpu::link_blocks: 2 + 12 / 16).
  test::plan_builder b(2, dtype::int32);
  b.sizes(0, 40, 80, 0);
  b.sizes(1, 40, 80, 0);
  b.copy(op(0, buffer::input, 0), op(0, buffer::output, 0), 10);
  b.copy(op(0, buffer::input, 0), op(1, buffer::output, 40), 10);
  b.copy(op(1, buffer::input, 0), op(1, buffer::output, 0), 10);
  b.copy(op(1, buffer::input, 0), op(0, buffer::output, 40), 10);
  const plan p = b.get();
  program_setting s = setting(call_form::stepped);
  s.emulate_mesh = 12'000'000'000;
  const program pr = built(p, 0, s, fp8_ends::receiver);
  REQUIRE(pr.stages.size() == 3);  // entry, phase 0, exit
  const stage_lists& st = pr.stages[1];
  // The local copy: input (A0) -> own output (A0 + 256), in the copy list, one tile.
  REQUIRE(st.copies.size() == 1);
  CHECK(at(st.copies[0].src) == A0);
  CHECK(at(st.copies[0].dst) == A0 + 256);
  REQUIRE(st.copy_tags.size() == 1);
  CHECK(st.copy_tags[0].dst == tag_my_output);
  CHECK(st.head.copy_tiles == 1);
  // The push: input (A0) -> rank 1's output at 40 (A1 + 256 + 40), on link 1, its destination
  // following rank 1's output (tag 3 + 1).
  REQUIRE(st.paced.size() == 1);
  CHECK(st.paced[0].link == 1);
  CHECK(at(st.paced[0].copy.src) == A0);
  CHECK(at(st.paced[0].copy.dst) == A1 + 256 + 40);
  CHECK(st.paced[0].copy.head + st.paced[0].copy.units * st.paced[0].copy.width +
            st.paced[0].copy.tail ==
        40);
  CHECK(st.paced[0].tags.src == tag_my_input);
  CHECK(st.paced[0].tags.dst == tag_peer_output + 1);
  CHECK(st.head.push_mask == 0b10);
  CHECK(st.head.paced_count == 1);
  CHECK(st.head.paced_blocks == 1);  // 12 GB/s: one walker (ipc::paced_walkers)
  CHECK(st.head.paced_moves == 1);
  CHECK(st.tiles() == 1 + 1);  // the local copy's tile, and a block per walker of the push
  // Rank 1's push is on its link (1, 0).
  const program pr1 = built(p, 1, s, fp8_ends::receiver);
  REQUIRE(pr1.stages[1].paced.size() == 1);
  CHECK(pr1.stages[1].paced[0].link == 0);
  CHECK(at(pr1.stages[1].paced[0].copy.dst) == A0 + 256 + 40);
  // Faster links get more walkers: 40 GB/s, 1 + 40 / 16 = 3; 16 GB/s, 2.
  s.emulate_mesh = 40'000'000'000;
  CHECK(built(p, 0, s, fp8_ends::receiver).stages[1].head.paced_blocks == 3);
  s.emulate_mesh = 16'000'000'000;
  CHECK(built(p, 0, s, fp8_ends::receiver).stages[1].head.paced_blocks == 2);
  CHECK(st.head.paced_parts == 1);  // a walker moves its 64 KiB tile at once
  // Walkers chosen for diagnosis (ipc::options::paced_blocks, paced_move_kib): 6 a push at
  // 12 GB/s, whose rate alone gives 1, and a tile moved as four 16 KiB copy tiles.
  s.emulate_mesh = 12'000'000'000;
  s.paced_blocks = 6;
  s.paced_parts = 4;
  const program chosen = built(p, 0, s, fp8_ends::receiver);
  CHECK(chosen.stages[1].head.paced_blocks == 6);
  CHECK(chosen.stages[1].head.paced_parts == 4);
  CHECK(chosen.stages[1].tiles() == 1 + 6);
  // Without emulation both copies are in the copy list, and nothing is paced.
  const program plain = built(p, 0, setting(call_form::stepped), fp8_ends::receiver);
  CHECK(plain.stages[1].copies.size() == 2);
  CHECK(plain.stages[1].paced.empty());
  CHECK(plain.stages[1].head.paced_count == 0);
  CHECK(plain.stages[1].head.paced_blocks == 0);
  CHECK(plain.stages[1].tiles() == 2);
}

// An all-gather of one pair in two steps, N = 20000 int32 (80000 bytes) a rank, by hand (offsets
// in bytes):
//   phase 0  op 0: rank 0's input -> its own output [0, 80000) (local); op 1: its first half ->
//            rank 1's output [0, 40000); op 2: rank 1's input -> its own output [80000, 160000);
//            op 3: its first half -> rank 0's output [80000, 120000)
//   phase 1  op 4: rank 0's second half -> rank 1's output [40000, 80000); op 5: rank 1's second
//            half -> rank 0's output [120000, 160000)
// Each area lays out the input at 0 and the output at 80128 (80000 rounded up to 256).
plan pair_all_gather(bool read_back) {
  constexpr std::uint64_t N = 20000, B = 4 * N;
  test::plan_builder b(2, dtype::int32);
  b.sizes(0, B, 2 * B, 0);
  b.sizes(1, B, 2 * B, 0);
  b.copy(op(0, buffer::input, 0), op(0, buffer::output, 0), N);
  b.copy(op(0, buffer::input, 0), op(1, buffer::output, 0), N / 2);
  b.copy(op(1, buffer::input, 0), op(1, buffer::output, B), N);
  b.copy(op(1, buffer::input, 0), op(0, buffer::output, B), N / 2);
  b.begin(phase::transfer);
  // read_back: rank 0 sends its second half from its output instead, which reads what op 0
  // wrote, so op 0 must finish in phase 0.
  b.copy(op(0, read_back ? buffer::output : buffer::input, B / 2), op(1, buffer::output, B / 2),
         N / 2);
  b.copy(op(1, buffer::input, B / 2), op(0, buffer::output, B + B / 2), N / 2);
  plan p = b.get();
  p.spec.coll = collective::all_gather;
  p.groups = {{0, 1}};
  p.counts = {static_cast<std::int64_t>(N)};
  return p;
}

TEST_CASE("the stepped form spreads a local copy that nothing else touches over the later stages",
          "[transport][ipc]") {
  const plan p = pair_all_gather(false);
  REQUIRE(check_plan(p, 2, 1 << 20));
  const program pr = built(p, 0, setting(call_form::stepped), fp8_ends::receiver);
  REQUIRE(pr.stages.size() == 4);  // entry, phase 0, phase 1, exit
  // Op 0's 80000 bytes are 5 tiles of 16 KiB: phase 0 makes the first 2 (32768 bytes) after its
  // push, phase 1 the other 47232 after its own push.
  const stage_lists& first = pr.stages[1];
  const stage_lists& second = pr.stages[2];
  REQUIRE(first.copies.size() == 2);
  CHECK(at(first.copies[0].dst) == A1 + 80128);  // op 1, the push
  const gpu::copy_desc& a = first.copies[1];
  CHECK(at(a.src) == A0);
  CHECK(at(a.dst) == A0 + 80128);
  CHECK(a.head + a.units * a.width + a.tail == 32768);
  REQUIRE(second.copies.size() == 2);
  CHECK(at(second.copies[0].dst) == A1 + 80128 + 40000);  // op 4, the push
  const gpu::copy_desc& b = second.copies[1];
  CHECK(at(b.src) == A0 + 32768);
  CHECK(at(b.dst) == A0 + 80128 + 32768);
  CHECK(b.head + b.units * b.width + b.tail == 47232);
  // The parts follow the caller's buffers as the whole copy would.
  CHECK(first.copy_tags[1].src == tag_my_input);
  CHECK(first.copy_tags[1].dst == tag_my_output);
  CHECK(second.copy_tags[1].src == tag_my_input);
  CHECK(second.copy_tags[1].dst == tag_my_output);
  // Tiles: the push's (40000 bytes: 3) and the part's (2) in phase 0; 3 and 3 in phase 1.
  CHECK(first.head.copy_tiles == 5);
  CHECK(second.head.copy_tiles == 6);

  // A later operation reads op 0's output: op 0 stays whole in phase 0.
  const program kept =
      built(pair_all_gather(true), 0, setting(call_form::stepped), fp8_ends::receiver);
  REQUIRE(kept.stages[1].copies.size() == 2);
  const gpu::copy_desc& whole = kept.stages[1].copies[0];
  CHECK(at(whole.dst) == A0 + 80128);
  CHECK(whole.head + whole.units * whole.width + whole.tail == 80000);
  CHECK(kept.stages[2].copies.size() == 1);

  // The one-shot form runs every stage in one launch, so it keeps the plan's stages.
  const program one = built(p, 0, setting(call_form::one_shot), fp8_ends::receiver);
  REQUIRE(one.form.one_shot);
  CHECK(one.stages[2].copies.size() == 1);
}

TEST_CASE("under mesh emulation reductions are not paced, and a fixed push has no tags to move",
          "[transport][ipc][pacing]") {
  program_setting s = setting(call_form::stepped);
  s.emulate_mesh = 12'000'000'000;
  const program pr = built(pair_allreduce(), 0, s, fp8_ends::receiver);
  REQUIRE(pr.stages.size() == 4);
  // Phase 0's push (input A0 -> rank 1's scratch A1 + 768) is paced on link 1; its source
  // follows this rank's input, its destination is fixed.
  const stage_lists& push = pr.stages[1];
  CHECK(push.copies.empty());
  CHECK(push.head.copy_tiles == 0);
  REQUIRE(push.paced.size() == 1);
  CHECK(push.paced[0].link == 1);
  CHECK(at(push.paced[0].copy.dst) == A1 + 768);
  CHECK(push.paced[0].tags.dst == tag_fixed);
  CHECK(push.head.paced_moves == 1);  // the source follows the caller's input
  // Phase 1's reduction reads this rank's memory only: in the reduction list, nothing paced.
  const stage_lists& sum = pr.stages[2];
  CHECK(sum.reduces.size() == 1);
  CHECK(sum.paced.empty());
  CHECK(sum.head.paced_count == 0);
  // A push between two scratches names no input or output: nothing of it moves.
  test::plan_builder b(2, dtype::int32);
  b.sizes(0, 40, 40, 64);
  b.sizes(1, 40, 40, 64);
  b.copy(op(0, buffer::scratch, 0), op(1, buffer::scratch, 0), 10);
  b.copy(op(1, buffer::scratch, 0), op(0, buffer::scratch, 0), 10);
  const program fixed = built(b.get(), 0, s, fp8_ends::receiver);
  REQUIRE(fixed.stages[1].paced.size() == 1);
  CHECK(fixed.stages[1].head.paced_moves == 0);
}

TEST_CASE("under mesh emulation the stepped form runs every call, and the fp8 wire is refused",
          "[transport][ipc][pacing]") {
  // The pair's direct allreduce takes the ll form wherever it may, else the pull, else the
  // one-shot form (the form test above); under emulation none fits (only the step kernel has a
  // paced form), whatever is asked: stepped.
  plan p = pair_allreduce();
  program_setting s = setting();
  s.emulate_mesh = 12'000'000'000;
  for (call_form f : {call_form::automatic, call_form::ll, call_form::pull, call_form::one_shot}) {
    s.form = f;
    INFO("form " << static_cast<int>(f));
    CHECK(form_name(built(p, 0, s, fp8_ends::receiver).form) == "stepped");
  }
  // The fp8 wire: the sender's quantized image crosses the link, which is not paced: refused.
  const plan f = fp8_pair();
  program refused;
  s.form = call_form::automatic;
  const status st = build_program(f, slice_plan(f, 0, fp8_ends::receiver), s, refused);
  CHECK(st.code() == errc::unsupported);
  CHECK_THAT(st.message(), Catch::Contains("RELAY_IPC_EMULATE_MESH") && Catch::Contains("fp8") &&
                               Catch::Contains("native wire"));
  s.emulate_mesh = 0;
  CHECK(build_program(f, slice_plan(f, 0, fp8_ends::receiver), s, refused));
}

TEST_CASE("a paced program packed: the paced list after the stage's other lists",
          "[transport][ipc][pacing]") {
  program_setting s = setting(call_form::stepped);
  s.emulate_mesh = 12'000'000'000;
  const program pr = built(pair_allreduce(), 0, s, fp8_ends::receiver);
  constexpr std::uintptr_t D = 0x7000000;
  const packed_program pk = pack(pr, area(D));
  // 4 headers; peer_out (16 bytes); phase 0: no copy, no tags (its copy list is empty), its
  // paced push; phase 1: its wait, reduction and tags.
  auto up = [](std::size_t x) { return (x + 15) / 16 * 16; };
  const std::size_t heads = up(4 * sizeof(ipc_stage));
  const std::size_t paced_at = heads + 16;
  const std::size_t wait_at = paced_at + up(sizeof(ipc_paced_copy));
  const std::size_t reduce_at = wait_at + up(sizeof(ipc_wait));
  const std::size_t reduce_tags_at = reduce_at + up(sizeof(gpu::reduce_desc));
  CHECK(pk.bytes.size() == reduce_tags_at + up(sizeof(ipc_reduce_tags)));
  CHECK(pk.bytes.size() == packed_size(pr));
  ipc_stage push;
  std::memcpy(&push, pk.bytes.data() + sizeof(ipc_stage), sizeof push);
  CHECK(at(push.paced) == D + paced_at);
  CHECK(push.paced_count == 1);
  CHECK(push.paced_blocks == 1);
  CHECK(push.paced_moves == 1);
  CHECK(push.copy_count == 0);
  CHECK(push.copy_tags == nullptr);
  CHECK(at(push.peer_out) == D + heads);  // the push's source moves: the deltas are read
  ipc_paced_copy c;
  std::memcpy(&c, pk.bytes.data() + paced_at, sizeof c);
  CHECK(c.link == 1);
  CHECK(at(c.copy.dst) == A1 + 768);
  CHECK(pk.phases[0].tiles == 1);  // a block per walker, one at 12 GB/s
  CHECK(pk.phases[0].paced);       // the step kernel's paced form runs it
  CHECK_FALSE(pk.phases[1].paced);
  CHECK_FALSE(pk.entry.paced);
  CHECK_FALSE(pk.exit.paced);
  ipc_stage sum;
  std::memcpy(&sum, pk.bytes.data() + 2 * sizeof(ipc_stage), sizeof sum);
  CHECK(sum.paced == nullptr);
  CHECK(sum.paced_count == 0);
}

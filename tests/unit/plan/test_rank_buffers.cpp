// One rank's view of its buffers: its placement (NCCL's in-place layouts, worked by hand) and the
// checks validate_buffers makes, limited to that rank.
#include "relay/plan/rank_buffers.hpp"

#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"

using namespace relay;

namespace {

const std::vector<std::vector<int>> pair_groups{{0, 1}, {2, 3}};

}  // namespace

TEST_CASE("a rank's placement follows NCCL's in-place layouts", "[plan][rank_buffers]") {
  alignas(8) std::byte memory[256];
  const std::int64_t counts[] = {4, 4};
  auto at = [&](int offset) { return buffer_view{memory + offset, 64}; };
  // allreduce: in place when recv == send.
  CHECK(placement_of(collective::allreduce, pair_groups, counts, 4, 1, at(0), at(0)) ==
        placement::in_place);
  CHECK(placement_of(collective::allreduce, pair_groups, counts, 4, 1, at(0), at(64)) ==
        placement::out_of_place);
  // reduce-scatter: recv == send + k*n elements; rank 3 is index 1 of its group: 4 floats on.
  CHECK(placement_of(collective::reduce_scatter, pair_groups, counts, 4, 3, at(0), at(16)) ==
        placement::in_place);
  CHECK(placement_of(collective::reduce_scatter, pair_groups, counts, 4, 2, at(0), at(16)) ==
        placement::out_of_place);  // index 0 would need recv == send
  // all-gather: send == recv + k*n.
  CHECK(placement_of(collective::all_gather, pair_groups, counts, 4, 3, at(16), at(0)) ==
        placement::in_place);
  // all-to-all has no in-place form; a rank in no group is a helper; count 0 does not vote.
  CHECK(placement_of(collective::all_to_all, pair_groups, counts, 4, 0, at(0), at(0)) ==
        placement::out_of_place);
  CHECK(placement_of(collective::allreduce, {{0, 1}}, counts, 4, 3, {}, {}) == placement::helper);
  const std::int64_t zero[] = {0, 4};
  CHECK(placement_of(collective::allreduce, pair_groups, zero, 4, 1, at(0), at(64)) ==
        placement::helper);
  // A count no plan takes (2^61 + 1 fp64: 2^64 + 8 bytes at index 1) forms no offset: out of
  // place, and make_plan refuses the count.
  const std::int64_t huge[] = {(std::int64_t{1} << 61) + 1, 4};
  CHECK(placement_of(collective::reduce_scatter, pair_groups, huge, 8, 1, at(0), at(0)) ==
        placement::out_of_place);
}

TEST_CASE("a rank checks its own buffers only, with validate_buffers' messages",
          "[plan][rank_buffers]") {
  plan_request q;
  q.coll = collective::allreduce;
  q.ranks = 4;
  q.groups = pair_groups;
  q.counts = {8, 8};
  plan p;
  REQUIRE(make_plan(q, p));
  alignas(8) std::byte memory[128];
  const buffer_view in{memory, 32}, out{memory + 64, 32};
  // Rank 2's buffers are fine, whatever the other ranks pass (rank 2 cannot see them).
  CHECK(validate_rank_buffers(p, 2, in, out, placement::out_of_place));
  CHECK(validate_rank_buffers(p, 2, in, in, placement::in_place));
  CHECK(validate_rank_buffers(p, 2, {nullptr, 32}, out, placement::out_of_place).message() ==
        "the input of rank 2 is null");
  CHECK(validate_rank_buffers(p, 2, in, {memory + 64, 16}, placement::out_of_place).message() ==
        "the output of rank 2 holds 16 bytes; the call needs 32");
  CHECK(validate_rank_buffers(p, 2, in, {memory + 16, 32}, placement::out_of_place).code() ==
        errc::invalid_buffer);  // overlaps its input out of place
}

TEST_CASE("a rank's own check agrees with validate_buffers on a plan of its buffers only",
          "[plan][rank_buffers]") {
  // The reference: validate_buffers on a copy of the plan in which every other rank needs no
  // bytes (what validate_rank_buffers computed before it stopped allocating). Random buffers in
  // a small arena hit null, misaligned, short, overlapping and in-place layouts.
  const std::uint64_t seed = 20261201;
  std::uint64_t state = seed;
  auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  alignas(16) std::byte arena[512];
  int failures_compared = 0;
  for (int i = 0; i < 4000; ++i) {
    plan_request q;
    q.coll = all_collectives[next(all_collectives.size())];
    q.ranks = 4;
    q.groups = pair_groups;
    q.counts = {static_cast<std::int64_t>(next(9)), static_cast<std::int64_t>(next(9))};
    q.type = next(2) == 0 ? dtype::int32 : dtype::bfloat16;
    plan p;
    REQUIRE(make_plan(q, p));
    const int rank = static_cast<int>(next(4));
    auto view = [&]() -> buffer_view {
      if (next(16) == 0) return {nullptr, 64};
      return {arena + next(256), static_cast<std::size_t>(next(80))};
    };
    buffer_view send = view(), recv = view();
    if (next(4) == 0) recv = send;  // in place for allreduce
    const int es = size_of(q.type);
    const placement where = placement_of(q.coll, q.groups, q.counts, es, rank, send, recv);
    plan mine = p;
    mine.in_place = where == placement::in_place;
    for (std::size_t r = 0; r < 4; ++r)
      if (static_cast<int>(r) != rank) mine.input_bytes[r] = mine.output_bytes[r] = 0;
    std::vector<buffer_view> inputs(4), outputs(4);
    inputs[static_cast<std::size_t>(rank)] = send;
    outputs[static_cast<std::size_t>(rank)] = recv;
    const status expected = validate_buffers(mine, inputs, outputs);
    const status got = validate_rank_buffers(p, rank, send, recv, where);
    INFO("seed " << seed << ", case " << i << ": expected " << expected.to_string() << ", got "
                 << got.to_string());
    REQUIRE(got.code() == expected.code());
    REQUIRE(got.message() == expected.message());
    failures_compared += expected.ok() ? 0 : 1;
  }
  CHECK(failures_compared > 400);  // the cases reach the checks, not only the passing path
}

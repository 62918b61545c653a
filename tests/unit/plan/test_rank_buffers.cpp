// One rank's view of its buffers: its placement (NCCL's in-place layouts, worked by hand) and the
// checks validate_buffers makes, limited to that rank.
#include "relay/plan/rank_buffers.hpp"

#include <catch2/catch.hpp>

#include "relay/plan/make_plan.hpp"

using namespace relay;

namespace {

const std::vector<std::vector<int>> pairs{{0, 1}, {2, 3}};

}  // namespace

TEST_CASE("a rank's placement follows NCCL's in-place layouts", "[plan][rank_buffers]") {
  alignas(8) std::byte memory[256];
  const std::int64_t counts[] = {4, 4};
  auto at = [&](int offset) { return buffer_view{memory + offset, 64}; };
  // allreduce: in place when recv == send.
  CHECK(placement_of(collective::allreduce, pairs, counts, 4, 1, at(0), at(0)) ==
        placement::in_place);
  CHECK(placement_of(collective::allreduce, pairs, counts, 4, 1, at(0), at(64)) ==
        placement::out_of_place);
  // reduce-scatter: recv == send + k*n elements; rank 3 is index 1 of its group: 4 floats on.
  CHECK(placement_of(collective::reduce_scatter, pairs, counts, 4, 3, at(0), at(16)) ==
        placement::in_place);
  CHECK(placement_of(collective::reduce_scatter, pairs, counts, 4, 2, at(0), at(16)) ==
        placement::out_of_place);  // index 0 would need recv == send
  // all-gather: send == recv + k*n.
  CHECK(placement_of(collective::all_gather, pairs, counts, 4, 3, at(16), at(0)) ==
        placement::in_place);
  // all-to-all has no in-place form; a rank in no group is a helper; count 0 does not vote.
  CHECK(placement_of(collective::all_to_all, pairs, counts, 4, 0, at(0), at(0)) ==
        placement::out_of_place);
  CHECK(placement_of(collective::allreduce, {{0, 1}}, counts, 4, 3, {}, {}) == placement::helper);
  const std::int64_t zero[] = {0, 4};
  CHECK(placement_of(collective::allreduce, pairs, zero, 4, 1, at(0), at(64)) == placement::helper);
  // A count no plan takes (2^61 + 1 fp64: 2^64 + 8 bytes at index 1) forms no offset: out of
  // place, and make_plan refuses the count.
  const std::int64_t huge[] = {(std::int64_t{1} << 61) + 1, 4};
  CHECK(placement_of(collective::reduce_scatter, pairs, huge, 8, 1, at(0), at(0)) ==
        placement::out_of_place);
}

TEST_CASE("a rank checks its own buffers only, with validate_buffers' messages",
          "[plan][rank_buffers]") {
  plan_request q;
  q.coll = collective::allreduce;
  q.ranks = 4;
  q.groups = pairs;
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

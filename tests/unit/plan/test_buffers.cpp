// The caller's buffers against a call: in-place detection (NCCL's layouts, worked by hand), counts
// no plan takes, and which rank an error names when the ranks' layouts disagree.
#include "relay/plan/buffers.hpp"

#include <vector>

#include <catch2/catch.hpp>

#include "relay/cost/choose.hpp"

using namespace relay;

namespace {

const std::vector<std::vector<int>> fused_pairs{{0, 1}, {2, 3}, {4, 5}, {6, 7}};

}  // namespace

TEST_CASE("the in-place offset is only formed for counts a plan takes", "[plan][buffers]") {
  // max_plan_count = (2^63 - 1) / (64 * 64 * 8 * 16) = (2^63 - 1) / 2^19, rounded down: 2^44 - 1.
  CHECK(max_plan_count == 17592186044415);
  std::int64_t delta = -1;
  // The largest product it forms: active index 63, 16-byte elements: 63 * 16 * (2^44 - 1).
  REQUIRE(detail::in_place_delta(collective::reduce_scatter, 63, max_plan_count, 16, delta));
  CHECK(delta == 17732923532770320);
  // reduce-scatter: recv == send + k*n elements; all-gather: send == recv + k*n; allreduce: 0.
  REQUIRE(detail::in_place_delta(collective::reduce_scatter, 3, 10, 8, delta));
  CHECK(delta == 240);
  REQUIRE(detail::in_place_delta(collective::all_gather, 3, 10, 8, delta));
  CHECK(delta == -240);
  REQUIRE(detail::in_place_delta(collective::allreduce, 3, 10, 8, delta));
  CHECK(delta == 0);
  // 2^61 + 1 fp64 elements at index 1: 2^64 + 8 bytes, past std::int64_t. Not formed.
  delta = -1;
  CHECK_FALSE(
      detail::in_place_delta(collective::reduce_scatter, 1, (std::int64_t{1} << 61) + 1, 8, delta));
  CHECK_FALSE(detail::in_place_delta(collective::reduce_scatter, 1, max_plan_count + 1, 8, delta));
  CHECK_FALSE(detail::in_place_delta(collective::reduce_scatter, 1, -1, 8, delta));
  CHECK(delta == -1);
}

TEST_CASE("reduce-scatter with recv == send and count 2^61 + 1 (fp64): no overflow, one refusal",
          "[plan][buffers]") {
  // Before, buffers_in_place multiplied 2^61 + 1 by the active index and 8 bytes before the
  // count was validated: a signed overflow (UBSan reports it; the sanitizer presets run this).
  alignas(8) std::byte memory[8][32];
  std::vector<buffer_view> views;
  for (auto& m : memory)
    views.push_back({m, sizeof m});
  const std::vector<std::int64_t> counts(4, (std::int64_t{1} << 61) + 1);
  // No rank has a count a plan takes, so none votes: not in place.
  CHECK_FALSE(buffers_in_place(collective::reduce_scatter, fused_pairs, counts, 8, views, views));
  plan_request q;
  q.coll = collective::reduce_scatter;
  q.groups = fused_pairs;
  q.counts = counts;
  q.type = dtype::float64;
  plan p;
  const status s = make_plan(q, p);
  CHECK(s.to_string() ==
        "invalid count: count 2305843009213693953 of group 0 is negative or too large");
}

TEST_CASE("in-place detection: the majority of the active ranks decides, count 0 has no vote",
          "[plan][buffers]") {
  alignas(8) std::byte memory[1024];
  auto at = [&](int offset) { return buffer_view{memory + offset, 64}; };
  const std::int64_t counts[] = {4, 4, 4, 4};
  // allreduce, 8 ranks in 4 pairs: recv == send for all (in place), for none, for all but rank 1.
  std::vector<buffer_view> send, recv;
  for (int r = 0; r < 8; ++r) {
    send.push_back(at(r * 64));
    recv.push_back(at(r * 64));
  }
  CHECK(buffers_in_place(collective::allreduce, fused_pairs, counts, 4, send, recv));
  recv[1] = at(1 * 64 + 4);  // rank 1's output one float on: 7 in place, 1 not
  CHECK(buffers_in_place(collective::allreduce, fused_pairs, counts, 4, send, recv));
  for (int r = 0; r < 8; ++r)
    recv[static_cast<std::size_t>(r)] = at(512 + r * 64);
  CHECK_FALSE(buffers_in_place(collective::allreduce, fused_pairs, counts, 4, send, recv));
  recv[3] = send[3];  // 1 in place, 7 not
  CHECK_FALSE(buffers_in_place(collective::allreduce, fused_pairs, counts, 4, send, recv));
  // One pair {0, 1}: a tie (rank 0 in place, rank 1 not) counts as in place.
  const std::vector<std::vector<int>> pair{{0, 1}};
  CHECK(buffers_in_place(collective::allreduce, pair, counts, 4, std::vector{at(0), at(64)},
                         std::vector{at(0), at(68)}));
  // A group of count 0 has no vote: only group 1's ranks 2 and 3, both in place, decide.
  const std::int64_t zero_first[] = {0, 4};
  const std::vector<std::vector<int>> two{{0, 1}, {2, 3}};
  CHECK(buffers_in_place(collective::allreduce, two, zero_first, 4,
                         std::vector{at(0), at(64), at(128), at(192)},
                         std::vector{at(512), at(576), at(128), at(192)}));
  // all-to-all has no in-place form.
  CHECK_FALSE(buffers_in_place(collective::all_to_all, two, counts, 4,
                               std::vector{at(0), at(64), at(128), at(192)},
                               std::vector{at(0), at(64), at(128), at(192)}));
}

TEST_CASE("NCCL's in-place layout with only rank 1 off by one element: the error names rank 1",
          "[plan][buffers]") {
  // reduce-scatter, N=4, groups {0,1} and {2,3}, count 2 (float): each input holds 4 elements and
  // rank k's output is its block k, 8k bytes into its input. Rank 1's output is one element on:
  // 12 bytes instead of 8.
  alignas(8) std::byte memory[4][32];
  std::vector<buffer_view> send, recv;
  for (int r = 0; r < 4; ++r) {
    send.push_back({memory[r], 16});
    recv.push_back({memory[r] + (r % 2) * 8, 8});
  }
  recv[1] = {memory[1] + 12, 8};
  const std::vector<std::vector<int>> groups{{0, 1}, {2, 3}};
  const std::vector<std::int64_t> counts{2, 2};
  plan_request q;
  q.coll = collective::reduce_scatter;
  q.ranks = 4;
  q.groups = groups;
  q.counts = counts;
  q.in_place = buffers_in_place(q.coll, groups, counts, 4, send, recv);  // 3 of 4 in place
  CHECK(q.in_place);
  plan p;
  REQUIRE(make_plan(q, p));
  CHECK(validate_buffers(p, send, recv).to_string() ==
        "invalid buffer: in place, the output of rank 1 must start 8 bytes from its input (NCCL's "
        "in-place layout); it starts 12");
}

// One rank's buffers in a call (rank_layout_of) and the count a pair of buffers stands for
// (count_of), against layouts worked out by hand from the collectives' definitions.
#include "relay/plan/rank_layout.hpp"

#include <catch2/catch.hpp>

using namespace relay;

namespace {

call_shape layout_shape(collective c, group_list groups, int ranks,
                        std::vector<std::int64_t> counts) {
  call_shape s;
  assign_call(s, c, groups, ranks, counts, dtype::float32, reduce_op::sum, call_options{});
  return s;
}

}  // namespace

TEST_CASE("rank_layout_of: each rank's sizes and in-place offsets, by hand", "[plan][layout]") {
  // N = 8, fused A = 2: {0,1} {2,3} {4,5} {6,7}, counts 5, 6, 7, 8.
  const group_list pairs{{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  rank_layout l;
  REQUIRE(rank_layout_of(layout_shape(collective::reduce_scatter, pairs, 8, {5, 6, 7, 8}), 3, l));
  CHECK(l == rank_layout{1, 1, 2, 12, 6, 0, 6, true});
  REQUIRE(rank_layout_of(layout_shape(collective::all_gather, pairs, 8, {5, 6, 7, 8}), 7, l));
  CHECK(l == rank_layout{3, 1, 2, 8, 16, 8, 0, true});
  REQUIRE(rank_layout_of(layout_shape(collective::allreduce, pairs, 8, {5, 6, 7, 8}), 4, l));
  CHECK(l == rank_layout{2, 0, 2, 7, 7, 0, 0, true});
  // Single A = 4 {2, 5, 6, 1} of N = 8, count 3: rank 6 is third; rank 0 helps.
  const group_list one{{2, 5, 6, 1}};
  REQUIRE(rank_layout_of(layout_shape(collective::all_to_all, one, 8, {3}), 6, l));
  CHECK(l == rank_layout{0, 2, 4, 12, 12, 0, 0, false});
  REQUIRE(rank_layout_of(layout_shape(collective::all_to_all, one, 8, {3}), 0, l));
  CHECK(l == rank_layout{-1, -1, 4, 0, 0, 0, 0, false});
  // A = N: the direct route runs it, so it has sizes; the relay route's need of a helper is the
  // call's to report.
  REQUIRE(rank_layout_of(layout_shape(collective::all_gather, {{1, 0}}, 2, {6}), 0, l));
  CHECK(l == rank_layout{0, 1, 2, 6, 12, 6, 0, true});
}

TEST_CASE("rank_layout_of refuses what the call refuses, and writes nothing", "[plan][layout]") {
  const rank_layout untouched{9, 9, 9, 9, 9, 9, 9, true};
  rank_layout l = untouched;
  status s = rank_layout_of(layout_shape(collective::allreduce, {{0, 1}, {1, 3}}, 4, {4, 4}), 0, l);
  CHECK(s.code() == errc::invalid_group);
  CHECK(s.message() == "rank 1 is active in two groups (0 and 1)");
  s = rank_layout_of(layout_shape(collective::allreduce, {{0, 1}, {2, 3}}, 4, {4, -1}), 0, l);
  CHECK(s.code() == errc::invalid_count);
  s = rank_layout_of(layout_shape(collective::allreduce, {{0, 1, 2}}, 8, {3}), 0, l);
  CHECK(s.code() == errc::invalid_schedule);
  s = rank_layout_of(layout_shape(collective::allreduce, {{0, 1}, {2, 3}}, 4, {4, 4}), 4, l);
  CHECK(s.code() == errc::invalid_argument);
  CHECK(s.message() == "rank 4 is outside 0..3");
  CHECK(l == untouched);
}

TEST_CASE("count_of reads the sizing rule backwards and checks it forwards", "[plan][layout]") {
  std::int64_t n = -1;
  REQUIRE(count_of(collective::all_to_all, 4, 12, 12, n));
  CHECK(n == 3);
  REQUIRE(count_of(collective::reduce_scatter, 2, 14, 7, n));
  CHECK(n == 7);
  REQUIRE(count_of(collective::all_gather, 4, 6, 24, n));
  CHECK(n == 6);
  REQUIRE(count_of(collective::allreduce, 2, 9, 9, n));
  CHECK(n == 9);
  REQUIRE(count_of(collective::allreduce, 3, 0, 0, n));
  CHECK(n == 0);
  n = -1;
  status s = count_of(collective::all_to_all, 4, 13, 13, n);
  CHECK(s.code() == errc::invalid_count);
  CHECK(s.message() ==
        "all-to-all among 4 active ranks takes an input of 12 and an output of 12 elements for "
        "count 3, not 13 and 13");
  CHECK(count_of(collective::reduce_scatter, 2, 14, 8, n).code() == errc::invalid_count);
  CHECK(count_of(collective::all_gather, 2, 4, 7, n).code() == errc::invalid_count);
  CHECK(count_of(collective::allreduce, 2, 9, 8, n).code() == errc::invalid_count);
  CHECK(count_of(collective::allreduce, 0, 9, 9, n).code() == errc::invalid_group);
  CHECK(count_of(collective::allreduce, 2, -1, -1, n).code() == errc::invalid_count);
  CHECK(n == -1);
}

TEST_CASE("a named mode must be the one the groups make", "[plan][layout]") {
  CHECK(mode_of_groups(1) == mode::single);
  CHECK(mode_of_groups(4) == mode::fused);
  CHECK(check_named_mode(mode::single, 1));
  CHECK(check_named_mode(mode::fused, 2));
  const status fused = check_named_mode(mode::fused, 1);
  CHECK(fused.code() == errc::invalid_group);
  CHECK(fused.message() == "mode fused takes several groups; 1 was given");
  const status single = check_named_mode(mode::single, 3);
  CHECK(single.code() == errc::invalid_group);
  CHECK(single.message() == "mode single takes exactly one group, not 3");
}

// The shape of the generated schedules, checked against the spec's description by hand.
#include "relay/schedule/generate.hpp"

#include <algorithm>
#include <cstring>

#include <catch2/catch.hpp>

#include "relay/schedule/evaluate.hpp"

using namespace relay;

namespace {

// The transfers one rank sends in one step, as (destination rank, count) at group count n.
std::vector<std::pair<int, std::int64_t>> sends(const schedule_view& s, int step, int from,
                                                std::int64_t n) {
  const std::vector<std::int64_t> counts(static_cast<std::size_t>(s.spec().groups()), n);
  const concrete_schedule p = evaluate(s, counts);
  std::vector<std::pair<int, std::int64_t>> out;
  for (const concrete_op& op : p.ops)
    if (op.step == step && op.phase == phase::transfer && p.sources_of(op)[0].rank == from &&
        op.dst.rank != from)
      out.push_back({op.dst.rank, op.count});
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("A=2 relay: two steps, numChunks = H+2, one chunk on every link", "[schedule]") {
  constexpr auto& s = schedule_v<collective::allreduce, 2, 8, mode::single>;
  STATIC_REQUIRE(s.header.steps == 2);
  // n = 8 * 128 * 10: the aligned chunk is n/8 = 1280 and dirB absorbs nothing extra.
  const std::int64_t n = 10240, c = 1280;
  // Step 1: rank 0 scatters one chunk to each of the 6 helpers and one direct piece to rank 1.
  const auto step1 = sends(s, 1, 0, n);
  REQUIRE(step1.size() == 7);
  for (const auto& [to, length] : step1)
    CHECK(length == c);
  CHECK(step1.front().first == 1);
  CHECK(step1.back().first == 7);
  // Step 2: each helper returns one reduced chunk to each active rank.
  const auto helper = sends(s, 2, 5, n);
  REQUIRE(helper.size() == 2);
  CHECK(helper[0] == std::pair<int, std::int64_t>{0, c});
  CHECK(helper[1] == std::pair<int, std::int64_t>{1, c});
  // Helpers send nothing in step 1 and receive nothing from each other.
  CHECK(sends(s, 1, 5, n).empty());
}

TEST_CASE("A=2 relay: the zero-chunk fallback splits n over the direct link", "[schedule]") {
  constexpr auto& s = schedule_v<collective::all_gather, 2, 8, mode::single>;
  // n = 1001 < 8 * 128: no aligned chunk; dirA = n/2 = 500 in step 1, dirB = 501 in step 2.
  CHECK(sends(s, 1, 0, 1001) == std::vector<std::pair<int, std::int64_t>>{{1, 500}});
  CHECK(sends(s, 2, 0, 1001) == std::vector<std::pair<int, std::int64_t>>{{1, 501}});
  CHECK(sends(s, 1, 4, 1001).empty());
}

TEST_CASE("legacy A=2: three steps, numChunks = H+1", "[schedule]") {
  constexpr auto& s = schedule_v<collective::reduce_scatter, 2, 8, mode::single, route::legacy>;
  STATIC_REQUIRE(s.header.steps == 3);
  const std::int64_t n = 7 * 128 * 3;  // chunk = n/7 = 384
  CHECK(sends(s, 1, 1, n).size() == 6);
  CHECK(sends(s, 2, 1, n).empty());  // the direct link idles while helpers forward
  CHECK(sends(s, 3, 1, n) == std::vector<std::pair<int, std::int64_t>>{{0, 384}});
}

TEST_CASE("A=4 relay allreduce at 500 permille: offload and direct halves", "[schedule]") {
  constexpr auto& s = schedule_v<collective::allreduce, 4, 8, mode::single, route::relay, 500>;
  const std::int64_t n = 4 * 128 * 100;  // pO = n/2: each helper owns n/8 = 6400
  const auto step1 = sends(s, 1, 0, n);
  REQUIRE(step1.size() == 7);  // 3 direct pieces + 4 helper pieces
  for (const auto& [to, length] : step1)
    CHECK(length == 6400);
}

TEST_CASE("A=4 reduce-scatter: helpers gather (A-1) slices, return one", "[schedule]") {
  constexpr auto& s = schedule_v<collective::reduce_scatter, 4, 8, mode::single>;
  const std::int64_t n = 8 * 128, c = 128;
  const auto to_helpers = sends(s, 1, 0, n);
  // 3 slices to each of 4 helpers, (A-1)c = 384 to each of 3 actives.
  CHECK(std::count(to_helpers.begin(), to_helpers.end(), std::pair<int, std::int64_t>{4, c}) == 3);
  CHECK(std::count(to_helpers.begin(), to_helpers.end(), std::pair<int, std::int64_t>{1, 3 * c}) ==
        1);
  CHECK(sends(s, 2, 6, n).size() == 4);  // one reduced slice per owner
  CHECK(scratch_elements(s.header, false, n) == 12 * c);
}

TEST_CASE("run-time and compile-time schedules are the same", "[schedule]") {
  constexpr auto& s = schedule_v<collective::all_to_all, 4, 8>;
  const auto r = build_schedule({collective::all_to_all, 4, 8});
  REQUIRE(r.has_value());
  CHECK(std::ranges::equal(r->ops, s.ops));
  CHECK(std::ranges::equal(r->sources, s.sources));
}

TEST_CASE("specs without a schedule are refused with the reason", "[schedule]") {
  auto error = [](schedule_spec s) { return std::string(spec_error(s) ? spec_error(s) : ""); };
  CHECK_THAT(error({collective::allreduce, 3, 8}), Catch::Contains("power of two"));
  CHECK_THAT(error({collective::allreduce, 8, 8}), Catch::Contains("at least one helper"));
  CHECK_THAT(error({collective::allreduce, 4, 6}), Catch::Contains("divide N"));
  CHECK(error({collective::allreduce, 4, 6, mode::single}).empty());
  CHECK_THAT(error({collective::allreduce, 4, 8, mode::fused, route::legacy}),
             Catch::Contains("A=2 only"));
  CHECK_THAT(error({collective::all_gather, 2, 8, mode::fused, route::relay, 500}),
             Catch::Contains("allreduce relay"));
  CHECK_FALSE(build_schedule({collective::allreduce, 3, 8}).has_value());
  // Pipelining: any single group (any A), never a fused one.
  CHECK(error({collective::allreduce, 4, 8, mode::single, route::pipelined, 0, 4}).empty());
  CHECK(error({collective::all_to_all, 8, 16, mode::single, route::pipelined, 0, 2}).empty());
  CHECK(error({collective::all_gather, 4, 6, mode::single, route::pipelined, 0, 64}).empty());
  CHECK_THAT(error({collective::allreduce, 4, 8, mode::fused, route::pipelined, 0, 4}),
             Catch::Contains("single groups only"));
  CHECK_THAT(error({collective::allreduce, 4, 8, mode::single, route::pipelined, 0, 1}),
             Catch::Contains("2..64 tiles"));
  CHECK_THAT(error({collective::allreduce, 4, 4, mode::single, route::pipelined, 0, 4}),
             Catch::Contains("at least one helper"));
}

TEST_CASE("pipelined A=4 all-gather: tiles to the helpers, forwards back, direct pieces",
          "[schedule][pipelined]") {
  // N=8, T=4: n = 29c. Step 1: a_0 sends chunk i of tile 0 (c) to each helper and the first
  // direct piece (c) to each other active (its own input to its output is local); no helper
  // sends. Step 3: a_0 sends tile 2's chunk to
  // each helper and a 3c piece to each active; helper 4 forwards chunk 0 of tile 1 of the other
  // three actives to each active (3 copies of c each).
  const schedule s =
      *build_schedule({collective::all_gather, 4, 8, mode::single, route::pipelined, 0, 4});
  CHECK(s.header.steps == 5);
  CHECK(s.header.quanta[0].den == 29);
  const std::int64_t n = 29 * 128, c = 128;
  CHECK(sends(s, 1, 0, n) == std::vector<std::pair<int, std::int64_t>>{
                                 {1, c}, {2, c}, {3, c}, {4, c}, {5, c}, {6, c}, {7, c}});
  CHECK(sends(s, 1, 4, n).empty());
  CHECK(sends(s, 3, 0, n) ==
        std::vector<std::pair<int, std::int64_t>>{
            {1, 3 * c}, {2, 3 * c}, {3, 3 * c}, {4, c}, {5, c}, {6, c}, {7, c}});
  CHECK(sends(s, 3, 4, n).size() == 12);  // to each of 4 actives, chunk 0 of 3 others
  CHECK(scratch_elements(s.header, false, n) == 8 * c);  // two tiles of A chunks
}

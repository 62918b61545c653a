// Cutting a call into pieces (plan/pieces.hpp): the counts, the runs of a rank's buffers and the
// cut itself, against values worked out by hand from the rules; then, over random calls and
// areas, that the pieces tile every group's elements and every piece's plan fits.
#include "relay/plan/pieces.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace relay;

namespace {

call_shape shape_of(collective c, group_list groups, int ranks, std::vector<std::int64_t> counts,
                    route rt = route::direct) {
  call_shape s;
  call_options o;
  o.route = rt;
  assign_call(s, c, groups, ranks, counts, dtype::float32, reduce_op::sum, o);
  return s;
}

piece_cut cut_of(const call_shape& s, std::uint64_t area) {
  const call_choice chosen{s.route, s.permille, s.tiles, {}};
  plan whole;
  REQUIRE(make_plan(s, chosen, whole));
  return cut_into_pieces(s, chosen, whole, area);
}

}  // namespace

TEST_CASE("a piece's counts: every group's step, then each group's tail", "[plan][pieces]") {
  // Counts 1000 and 300 in 3 pieces of alignment 128: steps ceil(1000/3) = 334 -> 384 and
  // ceil(300/3) = 100 -> 128; the last piece takes 1000 - 768 = 232 and 300 - 256 = 44.
  const std::vector<std::int64_t> counts{1000, 300};
  const piece_cut cut{3, {384, 128}};
  std::vector<std::int64_t> n;
  piece_counts(counts, cut, 0, n);
  CHECK(n == std::vector<std::int64_t>{384, 128});
  piece_counts(counts, cut, 1, n);
  CHECK(n == std::vector<std::int64_t>{384, 128});
  piece_counts(counts, cut, 2, n);
  CHECK(n == std::vector<std::int64_t>{232, 44});
  const std::vector<piece_shape> shapes = piece_shapes(counts, cut);
  REQUIRE(shapes.size() == 2);
  CHECK(shapes[0].first == 0);
  CHECK(shapes[0].counts == std::vector<std::int64_t>{384, 128});
  CHECK(shapes[1].first == 2);
  CHECK(shapes[1].counts == std::vector<std::int64_t>{232, 44});
  // Groups that end at different pieces (1000 in steps of 256: 4 pieces, the last 232; 300 in
  // steps of 128: 3 pieces, then none) and a group of count 0 (never any).
  const std::vector<std::int64_t> three{1000, 300, 0};
  const piece_cut uneven{4, {256, 128, 0}};
  const std::vector<piece_shape> s = piece_shapes(three, uneven);
  REQUIRE(s.size() == 3);
  CHECK(s[0].first == 0);
  CHECK(s[0].counts == std::vector<std::int64_t>{256, 128, 0});
  CHECK(s[1].first == 2);
  CHECK(s[1].counts == std::vector<std::int64_t>{256, 44, 0});
  CHECK(s[2].first == 3);
  CHECK(s[2].counts == std::vector<std::int64_t>{232, 0, 0});
}

TEST_CASE("a piece's runs of a rank's buffers: one per block, strided by the count",
          "[plan][pieces]") {
  // Reduce-scatter, fused A = 2 of N = 4, counts 1000 and 300, the cut above (steps 384, 128).
  const group_list pairs{{0, 1}, {2, 3}};
  const std::vector<std::int64_t> counts{1000, 300};
  const piece_cut cut{3, {384, 128}};
  // Rank 1 (group 0), piece 2: elements 768.. of each of its 2 input blocks of 1000 floats.
  CHECK(runs_of_piece(collective::reduce_scatter, pairs, counts, cut, 2, 1, 4, true) ==
        piece_runs{3072, 928, 4000, 2});
  // Its output is one block.
  CHECK(runs_of_piece(collective::reduce_scatter, pairs, counts, cut, 2, 1, 4, false) ==
        piece_runs{3072, 928, 4000, 1});
  // Rank 2 (group 1), piece 1 of an all-gather: its input one block, its output 2, 128 at 128.
  CHECK(runs_of_piece(collective::all_gather, pairs, counts, cut, 1, 2, 4, true) ==
        piece_runs{512, 512, 1200, 1});
  CHECK(runs_of_piece(collective::all_gather, pairs, counts, cut, 1, 2, 4, false) ==
        piece_runs{512, 512, 1200, 2});
  // All-to-all: A blocks each way.
  CHECK(runs_of_piece(collective::all_to_all, pairs, counts, cut, 0, 3, 4, false) ==
        piece_runs{0, 512, 1200, 2});
  // A helper has no buffers, nor has a group whose piece is empty.
  const group_list one{{0, 1}};
  CHECK(runs_of_piece(collective::allreduce, one, std::vector<std::int64_t>{1000}, {3, {384}}, 1, 3,
                      4, true) == piece_runs{});
  CHECK(runs_of_piece(collective::allreduce, pairs, std::vector<std::int64_t>{1000, 0},
                      {3, {384, 0}}, 1, 2, 4, true) == piece_runs{});
  // A call that runs whole: its buffers as they are.
  CHECK(runs_of_piece(collective::all_to_all, pairs, counts, {}, 0, 0, 2, true) ==
        piece_runs{0, 2000, 2000, 2});
}

TEST_CASE("the cut: the fewest pieces whose plans fit the area", "[plan][pieces]") {
  // Allreduce A = 2 of N = 2 on the direct route, float32: a rank's area is its input, its
  // output and the peer's copy in scratch, 3 * 4 bytes an element (whole 256-byte multiples
  // here), so 8192 elements need 98304 bytes.
  const call_shape s = shape_of(collective::allreduce, {{0, 1}}, 2, {8192});
  CHECK(cut_of(s, 98304) == piece_cut{});  // fits
  CHECK(cut_of(s, 0) == piece_cut{});      // no bound
  // 32768 bytes hold 2730 elements: 3 pieces would take ceil(8192 / 3) = 2731 -> 2816 each
  // (a multiple of the alignment, 128); 4 pieces of 2048 fit.
  CHECK(cut_of(s, 32768) == piece_cut{4, {2048}});
  // 4096 bytes hold 341 elements: the largest multiple of 128 below is 256, 32 pieces of it.
  CHECK(cut_of(s, 4096) == piece_cut{32, {256}});
  // Not even 128 elements (1536 bytes) fit in 1000: no cut; the call stays whole (and the
  // transport refuses it, naming its size).
  CHECK(cut_of(s, 1000) == piece_cut{});
}

TEST_CASE("random calls and areas: the pieces tile every group and every plan fits",
          "[plan][pieces]") {
  std::mt19937_64 rng(20261206);
  constexpr collective colls[] = {collective::allreduce, collective::reduce_scatter,
                                  collective::all_gather, collective::all_to_all};
  constexpr route routes[] = {route::direct, route::relay};
  for (int i = 0; i < 300; ++i) {
    const std::uint64_t seed = rng();
    std::mt19937_64 r(seed);
    const collective c = colls[r() % 4];
    const bool fused = r() % 2 == 0;
    const int A = r() % 2 == 0 ? 2 : 4;
    group_list groups;
    std::vector<std::int64_t> counts;
    for (int g = 0; g < (fused ? 8 / A : 1); ++g) {
      groups.emplace_back();
      for (int k = 0; k < A; ++k)
        groups.back().push_back(g * A + k);
      counts.push_back(static_cast<std::int64_t>(r() % 3 == 0 ? r() % 50 : r() % 40000));
    }
    const call_shape s = shape_of(c, groups, 8, counts, routes[r() % 2]);
    const call_choice chosen{s.route, 0, 0, {}};
    plan whole;
    REQUIRE(make_plan(s, chosen, whole));
    const std::uint64_t area = 4096 + r() % 400000;
    const piece_cut cut = cut_into_pieces(s, chosen, whole, area);
    INFO("seed " << seed << " area " << area << ": " << describe(s));
    if (largest_area(whole) <= area) {
      CHECK(cut == piece_cut{});
      continue;
    }
    if (cut.pieces == 1) continue;  // no cut fits (checked by hand above)
    // Every element of every group in exactly one piece, in order; every piece's counts are
    // those of the last distinct shape at or before it.
    const std::vector<piece_shape> shapes = piece_shapes(counts, cut);
    REQUIRE(!shapes.empty());
    CHECK(shapes.front().first == 0);
    std::vector<std::int64_t> covered(counts.size(), 0), n;
    std::size_t at_shape = 0;
    for (std::uint64_t j = 0; j < cut.pieces; ++j) {
      piece_counts(counts, cut, j, n);
      while (at_shape + 1 < shapes.size() && shapes[at_shape + 1].first <= j)
        ++at_shape;
      CHECK(n == shapes[at_shape].counts);
      for (std::size_t g = 0; g < counts.size(); ++g) {
        const piece_runs at = runs_of_piece(c, groups, counts, cut, j, groups[g][0], 4, true);
        if (n[g] > 0) CHECK(at.offset == static_cast<std::size_t>(covered[g]) * 4);
        covered[g] += n[g];
      }
    }
    CHECK(covered == counts);
    // Every distinct piece's plan fits.
    call_shape piece = s;
    for (const piece_shape& p : shapes) {
      piece.counts = p.counts;
      plan made;
      REQUIRE(make_plan(piece, chosen, made));
      CHECK(largest_area(made) <= area);
    }
  }
}

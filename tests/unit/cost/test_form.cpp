// The form model (cost/form.hpp) and the form chosen (cost/choose.hpp): hand-worked prices, a
// plan's stages, and the choice on every path.
#include "relay/cost/form.hpp"

#include <catch2/catch.hpp>
#include <string_view>

#include "relay/cost/choose.hpp"
#include "support/plan_builder.hpp"

using namespace relay;

TEST_CASE("the forms' prices, worked by hand", "[cost]") {
  const form_costs c{4e-6, 1.5e-6, 0.5e-6};
  // Every stage within one round in both forms: stepped 4 launches + 4 tiles = 16 + 2 = 18 us;
  // one-shot 1 launch + 3 barriers + 4 tiles = 4 + 4.5 + 2 = 10.5 us.
  form_prices p = price_forms({4, 2, 2, 4}, c, 132, 1056);
  CHECK(p.stepped == Approx(18e-6));
  CHECK(p.one_shot == Approx(10.5e-6));
  CHECK(p.one_shot_wins());
  // Large stages: the one-shot's 132 blocks take 8, 4, 4 and 8 rounds (1024 / 132 = 7.8,
  // 512 / 132 = 3.9): 4 + 4.5 + 24 * 0.5 = 20.5 us against stepped's 16 + 4 * 0.5 = 18 us.
  p = price_forms({1024, 512, 512, 1024}, c, 132, 1056);
  CHECK(p.stepped == Approx(18e-6));
  CHECK(p.one_shot == Approx(20.5e-6));
  CHECK_FALSE(p.one_shot_wins());
  // A barrier dearer than a launch: stepped wins at any size (3 + 1.5 against 1 + 4 + 1.5 us).
  p = price_forms({1, 1, 1}, {1e-6, 2e-6, 0.5e-6}, 132, 1056);
  CHECK(p.stepped == Approx(4.5e-6));
  CHECK(p.one_shot == Approx(6.5e-6));
  CHECK_FALSE(p.one_shot_wins());
}

TEST_CASE("a plan's stages: the copy in, each phase's busiest rank, the copy out", "[cost]") {
  // Direct allreduce, one pair of N=2, 8192 int32 (32 KiB a rank), tiles of 16 KiB. Each rank
  // pushes its whole input (2 tiles) into its peer's scratch, then reduces its input and the
  // peer's copy into its output (2 tiles): stages 2 (copy in), 2, 2, 2 (copy out).
  plan_request q = test::direct_allreduce(mode::fused, 2, {{0, 1}}, {8192});
  plan p;
  REQUIRE(make_plan(q, p));
  CHECK(plan_stages(p, 16384) == std::vector<std::uint64_t>{2, 2, 2, 2});
  // A tile of 12 KiB: 32 KiB is 3 tiles (2.67 rounded up) everywhere.
  CHECK(plan_stages(p, 12288) == std::vector<std::uint64_t>{3, 3, 3, 3});
  // Uneven counts: one rank of the pair moves what the busiest moves. Fused A=2 of N=4 with
  // counts 8192 and 2048: the second pair's stages are smaller, the first's are priced.
  q = test::direct_allreduce(mode::fused, 4, {{0, 1}, {2, 3}}, {8192, 2048});
  REQUIRE(make_plan(q, p));
  CHECK(plan_stages(p, 16384) == std::vector<std::uint64_t>{2, 2, 2, 2});
}

TEST_CASE("the fitted constants choose the form where the measured crossover was", "[cost]") {
  // 2 processes on one H200 (priced grids 132 / 2 = 66 and 1056 / 2 = 528), direct allreduce A=2:
  // 4 stages of t tiles. Measured (bench/results/2026-12-01-h200-ipc-agreement): one-shot faster
  // up to 4 MB, the forms even at 8 MB, stepped faster from 16 MB. By hand at 4 MB (256 tiles):
  // stepped 4 * 3.7 + 4 * 1 * 0.3 = 16.0 us, one-shot 3.7 + 3 * 1.5 + 4 * 4 * 0.3 = 13.0 us; at
  // 8 MB (512 tiles): stepped 16.0 us, one-shot 8.2 + 4 * 8 * 0.3 = 17.8 us.
  const form_costs c{};
  auto priced = [&](std::int64_t bytes) {
    plan p;
    REQUIRE(make_plan(test::direct_allreduce(mode::fused, 2, {{0, 1}}, {bytes / 4}), p));
    return price_forms(plan_stages(p, 16384), c, 66, 528);
  };
  CHECK(priced(std::int64_t{1} << 20).one_shot_wins());
  const form_prices at4 = priced(std::int64_t{4} << 20);
  CHECK(at4.stepped == Approx(16.0e-6));
  CHECK(at4.one_shot == Approx(13.0e-6));
  const form_prices at8 = priced(std::int64_t{8} << 20);
  CHECK(at8.stepped == Approx(16.0e-6));
  CHECK(at8.one_shot == Approx(17.8e-6));
  CHECK_FALSE(priced(std::int64_t{16} << 20).one_shot_wins());
}

TEST_CASE(
    "the form chosen: ll, else the pull, on a direct route where it fits, not on a relay "
    "route",
    "[cost]") {
  // The plan's forms priced so that the stepped one wins, and so that the one-shot one does.
  form_prices stepped_wins, one_shot_wins;
  stepped_wins.stepped = 10e-6, stepped_wins.one_shot = 20e-6;
  one_shot_wins.stepped = 20e-6, one_shot_wins.one_shot = 10e-6;
  struct row {
    call_form form;
    bool one_shot_fits, pull_fits, ll_fits, direct;
    const form_prices* prices;
    std::string_view expected;
  };
  const row rows[] = {
      // Automatic, direct route: ll wherever it fits, else the pull wherever it fits, whatever the
      // plan's prices (their work is the plan's without the staging: measured faster at every
      // size to their caps).
      {call_form::automatic, true, true, true, true, &stepped_wins, "ll"},
      {call_form::automatic, true, true, true, true, &one_shot_wins, "ll"},
      {call_form::automatic, true, true, false, true, &stepped_wins, "pull"},
      {call_form::automatic, true, true, false, true, &one_shot_wins, "pull"},
      // Where neither fits or applies, the plan's forms by price.
      {call_form::automatic, true, false, false, true, &stepped_wins, "stepped"},
      {call_form::automatic, true, false, false, true, &one_shot_wins, "one-shot"},
      {call_form::automatic, false, false, false, true, &one_shot_wins, "stepped"},
      // A relay route keeps the plan's forms: ll and the pull would leave the helpers' links idle.
      {call_form::automatic, true, true, true, false, &one_shot_wins, "one-shot"},
      {call_form::automatic, true, true, true, false, &stepped_wins, "stepped"},
      // Forced: that form where it can run, on any route; ll falls back to the pull, the pull
      // to the one-shot form, and every form to the stepped one.
      {call_form::ll, true, true, true, false, &stepped_wins, "ll"},
      {call_form::ll, true, true, false, true, &stepped_wins, "pull"},
      {call_form::ll, true, false, false, true, &stepped_wins, "one-shot"},
      {call_form::ll, false, false, false, true, &one_shot_wins, "stepped"},
      {call_form::pull, true, true, true, false, &stepped_wins, "pull"},
      {call_form::pull, true, true, true, true, &stepped_wins, "pull"},
      {call_form::pull, true, false, false, true, &stepped_wins, "one-shot"},
      {call_form::pull, false, false, false, true, &one_shot_wins, "stepped"},
      {call_form::one_shot, true, true, true, true, &stepped_wins, "one-shot"},
      {call_form::one_shot, false, false, false, true, &one_shot_wins, "stepped"},
      {call_form::stepped, true, true, true, true, &one_shot_wins, "stepped"},
  };
  // choose_form reads the plan's route only.
  plan direct, relay_route;
  direct.spec.route = route::direct;
  relay_route.spec.route = route::relay;
  for (const row& r : rows) {
    const form_choice c = choose_form(r.form, r.direct ? direct : relay_route,
                                      {r.one_shot_fits, r.pull_fits, r.ll_fits}, *r.prices);
    const std::string_view got = c.ll         ? "ll"
                                 : c.pull     ? "pull"
                                 : c.one_shot ? "one-shot"
                                              : "stepped";
    INFO("form " << static_cast<int>(r.form) << ", one-shot fits " << r.one_shot_fits
                 << ", pull fits " << r.pull_fits << ", ll fits " << r.ll_fits << ", direct route "
                 << r.direct);
    CHECK(got == r.expected);
    // ll runs a call of the pull form's rules, in one launch.
    if (c.ll) CHECK((c.pull && c.one_shot));
  }
}

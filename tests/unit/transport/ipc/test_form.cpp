// The ipc transport's form model (transport/ipc/form.hpp): hand-worked prices and a plan's stages.
#include "relay/transport/ipc/form.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <string_view>

#include "relay/cost/choose.hpp"
#include "support/plan_builder.hpp"

using namespace relay;

TEST_CASE("the forms' prices, worked by hand", "[cost][ipc]") {
  const ipc_form_costs c{4e-6, 1.5e-6, 0.5e-6};
  // Every stage within one round in both forms: stepped 4 launches + 4 tiles = 16 + 2 = 18 us;
  // one-shot 1 launch + 3 barriers + 4 tiles = 4 + 4.5 + 2 = 10.5 us.
  ipc_form_prices p = price_ipc_forms({4, 2, 2, 4}, c, 132, 1056);
  CHECK(p.stepped == Approx(18e-6));
  CHECK(p.one_shot == Approx(10.5e-6));
  CHECK(p.one_shot_wins());
  // Large stages: the one-shot's 132 blocks take 8, 4, 4 and 8 rounds (1024 / 132 = 7.8,
  // 512 / 132 = 3.9): 4 + 4.5 + 24 * 0.5 = 20.5 us against stepped's 16 + 4 * 0.5 = 18 us.
  p = price_ipc_forms({1024, 512, 512, 1024}, c, 132, 1056);
  CHECK(p.stepped == Approx(18e-6));
  CHECK(p.one_shot == Approx(20.5e-6));
  CHECK_FALSE(p.one_shot_wins());
  // A barrier dearer than a launch: stepped wins at any size (3 + 1.5 against 1 + 4 + 1.5 us).
  p = price_ipc_forms({1, 1, 1}, {1e-6, 2e-6, 0.5e-6}, 132, 1056);
  CHECK(p.stepped == Approx(4.5e-6));
  CHECK(p.one_shot == Approx(6.5e-6));
  CHECK_FALSE(p.one_shot_wins());
}

TEST_CASE("a plan's stages: the copy in, each phase's busiest rank, the copy out", "[cost][ipc]") {
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

TEST_CASE("ranks that share a device divide its grids", "[cost][ipc]") {
  auto device = [](std::int64_t sms, std::int64_t resident, const char* place) {
    ipc_device d;
    d.sms = sms;
    d.resident = resident;
    for (std::size_t i = 0; place[i] != '\0'; ++i)
      d.place[i] = place[i];
    return d;
  };
  // 8 ranks on one H200 (132 multiprocessors, 8 step-kernel blocks each): 132 / 8 = 16 blocks of
  // the one-shot form and 1056 / 8 = 132 of the stepped form per rank.
  std::vector<ipc_device> one(8, device(132, 1056, "0000:3b:00.0"));
  ipc_grids g = ipc_grids_of(one, 5);
  CHECK(g.share == 8);
  CHECK(g.one_shot == 16);
  CHECK(g.stepped == 132);
  CHECK(g.priced_one_shot == 16);
  CHECK(g.priced_stepped == 132);
  // One rank per device: the whole device.
  std::vector<ipc_device> own = {device(132, 1056, "0000:3b:00.0"),
                                 device(132, 1056, "0000:5d:00.0")};
  g = ipc_grids_of(own, 1);
  CHECK(g.share == 1);
  CHECK(g.one_shot == 132);
  CHECK(g.stepped == 1056);
  // Ranks 0-2 share a device, rank 3 has one of its own with fewer resident blocks: rank 3
  // launches its whole device, and every rank prices with the smallest share (132 / 3 = 44,
  // min(1056 / 3, 300) = 300).
  std::vector<ipc_device> mixed(3, device(132, 1056, "0000:3b:00.0"));
  mixed.push_back(device(132, 300, "0000:5d:00.0"));
  g = ipc_grids_of(mixed, 3);
  CHECK(g.share == 1);
  CHECK(g.one_shot == 132);
  CHECK(g.stepped == 300);
  CHECK(g.priced_one_shot == 44);
  CHECK(g.priced_stepped == 300);
  g = ipc_grids_of(mixed, 0);
  CHECK(g.share == 3);
  CHECK(g.one_shot == 44);
  CHECK(g.stepped == 352);
  // More ranks than multiprocessors: one block each still.
  std::vector<ipc_device> crowded(4, device(2, 3, "x"));
  g = ipc_grids_of(crowded, 0);
  CHECK(g.one_shot == 1);
  CHECK(g.stepped == 1);
}

TEST_CASE("communicators split from one job divide a device among all of its ranks there",
          "[cost][ipc]") {
  auto device = [](std::int64_t sms, std::int64_t resident, const char* place, int at_least) {
    ipc_device d;
    d.sms = sms;
    d.resident = resident;
    for (std::size_t i = 0; place[i] != '\0'; ++i)
      d.place[i] = place[i];
    d.share_at_least = at_least;
    return d;
  };
  // {share, divided, one_shot, stepped, priced_one_shot, priced_stepped}, worked out by hand.
  using grids = std::array<std::uint64_t, 6>;
  auto of = [](const std::vector<ipc_device>& all, int me) {
    const ipc_grids g = ipc_grids_of(all, me);
    return grids{static_cast<std::uint64_t>(g.share),
                 static_cast<std::uint64_t>(g.divided),
                 g.one_shot,
                 g.stepped,
                 g.priced_one_shot,
                 g.priced_stepped};
  };
  // A pair split from a job of 8 ranks on one H200 (the parent's count, 8): the pair divides the
  // device as the 8 do, 132 / 8 = 16 and 1056 / 8 = 132 blocks, so that the job's 4 pairs fit at
  // once. Its own count stays 2 (the ranks of this communicator there).
  const std::vector<ipc_device> pair(2, device(132, 1056, "0000:3b:00.0", 8));
  CHECK(of(pair, 1) == grids{2, 8, 16, 132, 16, 132});
  // A floor below the communicator's own count changes nothing: 3 ranks there divide by 3.
  std::vector<ipc_device> mixed(3, device(132, 1056, "0000:3b:00.0", 2));
  mixed.push_back(device(132, 300, "0000:5d:00.0", 4));
  CHECK(of(mixed, 0) == grids{3, 3, 44, 352, 33, 75});
  // Rank 3's own device is divided by its floor, 4: 132 / 4 = 33 and 300 / 4 = 75; every rank
  // prices with the smallest grids of all.
  CHECK(of(mixed, 3) == grids{1, 4, 33, 75, 33, 75});
}

TEST_CASE("the fitted constants choose the form where the measured crossover was", "[cost][ipc]") {
  // 2 processes on one H200 (priced grids 132 / 2 = 66 and 1056 / 2 = 528), direct allreduce A=2:
  // 4 stages of t tiles. Measured (bench/results/2026-12-01-h200-ipc-agreement): one-shot faster
  // up to 4 MB, the forms even at 8 MB, stepped faster from 16 MB. By hand at 4 MB (256 tiles):
  // stepped 4 * 3.7 + 4 * 1 * 0.3 = 16.0 us, one-shot 3.7 + 3 * 1.5 + 4 * 4 * 0.3 = 13.0 us; at
  // 8 MB (512 tiles): stepped 16.0 us, one-shot 8.2 + 4 * 8 * 0.3 = 17.8 us.
  const ipc_form_costs c{};
  auto priced = [&](std::int64_t bytes) {
    plan p;
    REQUIRE(make_plan(test::direct_allreduce(mode::fused, 2, {{0, 1}}, {bytes / 4}), p));
    return price_ipc_forms(plan_stages(p, 16384), c, 66, 528);
  };
  CHECK(priced(std::int64_t{1} << 20).one_shot_wins());
  const ipc_form_prices at4 = priced(std::int64_t{4} << 20);
  CHECK(at4.stepped == Approx(16.0e-6));
  CHECK(at4.one_shot == Approx(13.0e-6));
  const ipc_form_prices at8 = priced(std::int64_t{8} << 20);
  CHECK(at8.stepped == Approx(16.0e-6));
  CHECK(at8.one_shot == Approx(17.8e-6));
  CHECK_FALSE(priced(std::int64_t{16} << 20).one_shot_wins());
}

TEST_CASE("the form chosen: the pull on a direct route where it fits, not on a relay route",
          "[cost][ipc]") {
  // The plan's forms priced so that the stepped one wins, and so that the one-shot one does.
  ipc_form_prices stepped_wins, one_shot_wins;
  stepped_wins.stepped = 10e-6, stepped_wins.one_shot = 20e-6;
  one_shot_wins.stepped = 20e-6, one_shot_wins.one_shot = 10e-6;
  struct row {
    ipc_form form;
    bool one_shot_fits, pull_fits, direct;
    const ipc_form_prices* prices;
    std::string_view expected;
  };
  const row rows[] = {
      // Automatic, direct route: the pull wherever it fits, whatever the plan's prices (its work
      // is the plan's without the staging: measured faster at every size to its cap).
      {ipc_form::automatic, true, true, true, &stepped_wins, "pull"},
      {ipc_form::automatic, true, true, true, &one_shot_wins, "pull"},
      // Where the pull does not fit or apply, the plan's forms by price.
      {ipc_form::automatic, true, false, true, &stepped_wins, "stepped"},
      {ipc_form::automatic, true, false, true, &one_shot_wins, "one-shot"},
      {ipc_form::automatic, false, false, true, &one_shot_wins, "stepped"},
      // A relay route keeps the plan's forms: the pull would leave the helpers' links idle.
      {ipc_form::automatic, true, true, false, &one_shot_wins, "one-shot"},
      {ipc_form::automatic, true, true, false, &stepped_wins, "stepped"},
      // Forced: that form where it can run, on any route.
      {ipc_form::pull, true, true, false, &stepped_wins, "pull"},
      {ipc_form::pull, true, false, true, &stepped_wins, "one-shot"},
      {ipc_form::pull, false, false, true, &one_shot_wins, "stepped"},
      {ipc_form::one_shot, true, true, true, &stepped_wins, "one-shot"},
      {ipc_form::one_shot, false, false, true, &one_shot_wins, "stepped"},
      {ipc_form::stepped, true, true, true, &one_shot_wins, "stepped"},
  };
  for (const row& r : rows) {
    const ipc_form_choice c =
        choose_ipc_form(r.form, r.one_shot_fits, r.pull_fits, r.direct, *r.prices);
    const std::string_view got = c.pull ? "pull" : c.one_shot ? "one-shot" : "stepped";
    INFO("form " << static_cast<int>(r.form) << ", one-shot fits " << r.one_shot_fits
                 << ", pull fits " << r.pull_fits << ", direct route " << r.direct);
    CHECK(got == r.expected);
  }
}

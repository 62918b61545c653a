// The ipc transport's grids (transport/ipc/grids.hpp): ranks that share a device divide it; every
// rank prices the forms with the smallest grids of all. Expected values by hand.
#include "relay/transport/ipc/grids.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <vector>

using namespace relay;
using namespace relay::ipc;

TEST_CASE("ranks that share a device divide its grids", "[transport][ipc]") {
  auto device = [](std::int64_t sms, std::int64_t resident, const char* place) {
    device_info d;
    d.sms = sms;
    d.resident = resident;
    for (std::size_t i = 0; place[i] != '\0'; ++i)
      d.place[i] = place[i];
    return d;
  };
  // 8 ranks on one H200 (132 multiprocessors, 8 step-kernel blocks each): 132 / 8 = 16 blocks of
  // the one-shot form and 1056 / 8 = 132 of the stepped form per rank.
  std::vector<device_info> one(8, device(132, 1056, "0000:3b:00.0"));
  grids g = grids_of(one, 5);
  CHECK(g.ranks_on_device == 8);
  CHECK(g.one_shot == 16);
  CHECK(g.stepped == 132);
  CHECK(g.priced_one_shot == 16);
  CHECK(g.priced_stepped == 132);
  // One rank per device: the whole device.
  std::vector<device_info> own = {device(132, 1056, "0000:3b:00.0"),
                                  device(132, 1056, "0000:5d:00.0")};
  g = grids_of(own, 1);
  CHECK(g.ranks_on_device == 1);
  CHECK(g.one_shot == 132);
  CHECK(g.stepped == 1056);
  // Ranks 0-2 share a device, rank 3 has one of its own with fewer resident blocks: rank 3
  // launches its whole device, and every rank prices with the smallest share (132 / 3 = 44,
  // min(1056 / 3, 300) = 300).
  std::vector<device_info> mixed(3, device(132, 1056, "0000:3b:00.0"));
  mixed.push_back(device(132, 300, "0000:5d:00.0"));
  g = grids_of(mixed, 3);
  CHECK(g.ranks_on_device == 1);
  CHECK(g.one_shot == 132);
  CHECK(g.stepped == 300);
  CHECK(g.priced_one_shot == 44);
  CHECK(g.priced_stepped == 300);
  g = grids_of(mixed, 0);
  CHECK(g.ranks_on_device == 3);
  CHECK(g.one_shot == 44);
  CHECK(g.stepped == 352);
  // More ranks than multiprocessors: one block each still.
  std::vector<device_info> crowded(4, device(2, 3, "x"));
  g = grids_of(crowded, 0);
  CHECK(g.one_shot == 1);
  CHECK(g.stepped == 1);
}

TEST_CASE("communicators split from one job divide a device among all of its ranks there",
          "[transport][ipc]") {
  auto device = [](std::int64_t sms, std::int64_t resident, const char* place, int at_least) {
    device_info d;
    d.sms = sms;
    d.resident = resident;
    for (std::size_t i = 0; place[i] != '\0'; ++i)
      d.place[i] = place[i];
    d.share_at_least = at_least;
    return d;
  };
  // {ranks_on_device, device_share, one_shot, stepped, priced_one_shot, priced_stepped}, worked out
  // by hand.
  using six = std::array<std::uint64_t, 6>;
  auto of = [](const std::vector<device_info>& all, int me) {
    const ipc::grids g = grids_of(all, me);
    return six{static_cast<std::uint64_t>(g.ranks_on_device),
               static_cast<std::uint64_t>(g.device_share),
               g.one_shot,
               g.stepped,
               g.priced_one_shot,
               g.priced_stepped};
  };
  // A pair split from a job of 8 ranks on one H200 (the parent's count, 8): the pair divides the
  // device as the 8 do, 132 / 8 = 16 and 1056 / 8 = 132 blocks, so that the job's 4 pairs fit at
  // once. Its own count stays 2 (the ranks of this communicator there).
  const std::vector<device_info> pair(2, device(132, 1056, "0000:3b:00.0", 8));
  CHECK(of(pair, 1) == six{2, 8, 16, 132, 16, 132});
  // A floor below the communicator's own count changes nothing: 3 ranks there divide by 3.
  std::vector<device_info> mixed(3, device(132, 1056, "0000:3b:00.0", 2));
  mixed.push_back(device(132, 300, "0000:5d:00.0", 4));
  CHECK(of(mixed, 0) == six{3, 3, 44, 352, 33, 75});
  // Rank 3's own device is divided by its floor, 4: 132 / 4 = 33 and 300 / 4 = 75; every rank
  // prices with the smallest grids of all.
  CHECK(of(mixed, 3) == six{1, 4, 33, 75, 33, 75});
}

namespace {

// 4 ranks on one H200 (132 multiprocessors, 1056 resident blocks), every option alike.
std::vector<device_info> four_on_one_device() {
  std::vector<device_info> all(4);
  for (device_info& d : all) {
    d.sms = 132;
    d.resident = 1056;
    d.place[0] = 'x';
  }
  return all;
}

}  // namespace

TEST_CASE("ranks that choose their forms with other options are refused, by name",
          "[transport][ipc]") {
  std::vector<device_info> all = four_on_one_device();
  grids g;
  REQUIRE(agree_on_grids(all, 1, g));
  CHECK(g.one_shot == 33);  // 132 / 4
  all[2].tile = 1e-6;       // RELAY_IPC_TILE_US on rank 2 alone
  const status s = agree_on_grids(all, 1, g);
  CHECK(s.code() == errc::invalid_argument);
  CHECK_THAT(s.message(), Catch::StartsWith("rank 2 chooses the ipc transport's forms with other "
                                            "options than rank 1"));
}

TEST_CASE("ranks that emulate different meshes are refused, naming both rates",
          "[transport][ipc][pacing]") {
  std::vector<device_info> all = four_on_one_device();
  for (device_info& d : all)
    d.emulate_mesh = 12'000'000'000;
  grids g;
  REQUIRE(agree_on_grids(all, 1, g));  // alike: agreed
  all[2].emulate_mesh = 0;             // RELAY_IPC_EMULATE_MESH unset on rank 2 alone
  status s = agree_on_grids(all, 1, g);
  CHECK(s.code() == errc::invalid_argument);
  CHECK(s.message() ==
        "rank 2 emulates a mesh of none but rank 1 of 12 GB/s (RELAY_IPC_EMULATE_MESH): every "
        "rank must set it alike");
  all[2].emulate_mesh = 12'500'000'000;
  s = agree_on_grids(all, 0, g);
  CHECK(s.message() ==
        "rank 2 emulates a mesh of 12.5 GB/s but rank 0 of 12 GB/s (RELAY_IPC_EMULATE_MESH): "
        "every rank must set it alike");
}

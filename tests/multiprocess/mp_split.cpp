// Communicators split from the job's (comm/split.hpp), one scenario per run under relay-run with
// 8 processes over shm (every rank must exit 0):
//   property   two halves of 4 chosen by the seed, ranked by random keys: each half runs random
//              calls of every kind on its own, checked against the naive reference; then the
//              parent's calls are still right, and pairs split from a half sum as worked out by
//              hand
//   apart      4 pairs, each on its own communicator: pair 0 refuses one call (peer_error on its
//              other rank, the output untouched) while the other pairs' calls are right; pair 0
//              then makes 20 calls while pair 1 sleeps past RELAY_TIMEOUT before its first, and
//              none of pair 0's calls waits for it
//   failed     rank 5's transport cannot be made: the split fails on every rank (rank 4, its
//              partner, with its own wait's error; every other rank naming rank 5 and why), no
//              rank holds a communicator, and the parent's next call is right
#include <chrono>
#include <numeric>
#include <thread>

#include "multiprocess/mp_support.hpp"
#include "relay/comm/split.hpp"

using namespace relay;
using namespace relay::testing;

namespace {

// An allreduce of one group of every rank of `comm`, count 6, int32: input[i] = 1000*tag + i,
// output poisoned. Sums of tags are worked out by the caller.
struct pair_call {
  std::vector<std::int32_t> in, out;
  status s;
  pair_call(communicator& comm, int tag) : in(6), out(6, 0x7f7f7f7f) {
    for (std::size_t i = 0; i < in.size(); ++i)
      in[i] = 1000 * tag + static_cast<std::int32_t>(i);
    std::vector<int> all(static_cast<std::size_t>(comm.size()));
    std::iota(all.begin(), all.end(), 0);
    const std::vector<std::int64_t> counts{6};
    options o;
    o.route = route::automatic;  // a group of every rank: no helpers, so the direct route
    s = allreduce(comm, {all}, {in.data(), 24}, {out.data(), 24}, counts, dtype::int32,
                  reduce_op::sum, o);
  }
  // Whether out[i] == 1000*tags + members*i.
  bool sums_to(int tags, int members) const {
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i] != 1000 * tags + members * static_cast<std::int32_t>(i)) return false;
    return true;
  }
  bool untouched() const {
    return std::all_of(out.begin(), out.end(), [](std::int32_t x) { return x == 0x7f7f7f7f; });
  }
};

void property(communicator& comm, std::uint64_t seed) {
  const int me = comm.rank();
  // Every rank draws the same halves and keys from the seed.
  std::mt19937_64 rng(seed);
  std::vector<int> order(8);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> color(8), key(8);
  for (int i = 0; i < 8; ++i)
    color[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i < 4 ? 0 : 1;
  for (int& k : key)
    k = static_cast<int>(rng() % 3);  // ties on purpose: broken by parent rank
  const int my_color = color[static_cast<std::size_t>(me)];
  std::unique_ptr<communicator> half;
  const status s =
      split_communicator(comm, my_color, key[static_cast<std::size_t>(me)], shm_factory(), half);
  expect(s.ok() && half != nullptr, "the split failed: " + s.to_string());
  if (!half) return;
  // The naive reference of the half's order: its members by (key, parent rank).
  std::vector<int> members;
  for (int r = 0; r < 8; ++r)
    if (color[static_cast<std::size_t>(r)] == my_color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return key[static_cast<std::size_t>(a)] < key[static_cast<std::size_t>(b)];
  });
  const auto at = std::find(members.begin(), members.end(), me) - members.begin();
  expect(half->size() == 4 && half->rank() == static_cast<int>(at),
         "rank " + std::to_string(me) + " is rank " + std::to_string(half->rank()) + " of " +
             std::to_string(half->size()) + " in its half, expected " + std::to_string(at) +
             " of 4");
  // Each half its own random calls (other seeds per half), concurrently with the other half.
  const int rc = property_run(
      *half, 150, seed + 1 + static_cast<std::uint64_t>(my_color), 5'000, " (one half of a split)",
      [&](const property_case& c, rank_frame& f) { return call(*half, c, f); });
  expect(rc == 0, "the half's property run failed");
  // The halves' random runs differ in length by seconds (more under sanitizers), longer than the
  // parent's call timeout: the parent's ranks meet first, so its first call measures the call.
  expect(comm.boot().barrier(harness_wait).ok(), "the barrier after the halves' runs");
  // The parent is unchanged by the split.
  expect(property_run(comm, 30, seed + 7, 5'000, " (the parent after a split)",
                      [&](const property_case& c, rank_frame& f) { return call(comm, c, f); }) == 0,
         "the parent's property run after the split failed");
  // A split of a split: the half's ranks 0,1 and 2,3 pair up. Each tags its input with its
  // parent rank, so a pair sums to 1000*(the two parent ranks) + 2i.
  std::unique_ptr<communicator> pair;
  const status p = split_communicator(*half, half->rank() / 2, 0, shm_factory(), pair);
  expect(p.ok() && pair != nullptr && pair->size() == 2,
         "the nested split failed: " + p.to_string());
  if (!pair) return;
  const int partner = members[static_cast<std::size_t>(half->rank() ^ 1)];
  const pair_call c(*pair, me);
  expect(c.s.ok() && c.sums_to(me + partner, 2), "the nested pair's allreduce: " + c.s.to_string() +
                                                     ", out[1] = " + std::to_string(c.out[1]));
  half.reset();  // the half goes first, its pair stays usable
  const pair_call again(*pair, me);
  expect(again.s.ok() && again.sums_to(me + partner, 2), "the pair after its half was destroyed");
}

void apart(communicator& comm) {
  const int me = comm.rank();
  std::unique_ptr<communicator> pair;
  const status s = split_communicator(comm, me / 2, me, shm_factory(), pair);
  expect(s.ok() && pair != nullptr, "the split failed: " + s.to_string());
  if (!pair) return;
  const int sum = me + (me ^ 1);
  // Pair 0's rank 0 refuses its first call; rank 1 is told; the other pairs never hear of it.
  if (me == 0) {
    const status r = pair->refuse({errc::invalid_argument, "no buffers here"});
    expect(r.code() == errc::invalid_argument, "the refusing rank got " + r.to_string());
  } else {
    const pair_call c(*pair, me);
    if (me == 1) {
      expect(c.s.code() == errc::peer_error &&
                 c.s.message().find("rank 0 refused call #1") != std::string::npos,
             "rank 1 expected rank 0's refusal, got " + c.s.to_string());
      expect(c.untouched(), "rank 1's output was written in a refused call");
    } else {
      expect(c.s.ok() && c.sums_to(sum, 2),
             "rank " + std::to_string(me) + " beside pair 0's refusal: " + c.s.to_string());
    }
  }
  // Pair 1 starts late, past RELAY_TIMEOUT: had pair 0's calls waited for it, they would fail.
  const auto timeout = comm.config().timeout;
  if (me == 2 || me == 3) std::this_thread::sleep_for(timeout + timeout / 2);
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < (me < 2 ? 20 : 1); ++k) {
    const pair_call c(*pair, me);
    expect(c.s.ok() && c.sums_to(sum, 2),
           "rank " + std::to_string(me) + " call " + std::to_string(k) + ": " + c.s.to_string());
  }
  // Had they waited for pair 1, they would have failed (a timeout): their time is only bounded.
  if (me < 2)
    expect(std::chrono::steady_clock::now() - start < timeout + busy_margin,
           "pair 0's 20 calls took longer than the timeout and the margin");
  // Every rank meets on the parent before the pairs go.
  expect(comm.boot().barrier(harness_wait).ok(), "the closing barrier on the parent");
}

void failed(communicator& comm) {
  const int me = comm.rank();
  const transport_factory refusing = [me](bootstrap& b, const environment& e,
                                          std::unique_ptr<transport>& out) -> status {
    if (me == 5) return {errc::out_of_memory, "rank 5 has no memory for a transport"};
    return shm_factory()(b, e, out);
  };
  std::unique_ptr<communicator> pair;
  const status s = split_communicator(comm, me / 2, me, refusing, pair);
  expect(pair == nullptr, "a communicator was made in a failed split");
  if (me == 5)
    expect(s.code() == errc::out_of_memory && s.message() == "rank 5 has no memory for a transport",
           "rank 5 got " + s.to_string());
  else if (me == 4)  // its partner: waited for rank 5's part of the pair's set-up, in vain
    expect(!s.ok(), "rank 4's split succeeded beside a failed partner");
  else
    expect(s.code() == errc::peer_error &&
               s.message() ==
                   "rank 5's split communicator failed: rank 5 has no memory for a transport",
           "rank " + std::to_string(me) + " got " + s.to_string());
  // The parent is usable: the pairs of a fused allreduce sum as worked out by hand.
  std::vector<std::int32_t> in(4), out(4, 0x7f7f7f7f);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = 1000 * me + static_cast<std::int32_t>(i);
  const group_list groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  const std::vector<std::int64_t> counts(4, 4);
  const status c = allreduce(comm, groups, {in.data(), 16}, {out.data(), 16}, counts, dtype::int32,
                             reduce_op::sum);
  bool right = c.ok();
  for (std::size_t i = 0; i < out.size(); ++i)
    right = right && out[i] == 1000 * (me + (me ^ 1)) + 2 * static_cast<std::int32_t>(i);
  expect(right, "the parent's call after a failed split: " + c.to_string());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  auto comm = connect_or_exit();
  if (comm->size() != 8) {
    std::fprintf(stderr, "mp_split runs with 8 processes, not %d\n", comm->size());
    return 2;
  }
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261204;
  if (scenario == "property")
    property(*comm, seed);
  else if (scenario == "apart")
    apart(*comm);
  else if (scenario == "failed")
    failed(*comm);
  else {
    std::fprintf(stderr, "usage: mp_split property [seed] | apart | failed\n");
    return 2;
  }
  if (failures > 0)
    std::fprintf(stderr, "rank %d: %d failure(s) in '%s' (seed %llu)\n", comm->rank(), failures,
                 scenario.c_str(), static_cast<unsigned long long>(seed));
  return failures == 0 ? 0 : 1;
}

// The multi-process property suite: random calls (all four collectives, A=2 and 4, fused and
// single, every route, dtype and operator, odd and zero counts, in and out of place), one
// process per rank over the shm transport. Every rank checks its canaries and its untouched
// input, then every rank checks every rank's output (all-gathered through the bootstrap)
// against the naive reference. Run under relay-run:
//
//   relay-run -n 8 -- relay_mp_property [CALLS] [SEED]
#include <chrono>

#include "multiprocess/mp_support.hpp"

using namespace relay;
using namespace relay::testing;

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
  const std::uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 20261201;
  auto comm = connect_or_exit();
  const int me = comm->rank();
  std::mt19937_64 cases(seed);
  const auto start = std::chrono::steady_clock::now();
  std::int64_t elements = 0;
  for (int i = 0; i < calls; ++i) {
    property_case c = random_case(cases);
    while (c.ranks != comm->size() || c.active >= c.ranks)
      c = random_case(cases);
    for (auto& n : c.counts)
      n = std::min<std::int64_t>(n, 20'000);  // 2 cores, 8 processes: keep each call small
    const auto inputs = all_inputs(c);
    rank_frame frame(c, me, inputs[static_cast<std::size_t>(me)]);
    const status s = call(*comm, c, frame);
    std::string failure;
    if (!s) failure = "the call failed: " + s.to_string();
    if (failure.empty() && !frame.canaries_intact()) failure = "a canary byte changed";
    if (failure.empty() && !c.in_place && frame.in_bytes > 0 &&
        !std::equal(inputs[static_cast<std::size_t>(me)].begin(),
                    inputs[static_cast<std::size_t>(me)].end(),
                    frame.bytes.begin() + static_cast<std::ptrdiff_t>(frame.in_off)))
      failure = "the input changed out of place";
    // Every rank's verdict and output, to every rank.
    std::vector<std::byte> mine(1, std::byte{failure.empty() ? std::uint8_t{1} : std::uint8_t{0}});
    const auto out = frame.output();
    mine.insert(mine.end(), out.begin(), out.end());
    std::vector<std::vector<std::byte>> all;
    if (status g = comm->boot().all_gather(mine, all, std::chrono::seconds(60)); !g) {
      std::fprintf(stderr, "call %d: gathering the outputs failed: %s\n", i, g.to_string().c_str());
      return 1;
    }
    std::vector<std::vector<std::byte>> outputs(all.size());
    std::string bad_ranks;
    for (std::size_t r = 0; r < all.size(); ++r) {
      if (all[r].empty() || all[r][0] != std::byte{1}) bad_ranks += " " + std::to_string(r);
      if (!all[r].empty()) outputs[r].assign(all[r].begin() + 1, all[r].end());
    }
    if (failure.empty() && !bad_ranks.empty()) failure = "ranks" + bad_ranks + " failed";
    if (failure.empty()) {
      const reference::mismatch_report m =
          reference::check_outputs(c.coll, c.type, c.op, c.groups, c.counts, inputs, outputs);
      if (m.wrong > 0) failure = std::to_string(m.wrong) + " wrong elements; first: " + m.first;
    }
    if (!failure.empty()) {
      std::fprintf(stderr, "call %d of seed %llu: %s: %s\n", i,
                   static_cast<unsigned long long>(seed), c.describe().c_str(), failure.c_str());
      return 1;
    }
    for (auto n : c.counts)
      elements += n;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (me == 0)
    std::printf(
        "%d calls over %d processes, every output right on every rank (seed %llu, %lld "
        "elements per group in all, %.1f s)\n",
        calls, comm->size(), static_cast<unsigned long long>(seed),
        static_cast<long long>(elements), seconds);
  return 0;
}

// The suite of hosted helpers (docs/hosted-helpers.md), for every transport: random calls of one
// group of the A process ranks of an 8-rank job, made by 8 processes (the helpers processes of
// their own, passing no buffers: `record`) or by A processes hosting the helpers (`hosted`). Each
// active rank writes (record) or compares (hosted) the digest of its output of every call, so
// that the hosted run is checked bit for bit against the helper processes', besides the naive
// reference (run_and_check).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "multiprocess/mp_support.hpp"

namespace relay::testing {

inline constexpr int hosted_ranks = 8;

// A random case of one group of the A process ranks in a random order: every collective, dtype
// and operator, the routes of one group (relay, direct, legacy at A = 2, pipelined, and
// route::automatic), in and out of place, odd and zero counts, the fp8 wire now and then (unless
// !fp8: then those cases run natively, the others alike, for a transport that refuses the fp8
// wire, as the ipc transport under mesh emulation does); counts capped for 2 cores.
inline property_case hosted_case(std::mt19937_64& cases, int A, bool fp8 = true) {
  property_case c;
  do
    c = random_case(cases);
  while (c.ranks != hosted_ranks || c.active != A || c.mode != mode::single);
  std::mt19937_64 r(c.seed ^ 0x5bd1e995ull);
  std::vector<int> group(static_cast<std::size_t>(A));
  std::iota(group.begin(), group.end(), 0);
  std::shuffle(group.begin(), group.end(), r);
  c.groups = {group};
  if (r() % 8 == 0) {
    if (fp8) make_fp8(c);
  } else if (r() % 6 == 0) {
    c.route = route::automatic;
    c.tiles = 0;
  }
  for (auto& n : c.counts)
    n = std::min<std::int64_t>(n, 20'000);
  return c;
}

inline std::uint64_t output_digest(const std::vector<std::byte>& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes)
    h = (h ^ static_cast<unsigned char>(b)) * 0x100000001b3ull;
  return h ^ bytes.size();
}

// `calls` cases of `seed` through `run(c, frame)` (this rank's call), recorded into or compared
// with FILE.<rank>; !fp8: none on the fp8 wire (hosted_case). Returns the process's exit status.
template <class Run>
int hosted_suite(communicator& comm, bool hosted, int A, int calls, std::uint64_t seed,
                 const std::string& file, const std::string& where, Run&& run, bool fp8 = true) {
  const int me = comm.rank();
  if (comm.size() != hosted_ranks || (hosted && me >= A)) {
    std::fprintf(stderr, "rank %d of %d: not a job of %d ranks%s\n", me, comm.size(), hosted_ranks,
                 hosted ? " run by its first A" : "");
    return 2;
  }
  const std::string mine = file + "." + std::to_string(me);
  std::vector<std::uint64_t> recorded;
  if (hosted) {
    std::ifstream in(mine);
    for (std::uint64_t d; in >> d;)
      recorded.push_back(d);
    if (static_cast<int>(recorded.size()) != calls) {
      std::fprintf(stderr, "FAILED: %s holds %zu digests, not %d (run the record step first)\n",
                   mine.c_str(), recorded.size(), calls);
      return 1;
    }
  }
  std::ofstream out;
  if (!hosted && me < A) out.open(mine, std::ios::trunc);
  std::mt19937_64 cases(seed);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    const property_case c = hosted_case(cases, A, fp8);
    std::uint64_t d = 0;
    std::string failure = run_and_check(comm, c, [&](const property_case& x, rank_frame& f) {
      const status s = run(x, f);
      d = output_digest(f.output());
      return s;
    });
    if (failure.empty() && hosted && d != recorded[static_cast<std::size_t>(i)])
      failure = "the output differs from the same call's with helper processes (digest " +
                std::to_string(d) + ", recorded " +
                std::to_string(recorded[static_cast<std::size_t>(i)]) + ")";
    if (!failure.empty()) {
      std::fprintf(stderr, "FAILED: call %d of seed %llu: %s: %s\n", i,
                   static_cast<unsigned long long>(seed), c.describe().c_str(), failure.c_str());
      return 1;
    }
    if (out.is_open()) out << d << "\n";
  }
  if (me == 0)
    std::printf("%d calls of one group of %d%s, %s, every output right%s (seed %llu, %.1f s)\n",
                calls, A, where.c_str(),
                hosted ? "from processes hosting the helpers" : "with 8 helper processes",
                hosted ? " and bit for bit the helper processes'" : "",
                static_cast<unsigned long long>(seed),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

}  // namespace relay::testing

// Serving ranks under random calls (serve/serve.hpp), one process per rank over the shm
// transport, under relay-run:
//
//   relay-run -n 8 -- relay_mp_serve single A [CALLS] [SEED]
//   relay-run -n 8 -- relay_mp_serve parallel [CALLS] [SEED]
//
// single: one group of A ranks (drawn from the seed, so the publisher, the lowest of them, is
//   not always rank 0) makes CALLS random calls (serve_support.hpp: every collective and dtype,
//   its routes, route::automatic, in and out of place, odd and zero counts, the fp8 wire now and
//   then), each active rank checking its own output against the naive reference; the other
//   ranks only serve, and must return ok from serve() at stop having served every call, none
//   failed.
// parallel: the spec's parallel scenario, 4 communicators split from the job's, each with one
//   group of 2 active (ranks 2c and 2c + 1 in communicator c) and the 6 others serving it: every
//   process calls on one communicator and serves three, each from a thread of its own, all at
//   once; CALLS random calls per communicator.
#include <cstdio>
#include <memory>
#include <numeric>
#include <thread>

#include "multiprocess/serve_support.hpp"
#include "relay/comm/split.hpp"
#include "relay/serve/serve.hpp"

using namespace relay;
using namespace relay::testing;

namespace {

struct outcome {
  std::string failure;  // empty: every promise held
  std::uint64_t served = 0;
};

// One rank's part on `comm`: `actives` call `calls` random calls (`seed`), the others serve.
outcome take_part(communicator& comm, const std::vector<int>& actives, int calls,
                  std::uint64_t seed, const std::string& where) {
  outcome o;
  const bool active = std::find(actives.begin(), actives.end(), comm.rank()) != actives.end();
  if (!active) {
    serve::serve_report report;
    const status s = serve::serve(comm, {}, &report);
    o.served = report.calls;
    if (!s)
      o.failure = where + ": serve() failed: " + s.to_string();
    else if (report.calls != static_cast<std::uint64_t>(calls) || report.failed != 0)
      o.failure = where + ": served " + std::to_string(report.calls) + " calls, " +
                  std::to_string(report.failed) + " failed (" + report.last_failure.to_string() +
                  "); the actives made " + std::to_string(calls);
    return o;
  }
  std::mt19937_64 cases(seed);
  for (int i = 0; i < calls; ++i) {
    const served_case_t c = served_case(cases, actives, comm.size(), 20'000);
    if (std::string f = call_and_check(comm, c); !f.empty()) {
      o.failure = where + ": call " + std::to_string(i) + " of seed " + std::to_string(seed) +
                  ": " + c.c.describe() + " on " +
                  std::string(c.machine != nullptr ? c.machine->name : "mi300x") + ": " + f;
      return o;
    }
  }
  if (status s = serve::stop_serving(comm); !s) o.failure = where + ": stop: " + s.to_string();
  return o;
}

void attach_or_exit(communicator& comm, bool calls) {
  if (status s =
          serve::attach_plane(comm, calls ? serve::plane_role::call : serve::plane_role::serve);
      !s) {
    std::fprintf(stderr, "attaching the plane: %s\n", s.to_string().c_str());
    std::exit(2);
  }
}

int single(int A, int calls, std::uint64_t seed) {
  auto comm = connect_or_exit();
  std::vector<int> ranks(static_cast<std::size_t>(comm->size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  std::mt19937_64 pick(seed);
  std::shuffle(ranks.begin(), ranks.end(), pick);
  const std::vector<int> actives(ranks.begin(), ranks.begin() + A);
  const bool active = std::find(actives.begin(), actives.end(), comm->rank()) != actives.end();
  attach_or_exit(*comm, active);
  const auto start = std::chrono::steady_clock::now();
  const outcome o = take_part(*comm, actives, calls, seed + 1, "A=" + std::to_string(A));
  if (!o.failure.empty()) {
    std::fprintf(stderr, "FAILED: %s\n", o.failure.c_str());
    return 1;
  }
  if (comm->rank() == *std::min_element(actives.begin(), actives.end())) {
    std::printf("A=%d (ranks", A);
    for (int r : actives)
      std::printf(" %d", r);
    std::printf("): %d calls, every output right, %d ranks serving them (seed %llu, %.1f s)\n",
                calls, comm->size() - A, static_cast<unsigned long long>(seed),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 0;
}

int parallel(int calls, std::uint64_t seed) {
  auto parent = connect_or_exit();
  const int me = parent->rank();
  constexpr int C = 4;
  std::vector<std::unique_ptr<communicator>> comms(C);
  for (int c = 0; c < C; ++c) {
    if (status s = split_communicator(*parent, 0, me, shm_factory(), comms[c]); !s) {
      std::fprintf(stderr, "splitting communicator %d: %s\n", c, s.to_string().c_str());
      return 2;
    }
    attach_or_exit(*comms[c], me / 2 == c);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<outcome> outcomes(C);
  std::vector<std::thread> threads;
  for (int c = 0; c < C; ++c)
    threads.emplace_back([&, c] {
      outcomes[c] =
          take_part(*comms[c], {2 * c, 2 * c + 1}, calls, seed + static_cast<std::uint64_t>(c),
                    "communicator " + std::to_string(c));
    });
  for (auto& t : threads)
    t.join();
  int failed = 0;
  for (const outcome& o : outcomes)
    if (!o.failure.empty()) {
      std::fprintf(stderr, "FAILED: %s\n", o.failure.c_str());
      ++failed;
    }
  if (failed == 0 && me == 0)
    std::printf(
        "parallel: 4 communicators, each with one pair active and 6 ranks serving it, %d calls "
        "each at once, every output right (seed %llu, %.1f s)\n",
        calls, static_cast<unsigned long long>(seed),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "single" && argc > 2) {
    const int A = std::atoi(argv[2]);
    const int calls = argc > 3 ? std::atoi(argv[3]) : 500;
    const std::uint64_t seed = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 20261207;
    return single(A, calls, seed);
  }
  if (what == "parallel") {
    const int calls = argc > 2 ? std::atoi(argv[2]) : 500;
    const std::uint64_t seed = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20261208;
    return parallel(calls, seed);
  }
  std::fprintf(stderr, "usage: relay_mp_serve single A [CALLS] [SEED] | parallel [CALLS] [SEED]\n");
  return 2;
}

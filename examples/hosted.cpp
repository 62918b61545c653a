// Helpers that run no process (docs/hosted-helpers.md): 2 processes over an 8-rank communicator,
// each hosting 3 of the 6 helper ranks beside its own; the pair's allreduce relays through them.
// Run by the suite under relay-run (examples.hosted):
//
//   RELAY_HELPER_DEVICES=2,3,4,5,6,7 build/tools/relay-run -n 2 -- build/examples/hosted
#include <relay/comm/collectives.hpp>
#include <relay/comm/from_environment.hpp>
#include <relay/transport/shm/factory.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

int fail(const relay::status& s) {
  std::fprintf(stderr, "%s\n", s.to_string().c_str());
  return 1;
}

}  // namespace

int main() {
  std::unique_ptr<relay::communicator> comm;  // RELAY_HELPER_DEVICES=2,3,4,5,6,7, 2 processes
  if (relay::status s = relay::communicator_from_environment(relay::shm_factory(), comm); !s)
    return fail(s);
  const int rank = comm->rank();   // 0 or 1: the processes
  const std::int64_t n = 100'000;  // comm->size() == 8: 6 ranks hosted
  std::vector<float> grad(n, rank + 1.0f), sum(n, -1.0f);
  relay::options opt;
  opt.route = relay::route::relay;  // through the hosted ranks
  const relay::status s = relay::allreduce(*comm, {{0, 1}}, {grad.data(), 4 * grad.size()},
                                           {sum.data(), 4 * sum.size()}, std::vector{n},
                                           relay::dtype::float32, relay::reduce_op::sum, opt);
  if (!s) return fail(s);
  if (comm->size() != 8 || sum != std::vector<float>(n, 3.0f))
    return fail({relay::errc::invalid_argument, "not 8 ranks, or a wrong sum"});
  if (rank == 0) std::printf("2 processes, 8 ranks: the sum is right\n");
  return 0;
}

// One process per rank: a rank-local communicator over shared memory, each process passing only
// its own buffers. The README's third quick start, run by the suite under relay-run
// (examples.rank_local):
//
//   build/tools/relay-run -n 8 -- build/examples/rank_local
#include <relay/rank_local.hpp>

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
  std::unique_ptr<relay::communicator> comm;
  if (relay::status s = relay::communicator_from_environment(relay::shm_factory(), comm); !s)
    return fail(s);
  if (comm->size() != 8) return fail({relay::errc::invalid_argument, "run it on 8 ranks"});
  // This rank's input holds rank + 1; its output is poisoned first.
  const std::size_t n = 1000, bytes = n * sizeof(float);
  std::vector<float> in(n, static_cast<float>(comm->rank() + 1)), out(n, -1.0f);
  const std::vector<std::int64_t> counts(4, static_cast<std::int64_t>(n));
  // Every rank, with its own buffers (a helper, a rank in no group, passes relay::buffer_view{}):
  relay::status st =
      relay::allreduce(*comm, {{0, 1}, {2, 3}, {4, 5}, {6, 7}}, {in.data(), bytes},
                       {out.data(), bytes}, counts, relay::dtype::float32, relay::reduce_op::sum);
  if (!st) return fail(st);
  // Rank r's group is {r - r % 2, r - r % 2 + 1}: the sum of their inputs.
  const int first = comm->rank() - comm->rank() % 2;
  const auto expected = static_cast<float>((first + 1) + (first + 2));
  for (float x : out)
    if (x != expected) return fail({relay::errc::invalid_argument, "a wrong element"});
  return 0;
}

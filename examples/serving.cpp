// Helpers that need not know the call: 2 active ranks of 8 run a loop of varying shapes while the
// 6 others serve them from the communicator's control plane (docs/serving.md). Run by the suite
// under relay-run (examples.serving):
//
//   build/tools/relay-run -n 8 -- build/examples/serving
#include <relay/comm/collectives.hpp>
#include <relay/comm/from_environment.hpp>
#include <relay/serve/serve.hpp>
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
  std::unique_ptr<relay::communicator> comm;
  if (relay::status s = relay::communicator_from_environment(relay::shm_factory(), comm); !s)
    return fail(s);
  using relay::serve::plane_role;
  const bool active = comm->rank() < 2;  // ranks 0 and 1 run the model; 2-7 only serve
  if (relay::status s =
          relay::serve::attach_plane(*comm, active ? plane_role::call : plane_role::serve);
      !s)
    return fail(s);
  if (!active) return relay::serve::serve(*comm).ok() ? 0 : 1;  // returns when the actives stop
  for (std::int64_t n = 1; n <= (1 << 20); n = n * 5 + 3) {     // a new shape every step
    std::vector<float> grad(n, comm->rank() + 1.0f), sum(n, -1.0f);
    const relay::status s = relay::allreduce(*comm, {{0, 1}}, {grad.data(), 4 * grad.size()},
                                             {sum.data(), 4 * sum.size()}, std::vector{n},
                                             relay::dtype::float32, relay::reduce_op::sum);
    if (!s || sum != std::vector<float>(n, 3.0f))
      return fail(s.ok() ? relay::status{relay::errc::invalid_argument, "a wrong sum"} : s);
  }
  return relay::serve::stop_serving(*comm).ok() ? 0 : 1;  // every helper returns from serve()
}

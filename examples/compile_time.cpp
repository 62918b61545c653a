// What a communication library can prove about relay in its own build, with no flags: the
// schedule's cost on the machine it targets, its ceiling over the direct path, its dataflow, its
// scratch. The README's first quick start; building it is the test.
#include <relay/relay.hpp>

constexpr auto& s = relay::schedule_v<relay::collective::allreduce, 2, 8>;  // A=2, N=8, fused
static_assert(relay::beta_cost(s, relay::mi300x) == relay::ratio{1, 4});    // n/4 of link time
static_assert(relay::ceiling(s, relay::mi300x) == 4);                       // 4x the direct path
static_assert(relay::verify(s).ok());  // every output gets exactly its contributions

namespace {
using namespace relay;

// Two active ranks of an 8-GPU MI300X node, every group at once (fused).
constexpr auto& allreduce_2x8 = schedule_v<collective::allreduce, 2, 8>;
static_assert(allreduce_2x8.header.steps == 2);
static_assert(beta_cost(allreduce_2x8, mi300x) == ratio{1, 4});  // n/4 of link time
static_assert(ceiling(allreduce_2x8, mi300x) == 4);              // 4x the direct path

// Four active ranks: reduce-scatter doubles; helpers need 12 chunks of scratch.
constexpr auto& rs_4x8 = schedule_v<collective::reduce_scatter, 4, 8>;
static_assert(ceiling(rs_4x8, mi350x) == 2);
static_assert(scratch_elements(rs_4x8.header, /*active=*/false, 8 * 128) == 12 * 128);

// On an NVSwitch machine the same schedule would lose: choose direct there.
static_assert(beta_cost(allreduce_2x8, h200_nvswitch) >
              beta_cost(schedule_v<collective::allreduce, 2, 8, mode::fused, route::direct>,
                        h200_nvswitch));

// The same schedule parameterized on helpers: A=2 with H=6 is N=8.
static_assert(&schedule_with_helpers_v<collective::allreduce, 2, 6> == &allreduce_2x8);
}  // namespace

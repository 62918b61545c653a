// Whole-schedule properties checked by the compiler: dataflow (every output element gets exactly
// its contributions), no hazards inside a phase, scratch within its declared size. A failing
// assertion names the schedule; run relay-plan --verify on it for the reason.
#include "relay/check/verify.hpp"
#include "relay/schedule/generate.hpp"

namespace {
using namespace relay;
using C = collective;

template <C c, int A, mode m = mode::fused, route r = route::relay>
constexpr bool verified = verify(schedule_v<c, A, 8, m, r>).ok();

static_assert(verified<C::allreduce, 2>);
static_assert(verified<C::reduce_scatter, 2>);
static_assert(verified<C::all_gather, 2>);
static_assert(verified<C::all_to_all, 2>);
static_assert(verified<C::allreduce, 4>);
static_assert(verified<C::reduce_scatter, 4>);
static_assert(verified<C::all_gather, 4>);
static_assert(verified<C::all_to_all, 4>);
static_assert(verified<C::allreduce, 2, mode::single, route::legacy>);
static_assert(verified<C::reduce_scatter, 4, mode::single, route::direct>);
}  // namespace

namespace {
using namespace relay;
// Pipelined single groups of A=4 (issue 16) at depths 2 and 4, and one of A=8 on N=16.
template <collective c, int T, int A = 4, int N = 8>
constexpr bool piped_verified = verify(schedule_for<schedule_spec{.coll = c,
                                                                  .active = A,
                                                                  .ranks = N,
                                                                  .mode = mode::single,
                                                                  .route = route::pipelined,
                                                                  .tiles = T}>)
                                    .ok();

static_assert(piped_verified<collective::allreduce, 2>);
static_assert(piped_verified<collective::reduce_scatter, 2>);
static_assert(piped_verified<collective::all_gather, 2>);
static_assert(piped_verified<collective::all_to_all, 2>);
static_assert(piped_verified<collective::allreduce, 4>);
static_assert(piped_verified<collective::reduce_scatter, 4>);
static_assert(piped_verified<collective::all_gather, 4>);
static_assert(piped_verified<collective::all_to_all, 4>);
static_assert(piped_verified<collective::allreduce, 2, 8, 16>);
static_assert(piped_verified<collective::reduce_scatter, 2, 8, 16>);
}  // namespace

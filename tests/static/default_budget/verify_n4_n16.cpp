// The same at N = 4 and 16, and A = 8 at N = 16, within GCC's default budget (33,554,432
// operations); clang's tighter default is held to N = 8 (verify_n8.cpp). Not here: the
// reduce-scatter relay route at A = 8, N = 16 (fused and single), which needs about 45M
// operations; tests/static/schedule_properties.cpp verifies it with a raised budget.
#include "verified.hpp"

namespace {
using namespace relay;
using C = collective;
using default_budget::verified;

static_assert(verified<C::allreduce, 2, 4, mode::fused, route::relay>);
static_assert(verified<C::reduce_scatter, 2, 4, mode::fused, route::relay>);
static_assert(verified<C::all_gather, 2, 4, mode::fused, route::relay>);
static_assert(verified<C::all_to_all, 2, 4, mode::fused, route::relay>);
static_assert(verified<C::allreduce, 2, 4, mode::single, route::relay>);
static_assert(verified<C::reduce_scatter, 2, 4, mode::single, route::relay>);
static_assert(verified<C::all_gather, 2, 4, mode::single, route::relay>);
static_assert(verified<C::all_to_all, 2, 4, mode::single, route::relay>);
static_assert(verified<C::allreduce, 2, 4, mode::fused, route::direct>);
static_assert(verified<C::reduce_scatter, 2, 4, mode::fused, route::direct>);
static_assert(verified<C::all_gather, 2, 4, mode::fused, route::direct>);
static_assert(verified<C::all_to_all, 2, 4, mode::fused, route::direct>);
static_assert(verified<C::allreduce, 2, 4, mode::single, route::direct>);
static_assert(verified<C::reduce_scatter, 2, 4, mode::single, route::direct>);
static_assert(verified<C::all_gather, 2, 4, mode::single, route::direct>);
static_assert(verified<C::all_to_all, 2, 4, mode::single, route::direct>);
static_assert(verified<C::allreduce, 2, 4, mode::fused, route::legacy>);
static_assert(verified<C::reduce_scatter, 2, 4, mode::fused, route::legacy>);
static_assert(verified<C::all_gather, 2, 4, mode::fused, route::legacy>);
static_assert(verified<C::all_to_all, 2, 4, mode::fused, route::legacy>);
static_assert(verified<C::allreduce, 2, 4, mode::single, route::legacy>);
static_assert(verified<C::reduce_scatter, 2, 4, mode::single, route::legacy>);
static_assert(verified<C::all_gather, 2, 4, mode::single, route::legacy>);
static_assert(verified<C::all_to_all, 2, 4, mode::single, route::legacy>);
static_assert(verified<C::allreduce, 4, 4, mode::fused, route::direct>);
static_assert(verified<C::reduce_scatter, 4, 4, mode::fused, route::direct>);
static_assert(verified<C::all_gather, 4, 4, mode::fused, route::direct>);
static_assert(verified<C::all_to_all, 4, 4, mode::fused, route::direct>);
static_assert(verified<C::allreduce, 4, 4, mode::single, route::direct>);
static_assert(verified<C::reduce_scatter, 4, 4, mode::single, route::direct>);
static_assert(verified<C::all_gather, 4, 4, mode::single, route::direct>);
static_assert(verified<C::all_to_all, 4, 4, mode::single, route::direct>);
static_assert(verified<C::allreduce, 2, 16, mode::fused, route::relay>);
static_assert(verified<C::reduce_scatter, 2, 16, mode::fused, route::relay>);
static_assert(verified<C::all_gather, 2, 16, mode::fused, route::relay>);
static_assert(verified<C::all_to_all, 2, 16, mode::fused, route::relay>);
static_assert(verified<C::allreduce, 2, 16, mode::single, route::relay>);
static_assert(verified<C::reduce_scatter, 2, 16, mode::single, route::relay>);
static_assert(verified<C::all_gather, 2, 16, mode::single, route::relay>);
static_assert(verified<C::all_to_all, 2, 16, mode::single, route::relay>);
static_assert(verified<C::allreduce, 2, 16, mode::fused, route::direct>);
static_assert(verified<C::reduce_scatter, 2, 16, mode::fused, route::direct>);
static_assert(verified<C::all_gather, 2, 16, mode::fused, route::direct>);
static_assert(verified<C::all_to_all, 2, 16, mode::fused, route::direct>);
static_assert(verified<C::allreduce, 2, 16, mode::single, route::direct>);
static_assert(verified<C::reduce_scatter, 2, 16, mode::single, route::direct>);
static_assert(verified<C::all_gather, 2, 16, mode::single, route::direct>);
static_assert(verified<C::all_to_all, 2, 16, mode::single, route::direct>);
static_assert(verified<C::allreduce, 2, 16, mode::fused, route::legacy>);
static_assert(verified<C::reduce_scatter, 2, 16, mode::fused, route::legacy>);
static_assert(verified<C::all_gather, 2, 16, mode::fused, route::legacy>);
static_assert(verified<C::all_to_all, 2, 16, mode::fused, route::legacy>);
static_assert(verified<C::allreduce, 2, 16, mode::single, route::legacy>);
static_assert(verified<C::reduce_scatter, 2, 16, mode::single, route::legacy>);
static_assert(verified<C::all_gather, 2, 16, mode::single, route::legacy>);
static_assert(verified<C::all_to_all, 2, 16, mode::single, route::legacy>);
static_assert(verified<C::allreduce, 4, 16, mode::fused, route::relay>);
static_assert(verified<C::reduce_scatter, 4, 16, mode::fused, route::relay>);
static_assert(verified<C::all_gather, 4, 16, mode::fused, route::relay>);
static_assert(verified<C::all_to_all, 4, 16, mode::fused, route::relay>);
static_assert(verified<C::allreduce, 4, 16, mode::single, route::relay>);
static_assert(verified<C::reduce_scatter, 4, 16, mode::single, route::relay>);
static_assert(verified<C::all_gather, 4, 16, mode::single, route::relay>);
static_assert(verified<C::all_to_all, 4, 16, mode::single, route::relay>);
static_assert(verified<C::allreduce, 4, 16, mode::fused, route::direct>);
static_assert(verified<C::reduce_scatter, 4, 16, mode::fused, route::direct>);
static_assert(verified<C::all_gather, 4, 16, mode::fused, route::direct>);
static_assert(verified<C::all_to_all, 4, 16, mode::fused, route::direct>);
static_assert(verified<C::allreduce, 4, 16, mode::single, route::direct>);
static_assert(verified<C::reduce_scatter, 4, 16, mode::single, route::direct>);
static_assert(verified<C::all_gather, 4, 16, mode::single, route::direct>);
static_assert(verified<C::all_to_all, 4, 16, mode::single, route::direct>);
static_assert(verified<C::allreduce, 8, 16, mode::fused, route::relay>);
static_assert(verified<C::all_gather, 8, 16, mode::fused, route::relay>);
static_assert(verified<C::all_to_all, 8, 16, mode::fused, route::relay>);
static_assert(verified<C::allreduce, 8, 16, mode::single, route::relay>);
static_assert(verified<C::all_gather, 8, 16, mode::single, route::relay>);
static_assert(verified<C::all_to_all, 8, 16, mode::single, route::relay>);
static_assert(verified<C::allreduce, 8, 16, mode::fused, route::direct>);
static_assert(verified<C::reduce_scatter, 8, 16, mode::fused, route::direct>);
static_assert(verified<C::all_gather, 8, 16, mode::fused, route::direct>);
static_assert(verified<C::all_to_all, 8, 16, mode::fused, route::direct>);
static_assert(verified<C::allreduce, 8, 16, mode::single, route::direct>);
static_assert(verified<C::reduce_scatter, 8, 16, mode::single, route::direct>);
static_assert(verified<C::all_gather, 8, 16, mode::single, route::direct>);
static_assert(verified<C::all_to_all, 8, 16, mode::single, route::direct>);
}  // namespace

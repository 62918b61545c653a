// What a user's build can static_assert with the compiler's default constant-evaluation budget
// (no -fconstexpr-ops-limit or -fconstexpr-steps): the whole verification of every relay, direct
// and legacy schedule of A = 2 and 4 at N = 8, fused and single, and the pipelined single groups
// of A = 4 at depths 2 and 4. The suite compiles this file with
// the project's compiler and, in ctest static.default_budget_clang, with clang++ (hipcc's
// compiler, whose default of 1,048,576 steps is the tighter one). Nothing here may raise a budget.
#include "verified.hpp"

namespace {
using namespace relay;
using C = collective;
using default_budget::pipelined_verified;
using default_budget::verified;

static_assert(verified<C::allreduce, 2, 8, mode::fused, route::relay>);
static_assert(verified<C::reduce_scatter, 2, 8, mode::fused, route::relay>);
static_assert(verified<C::all_gather, 2, 8, mode::fused, route::relay>);
static_assert(verified<C::all_to_all, 2, 8, mode::fused, route::relay>);
static_assert(verified<C::allreduce, 2, 8, mode::single, route::relay>);
static_assert(verified<C::reduce_scatter, 2, 8, mode::single, route::relay>);
static_assert(verified<C::all_gather, 2, 8, mode::single, route::relay>);
static_assert(verified<C::all_to_all, 2, 8, mode::single, route::relay>);
static_assert(verified<C::allreduce, 2, 8, mode::fused, route::direct>);
static_assert(verified<C::reduce_scatter, 2, 8, mode::fused, route::direct>);
static_assert(verified<C::all_gather, 2, 8, mode::fused, route::direct>);
static_assert(verified<C::all_to_all, 2, 8, mode::fused, route::direct>);
static_assert(verified<C::allreduce, 2, 8, mode::single, route::direct>);
static_assert(verified<C::reduce_scatter, 2, 8, mode::single, route::direct>);
static_assert(verified<C::all_gather, 2, 8, mode::single, route::direct>);
static_assert(verified<C::all_to_all, 2, 8, mode::single, route::direct>);
static_assert(verified<C::allreduce, 2, 8, mode::fused, route::legacy>);
static_assert(verified<C::reduce_scatter, 2, 8, mode::fused, route::legacy>);
static_assert(verified<C::all_gather, 2, 8, mode::fused, route::legacy>);
static_assert(verified<C::all_to_all, 2, 8, mode::fused, route::legacy>);
static_assert(verified<C::allreduce, 2, 8, mode::single, route::legacy>);
static_assert(verified<C::reduce_scatter, 2, 8, mode::single, route::legacy>);
static_assert(verified<C::all_gather, 2, 8, mode::single, route::legacy>);
static_assert(verified<C::all_to_all, 2, 8, mode::single, route::legacy>);
static_assert(verified<C::allreduce, 4, 8, mode::fused, route::relay>);
static_assert(verified<C::reduce_scatter, 4, 8, mode::fused, route::relay>);
static_assert(verified<C::all_gather, 4, 8, mode::fused, route::relay>);
static_assert(verified<C::all_to_all, 4, 8, mode::fused, route::relay>);
static_assert(verified<C::allreduce, 4, 8, mode::single, route::relay>);
static_assert(verified<C::reduce_scatter, 4, 8, mode::single, route::relay>);
static_assert(verified<C::all_gather, 4, 8, mode::single, route::relay>);
static_assert(verified<C::all_to_all, 4, 8, mode::single, route::relay>);
static_assert(verified<C::allreduce, 4, 8, mode::fused, route::direct>);
static_assert(verified<C::reduce_scatter, 4, 8, mode::fused, route::direct>);
static_assert(verified<C::all_gather, 4, 8, mode::fused, route::direct>);
static_assert(verified<C::all_to_all, 4, 8, mode::fused, route::direct>);
static_assert(verified<C::allreduce, 4, 8, mode::single, route::direct>);
static_assert(verified<C::reduce_scatter, 4, 8, mode::single, route::direct>);
static_assert(verified<C::all_gather, 4, 8, mode::single, route::direct>);
static_assert(verified<C::all_to_all, 4, 8, mode::single, route::direct>);

static_assert(pipelined_verified<C::allreduce, 4, 8, 2>);
static_assert(pipelined_verified<C::reduce_scatter, 4, 8, 2>);
static_assert(pipelined_verified<C::all_gather, 4, 8, 2>);
static_assert(pipelined_verified<C::all_to_all, 4, 8, 2>);
static_assert(pipelined_verified<C::allreduce, 4, 8, 4>);
static_assert(pipelined_verified<C::reduce_scatter, 4, 8, 4>);
static_assert(pipelined_verified<C::all_gather, 4, 8, 4>);
static_assert(pipelined_verified<C::all_to_all, 4, 8, 4>);
}  // namespace

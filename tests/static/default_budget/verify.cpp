// What a user's build can static_assert with the compiler's default constant-evaluation budget
// (no -fconstexpr-ops-limit): the whole verification of the headline schedules. The rest of the
// static suite raises the budget; this file must not.
#include "relay/check/verify.hpp"
#include "relay/schedule/generate.hpp"

namespace {
using namespace relay;
using C = collective;

static_assert(verify(schedule_v<C::allreduce, 2, 8>).ok());
static_assert(verify(schedule_v<C::all_to_all, 4, 8>).ok());
static_assert(verify(schedule_v<C::all_gather, 2, 8, mode::single>).ok());
}  // namespace

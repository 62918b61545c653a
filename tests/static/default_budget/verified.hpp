// The one shape of a default-budget assertion: one constant evaluation per schedule, so each is
// held to the compiler's budget on its own.
#pragma once

#include "relay/check/verify.hpp"
#include "relay/schedule/generate.hpp"

namespace relay::default_budget {
template <collective c, int A, int N, mode m, route r>
constexpr bool verified = verify(schedule_v<c, A, N, m, r>).ok();
}  // namespace relay::default_budget

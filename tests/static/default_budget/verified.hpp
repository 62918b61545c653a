// The one shape of a whole-schedule assertion (the default-budget files and
// schedule_properties.cpp): one constant evaluation per schedule, so each is held to the compiler's
// budget on its own.
#pragma once

#include "relay/check/verify.hpp"
#include "relay/schedule/generate.hpp"

namespace relay::default_budget {
template <collective c, int A, int N, mode m, route r>
constexpr bool verified = verify(schedule_v<c, A, N, m, r>).ok();
// A pipelined single group of depth T.
template <collective c, int A, int N, int T>
constexpr bool pipelined_verified = verify(schedule_for<schedule_spec{.coll = c,
                                                                      .active = A,
                                                                      .ranks = N,
                                                                      .mode = mode::single,
                                                                      .route = route::pipelined,
                                                                      .tiles = T}>)
                                        .ok();
}  // namespace relay::default_budget

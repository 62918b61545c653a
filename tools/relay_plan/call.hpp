// The one call the options describe, as the library sees it: a plan request over canonical
// groups (group g's actives are ranks g*A .. g*A+A-1, as the printer numbers them).
#pragma once

#include <cstdint>
#include <vector>

#include "options.hpp"
#include "relay/plan/make_plan.hpp"

namespace relay_plan {

std::vector<std::vector<int>> canonical_groups(const relay::schedule_spec& s);

// `counts`: one per group; `machine`: what the wire's threshold is priced on (null: mi300x).
relay::plan_request make_request(const options& o, const std::vector<std::int64_t>& counts,
                                 const relay::topology* machine = nullptr);

}  // namespace relay_plan

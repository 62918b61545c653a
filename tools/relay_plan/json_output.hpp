// relay-plan --json: one JSON object with every fact of the report. Costs are numbers in units of
// n * element_size / link bandwidth (the `_n` fields) with the exact fraction alongside as a
// string ("beta_cost_n": 0.25, "beta_cost": "1/4"); null where a value does not exist (a step
// the topology cannot route, a bound the model does not know).
#pragma once

#include <string>

#include "report.hpp"

namespace relay_plan {

std::string render_json(const plan_report& r);

}  // namespace relay_plan

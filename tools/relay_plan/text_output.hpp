// relay-plan's human-readable output: a header, the quanta, every step's operations (group 0 in
// full, the other groups counted, unless --full), the link loads, costs, scratch, operation
// counts and alpha-beta times; with a count, that call's concrete sizes.
#pragma once

#include <string>

#include "report.hpp"

namespace relay_plan {

std::string render_text(const plan_report& r);

// "24.1 us", "2.10 ms", "1.25 s".
std::string format_seconds(double s);

}  // namespace relay_plan

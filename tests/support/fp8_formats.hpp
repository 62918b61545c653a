// The two fp8 encodings under the short names the fp8 suites' hand-worked codes use: one
// definition for every suite, since relay_unit_tests compiles its suites together (a unity build).
#pragma once

#include "relay/core/fp8.hpp"

namespace relay::testing {

inline constexpr fp8_format e4m3 = fp8_format::e4m3, fnuz = fp8_format::e4m3_fnuz;

}  // namespace relay::testing

// The median of measurements (the upper middle one of an even count); 0 for none.
#pragma once

#include <algorithm>
#include <vector>

namespace relay::examples {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace relay::examples

#include "sweep/sizes.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace relay::bench {

std::optional<std::int64_t> parse_bytes(std::string_view text) {
  double value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc{} || end == first || !(value >= 0)) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(last - end));
  if (unit.ends_with("iB"))
    unit.remove_suffix(2);
  else if (unit.ends_with('B') && unit.size() > 1)
    unit.remove_suffix(1);
  else if (unit == "B")
    unit = {};
  double scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1024.0;
  else if (unit == "M" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    return std::nullopt;
  const double bytes = std::floor(value * scale);
  if (bytes > std::ldexp(1.0, 50)) return std::nullopt;
  return static_cast<std::int64_t>(bytes);
}

std::vector<std::int64_t> size_grid(std::int64_t begin, std::int64_t end, double factor,
                                    std::int64_t step) {
  std::vector<std::int64_t> sizes{begin};
  if (step < 0 || (step == 0 && !(factor > 1))) return sizes;
  for (;;) {
    const std::int64_t last = sizes.back();
    const double next = step > 0 ? static_cast<double>(last) + static_cast<double>(step)
                                 : std::floor(static_cast<double>(last) * factor);
    if (next > static_cast<double>(end)) break;
    const auto n = static_cast<std::int64_t>(next);
    if (n <= last) break;  // a factor too close to 1 for these sizes
    sizes.push_back(n);
  }
  return sizes;
}

}  // namespace relay::bench

// What relay-bench's ranks combine across the job, through the bootstrap (as the communicators'
// own exchanges do): an iteration's time as its slowest rank's, and every rank's check of its
// output as one verdict.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "relay/bootstrap/exchange.hpp"
#include "sweep/data.hpp"

namespace relay::bench {

// Replaces each of `times` by its largest over the ranks (every rank passes as many).
inline status largest_over_ranks(bootstrap& boot, std::vector<double>& times,
                                 milliseconds timeout) {
  std::vector<std::vector<double>> all;
  if (status s = exchange(boot, std::span<const double>(times), all, timeout, "list of times"); !s)
    return s;
  for (const std::vector<double>& theirs : all)
    for (std::size_t i = 0; i < times.size(); ++i)
      times[i] = std::max(times[i], theirs[i]);
  return {};
}

// Every rank's check of its output as one: the wrong elements summed, the largest relative
// error (fp8), and where the lowest rank that erred first did ("rank 3: ...").
inline status combine_checks(bootstrap& boot, const check_result& mine, check_result& total,
                             milliseconds timeout) {
  struct counts {
    std::int64_t wrong;
    double max_relative_error;
  };
  const counts c{mine.wrong, std::isnan(mine.max_relative_error) ? 0.0 : mine.max_relative_error};
  std::vector<with_text<counts>> all;
  if (status s = exchange(boot, c, mine.wrong > 0 ? mine.first : "", all, timeout, "check"); !s)
    return s;
  total = {};
  for (std::size_t r = 0; r < all.size(); ++r) {
    total.wrong += all[r].value.wrong;
    total.max_relative_error = std::max(total.max_relative_error, all[r].value.max_relative_error);
    if (total.first.empty() && !all[r].text.empty())
      total.first = fmt::format("rank {}: {}", r, all[r].text);
  }
  return {};
}

}  // namespace relay::bench

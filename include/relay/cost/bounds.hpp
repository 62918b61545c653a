// Lower bounds on the beta cost (one link per pair, every link B each way), in units of
// n * element_size / B: the physical limit no schedule can beat. They come from linear programs
// on the link model (multi-commodity flow for all-to-all, per-source multicast for all-gather,
// all-gather reversed for reduce-scatter) and, for allreduce, from counting link directions;
// ../docs/cost-model.md has the derivations. Where the model has no bound, nullopt.
#pragma once

#include <optional>

#include "relay/core/collective.hpp"
#include "relay/core/ratio.hpp"

namespace relay {

constexpr std::optional<ratio> beta_lower_bound(collective c, int active, int ranks, mode m) {
  const int A = active, N = ranks;
  if (A < 2 || A >= N) return std::nullopt;
  if (m == mode::fused) {
    if (N % A != 0) return std::nullopt;
    switch (c) {
      case collective::all_gather:
      case collective::reduce_scatter: return ratio{A, N};
      case collective::all_to_all: return ratio{2 * (A - 1), N + A - 2};
      case collective::allreduce:
        if (A == 2) return ratio{2, N};
        if (A == 4 && N == 8) return ratio{1, 4};
        return std::nullopt;
    }
    return std::nullopt;
  }
  // single: the A actives' links are the bottleneck; pipelining is needed to reach these.
  if (c != collective::allreduce) return ratio{A - 1, N - 1};
  if (N == 8 && (A == 2 || A == 4)) return ratio{1, 7};  // A=4: the cut bound (n/6 achievable)
  return std::nullopt;
}

}  // namespace relay

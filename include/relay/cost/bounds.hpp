// Lower bounds on the beta cost (one link per pair, every link B each way), in units of
// n * element_size / B: the physical limit no schedule can beat. They come from linear programs
// on the link model (multi-commodity flow for all-to-all, per-source multicast for all-gather,
// all-gather reversed for reduce-scatter; scripts/bounds solves the single-group ones exactly)
// and, for allreduce, from a counting lemma on one element's transfers (A*m + (A-1)*z >=
// 2A(A-1), m transfers between the group's ranks, z with the rest). ../docs/cost-model.md has
// the derivations. Every bound here is reached by some schedule, single-group ones only in the
// limit of pipelining. Where the model has no bound, nullopt.
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
      // The lemma summed over the N/A groups: every link direction between two groups counts
      // for both, so 2N(A-1) <= N^2 T. The relay route's 2n/N reaches it for every A.
      case collective::allreduce: return ratio{2, N};
    }
    return std::nullopt;
  }
  // single: the A actives' links are the bottleneck; pipelining is needed to reach these.
  if (c != collective::allreduce) return ratio{A - 1, N - 1};
  // The lemma over the A(A-1) link directions between actives and the 2A(N-A) between actives
  // and helpers: 2A(A-1) <= A*A(A-1) T + (A-1)*2A(N-A) T. Above the cut bound 1/(N-1) for
  // A > 2; reached by helpers summing 2/(2N-A) of the elements each and the actives the rest.
  return ratio{2, 2 * N - A};
}

}  // namespace relay

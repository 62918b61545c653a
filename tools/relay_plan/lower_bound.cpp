#include "lower_bound.hpp"

#include "relay/cost/bounds.hpp"

namespace relay_plan {

std::optional<known_bound> lower_bound(const relay::schedule_spec& s, const relay::topology& t) {
  if (t.kind != relay::fabric::mesh) return std::nullopt;
  const auto bound = relay::beta_lower_bound(s.coll, s.active, s.ranks, s.mode);
  if (!bound) return std::nullopt;
  // A fused schedule keeps every link direction busy in every step; a single group leaves the
  // actives' links idle in one direction per step unless tiles are pipelined. Every bound is
  // reachable (docs/cost-model.md), the single-group ones in the limit of pipelining.
  std::string note;
  if (s.mode == relay::mode::single) note = "reached only by pipelining";
  return known_bound{*bound, note};
}

}  // namespace relay_plan

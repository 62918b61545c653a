#include "call.hpp"

namespace relay_plan {

std::vector<std::vector<int>> canonical_groups(const relay::schedule_spec& s) {
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(s.groups()));
  for (int g = 0; g < s.groups(); ++g)
    for (int j = 0; j < s.active; ++j)
      groups[static_cast<std::size_t>(g)].push_back(g * s.active + j);
  return groups;
}

relay::plan_request make_request(const options& o, const std::vector<std::int64_t>& counts,
                                 const relay::topology* machine) {
  relay::plan_request r = relay::request_for(o.spec, canonical_groups(o.spec), counts);
  r.wire = o.wire;
  r.wire_threshold = o.wire_threshold;
  r.machine = machine;
  r.type = o.type;
  r.op = o.op;
  r.in_place = o.in_place;
  r.alignment = o.alignment;
  return r;
}

}  // namespace relay_plan

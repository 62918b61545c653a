#include "sweep/predict.hpp"

#include <limits>

#include "relay/cost/route.hpp"
#include "relay/cost/wire.hpp"

namespace relay::bench {

schedule_spec plan_spec(const call_shape& shape, route r) {
  const mode m = shape.mode == run_mode::fused ? mode::fused : mode::single;
  schedule_spec s{shape.coll, shape.active, shape.ranks, m, r};
  if (r == route::relay) s.permille = shape.permille;
  if (r == route::pipelined) s.tiles = shape.tiles;
  return s;
}

std::vector<std::vector<int>> call_groups(const call_shape& shape) {
  const int count = shape.mode == run_mode::single ? 1 : shape.ranks / shape.active;
  std::vector<std::vector<int>> groups(static_cast<std::size_t>(count));
  for (int g = 0; g < count; ++g)
    for (int j = 0; j < shape.active; ++j)
      groups[static_cast<std::size_t>(g)].push_back(g * shape.active + j);
  return groups;
}

double predict_seconds(const call_shape& shape, route r, const topology& t, std::int64_t n,
                       int element_size, const element_widths& w) {
  const schedule_spec spec = plan_spec(shape, r);
  if (shape.mode != run_mode::parallel) return predicted_seconds(spec, t, n, element_size, w);
  std::optional<schedule> parallel = build_schedule(spec);
  if (!parallel) return std::numeric_limits<double>::infinity();
  // Every group runs the single-group pattern on its own ranks: the pattern with N/A groups.
  parallel->header.spec.mode = mode::fused;
  return alpha_beta_seconds(*parallel, t, n, element_size, w);
}

double predict_seconds(const call_shape& shape, route r, const topology& t, std::int64_t n,
                       dtype type, wire_format wire) {
  if (wire != wire_format::native && shape.mode != run_mode::parallel)
    if (const std::optional<schedule> sched = build_schedule(plan_spec(shape, r)))
      return fp8_predicted_seconds(*sched, t, n, type);
  return predict_seconds(shape, r, t, n, size_of(type), widths_of(type));
}

route resolve_route(const call_shape& shape, route_choice choice, const topology& t, std::int64_t n,
                    int element_size, const element_widths& w) {
  switch (choice) {
    case route_choice::relay: return route::relay;
    case route_choice::direct: return route::direct;
    case route_choice::legacy: return route::legacy;
    case route_choice::pipelined: return route::pipelined;
    case route_choice::automatic: break;
  }
  if (shape.mode != run_mode::parallel)
    return choose_route(plan_spec(shape, route::relay), t, n, element_size, w);
  return predict_seconds(shape, route::relay, t, n, element_size, w) <
                 predict_seconds(shape, route::direct, t, n, element_size, w)
             ? route::relay
             : route::direct;
}

}  // namespace relay::bench

// What the fp8 wire (core/wire.hpp) costs, and the size from which it pays.
//
// On an fp8 wire every element that crosses a link is 33/32 bytes (fp8_wire_widths), so the
// link terms shrink by 33/(32 * element size). It adds local work: per step that moves anything
// across a link, a quantize pass on the senders and a dequantize pass on the receivers, each
// `topology::pass_latency`, and the busiest device's pass bytes at `topology::memory_bandwidth`
// (it reads what it sends at its width and writes it as wire bytes, then reads what it receives
// as wire bytes and writes it at its width). Both times are affine in n, so the threshold, the
// count from which fp8 is predicted no slower than native, has a closed form: the added latency
// over the per-element time saved.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "relay/core/wire.hpp"
#include "relay/cost/link_cost.hpp"
#include "relay/cost/route.hpp"

namespace relay {

// Seconds the fp8 passes add to `s` for per-group count n of `type` (partial sums as `p` says).
constexpr double fp8_pass_seconds(const schedule_view& s, const topology& t, std::int64_t n,
                                  dtype type, precision p = precision::fp32_partials) {
  const int R = s.spec().ranks;
  const double element_bytes = static_cast<double>(n) * size_of(type);
  double seconds = 0;
  for (int step = 1; step <= s.header->steps; ++step) {
    const std::vector<ratio> native = link_loads(s, step, widths_of(type, p));
    const std::vector<ratio> wire = link_loads(s, step, fp8_wire_widths(type));
    // Each rank's bytes in and out, on its device's memory (detail::busiest_device).
    std::vector<ratio> per_rank(static_cast<std::size_t>(R));
    for (int a = 0; a < R; ++a)
      for (int b = 0; b < R; ++b) {
        const auto out = static_cast<std::size_t>(a * R + b),
                   in = static_cast<std::size_t>(b * R + a);
        per_rank[static_cast<std::size_t>(a)] += native[out] + wire[out] + native[in] + wire[in];
      }
    const ratio busiest = detail::busiest_device(per_rank, t);
    if (busiest == ratio{}) continue;  // nothing crosses a link in this step: no pass
    seconds += 2 * t.pass_latency + busiest.to_double() * element_bytes / t.memory_bandwidth;
  }
  return seconds;
}

// Predicted seconds of `s` on an fp8 wire: the link terms at wire widths plus the passes.
constexpr double fp8_predicted_seconds(const schedule_view& s, const topology& t, std::int64_t n,
                                       dtype type, precision p = precision::fp32_partials) {
  return alpha_beta_seconds(s, t, n, size_of(type), fp8_wire_widths(type)) +
         fp8_pass_seconds(s, t, n, type, p);
}

// fp8 never pays (wire_choice::threshold_bytes).
inline constexpr std::uint64_t fp8_never = std::numeric_limits<std::uint64_t>::max();

// The smallest per-group count at which the model predicts `s` on an fp8 wire no slower than
// native, in bytes (count * size_of(type)): what make_plan compares a call's largest group
// with. fp8_never where the wire saves less per element than the passes cost (a switch fast
// enough against memory), where `type` takes no fp8 wire, or where `s` has no schedule.
RELAY_CONSTEXPR_SCHEDULE std::uint64_t fp8_threshold_bytes(const schedule_spec& s,
                                                           const topology& t, dtype type,
                                                           precision p = precision::fp32_partials) {
  const std::optional<schedule> sched = build_schedule(s);
  if (!sched || !fp8_wire_dtype(type)) return fp8_never;
  // Both predictions are affine in n: compare their constant terms (n = 0) and slopes.
  constexpr std::int64_t probe = std::int64_t{1} << 30;
  const int es = size_of(type);
  const double native0 = alpha_beta_seconds(*sched, t, 0, es, widths_of(type, p));
  const double native1 = alpha_beta_seconds(*sched, t, probe, es, widths_of(type, p));
  const double fp80 = fp8_predicted_seconds(*sched, t, 0, type, p);
  const double fp81 = fp8_predicted_seconds(*sched, t, probe, type, p);
  const double saved_per_element = ((native1 - native0) - (fp81 - fp80)) / probe;
  if (!(saved_per_element > 0)) return fp8_never;
  const double count = (fp80 - native0) / saved_per_element;
  if (!(count < 1e18)) return fp8_never;
  if (count <= 0) return 0;
  auto whole = static_cast<std::uint64_t>(count);  // rounded up: the first count that pays
  if (static_cast<double>(whole) < count) ++whole;
  return whole * static_cast<std::uint64_t>(es);
}

}  // namespace relay

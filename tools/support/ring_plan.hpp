// A plan that is no collective: a ring of steps for measuring what one executor step costs.
//
// Step s: every rank r pushes n floats from its output half (s % 2), slot 0, to ranks r+1 ..
// r+fanout, slot k-1 of their other half; with `reduce`, each rank then adds what it received
// from r-1 into its input. Every step depends on its neighbours' previous step, as a relay
// schedule's steps do, so the executor must order them as it orders a relay's.
//
// Per rank: input n floats; output 2 halves of `fanout` slots of n floats.
#pragma once

#include <cstdint>

#include "relay/plan/plan.hpp"

namespace relay::examples {

inline plan ring_plan(int ranks, int steps, bool reduce, int fanout = 1, std::uint64_t n = 64) {
  const std::uint64_t slot = n * 4, half = slot * static_cast<std::uint64_t>(fanout);
  plan p;
  p.spec.ranks = ranks;
  p.type = dtype::float32;
  p.input_bytes.assign(static_cast<std::size_t>(ranks), slot);
  p.output_bytes.assign(static_cast<std::size_t>(ranks), 2 * half);
  p.scratch_bytes.assign(static_cast<std::size_t>(ranks), 0);
  auto rank = [&](int r) { return static_cast<std::uint16_t>(r % ranks); };
  for (int s = 0; s < steps; ++s) {
    const auto step = static_cast<std::uint16_t>(s);
    const std::uint64_t from = static_cast<std::uint64_t>(s % 2) * half, to = half - from;
    for (int r = 0; r < ranks; ++r)
      for (int k = 1; k <= fanout; ++k) {
        const plan_operand src{rank(r), buffer::output, from};
        p.append(
            {.step = step,
             .dst = {rank(r + k), buffer::output, to + static_cast<std::uint64_t>(k - 1) * slot},
             .count = n},
            {&src, 1});
      }
    if (!reduce) continue;
    for (int r = 0; r < ranks; ++r) {
      const plan_operand srcs[] = {{rank(r), buffer::input, 0}, {rank(r), buffer::output, to}};
      p.append({.step = step,
                .phase = relay::phase::reduce,
                .dst = {rank(r), buffer::input, 0},
                .count = n},
               srcs);
    }
  }
  return p;
}

}  // namespace relay::examples

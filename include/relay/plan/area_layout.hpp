// Where a rank-local transport that stages every call through one memory area per rank (shm:
// a shared-memory segment; ipc: registered device memory) puts rank r's input, output and
// scratch for a plan: the same on every rank, so that a peer can address them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "relay/plan/plan.hpp"

namespace relay {

struct area_layout {
  std::uint64_t input = 0, output = 0, scratch = 0, end = 0;
};

inline area_layout layout_of(const plan& p, std::size_t r) {
  auto up = [](std::uint64_t x) { return (x + 255) / 256 * 256; };
  area_layout a;
  a.output = up(p.input_bytes[r]);
  a.scratch = a.output + up(p.output_bytes[r]);
  a.end = a.scratch + p.scratch_bytes[r];
  return a;
}

// The most any rank of the plan needs: what every rank compares with its area's size, so that
// every rank refuses an oversized call alike.
inline std::uint64_t largest_area(const plan& p) {
  std::uint64_t most = 0;
  for (std::size_t r = 0; r < static_cast<std::size_t>(p.ranks()); ++r)
    if (layout_of(p, r).end > most) most = layout_of(p, r).end;
  return most;
}

}  // namespace relay

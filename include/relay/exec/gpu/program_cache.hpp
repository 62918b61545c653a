// The programs an executor keeps for reuse (a training step alternates collectives): looked up by
// an equal plan and the same buffers, the least recently used one out when full.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "relay/core/lru.hpp"
#include "relay/core/status.hpp"
#include "relay/exec/gpu/program.hpp"
#include "relay/gpu/handles.hpp"
#include "relay/plan/plan.hpp"

namespace relay::gpu {

class program_cache {
 public:
  explicit program_cache(int capacity = 8) : capacity_(std::max(capacity, 1)) {}

  // The program prepared for `p` on these buffers, or null; marks it used.
  program* find(const plan& p, std::span<const buffer_view> in, std::span<const buffer_view> out) {
    for (program& g : programs_)
      if (std::ranges::equal(in, g.in) && std::ranges::equal(out, g.out) && g.key == p) {
        g.last_use = ++uses_;
        return &g;
      }
    return nullptr;
  }

  // Room for one more: when full, evicts the least recently used program after wait() (a
  // status), since work in flight may still read its lists.
  template <class Wait>
  status make_room(std::span<const lane> lanes, Wait&& wait) {
    if (programs_.size() < static_cast<std::size_t>(capacity_)) return {};
    if (status s = wait(); !s) return s;
    evict_least_recent(programs_, [&](program& x) { free_program(x, lanes); });
    return {};
  }

  program& insert(program&& g) {
    g.last_use = ++uses_;
    programs_.push_back(std::move(g));
    return programs_.back();
  }

  // Frees every program (nothing in flight may use them).
  void clear(std::span<const lane> lanes) {
    for (program& g : programs_)
      free_program(g, lanes);
    programs_.clear();
  }
  std::size_t size() const { return programs_.size(); }

 private:
  std::vector<program> programs_;
  std::uint64_t uses_ = 0;
  int capacity_ = 8;
};

}  // namespace relay::gpu

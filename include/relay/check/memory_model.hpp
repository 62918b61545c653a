// Where a concrete operand lives, for the checks: every rank has one "user" memory space holding
// its input and output (overlapping when the collective runs in place, exactly as NCCL lays them
// out), one scratch space per group and one partial space per group. The checks count elements;
// that a partial element is wider (make_plan lays it out) changes no check, because no operand
// ever spans two spaces and copies keep a partial a partial (check/hazards.hpp).
#pragma once

#include <array>
#include <cstdint>

#include "relay/schedule/evaluate.hpp"

namespace relay {

// What a check found. `what` is nullptr when the check passed; otherwise it names the problem and
// the other fields say where (each -1 when it does not apply).
struct check_failure {
  const char* what = nullptr;
  int group = -1, rank = -1, step = -1;
  std::int64_t count = -1;     // the failing group's count
  std::int64_t position = -1;  // element position in the space concerned
  bool in_place = false;
  constexpr bool ok() const { return what == nullptr; }
};

namespace detail {

struct placement {
  int space = -1;  // -1: the operand names memory its rank does not have
  std::int64_t base = 0, extent = 0;
};

class memory_model {
 public:
  constexpr memory_model(const schedule_header& h, std::span<const std::int64_t> counts,
                         bool in_place, std::int64_t alignment)
      : spec_(h.spec), counts_(counts), in_place_(in_place) {
    // Everything place() needs, once: the checks place every operand of every operation.
    for (int g = 0; g < spec_.groups(); ++g) {
      const auto i = static_cast<std::size_t>(g);
      active_scratch_[i] = scratch_elements(h, true, count(g), alignment);
      helper_scratch_[i] = scratch_elements(h, false, count(g), alignment);
      active_partial_[i] = partial_elements(h, true, count(g), alignment);
      helper_partial_[i] = partial_elements(h, false, count(g), alignment);
      input_extent_[i] = input_elements(spec_.coll, spec_.active, count(g));
      output_extent_[i] = output_elements(spec_.coll, spec_.active, count(g));
    }
    for (int r = 0; r < spec_.ranks; ++r) {
      const in_place_offsets b = user_bases(r);
      input_base_[static_cast<std::size_t>(r)] = b.input;
      output_base_[static_cast<std::size_t>(r)] = b.output;
    }
  }

  constexpr int space_count() const { return spec_.ranks * (1 + 2 * spec_.groups()); }
  constexpr int user_space(int rank) const { return rank * (1 + 2 * spec_.groups()); }
  constexpr int scratch_space(int rank, int group) const { return user_space(rank) + 1 + group; }
  constexpr int partial_space(int rank, int group) const {
    return user_space(rank) + 1 + spec_.groups() + group;
  }

  // The group in which `rank` is active, or -1 (a single-mode helper).
  constexpr int home_group(int rank) const {
    const int g = rank / spec_.active;
    return g < spec_.groups() ? g : -1;
  }
  constexpr std::int64_t count(int group) const { return counts_[static_cast<std::size_t>(group)]; }
  constexpr std::int64_t input_extent(int group) const {
    return input_extent_[static_cast<std::size_t>(group)];
  }
  constexpr std::int64_t output_extent(int group) const {
    return output_extent_[static_cast<std::size_t>(group)];
  }
  constexpr std::int64_t input_base(int rank) const {
    return input_base_[static_cast<std::size_t>(rank)];
  }
  constexpr std::int64_t output_base(int rank) const {
    return output_base_[static_cast<std::size_t>(rank)];
  }

  constexpr placement place(const concrete_operand& o, int group) const {
    const int rank = o.rank;
    if (o.buf == buffer::scratch) {
      const auto g = static_cast<std::size_t>(group);
      return {scratch_space(rank, group), 0,
              home_group(rank) == group ? active_scratch_[g] : helper_scratch_[g]};
    }
    if (o.buf == buffer::partial) {
      const auto g = static_cast<std::size_t>(group);
      return {partial_space(rank, group), 0,
              home_group(rank) == group ? active_partial_[g] : helper_partial_[g]};
    }
    if (home_group(rank) != group) return {};
    const bool is_in = o.buf == buffer::input;
    return {user_space(rank), is_in ? input_base(rank) : output_base(rank),
            is_in ? input_extent(group) : output_extent(group)};
  }

 private:
  constexpr in_place_offsets user_bases(int rank) const {
    const int g = home_group(rank);
    if (g < 0) return {};
    if (in_place_) return in_place_layout(spec_.coll, rank - g * spec_.active, count(g));
    return {0, input_elements(spec_.coll, spec_.active, count(g))};
  }

  schedule_spec spec_;
  std::span<const std::int64_t> counts_;
  bool in_place_;
  std::array<std::int64_t, max_ranks> active_scratch_{}, helper_scratch_{};  // per group
  std::array<std::int64_t, max_ranks> active_partial_{}, helper_partial_{};  // per group
  std::array<std::int64_t, max_ranks> input_extent_{}, output_extent_{};     // per group
  std::array<std::int64_t, max_ranks> input_base_{}, output_base_{};         // per rank
};

}  // namespace detail
}  // namespace relay

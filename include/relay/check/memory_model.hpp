// Where a concrete operand lives, for the checks: every rank has one "user" memory space holding
// its input and output (overlapping when the collective runs in place, exactly as NCCL lays them
// out), one scratch space per group and one partial space per group. The model holds as many
// groups as it is given counts: one for a schedule's pattern (check/verify.hpp), where ranks
// A .. N-1 are helpers with no user space, or every group of a plan. The checks count elements;
// that a partial element is wider (make_plan lays it out) changes no check, because no operand
// ever spans two spaces and copies keep a partial a partial (check/hazards.hpp).
#pragma once

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

// Per-group and per-rank tables are plain arrays: the checks place every operand of every
// operation, and compilers price constant evaluation by the statements run (an std::array or
// std::span subscript is a call with an assertion in it).
class memory_model {
 public:
  constexpr memory_model(const schedule_header& h, std::span<const std::int64_t> counts,
                         bool in_place, std::int64_t alignment)
      : spec_(h.spec), groups_(static_cast<int>(counts.size())), in_place_(in_place) {
    for (int g = 0; g < groups_; ++g) {
      const std::int64_t n = counts_[g] = counts.data()[g];
      active_scratch_[g] = scratch_elements(h, true, n, alignment);
      helper_scratch_[g] = scratch_elements(h, false, n, alignment);
      active_partial_[g] = partial_elements(h, true, n, alignment);
      helper_partial_[g] = partial_elements(h, false, n, alignment);
      input_extent_[g] = input_elements(spec_.coll, spec_.active, n);
      output_extent_[g] = output_elements(spec_.coll, spec_.active, n);
    }
    for (int r = 0; r < spec_.ranks; ++r) {
      const in_place_offsets b = user_bases(r);
      input_base_[r] = b.input;
      output_base_[r] = b.output;
    }
    places_ = new placement[static_cast<std::size_t>(spec_.ranks * groups_ * buffer_kinds)];
    for (int r = 0; r < spec_.ranks; ++r)
      for (int g = 0; g < groups_; ++g)
        for (int b = 0; b < buffer_kinds; ++b)
          places_[(r * groups_ + g) * buffer_kinds + b] = locate(r, static_cast<buffer>(b), g);
  }
  constexpr memory_model(const memory_model&) = delete;
  constexpr memory_model& operator=(const memory_model&) = delete;
  constexpr ~memory_model() { delete[] places_; }

  constexpr int space_count() const { return spec_.ranks * (1 + 2 * groups_); }
  constexpr int user_space(int rank) const { return rank * (1 + 2 * groups_); }
  constexpr int scratch_space(int rank, int group) const { return user_space(rank) + 1 + group; }
  constexpr int partial_space(int rank, int group) const {
    return user_space(rank) + 1 + groups_ + group;
  }

  // The group in which `rank` is active, or -1 (a helper of every group modeled).
  constexpr int home_group(int rank) const {
    const int g = rank / spec_.active;
    return g < groups_ ? g : -1;
  }
  constexpr std::int64_t count(int group) const { return counts_[group]; }
  constexpr std::int64_t input_extent(int group) const { return input_extent_[group]; }
  constexpr std::int64_t output_extent(int group) const { return output_extent_[group]; }
  constexpr std::int64_t input_base(int rank) const { return input_base_[rank]; }
  constexpr std::int64_t output_base(int rank) const { return output_base_[rank]; }

  // Where operand `o` of an operation of `group` lies: one lookup, since the checks place every
  // operand of every operation (a rank outside the node lies nowhere).
  constexpr const placement& place(const concrete_operand& o, int group) const {
    if (o.rank >= spec_.ranks) return nowhere_;
    return places_[(o.rank * groups_ + group) * buffer_kinds + static_cast<int>(o.buf)];
  }

 private:
  static constexpr int buffer_kinds = 4;  // input, output, scratch, partial
  static constexpr placement nowhere_{};

  constexpr placement locate(int rank, buffer buf, int group) const {
    const bool home = rank / spec_.active == group;
    if (buf == buffer::scratch)
      return {scratch_space(rank, group), 0,
              home ? active_scratch_[group] : helper_scratch_[group]};
    if (buf == buffer::partial)
      return {partial_space(rank, group), 0,
              home ? active_partial_[group] : helper_partial_[group]};
    if (!home) return {};
    const bool is_in = buf == buffer::input;
    return {user_space(rank), is_in ? input_base_[rank] : output_base_[rank],
            is_in ? input_extent_[group] : output_extent_[group]};
  }

  constexpr in_place_offsets user_bases(int rank) const {
    const int g = home_group(rank);
    if (g < 0) return {};
    if (in_place_) return in_place_layout(spec_.coll, rank - g * spec_.active, count(g));
    return {0, input_elements(spec_.coll, spec_.active, count(g))};
  }

  schedule_spec spec_;
  int groups_;
  bool in_place_;
  std::int64_t counts_[max_ranks]{};                                        // per group
  std::int64_t active_scratch_[max_ranks]{}, helper_scratch_[max_ranks]{};  // per group
  std::int64_t active_partial_[max_ranks]{}, helper_partial_[max_ranks]{};  // per group
  std::int64_t input_extent_[max_ranks]{}, output_extent_[max_ranks]{};     // per group
  std::int64_t input_base_[max_ranks]{}, output_base_[max_ranks]{};         // per rank
  placement* places_ = nullptr;  // by rank, group and buffer
};

}  // namespace detail
}  // namespace relay

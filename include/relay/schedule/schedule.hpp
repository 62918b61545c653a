// The schedule: what moves where, step by step, with every size symbolic.
//
// A schedule is one group's pattern: a list of operations over ranks given by role, 0 .. A-1 the
// group's actives and A .. N-1 its helpers, plus the number of groups that run it (N/A fused, 1
// single). Group g plays the pattern on its canonical ranks (group_layout::rank_of): actives
// g*A .. g*A+A-1, helpers every other rank in increasing order. The plan maps canonical ranks
// onto the caller's groups.
//
// One pattern is all there is to store, check and price: every group runs the same operations
// on its own ranks at its own count. The memory model keeps groups apart (a group's operations
// touch only its actives' user buffers and its own scratch and partial areas on every rank), so
// no operation of one group can meet one of another, and checking the pattern at every count
// checks every group at every count, whatever the others' counts (check/verify.hpp).
//
// Each step has two phases, in this order:
//   transfer: copies, all concurrent (a copy whose source and destination rank differ rides the
//             link between them; a copy within one rank is a local copy);
//   reduce:   multi-input reductions on one rank each, all concurrent, after every transfer of the
//             step has landed.
// The ordering is explicit in the data (step, phase), never implied by position in the list.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "relay/core/affine.hpp"
#include "relay/core/collective.hpp"

namespace relay {

inline constexpr int max_ranks = 64;
inline constexpr int max_reduce_inputs = 16;

// partial: a rank's area for partial sums that are not final (a helper's sum of some of a
// block's contributions). Its elements have the accumulator's width (fp32 for fp16/bf16, see
// core/reduction.hpp), so a value is rounded to the element type once, by the final reduction.
// Only reductions with finalize == false write it; copies move partials only to partials.
enum class buffer : unsigned char { input, output, scratch, partial };
enum class phase : unsigned char { transfer, reduce };

// What a caller asks for. `permille` only shapes the allreduce offload (0: the link-balanced
// default, 1000*H/N); it is how the spec's 780 and 500 permille schedules are both expressible.
// `tiles` is the pipeline depth T of the pipelined route (2..64).
struct schedule_spec {
  collective coll = collective::allreduce;
  int active = 2;
  int ranks = 8;
  relay::mode mode = mode::fused;
  relay::route route = route::relay;
  int permille = 0;
  int tiles = 0;

  constexpr int helpers() const { return ranks - active; }
  constexpr int groups() const { return mode == mode::fused ? ranks / active : 1; }
  friend constexpr bool operator==(const schedule_spec&, const schedule_spec&) = default;
};

// The one operation type of every layer, templated on what a size is: `affine` in a schedule
// (elements, symbolic in the counts), std::int64_t in a concrete schedule (elements,
// schedule/evaluate.hpp) and std::uint64_t in a plan (bytes for offsets, elements for counts,
// plan/plan.hpp). A field added here is a field of all three; each has a default, so code that
// does not know it keeps working.

// A place in a rank's memory. Scratch and partial are the rank's areas for the operation's group.
template <class Size>
struct basic_operand {
  std::uint16_t rank = 0;
  buffer buf = buffer::input;
  Size offset{};
  friend constexpr bool operator==(const basic_operand&, const basic_operand&) = default;
};

// One copy (one source operand) or one reduction (1..max_reduce_inputs source operands) into
// `dst`, `count` elements. Sources live in the owner's operand pool at [first_source,
// first_source + source_count). `finalize` marks the reduction that produces a final value: the
// one place AVG divides. `group`: the group whose pattern the operation comes from (0 in a
// schedule, which is one group's pattern). `partial_mask` (plans only, make_plan sets it): the
// operands stored as accumulators, wider than elements (fp32 partial sums of fp16/bf16), bit s
// for source s, partial_dst_bit for the destination; zero where partials are as wide as elements.
template <class Size>
struct basic_operation {
  std::uint16_t step = 0;
  relay::phase phase = phase::transfer;
  std::uint8_t source_count = 0;
  std::uint32_t first_source = 0;
  basic_operand<Size> dst{};
  Size count{};
  bool finalize = false;
  std::uint8_t group = 0;
  std::uint32_t partial_mask = 0;  // (new fields go last: positional initializers stay valid)

  // The rank that runs the operation: a copy's source rank (it pushes), a reduction's own rank.
  // `sources` is the whole pool the operation indexes.
  constexpr int issuer(std::span<const basic_operand<Size>> sources) const {
    return phase == phase::transfer ? sources.data()[first_source].rank : dst.rank;
  }
  friend constexpr bool operator==(const basic_operation&, const basic_operation&) = default;
};

// A schedule's operations: sizes in elements, affine in the counts.
using operand = basic_operand<affine>;
using operation = basic_operation<affine>;

// Operations [first, first + size) of an operation list: one phase of one step. Phases run in
// order; the operations of one phase are independent of each other and may run concurrently.
struct phase_range {
  std::uint16_t step = 0;
  relay::phase phase = phase::transfer;
  std::uint32_t first = 0, size = 0;
  friend constexpr bool operator==(const phase_range&, const phase_range&) = default;
};

// The end of the phase that starts at ops[first]: the first later operation of another step or
// phase (lists are in (step, phase) order). Every layer splits its list into phases with it; the
// checks run it inside the compiler, so it takes a raw pointer (core/flat_stack.hpp says why).
template <class Op>
constexpr std::size_t phase_end(const Op* ops, std::size_t size, std::size_t first) {
  const std::uint16_t step = ops[first].step;
  const relay::phase ph = ops[first].phase;
  std::size_t last = first + 1;
  while (last < size && ops[last].step == step && ops[last].phase == ph)
    ++last;
  return last;
}

// Everything about a schedule except its operations.
struct schedule_header {
  schedule_spec spec{};
  int steps = 0;
  int quantum_count = 0;
  std::array<quantum_rule, max_quanta> quanta{};
  // Scratch each rank needs per group, by its role in that group.
  affine active_scratch{};
  affine helper_scratch{};
  // Partial-sum elements each rank needs per group, by role (buffer::partial; accumulator-wide).
  affine active_partial{};
  affine helper_partial{};
  // Short human-readable names of the quanta, for printers ("chunk", "offload piece", ...).
  std::array<const char*, max_quanta> quantum_names{};
  const char* description = "";
};

// A read-only view that every algorithm takes: built from a compile-time `static_schedule` or a
// run-time `schedule` alike.
struct schedule_view {
  const schedule_header* header = nullptr;
  std::span<const operation> ops{};
  std::span<const operand> sources{};

  constexpr const schedule_spec& spec() const { return header->spec; }
  constexpr int groups() const { return header->spec.groups(); }
  constexpr std::span<const operand> sources_of(const operation& op) const {
    return sources.subspan(op.first_source, op.source_count);
  }
};

// Run-time storage (a printer choosing A and N from flags).
struct schedule {
  schedule_header header{};
  std::vector<operation> ops;
  std::vector<operand> sources;
  constexpr schedule_view view() const { return {&header, ops, sources}; }
  constexpr operator schedule_view() const { return view(); }  // NOLINT: a view of itself
};

// Compile-time storage, exactly sized; see make_schedule in schedule/generate.hpp.
template <std::size_t OpCount, std::size_t SourceCount>
struct static_schedule {
  schedule_header header{};
  std::array<operation, OpCount> ops{};
  std::array<operand, SourceCount> sources{};
  constexpr schedule_view view() const { return {&header, ops, sources}; }
  constexpr operator schedule_view() const { return view(); }  // NOLINT: a view of itself
};

// Canonical rank layout of one group.
struct group_layout {
  int group = 0, active = 2, ranks = 8;
  constexpr int active_rank(int j) const { return group * active + j; }
  constexpr int helper_rank(int i) const { return i < group * active ? i : i + active; }
  // The rank that plays pattern rank `role` in this group: active `role` for role < A, helper
  // `role - A` otherwise. Injective, so distinct roles stay distinct ranks in every group.
  constexpr int rank_of(int role) const {
    return role < active ? active_rank(role) : helper_rank(role - active);
  }
};

// The layout the pattern is written in: group 0, where every rank is its own role.
constexpr group_layout pattern_layout(const schedule_spec& s) {
  return {0, s.active, s.ranks};
}

}  // namespace relay

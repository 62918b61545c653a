// A schedule made concrete for per-group counts: offsets and counts in elements.
//
// This is the one interpreter of the symbolic sizes. The property checks run it at
// representative counts; the plan runs it at the caller's counts and turns elements into bytes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "relay/core/flat_stack.hpp"
#include "relay/schedule/schedule.hpp"

namespace relay {

inline constexpr std::int64_t default_alignment = 128;  // elements, as in the spec

// An operation at concrete counts (schedule/schedule.hpp): offsets and counts in elements, ranks
// canonical, `group` the group it belongs to.
using concrete_operand = basic_operand<std::int64_t>;
using concrete_op = basic_operation<std::int64_t>;

// Operations and their sources as the checks read them, wherever they are stored.
struct concrete_view {
  std::span<const concrete_op> ops;
  std::span<const concrete_operand> sources;
};

struct concrete_schedule {
  schedule_spec spec{};
  int steps = 0;
  std::vector<concrete_op> ops;  // in (step, phase) order; empty operations dropped
  std::vector<concrete_operand> sources;

  constexpr std::span<const concrete_operand> sources_of(const concrete_op& op) const {
    return std::span<const concrete_operand>(sources).subspan(op.first_source, op.source_count);
  }
  constexpr concrete_view view() const { return {ops, sources}; }
};

// The values of 1, n and every quantum for one group of count n.
constexpr symbol_values evaluate_symbols(const schedule_header& h, std::int64_t n,
                                         std::int64_t alignment) {
  symbol_values v{};
  v[0] = 1;
  v[1] = n;
  for (int i = 0; i < h.quantum_count; ++i)
    v[2 + i] = h.quanta[i].eval(v, alignment);
  return v;
}

// The quanta at their large-n shares of n (n itself is 1): what the cost model prices.
constexpr symbol_shares ideal_shares(const schedule_header& h) {
  symbol_shares v{};
  v[1] = ratio{1};
  for (int i = 0; i < h.quantum_count; ++i)
    v[2 + i] = h.quanta[i].share(v);
  return v;
}

// Scratch elements a rank needs for one group, by role.
constexpr std::int64_t scratch_elements(const schedule_header& h, bool active, std::int64_t n,
                                        std::int64_t alignment = default_alignment) {
  const symbol_values v = evaluate_symbols(h, n, alignment);
  const std::int64_t e = (active ? h.active_scratch : h.helper_scratch).eval(v);
  return e < 0 ? 0 : e;
}

// Partial-sum elements (buffer::partial) a rank needs for one group, by role.
constexpr std::int64_t partial_elements(const schedule_header& h, bool active, std::int64_t n,
                                        std::int64_t alignment = default_alignment) {
  const symbol_values v = evaluate_symbols(h, n, alignment);
  const std::int64_t e = (active ? h.active_partial : h.helper_partial).eval(v);
  return e < 0 ? 0 : e;
}

// Appends groups 0 .. counts.size()-1 of the pattern to `ops` and `sources`, group g at count
// counts[g], in (step, phase) order and, within a phase, group by group. Operations of count
// zero are dropped, so a group too small to relay issues no helper traffic at all. The checks
// run this inside the compiler at every representative count, so it appends to flat_stacks and
// indexes raw pointers (core/flat_stack.hpp says why).
constexpr void evaluate_into(const schedule_view& s, std::span<const std::int64_t> counts,
                             std::int64_t alignment, flat_stack<concrete_op>& ops_out,
                             flat_stack<concrete_operand>& sources_out) {
  const operation* const ops = s.ops.data();
  const operand* const sources = s.sources.data();
  const std::size_t op_count = s.ops.size(), group_count = counts.size();
  const std::int64_t* const group_counts = counts.data();
  const int A = s.spec().active, N = s.spec().ranks;
  for (std::size_t first = 0; first < op_count;) {
    const std::size_t last = phase_end(ops, op_count, first);
    for (std::size_t g = 0; g < group_count; ++g) {
      const group_layout L{static_cast<int>(g), A, N};
      std::uint16_t rank_of[max_ranks]{};  // the group's rank of each role, looked up per operand
      for (int role = 0; role < N; ++role)
        rank_of[role] = static_cast<std::uint16_t>(L.rank_of(role));
      const symbol_values values = evaluate_symbols(*s.header, group_counts[g], alignment);
      const std::int64_t* const v = values.data();  // (one call per group, not per operand)
      for (std::size_t i = first; i < last; ++i) {
        const operation& op = ops[i];
        const std::int64_t count = op.count.eval(v);
        if (count <= 0) continue;
        ops_out.push({.step = op.step,
                      .phase = op.phase,
                      .source_count = op.source_count,
                      .first_source = static_cast<std::uint32_t>(sources_out.size()),
                      .dst = {rank_of[op.dst.rank], op.dst.buf, op.dst.offset.eval(v)},
                      .count = count,
                      .finalize = op.finalize,
                      .group = static_cast<std::uint8_t>(g)});
        const operand* const from = sources + op.first_source;
        for (std::size_t k = 0; k < op.source_count; ++k)
          sources_out.push({rank_of[from[k].rank], from[k].buf, from[k].offset.eval(v)});
      }
    }
    first = last;
  }
}

// The same, as a program of its own.
constexpr concrete_schedule evaluate_groups(const schedule_view& s,
                                            std::span<const std::int64_t> counts,
                                            std::int64_t alignment) {
  flat_stack<concrete_op> ops;
  flat_stack<concrete_operand> sources;
  evaluate_into(s, counts, alignment, ops, sources);
  concrete_schedule p;
  p.spec = s.spec();
  p.steps = s.header->steps;
  p.ops.assign(ops.data(), ops.data() + ops.size());
  p.sources.assign(sources.data(), sources.data() + sources.size());
  return p;
}

// Every group, `counts[g]` being group g's count (counts.size() == s.groups()): what a plan runs.
constexpr concrete_schedule evaluate(const schedule_view& s, std::span<const std::int64_t> counts,
                                     std::int64_t alignment = default_alignment) {
  return evaluate_groups(s, counts.first(static_cast<std::size_t>(s.groups())), alignment);
}

// The pattern alone, as one group of count n: what the checks run (check/verify.hpp).
constexpr concrete_schedule evaluate_pattern(const schedule_view& s, std::int64_t n,
                                             std::int64_t alignment = default_alignment) {
  return evaluate_groups(s, std::span<const std::int64_t>(&n, 1), alignment);
}

}  // namespace relay

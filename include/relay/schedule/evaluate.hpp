// A schedule made concrete for per-group counts: offsets and lengths in elements.
//
// This is the one interpreter of the symbolic sizes. The property checks run it at
// representative counts; the plan runs it at the caller's counts and turns elements into bytes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "relay/schedule/schedule.hpp"

namespace relay {

inline constexpr std::int64_t default_alignment = 128;  // elements, as in the spec

struct concrete_operand {
  std::uint8_t rank = 0;
  buffer buf = buffer::input;
  std::int64_t offset = 0;
  friend constexpr bool operator==(const concrete_operand&, const concrete_operand&) = default;
};

struct concrete_op {
  std::uint16_t step = 0;
  relay::phase phase = phase::transfer;
  std::uint8_t group = 0;
  std::uint8_t source_count = 0;
  std::uint32_t first_source = 0;
  concrete_operand dst{};
  std::int64_t length = 0;
  bool finalize = false;
};

struct concrete_program {
  schedule_spec spec{};
  int steps = 0;
  std::vector<concrete_op> ops;  // in (step, phase) order; empty operations dropped
  std::vector<concrete_operand> sources;

  constexpr std::span<const concrete_operand> sources_of(const concrete_op& op) const {
    return std::span<const concrete_operand>(sources).subspan(op.first_source, op.source_count);
  }
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

// `counts[g]` is group g's count. Operations of length zero are dropped, so a group too small to
// relay issues no helper traffic at all.
constexpr concrete_program evaluate(const schedule_view& s, std::span<const std::int64_t> counts,
                                    std::int64_t alignment = default_alignment) {
  concrete_program p;
  p.spec = s.spec();
  p.steps = s.header->steps;
  // At most every operation survives: one allocation each (compile-time checks pay for each).
  p.ops.reserve(s.ops.size());
  p.sources.reserve(s.sources.size());
  std::vector<symbol_values> symbols;
  for (int g = 0; g < s.spec().groups(); ++g)
    symbols.push_back(evaluate_symbols(*s.header, counts[static_cast<std::size_t>(g)], alignment));
  for (const operation& op : s.ops) {
    const symbol_values& v = symbols[op.group];
    const std::int64_t length = op.length.eval(v);
    if (length <= 0) continue;
    concrete_op c{};
    c.step = op.step;
    c.phase = op.phase;
    c.group = op.group;
    c.source_count = op.source_count;
    c.first_source = static_cast<std::uint32_t>(p.sources.size());
    c.dst = {op.dst.rank, op.dst.buf, op.dst.offset.eval(v)};
    c.length = length;
    c.finalize = op.finalize;
    for (const operand& o : s.sources_of(op))
      p.sources.push_back({o.rank, o.buf, o.offset.eval(v)});
    p.ops.push_back(c);
  }
  return p;
}

}  // namespace relay

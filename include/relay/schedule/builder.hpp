// The small vocabulary the schedule generators are written in.
//
// A generator runs twice at compile time: once into a counting sink (to size the arrays), once
// into an array sink. At run time it writes into a vector sink. The same code serves all three.
#pragma once

#include <array>
#include <cstddef>

#include "relay/schedule/schedule.hpp"

namespace relay::detail {

struct counting_sink {
  std::size_t op_count = 0, source_count = 0;
  constexpr void add(operation, const operand*, int sources) {
    ++op_count;
    source_count += static_cast<std::size_t>(sources);
  }
};

struct vector_sink {
  schedule* out;
  constexpr void add(operation op, const operand* src, int sources) {
    op.first_source = static_cast<std::uint32_t>(out->sources.size());
    for (int i = 0; i < sources; ++i)
      out->sources.push_back(src[i]);
    out->ops.push_back(op);
  }
};

template <std::size_t OpCount, std::size_t SourceCount>
struct array_sink {
  static_schedule<OpCount, SourceCount>* out;
  std::size_t next_op = 0, next_source = 0;
  constexpr void add(operation op, const operand* src, int sources) {
    op.first_source = static_cast<std::uint32_t>(next_source);
    for (int i = 0; i < sources; ++i)
      out->sources[next_source++] = src[i];
    out->ops[next_op++] = op;
  }
};

// Up to max_reduce_inputs operands, in summation order.
struct operand_list {
  std::array<operand, max_reduce_inputs> items{};
  int size = 0;
  constexpr void push(operand o) { items[static_cast<std::size_t>(size++)] = o; }
};

constexpr operand in(int rank, affine off) {
  return {static_cast<std::uint16_t>(rank), buffer::input, off};
}
constexpr operand out(int rank, affine off) {
  return {static_cast<std::uint16_t>(rank), buffer::output, off};
}
constexpr operand scr(int rank, affine off) {
  return {static_cast<std::uint16_t>(rank), buffer::scratch, off};
}
constexpr operand par(int rank, affine off) {
  return {static_cast<std::uint16_t>(rank), buffer::partial, off};
}

// Emits the pattern's operations; `step` is set by the generator as it goes.
template <class Sink>
struct builder {
  Sink* sink;
  int step = 0;

  constexpr void copy(operand src, operand dst, affine count) {
    operation op{};
    op.step = static_cast<std::uint16_t>(step);
    op.phase = phase::transfer;
    op.source_count = 1;
    op.dst = dst;
    op.count = count;
    sink->add(op, &src, 1);
  }
  constexpr void reduce(const operand_list& srcs, operand dst, affine count, bool finalize) {
    operation op{};
    op.step = static_cast<std::uint16_t>(step);
    op.phase = phase::reduce;
    op.source_count = static_cast<std::uint8_t>(srcs.size);
    op.dst = dst;
    op.count = count;
    op.finalize = finalize;
    sink->add(op, srcs.items.data(), srcs.size);
  }
};

// Index of source j among the A-1 ranks that are not k (the slot a k-bound piece from j takes).
constexpr int other_index(int j, int k) {
  return j < k ? j : j - 1;
}

// A direct reduce-scatter / all-gather among a group's actives, in A pieces: piece k lies at
// source(k) in every active's input, `count(k)` elements, and active k reduces it into its output
// at dst(k). The allreduce relay route runs one over its direct region; the direct baselines of
// allreduce and reduce-scatter are made of them.

// Transfers: every a_j sends piece k to a_k's scratch slot for j (slot = the index of j among the
// A-1 others, slots `count(k)` apart).
template <class Sink, class Source, class Count>
constexpr void scatter_pieces(builder<Sink>& b, const group_layout& L, Source source, Count count) {
  for (int j = 0; j < L.active; ++j)
    for (int k = 0; k < L.active; ++k)
      if (k != j)
        b.copy(in(L.active_rank(j), source(k)), scr(L.active_rank(k), other_index(j, k) * count(k)),
               count(k));
}

// Reductions: a_k sums piece k over every active, in active order (a fixed summation order).
template <class Sink, class Source, class Dst, class Count>
constexpr void reduce_pieces(builder<Sink>& b, const group_layout& L, Source source, Dst dst,
                             Count count) {
  for (int k = 0; k < L.active; ++k) {
    const int rk = L.active_rank(k);
    operand_list src;
    for (int j = 0; j < L.active; ++j)
      src.push(j == k ? in(rk, source(k)) : scr(rk, other_index(j, k) * count(k)));
    b.reduce(src, out(rk, dst(k)), count(k), true);
  }
}

// Transfers: a_k sends its reduced piece to every other active.
template <class Sink, class Dst, class Count>
constexpr void gather_pieces(builder<Sink>& b, const group_layout& L, Dst dst, Count count) {
  for (int k = 0; k < L.active; ++k)
    for (int j = 0; j < L.active; ++j)
      if (j != k) b.copy(out(L.active_rank(k), dst(k)), out(L.active_rank(j), dst(k)), count(k));
}

// Shorthands for affine terms: K(v) the constant v, n(k) k times the group count n (the per-rank
// element count of a call, `counts[g]` of its request), Q(i, k) k times quantum i.
constexpr affine K(int v) {
  return affine::constant(v);
}
constexpr affine n(int k = 1) {
  return affine::n(k);
}
constexpr affine Q(int i, int k = 1) {
  return affine::q(i, k);
}

// A header of `steps` steps for `s`; the generator fills in the rest.
constexpr schedule_header header_of(const schedule_spec& s, int steps) {
  schedule_header h{};
  h.spec = s;
  h.steps = steps;
  return h;
}

// A header of `steps` steps whose quantum 0 is the chunk c = align_down(n/den): every route that
// cuts a block into aligned chunks starts from it.
constexpr schedule_header chunk_header(const schedule_spec& s, int steps, int den,
                                       const char* chunk_name = "chunk c") {
  schedule_header h = header_of(s, steps);
  h.quantum_count = 1;
  h.quanta[0].base = n();
  h.quanta[0].den = den;
  h.quanta[0].align_units = 1;
  h.quantum_names = {chunk_name, nullptr, nullptr, nullptr};
  return h;
}

// The relay routes' common header: two steps; the chunk, and quantum 1 the first direct region
// d1 = k*c, or n/2 when c is zero (the spec's phase-symmetric direct fallback: both steps keep
// their share of the direct link).
constexpr schedule_header relay_header(const schedule_spec& s, int den, int first_direct_chunks,
                                       const char* chunk_name) {
  schedule_header h = chunk_header(s, 2, den, chunk_name);
  h.quantum_count = 2;
  h.quanta[1].base = Q(0, first_direct_chunks);
  h.quanta[1].fallback_if_zero = 0;
  h.quanta[1].fallback = n();
  h.quanta[1].fallback_den = 2;
  h.quantum_names[1] = "first direct region d1";
  return h;
}

}  // namespace relay::detail

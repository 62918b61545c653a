// Reduce-scatter: flat reduce-at-helper over the cross links, woven with a direct reduce-scatter
// over the intra links. Two steps.
//
// Block k of every input (n elements, bound for active k) splits into H helper slices of c
// (helper i owns slice i of every block) and a direct region cut :1 between the steps:
// D1 = (A-1)c rides in step 1, D2 = the rest (~c) in step 2:
//
//   step 1  transfer: a_j -> h_i  slice i of every block k != j          ((A-1)c per cross link)
//                     a_j -> a_k  D1 of block k                          ((A-1)c per intra link)
//           reduce:   h_i sums, per owner k, the A-1 slices it holds (A=2: a pass-through, none)
//                     a_k reduces D1 (final)
//   step 2  transfer: h_i -> a_k  the one reduced slice                  (c per cross link)
//                     a_j -> a_k  D2 of block k                          (~c per intra link)
//           reduce:   a_k reduces the helper slices and D2 (final)
//
// Cost A*c with c = n/N: A*n/N, the fused lower bound (n/4 at A=2, n/2 at A=4 for N=8), when
// every element costs the same. Reducing at the helper keeps the return hop to one slice per
// owner; helpers need one slice per (owner, source) pair: A*(A-1)*c, 1.5x n at A=4, N=8, and
// A partials of c (they no longer overwrite a received slice: the partial is wider).
//
// A >= 3: the helper's sum of A-1 slices is not final, so it lives in the partial space
// (buffer::partial, the accumulator's width: fp32 for fp16/bf16) on the helper, rides to the
// owner as a partial and lands in the owner's partial space; the owner's final reduction rounds
// once. For 16-bit types the return hop then carries 2c element-equivalents, so the cost becomes
// (A-1)c + 2c: 5n/8 at A=4, N=8 (docs/schedules.md, "Precision"). A=2 forwards single slices.
#pragma once

#include "relay/schedule/builder.hpp"

namespace relay::detail {

template <class Sink>
constexpr schedule_header reduce_scatter_relay(const schedule_spec& s, Sink& sink) {
  const int A = s.active, H = s.helpers();
  schedule_header h = relay_header(s, s.ranks, A - 1, "chunk c");
  const affine c = Q(0), d1 = Q(1), S = Q(0, H),
               d2 = n() - S - d1;  // S: the helper slices, [0, H*c)
  const affine D = n() - S;        // the whole direct region of a block
  const bool partials = A > 2;     // helpers sum A-1 slices: a partial, not a final value
  // Active scratch: A=2, the helpers' slices at [0, H*c) (they come back as they went out);
  // then one direct region per source. A>2: the helpers' sums arrive in the partial space.
  const affine landing = partials ? K(0) : S;
  h.active_scratch = landing + (A - 1) * D;
  h.helper_scratch = Q(0, A * (A - 1));
  h.active_partial = partials ? S : K(0);
  h.helper_partial = partials ? Q(0, A) : K(0);
  h.description = "flat reduce-at-helper of H slices + direct reduce-scatter, direct split (A-1):1";

  auto direct_slot = [&](int j, int k) { return landing + other_index(j, k) * D; };
  auto shift = [](operand o, affine by) { return o.offset = o.offset + by, o; };

  const group_layout L = pattern_layout(s);
  auto helper_slot = [&](int k, int j) { return Q(0, k * (A - 1) + other_index(j, k)); };
  builder<Sink> b{&sink, 1};
  for (int j = 0; j < A; ++j)
    for (int k = 0; k < A; ++k) {
      if (k == j) continue;
      for (int i = 0; i < H; ++i)
        b.copy(in(L.active_rank(j), n(k) + Q(0, i)), scr(L.helper_rank(i), helper_slot(k, j)), c);
      b.copy(in(L.active_rank(j), n(k) + S), scr(L.active_rank(k), direct_slot(j, k)), d1);
    }
  // Helper i's slice for owner k after step 1: A>2 its partial sum, A=2 the one slice.
  auto held = [&](int i, int k) {
    return partials ? par(L.helper_rank(i), Q(0, k)) : scr(L.helper_rank(i), Q(0, k * (A - 1)));
  };
  auto returned = [&](int k) {
    return partials ? par(L.active_rank(k), K(0)) : scr(L.active_rank(k), K(0));
  };
  if (partials)
    for (int i = 0; i < H; ++i)
      for (int k = 0; k < A; ++k) {
        operand_list src;
        for (int j = 0; j < A; ++j)
          if (j != k) src.push(scr(L.helper_rank(i), helper_slot(k, j)));
        b.reduce(src, held(i, k), c, false);
      }
  auto reduce_direct = [&](int k, affine from, affine count) {
    operand_list src;
    for (int j = 0; j < A; ++j)
      src.push(j == k ? in(L.active_rank(k), n(k) + from)
                      : scr(L.active_rank(k), direct_slot(j, k) + (from - S)));
    b.reduce(src, out(L.active_rank(k), from), count, true);
  };
  for (int k = 0; k < A; ++k)
    reduce_direct(k, S, d1);

  b.step = 2;
  for (int k = 0; k < A; ++k) {
    for (int i = 0; i < H; ++i)
      b.copy(held(i, k), shift(returned(k), Q(0, i)), c);
    for (int j = 0; j < A; ++j)
      if (j != k)
        b.copy(in(L.active_rank(j), n(k) + S + d1), scr(L.active_rank(k), direct_slot(j, k) + d1),
               d2);
  }
  for (int k = 0; k < A; ++k) {
    operand_list src;
    src.push(in(L.active_rank(k), n(k)));
    src.push(returned(k));
    b.reduce(src, out(L.active_rank(k), K(0)), S, true);
    reduce_direct(k, S + d1, d2);
  }
  return h;
}

}  // namespace relay::detail

// All-gather: scatter to helpers, helpers broadcast, woven with a direct all-gather over the intra
// links. Two steps; the reverse of reduce-scatter.
//
// Each input (n elements) splits into H helper slices of c and a direct region cut 1:(A-1)
// between the steps (D1 = c in step 1, D2 = the rest, ~(A-1)c, in step 2), because the helpers'
// broadcast makes step 2's cross links carry (A-1)x step 1's:
//
//   step 1  transfer: a_j -> a_j  its input into its own output slot (local; skipped in place)
//                     a_j -> h_i  slice i                                (c per cross link)
//                     a_j -> a_k  D1                                     (c per intra link)
//   step 2  transfer: h_i -> a_k  slice i of every a_j, j != k           ((A-1)c per cross link)
//                     a_j -> a_k  D2                                     (~(A-1)c per intra link)
//
// Cost A*c with c = n/N: A*n/N, the fused lower bound. Helpers hold A slices: A*c.
#pragma once

#include "relay/schedule/builder.hpp"

namespace relay::detail {

template <class Sink>
constexpr schedule_header all_gather_relay(const schedule_spec& s, Sink& sink) {
  const int A = s.active, H = s.helpers();
  schedule_header h = relay_header(s, s.ranks, 1, "chunk c");
  const affine c = Q(0), d1 = Q(1), S = Q(0, H), d2 = n() - S - d1;
  h.active_scratch = K(0);
  h.helper_scratch = Q(0, A);
  h.description =
      "scatter to H helpers + helper broadcast + direct all-gather, direct split 1:(A-1)";

  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  for (int j = 0; j < A; ++j) {
    b.copy(in(L.active_rank(j), K(0)), out(L.active_rank(j), n(j)), n());
    for (int i = 0; i < H; ++i)
      b.copy(in(L.active_rank(j), Q(0, i)), scr(L.helper_rank(i), Q(0, j)), c);
    for (int k = 0; k < A; ++k)
      if (k != j) b.copy(in(L.active_rank(j), S), out(L.active_rank(k), n(j) + S), d1);
  }
  b.step = 2;
  for (int k = 0; k < A; ++k)
    for (int j = 0; j < A; ++j) {
      if (j == k) continue;
      for (int i = 0; i < H; ++i)
        b.copy(scr(L.helper_rank(i), Q(0, j)), out(L.active_rank(k), n(j) + Q(0, i)), c);
      b.copy(in(L.active_rank(j), S + d1), out(L.active_rank(k), n(j) + S + d1), d2);
    }
  return h;
}

}  // namespace relay::detail

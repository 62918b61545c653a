// The pure-direct baselines: what NCCL/RCCL achieve over the A-1 active-to-active links alone.
// Every ceiling is measured against these.
//
//   allreduce, A=2: one full exchange and a local reduction (one step; the spec's small-message
//                   path, strictly better than RS+AG in the latency-bound regime).
//   allreduce, A>2: reduce-scatter then all-gather of A pieces (two steps, 2n/A per link).
//   reduce-scatter, all-gather, all-to-all: one step, n per link.
#pragma once

#include "relay/schedule/builder.hpp"

namespace relay::detail {

template <class Sink>
constexpr schedule_header direct_baseline(const schedule_spec& s, Sink& sink) {
  const int A = s.active;
  const collective c = s.coll;
  schedule_header h{};
  h.spec = s;
  h.steps = (c == collective::allreduce && A > 2) ? 2 : 1;
  h.helper_scratch = K(0);
  h.description = "pure direct over the active-to-active links";
  const bool split = c == collective::allreduce && A > 2;
  if (split) {
    // q0 = r, the piece each active reduces; the last piece absorbs the remainder.
    h.quantum_count = 1;
    h.quanta[0].base = N();
    h.quanta[0].den = A;
    h.quanta[0].align_units = 1;
    h.quanta[0].fallback_if_zero = quantum_rule::self;
    h.quanta[0].fallback = N();
    h.quanta[0].fallback_den = A;
    h.quantum_names = {"piece r", nullptr, nullptr, nullptr};
    h.active_scratch = (A - 1) * (N() - Q(0, A - 1));
  } else {
    h.active_scratch = reduces(c) ? N(A - 1) : K(0);
  }
  auto piece_offset = [&](int k) { return split ? Q(0, k) : K(0); };
  auto piece_length = [&](int k) { return !split ? N() : k < A - 1 ? Q(0) : N() - Q(0, A - 1); };

  for (int g = 0; g < s.groups(); ++g) {
    const group_layout L{g, A, s.ranks};
    builder<Sink> b{&sink, g, 1};
    for (int j = 0; j < A; ++j) {
      const int rj = L.active_rank(j);
      for (int k = 0; k < A; ++k) {
        const int rk = L.active_rank(k);
        switch (c) {
          case collective::allreduce:
            if (k != j)
              b.copy(in(rj, piece_offset(k)), scr(rk, other_index(j, k) * piece_length(k)),
                     piece_length(k));
            break;
          case collective::reduce_scatter:
            if (k != j) b.copy(in(rj, N(k)), scr(rk, N(other_index(j, k))), N());
            break;
          case collective::all_gather: b.copy(in(rj, K(0)), out(rk, N(j)), N()); break;
          case collective::all_to_all: b.copy(in(rj, N(k)), out(rk, N(j)), N()); break;
        }
      }
    }
    if (!reduces(c)) continue;
    for (int k = 0; k < A; ++k) {
      const int rk = L.active_rank(k);
      operand_list src;  // in active order: a fixed summation order
      for (int j = 0; j < A; ++j)
        src.push(j != k ? scr(rk, other_index(j, k) * piece_length(k))
                        : in(rk, c == collective::reduce_scatter ? N(k) : piece_offset(k)));
      b.reduce(src, out(rk, piece_offset(k)), piece_length(k), true);
    }
    if (!split) continue;
    b.step = 2;
    for (int k = 0; k < A; ++k)
      for (int j = 0; j < A; ++j)
        if (j != k)
          b.copy(out(L.active_rank(k), piece_offset(k)), out(L.active_rank(j), piece_offset(k)),
                 piece_length(k));
  }
  return h;
}

}  // namespace relay::detail

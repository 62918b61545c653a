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

  // Where piece k starts in every input (reduce-scatter: block k) and in the reducer's output.
  auto source = [&](int k) { return c == collective::reduce_scatter ? N(k) : piece_offset(k); };
  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  if (reduces(c)) {
    scatter_pieces(b, L, source, piece_length);
    reduce_pieces(b, L, source, piece_offset, piece_length);
    if (split) {
      b.step = 2;
      gather_pieces(b, L, piece_offset, piece_length);
    }
    return h;
  }
  for (int j = 0; j < A; ++j)
    for (int k = 0; k < A; ++k)
      b.copy(in(L.active_rank(j), c == collective::all_to_all ? N(k) : K(0)),
             out(L.active_rank(k), N(j)), N());
  return h;
}

}  // namespace relay::detail

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
  const bool split = c == collective::allreduce && A > 2;
  // q0 = r, the piece each active reduces when split; the last piece absorbs the remainder.
  schedule_header h = split ? chunk_header(s, 2, A, "piece r") : header_of(s, 1);
  h.helper_scratch = K(0);
  h.description = "pure direct over the active-to-active links";
  if (split) {
    h.quanta[0].fallback_if_zero = quantum_rule::self;
    h.quanta[0].fallback = n();
    h.quanta[0].fallback_den = A;
    h.active_scratch = (A - 1) * (n() - Q(0, A - 1));
  } else {
    h.active_scratch = reduces(c) ? n(A - 1) : K(0);
  }
  auto piece_offset = [&](int k) { return split ? Q(0, k) : K(0); };
  auto piece_count = [&](int k) { return !split ? n() : k < A - 1 ? Q(0) : n() - Q(0, A - 1); };

  // Where piece k starts in every input (reduce-scatter: block k) and in the reducer's output.
  auto source = [&](int k) { return c == collective::reduce_scatter ? n(k) : piece_offset(k); };
  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  if (reduces(c)) {
    scatter_pieces(b, L, source, piece_count);
    reduce_pieces(b, L, source, piece_offset, piece_count);
    if (split) {
      b.step = 2;
      gather_pieces(b, L, piece_offset, piece_count);
    }
    return h;
  }
  for (int j = 0; j < A; ++j)
    for (int k = 0; k < A; ++k)
      b.copy(in(L.active_rank(j), c == collective::all_to_all ? n(k) : K(0)),
             out(L.active_rank(k), n(j)), n());
  return h;
}

}  // namespace relay::detail

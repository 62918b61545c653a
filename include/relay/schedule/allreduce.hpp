// Allreduce: helper reduce-and-broadcast over the cross links, woven with a direct
// reduce-scatter + all-gather over the intra links. Two steps.
//
// The group count n splits into an offload region of H pieces of `o` (helper i owns piece i) and
// a direct region n - H*o cut into A pieces (active k owns piece k; the last absorbs the rest):
//
//   step 1  transfer: a_j -> h_i  piece i of the offload region      (o per cross link)
//                     a_j -> a_k  direct piece k                      (~r per intra link)
//           reduce:   h_i sums its A slots (final: the value every active wants)
//                     a_k sums direct piece k from all actives (final)
//   step 2  transfer: h_i -> a_j  the reduced piece i                  (o per cross link)
//                     a_k -> a_j  the reduced direct piece k           (~r per intra link)
//
// Per step a cross link carries o and an intra link ~(n - H*o)/A, so the two-step cost is
// 2*max(o, (n - H*o)/A); balancing them gives o = n/N and the physical bound 2n/N (n/4 at N=8).
// With A=2 this is the spec's two-step schedule: numChunks = H+2, reduce at the helper, one direct
// chunk riding with each relay step. `permille` reproduces the spec's offload fractions
// (pO = permille/1000 of n; 780 is the old 1.28x schedule, 500 the balanced one at N=8).
#pragma once

#include "relay/schedule/builder.hpp"

namespace relay::detail {

template <class Sink>
constexpr schedule_header allreduce_relay(const schedule_spec& s, Sink& sink) {
  const int A = s.active, H = s.helpers();
  schedule_header h = header_of(s, 2);
  h.quantum_count = 2;
  // q0 = o, the offload piece each helper owns: pO / H with pO = align_down(n*share, H*alignment).
  h.quanta[0].base = n();
  h.quanta[0].num = s.permille > 0 ? s.permille : 1;
  h.quanta[0].den = s.permille > 0 ? 1000 * H : s.ranks;
  h.quanta[0].align_units = 1;
  // q1 = r, the direct piece each active reduces; a group with no offload splits n evenly.
  h.quanta[1].base = n() - Q(0, H);
  h.quanta[1].den = A;
  h.quanta[1].align_units = 1;
  h.quanta[1].fallback_if_zero = 0;
  h.quanta[1].fallback = n();
  h.quanta[1].fallback_den = A;
  h.quantum_names = {"offload piece o", "direct piece r", nullptr, nullptr};
  const affine last_piece = n() - Q(0, H) - Q(1, A - 1);
  h.active_scratch = (A - 1) * last_piece;
  h.helper_scratch = Q(0, A);
  h.description =
      "helper reduce-and-broadcast of H offload pieces + direct reduce-scatter/all-gather";

  auto piece_offset = [&](int k) { return Q(0, H) + Q(1, k); };
  auto piece_count = [&](int k) { return k < A - 1 ? Q(1) : last_piece; };

  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  for (int j = 0; j < A; ++j)
    for (int i = 0; i < H; ++i)
      b.copy(in(L.active_rank(j), Q(0, i)), scr(L.helper_rank(i), Q(0, j)), Q(0));
  scatter_pieces(b, L, piece_offset, piece_count);
  for (int i = 0; i < H; ++i) {
    operand_list src;
    for (int j = 0; j < A; ++j)
      src.push(scr(L.helper_rank(i), Q(0, j)));
    b.reduce(src, scr(L.helper_rank(i), K(0)), Q(0), true);
  }
  reduce_pieces(b, L, piece_offset, piece_offset, piece_count);
  b.step = 2;
  for (int i = 0; i < H; ++i)
    for (int j = 0; j < A; ++j)
      b.copy(scr(L.helper_rank(i), K(0)), out(L.active_rank(j), Q(0, i)), Q(0));
  gather_pieces(b, L, piece_offset, piece_count);
  return h;
}

}  // namespace relay::detail

// The spec's original A=2 schedule, kept as a reference: numChunks = H+1, three serialized steps
// (scatter to helpers, helper pass-through forward, then a separate active-to-active exchange of
// the last chunk). It costs 3n/(H+1), 3n/7 at N=8 (2.33x), and leaves the direct link idle for
// two of its three steps; the relay route folds that chunk into the relay steps instead.
#pragma once

#include "relay/schedule/builder.hpp"

namespace relay::detail {

template <class Sink>
constexpr schedule_header legacy_three_step(const schedule_spec& s, Sink& sink) {
  const int A = s.active, H = s.helpers();
  const collective c = s.coll;
  schedule_header h = chunk_header(s, 3, H + 1);
  const affine R = Q(0, H);  // the relay region [0, H*c); the direct chunk is [H*c, n)
  h.active_scratch = reduces(c) ? n() : K(0);
  h.helper_scratch = Q(0, A);
  h.description = "three steps: scatter, helper pass-through, direct exchange (numChunks = H+1)";

  // Where a_j's data bound for a_k starts in a_j's input, and where it lands on a_k.
  auto source_base = [&](int k) {
    return (c == collective::reduce_scatter || c == collective::all_to_all) ? n(k) : K(0);
  };
  auto landing = [&](int rk, int j) { return reduces(c) ? scr(rk, K(0)) : out(rk, n(j)); };
  auto shifted = [](operand o, affine by) { return o.offset = o.offset + by, o; };

  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  for (int j = 0; j < A; ++j) {
    const int rj = L.active_rank(j);
    if (c == collective::all_gather) b.copy(in(rj, K(0)), out(rj, n(j)), n());
    if (c == collective::all_to_all) b.copy(in(rj, n(j)), out(rj, n(j)), n());
    const int k = 1 - j;  // A == 2: the one other active
    for (int i = 0; i < H; ++i)
      b.copy(in(rj, source_base(k) + Q(0, i)), scr(L.helper_rank(i), Q(0, j)), Q(0));
  }
  auto reduce_region = [&](int k, affine from, affine count) {
    const int rk = L.active_rank(k);
    operand_list src;
    for (int j = 0; j < A; ++j)
      src.push(j == k ? in(rk, source_base(k) + from) : scr(rk, from));
    b.reduce(src, out(rk, from), count, true);
  };
  b.step = 2;
  for (int k = 0; k < A; ++k) {
    const int j = 1 - k;
    for (int i = 0; i < H; ++i)
      b.copy(scr(L.helper_rank(i), Q(0, j)), shifted(landing(L.active_rank(k), j), Q(0, i)), Q(0));
    if (reduces(c)) reduce_region(k, K(0), R);
  }
  b.step = 3;
  for (int k = 0; k < A; ++k) {
    const int j = 1 - k;
    b.copy(in(L.active_rank(j), source_base(k) + R), shifted(landing(L.active_rank(k), j), R),
           n() - R);
    if (reduces(c)) reduce_region(k, R, n() - R);
  }
  return h;
}

}  // namespace relay::detail

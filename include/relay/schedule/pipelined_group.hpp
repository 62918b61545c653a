// Pipelined single-group schedules for A >= 4 (A=2 is pipelined.hpp): the relayed part of n cut
// into T tiles, tile t's scatter to the helpers riding in the same step as tile t-1's return from
// them. The two use opposite directions of the active-helper links, so once the pipeline is full
// every link into the actives (all-gather), out of them (reduce-scatter) or both (all-to-all,
// allreduce) is busy in every step, which is what the single-group bound needs.
//
// Names: A actives a_j, H = N - A helpers h_i, T tiles, steps s = 1..T+1. One quantum c.
//
// All-gather, reduce-scatter, all-to-all. The link model's split (each active receives, or
// sends, (A-1)n over its N-1 links, all of them equally loaded): per tile an active sends c to each
// helper (for every destination it serves), a helper returns (A-1)c to each active, and a direct
// piece of (A-1)c rides on every active pair in every step, except where a step's relay links carry
// only c: all-gather's step 1 (the scatter of one chunk) and reduce-scatter's step T+1 (the return
// of one partial) take a direct piece of c, as the two-step relay route's 1:(A-1) split does.
// Layout of n (a reduce-scatter block, an all-to-all segment, an all-gather input): T tiles of H
// chunks, then T+1 direct pieces (the last takes the rest):
//
//   step s  transfer: a_j -> h_i  chunk i of tile s-1             (s <= T)
//                       all-gather: a_j's chunk (c); reduce-scatter / all-to-all: the chunk of
//                       every block/segment k != j ((A-1)c)
//                     h_i -> a_k  tile s-2                         (s >= 2)
//                       all-gather: chunk i of every a_j, j != k ((A-1)c); all-to-all: every
//                       chunk bound for k ((A-1)c); reduce-scatter: one partial sum (c, twice
//                       the bytes for 16-bit types)
//                     a_j -> a_k  direct piece s-1                 ((A-1)c or c)
//           reduce:   reduce-scatter: h_i sums, per owner k, the A-1 chunks of tile s-1 into a
//                     partial (not final: the owner's own is missing); a_k adds its own block to
//                     the returned partials of tile s-2 and reduces direct piece s-1 (final)
//
// Costs (each step's busiest link; bound (A-1)n/(N-1)):
//   all-gather, reduce-scatter: n = (T(N-1) + 1)c, cost (T(A-1) + 1)c: (3T+1)n/(7T+1) at A=4,
//     N=8 (7n/15, 13n/29, 25n/57 for T = 2, 4, 8; T=1 would be the two-step relay's n/2);
//   all-to-all: both relay directions carry (A-1)c in steps 1 and T+1 too, so n =
//     (T(N-1) + A-1)c, cost (T+1)(A-1)c: 3(T+1)n/(7T+3) (9n/17, 15n/31, 27n/59).
// All are under the target 3n/7 x (T+1)/T and tend to the bound, and stay above it at every T:
// in step 1 no helper has anything for an active, and in step T+1 nothing sent to a helper can
// still come back, so those links idle once. Reduce-scatter's 16-bit partials (2c on the return
// hop) fit under (A-1)c for A >= 3 in steps 2..T and cost c more in step T+1:
// (T(A-1) + 2)n/(T(N-1) + 1) for fp16/bf16 with fp32 partials (14n/29 at T=4).
//
// Allreduce: helper-reduce then broadcast, pipelined, with a direct reduce-scatter/all-gather
// among the actives pipelined beside it. Layout of n: T tiles of H chunks of o = 2c, then T
// direct blocks of A pieces of c (a_k owns piece k), then two exchange pieces e1 = c and e2 (the
// rest), so n = (2TH + AT + 2) c:
//
//   step s  transfer: a_j -> h_i  chunk i of tile s-1              (2c, s <= T)
//                     h_i -> a_j  the reduced chunk i of tile s-2   (2c, s >= 2)
//                     a_j -> a_k  piece k of direct block s-1       (c, s <= T)
//                     a_k -> a_j  reduced piece k of block s-2      (c, s >= 2)
//                     a_j -> a_k  exchange piece e1 (s = 1) or e2 (s = T+1), all of it (c)
//           reduce:   h_i sums the A chunks of tile s-1 (final); a_k sums piece k of block s-1
//                     and, in steps 1 and T+1, the whole exchange piece (final)
//
// Every step carries 2c on every active-pair link direction (the exchange pieces fill the slack
// the direct pipeline leaves in its first and last step) and on every active-helper direction in
// use (one idles in step 1, the other in step T+1), so the cost is
// 2(T+1)c = (T+1)n/(T(H + A/2) + 1): (T+1)n/(6T+1) at A=4, N=8 (3n/13, n/5, 9n/49 for T = 2,
// 4, 8), under the target n/6 x (T+1)/T and tending to n/(N - A/2) (n/6). A relayed element
// crosses two active-helper link directions and a direct one 2(A-1)/A active-pair directions
// (reduce-scatter plus all-gather), which is what n/(H + A/2) balances; whether the cut bound
// n/7 can be reached by another shape is cost-model.md's question.
//
// Helpers double-buffer where they send a tile in the step after it arrived (tile t in half t%2,
// so receiving tile t+1 never touches the half being returned): all-gather, all-to-all and the
// allreduce's reduced chunks. Reduce-scatter helpers reduce into the partial space in the step
// they receive, so one tile of slots serves. Fused mode gains nothing (every link direction is
// already busy there), so this is single mode only.
#pragma once

#include "relay/schedule/builder.hpp"

namespace relay::detail {

template <class Sink>
constexpr schedule_header pipelined_forward(const schedule_spec& s, Sink& sink) {
  const int A = s.active, H = s.helpers(), T = s.tiles;
  const collective coll = s.coll;
  const bool rs = coll == collective::reduce_scatter, a2a = coll == collective::all_to_all;
  const bool ag = coll == collective::all_gather;
  // Direct pieces in units of c: each, but 1 in the step whose relay links carry c only
  // (all-gather's first, reduce-scatter's last); the last piece takes the rest.
  const int small_piece = a2a ? A - 1 : 1;
  schedule_header h = chunk_header(s, T + 1, T * H + T * (A - 1) + small_piece);
  const affine c = Q(0), relayed = Q(0, T * H);  // tiles occupy [0, T*H*c)
  auto piece_offset = [&](int p) {
    return relayed + Q(0, ag && p > 0 ? small_piece + (p - 1) * (A - 1) : p * (A - 1));
  };
  const affine rest = n() - piece_offset(T);
  auto piece_count = [&](int p) {
    return p == T ? rest : Q(0, ag && p == 0 ? small_piece : A - 1);
  };
  auto chunk = [&](int t, int i) { return Q(0, t * H + i); };
  // Where a_j's data bound for a_k starts in a_j's input, and where a_k keeps what j sent.
  auto from = [&](int k, affine at) { return (rs || a2a ? n(k) : K(0)) + at; };
  // Helper slots: all-gather one chunk per source, all-to-all and reduce-scatter one per
  // (source, destination); forwarding collectives keep two tiles.
  const int per_tile = ag ? A : A * (A - 1);
  auto slot = [&](int t, int j, int k) {
    const int buffer_half = rs ? 0 : (t % 2) * per_tile;
    if (ag) return Q(0, buffer_half + j);
    return rs ? Q(0, buffer_half + k * (A - 1) + other_index(j, k))
              : Q(0, buffer_half + j * (A - 1) + other_index(k, j));
  };
  h.helper_scratch = Q(0, (rs ? 1 : 2) * per_tile);
  // Reduce-scatter: a_k lands the direct pieces from each j in A-1 slots of (A-1)c (the last
  // piece in A-1 slots of the rest) and the helpers' partials of one tile in H chunks.
  auto direct_slot = [&](int p, int j, int k) {
    return p < T ? Q(0, other_index(j, k) * (A - 1))
                 : Q(0, (A - 1) * (A - 1)) + other_index(j, k) * rest;
  };
  h.active_scratch = rs ? Q(0, (A - 1) * (A - 1)) + (A - 1) * rest : K(0);
  h.active_partial = rs ? Q(0, H) : K(0);
  h.helper_partial = rs ? Q(0, A) : K(0);
  h.description = rs ? "pipelined: tile t's chunks to the helpers ride with tile t-1's partial "
                       "sums back, direct pieces beside, T+1 steps"
                     : "pipelined: tile t's scatter rides with tile t-1's forward, direct pieces "
                       "beside, T+1 steps";

  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  for (int step = 1; step <= T + 1; ++step) {
    b.step = step;
    const int scatter = step - 1, ret = step - 2, piece = step - 1;
    for (int j = 0; j < A && step == 1 && !rs; ++j) {  // an active's own share, locally
      const int rj = L.active_rank(j);
      b.copy(in(rj, a2a ? n(j) : K(0)), out(rj, n(j)), n());
    }
    for (int j = 0; j < A; ++j) {
      const int rj = L.active_rank(j);
      for (int i = 0; i < H && scatter < T; ++i) {
        if (ag)  // one chunk serves every destination
          b.copy(in(rj, chunk(scatter, i)), scr(L.helper_rank(i), slot(scatter, j, j)), c);
        for (int k = 0; k < A && !ag; ++k)
          if (k != j)
            b.copy(in(rj, from(k, chunk(scatter, i))), scr(L.helper_rank(i), slot(scatter, j, k)),
                   c);
      }
      for (int k = 0; k < A; ++k) {
        if (k == j) continue;
        const int rk = L.active_rank(k);
        for (int i = 0; i < H && ret >= 0 && !rs; ++i)
          b.copy(scr(L.helper_rank(i), slot(ret, j, k)), out(rk, n(j) + chunk(ret, i)), c);
        b.copy(in(rj, from(k, piece_offset(piece))),
               rs ? scr(rk, direct_slot(piece, j, k)) : out(rk, n(j) + piece_offset(piece)),
               piece_count(piece));
      }
    }
    if (!rs) continue;
    for (int k = 0; k < A && ret >= 0; ++k)
      for (int i = 0; i < H; ++i)
        b.copy(par(L.helper_rank(i), Q(0, k)), par(L.active_rank(k), Q(0, i)), c);
    for (int i = 0; i < H && scatter < T; ++i)
      for (int k = 0; k < A; ++k) {
        operand_list src;
        for (int j = 0; j < A; ++j)
          if (j != k) src.push(scr(L.helper_rank(i), slot(scatter, j, k)));
        b.reduce(src, par(L.helper_rank(i), Q(0, k)), c, false);
      }
    for (int k = 0; k < A; ++k) {
      const int rk = L.active_rank(k);
      if (ret >= 0) {
        operand_list src;
        src.push(in(rk, from(k, chunk(ret, 0))));
        src.push(par(rk, K(0)));
        b.reduce(src, out(rk, chunk(ret, 0)), Q(0, H), true);
      }
      operand_list src;  // active order: a fixed summation order
      for (int j = 0; j < A; ++j)
        src.push(j == k ? in(rk, from(k, piece_offset(piece))) : scr(rk, direct_slot(piece, j, k)));
      b.reduce(src, out(rk, piece_offset(piece)), piece_count(piece), true);
    }
  }
  return h;
}

template <class Sink>
constexpr schedule_header pipelined_allreduce(const schedule_spec& s, Sink& sink) {
  const int A = s.active, H = s.helpers(), T = s.tiles;
  schedule_header h = chunk_header(s, T + 1, 2 * T * H + A * T + 2);  // helper chunks are 2c
  const affine c = Q(0), o = Q(0, 2), direct = Q(0, 2 * T * H);
  auto chunk = [&](int t, int i) { return Q(0, 2 * (t * H + i)); };
  auto block = [&](int b, int k) { return direct + Q(0, b * A + k); };
  // The exchange pieces: e1 in step 1, e2 (the rest) in step T+1.
  const affine e1 = direct + Q(0, T * A), e2 = e1 + c;
  const affine rest = n() - Q(0, 2 * T * H + T * A + 1);
  auto helper_slot = [&](int t, int j) { return Q(0, 2 * ((t % 2) * A + j)); };
  h.helper_scratch = Q(0, 4 * A);
  // a_k's slots: direct pieces [0, A-1), e1 [A-1, 2(A-1)), e2 A-1 slots of the rest after them.
  h.active_scratch = Q(0, 2 * (A - 1)) + (A - 1) * rest;
  h.description =
      "pipelined: tile t to the helpers rides with tile t-1's reduced chunks back; direct "
      "reduce-scatter/all-gather pipelined beside; T+1 steps";

  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  for (int step = 1; step <= T + 1; ++step) {
    b.step = step;
    const int scatter = step - 1, ret = step - 2;
    // The exchange piece of this step, if any: (offset, length, first scratch slot).
    const bool exchange = step == 1 || step == T + 1;
    const affine x_at = step == 1 ? e1 : e2, x_len = step == 1 ? c : rest;
    auto x_slot = [&](int j, int k) {
      return step == 1 ? Q(0, A - 1 + other_index(j, k))
                       : Q(0, 2 * (A - 1)) + other_index(j, k) * rest;
    };
    for (int j = 0; j < A; ++j) {
      const int rj = L.active_rank(j);
      for (int i = 0; i < H && scatter < T; ++i)
        b.copy(in(rj, chunk(scatter, i)), scr(L.helper_rank(i), helper_slot(scatter, j)), o);
      for (int i = 0; i < H && ret >= 0; ++i)
        b.copy(scr(L.helper_rank(i), helper_slot(ret, 0)), out(rj, chunk(ret, i)), o);
      for (int k = 0; k < A; ++k) {
        if (k == j) continue;
        const int rk = L.active_rank(k);
        if (scatter < T) b.copy(in(rj, block(scatter, k)), scr(rk, Q(0, other_index(j, k))), c);
        if (ret >= 0) b.copy(out(rj, block(ret, j)), out(rk, block(ret, j)), c);
        if (exchange) b.copy(in(rj, x_at), scr(rk, x_slot(j, k)), x_len);
      }
    }
    for (int i = 0; i < H && scatter < T; ++i) {
      operand_list src;
      for (int j = 0; j < A; ++j)
        src.push(scr(L.helper_rank(i), helper_slot(scatter, j)));
      b.reduce(src, scr(L.helper_rank(i), helper_slot(scatter, 0)), o, true);
    }
    for (int k = 0; k < A; ++k) {
      const int rk = L.active_rank(k);
      if (scatter < T) {
        operand_list src;  // active order: a fixed summation order
        for (int j = 0; j < A; ++j)
          src.push(j == k ? in(rk, block(scatter, k)) : scr(rk, Q(0, other_index(j, k))));
        b.reduce(src, out(rk, block(scatter, k)), c, true);
      }
      if (exchange) {
        operand_list src;
        for (int j = 0; j < A; ++j)
          src.push(j == k ? in(rk, x_at) : scr(rk, x_slot(j, k)));
        b.reduce(src, out(rk, x_at), x_len, true);
      }
    }
  }
  return h;
}

template <class Sink>
constexpr schedule_header pipelined_group(const schedule_spec& s, Sink& sink) {
  return s.coll == collective::allreduce ? pipelined_allreduce(s, sink)
                                         : pipelined_forward(s, sink);
}

}  // namespace relay::detail

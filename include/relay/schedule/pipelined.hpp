// Pipelined single-group schedules (A=2): the input cut into T tiles, tile t's scatter to the
// helpers in the same step as tile t-1's return from them. The two use opposite directions of the
// same links, so once the pipeline is full every link of both active ranks is busy both ways.
//
// Layout of n: T tiles of H chunks c, then T+1 direct pieces (c each; the last takes the rest):
//
//   step s (1..T+1)  transfer: a_j -> h_i  chunk i of tile s-1            (s <= T)
//                              h_i -> a_k  chunk i of tile s-2, done       (s >= 2)
//                              a_j -> a_k  direct piece s-1
//                    reduce:   h_i reduces tile s-1 (allreduce), a_k reduces what it received
//
// Every step costs c, so with n = (H*T + T + 1)c the cost is (T+1)n/(H*T + T + 1): n/4 at T=1
// (the two-step schedule), n/5 at T=2, 5n/29 at T=4 for N=8, tending to the single-group bound
// n/(N-1) = n/7. Each step adds one step latency, so the router picks T by message size.
// Helpers double-buffer: tile t lives in scratch half t%2, so receiving tile t+1 never touches the
// half being returned. Fused mode gains nothing (every link direction is already busy there).
#pragma once

#include "relay/schedule/builder.hpp"

namespace relay::detail {

template <class Sink>
constexpr schedule_header pipelined_pair(const schedule_spec& s, Sink& sink) {
  const int H = s.helpers(), T = s.tiles;
  const collective coll = s.coll;
  schedule_header h = chunk_header(s, T + 1, H * T + T + 1);
  const affine c = Q(0), relayed = Q(0, H * T);   // tiles occupy [0, H*T*c)
  h.helper_scratch = Q(0, 4);                     // two halves of two slots
  h.active_scratch = reduces(coll) ? n() : K(0);  // mirrors the block it reduces into
  h.description = "pipelined: tile t's scatter rides with tile t-1's return, T+1 steps";

  auto piece_offset = [&](int p) { return relayed + Q(0, p); };
  auto piece_count = [&](int p) { return p < T ? c : n() - relayed - Q(0, T); };
  auto chunk = [&](int t, int i) { return Q(0, t * H + i); };
  auto slot = [&](int t, int j) { return Q(0, 2 * (t % 2) + j); };
  // Where a_j's data bound for a_k starts in its input, and where it lands on a_k.
  const bool blocked = coll == collective::reduce_scatter || coll == collective::all_to_all;
  auto from = [&](int k, affine at) { return (blocked ? n(k) : K(0)) + at; };
  auto landing = [&](int rk, int j, affine at) {
    return reduces(coll) ? scr(rk, at) : out(rk, n(j) + at);
  };

  const group_layout L = pattern_layout(s);
  builder<Sink> b{&sink, 1};
  for (int step = 1; step <= T + 1; ++step) {
    b.step = step;
    const int scatter = step - 1, ret = step - 2, piece = step - 1;
    for (int j = 0; j < 2; ++j) {
      const int k = 1 - j, rj = L.active_rank(j), rk = L.active_rank(k);
      if (step == 1 && coll == collective::all_gather) b.copy(in(rj, K(0)), out(rj, n(j)), n());
      if (step == 1 && coll == collective::all_to_all) b.copy(in(rj, n(j)), out(rj, n(j)), n());
      for (int i = 0; i < H && scatter < T; ++i)
        b.copy(in(rj, from(k, chunk(scatter, i))), scr(L.helper_rank(i), slot(scatter, j)), c);
      for (int i = 0; i < H && ret >= 0; ++i) {
        // allreduce: the reduced chunk (in slot 0) to both actives; otherwise a_j's slot to a_k.
        const operand held =
            scr(L.helper_rank(i), slot(ret, coll == collective::allreduce ? 0 : j));
        b.copy(
            held,
            coll == collective::allreduce ? out(rk, chunk(ret, i)) : landing(rk, j, chunk(ret, i)),
            c);
      }
      b.copy(in(rj, from(k, piece_offset(piece))), landing(rk, j, piece_offset(piece)),
             piece_count(piece));
    }
    if (coll == collective::allreduce && scatter < T)
      for (int i = 0; i < H; ++i) {
        operand_list src;
        src.push(scr(L.helper_rank(i), slot(scatter, 0)));
        src.push(scr(L.helper_rank(i), slot(scatter, 1)));
        b.reduce(src, scr(L.helper_rank(i), slot(scatter, 0)), c, true);
      }
    if (!reduces(coll)) continue;
    for (int k = 0; k < 2; ++k) {
      const int rk = L.active_rank(k);
      auto reduce_region = [&](affine at, affine count) {
        operand_list src;  // active order: a fixed summation order
        for (int j = 0; j < 2; ++j)
          src.push(j == k ? in(rk, from(k, at)) : scr(rk, at));
        b.reduce(src, out(rk, at), count, true);
      };
      reduce_region(piece_offset(piece), piece_count(piece));
      if (coll == collective::reduce_scatter && ret >= 0) reduce_region(chunk(ret, 0), Q(0, H));
    }
  }
  return h;
}

}  // namespace relay::detail

"""Exhaustive check of the counting lemma behind the single-group allreduce bound.

One element of an allreduce, with all helpers merged into one hub Z and every transfer allowed
to carry everything its sender knows about that element (gossip: a relaxation of sending one
partial sum). A transfer is a one-way call u -> v; v then knows the union. Every active must end
knowing all A contributions; Z needs nothing. With m calls between actives and z calls between
an active and Z (either way), the lemma says

    A*m + (A-1)*z >= 2A(A-1)

(proof in docs/cost-model.md: let the active with the most Z-calls play Z's part, which leaves a
gossip among A ranks, and that needs 2A-2 calls). Here it is checked by brute force: a shortest
path over knowledge states, a call between actives costing A and one with Z costing A-1. Both
ends are tight: pure one-way gossip (m = 2A-2, z = 0) and the star through Z (m = 0, z = 2A).
"""

import heapq


def min_weighted_calls(A):
    full = (1 << A) - 1
    hub = A
    start = tuple(1 << j for j in range(A)) + (0,)
    best = {start: 0}
    queue = [(0, start)]
    while queue:
        cost, state = heapq.heappop(queue)
        if cost > best[state]:
            continue
        if all(state[j] == full for j in range(A)):
            return cost
        for u in range(A + 1):
            for v in range(A + 1):
                if u == v or not state[u] & ~state[v]:
                    continue  # a call that teaches nothing never helps: knowledge only grows
                nxt = list(state)
                nxt[v] |= state[u]
                nxt = tuple(nxt)
                step = A - 1 if hub in (u, v) else A
                if cost + step < best.get(nxt, cost + step + 1):
                    best[nxt] = cost + step
                    heapq.heappush(queue, (cost + step, nxt))
    raise AssertionError("gossip never completes")

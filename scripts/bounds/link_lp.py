"""The link model's linear programs for one group of A actives on mesh(N).

Mesh: N GPUs, one full-duplex link per pair, capacity 1 per unit time in each direction; ranks
0..A-1 are the actives, A..N-1 the helpers. Steady state: the cost of a collective is the load of
the busiest (link, direction) over all its transfers, in units of n (the per-group count), and a
fractional routing may split each block over any number of paths. The optimum of each LP is the
least such load over every routing of its shape: a lower bound on the beta cost of any schedule
of that shape, however it is pipelined.

Symmetry reduction: each LP is invariant under permuting the actives among themselves and the
helpers among themselves, and it is convex, so averaging an optimum over those permutations gives
an optimum that is constant on every orbit of variables. Each variable is named by a tuple of
ranks; its orbit is fixed by which positions hold the same rank and whether each rank is active
or a helper. canon() maps a tuple to the orbit's representative (actives renumbered 0, 1, ... and
helpers A, A+1, ... in order of first appearance), so one LP variable stands for a whole orbit and
a constraint needs to be written only once per orbit. With reduce=False every tuple is its own
orbit: the full LP, which single_group.py solves at small N to check the reduction.
"""

from simplex import minimize


class Program:
    """An LP whose variables are (kind, ranks...) tuples, reduced to orbit representatives."""

    def __init__(self, A, N, reduce=True):
        if not 2 <= A < N:
            raise ValueError(f"need 2 <= A < N, got A={A} N={N}")
        self.A, self.N, self.reduce = A, N, reduce
        self.actives = range(A)
        self.nodes = range(N)
        self.arcs = [(u, v) for u in range(N) for v in range(N) if u != v]
        self.columns = {}
        self.rows = []
        self.seen = set()

    def canon(self, ranks):
        if not self.reduce:
            return tuple(ranks)
        names, next_active, next_helper = {}, 0, self.A
        for r in ranks:
            if r not in names:
                if r < self.A:
                    names[r], next_active = next_active, next_active + 1
                else:
                    names[r], next_helper = next_helper, next_helper + 1
        return tuple(names[r] for r in ranks)

    def representative(self, ranks):
        """True for one tuple per orbit: write a constraint indexed by `ranks` only then."""
        return self.canon(ranks) == tuple(ranks)

    def var(self, kind, *ranks):
        return self.columns.setdefault((kind,) + self.canon(ranks), len(self.columns))

    def add(self, terms, sense, rhs=0):
        """terms: (coefficient, kind, ranks) triples; the reduced row is kept once."""
        row = {}
        for coef, kind, ranks in terms:
            j = self.var(kind, *ranks)
            row[j] = row.get(j, 0) + coef
        row = {j: c for j, c in row.items() if c}
        key = (frozenset(row.items()), sense, rhs)
        if key not in self.seen:
            self.seen.add(key)
            self.rows.append((row, sense, rhs))

    def flow(self, kind, commodity, src, dst, value):
        """Conservation for the flow `kind`(commodity..., u, v) from src to dst; value is a list of
        (coefficient, kind, ranks) terms (a constant 1 is the term (1, 'one', ()))."""
        for v in self.nodes:
            if not self.representative(commodity + (v,)):
                continue
            terms = [(1, kind, commodity + (v, u)) for u in self.nodes if u != v]
            terms += [(-1, kind, commodity + (u, v)) for u in self.nodes if u != v]
            sign = -1 if v == src else 1 if v == dst else 0
            terms += [(sign * c, k, r) for c, k, r in value] if sign else []
            self.add(terms, "==")

    def cover(self, bound, kind, commodity):
        """bound(ranks..., u, v) >= kind(commodity..., u, v) on every arc: the traffic a block puts
        on an arc serves every destination (multicast) or every source (aggregation) at once."""
        head = commodity[:1]
        for u, v in self.arcs:
            if self.representative(commodity + (u, v)):
                self.add([(1, bound, head + (u, v)), (-1, kind, commodity + (u, v))], ">=")

    def load(self, terms_of_arc):
        """T >= the load of every arc, terms_of_arc(u, v) listing what it carries."""
        for u, v in self.arcs:
            if self.representative((u, v)):
                self.add([(1, "T", ())] + [(-c, k, r) for c, k, r in terms_of_arc(u, v)], ">=")

    def solve(self):
        one = self.columns.get(("one",))
        rows = list(self.rows)
        if one is not None:  # the constant: a variable pinned to 1
            rows.append(({one: 1}, "==", 1))
        value, _ = minimize({self.var("T"): 1}, rows, len(self.columns))
        return value


ONE = [(1, "one", ())]


def all_gather(p):
    # x(s, u, v): how much of source s's block crosses arc u->v; it feeds a unit flow from s to
    # every other active (a helper may copy what it receives to several next hops).
    for s in p.actives:
        for d in p.actives:
            if d != s and p.representative((s, d)):
                p.flow("f", (s, d), s, d, ONE)
                p.cover("x", "f", (s, d))
    p.load(lambda u, v: [(1, "x", (s, u, v)) for s in p.actives])


def reduce_scatter(p):
    # The reverse: y(k, u, v) is how much of owner k's block (partial sums of it) crosses u->v;
    # every other active's contribution reaches k by a unit flow inside it. One element of a
    # partial sum carries any number of contributions: the aggregation is free.
    for k in p.actives:
        for j in p.actives:
            if j != k and p.representative((k, j)):
                p.flow("g", (k, j), j, k, ONE)
                p.cover("y", "g", (k, j))
    p.load(lambda u, v: [(1, "y", (k, u, v)) for k in p.actives])


def all_to_all(p):
    # Multi-commodity flow: segment s->d is its own data, so nothing is shared.
    for s in p.actives:
        for d in p.actives:
            if d != s and p.representative((s, d)):
                p.flow("f", (s, d), s, d, ONE)
    p.load(lambda u, v: [(1, "f", (s, d, u, v)) for s in p.actives for d in p.actives if s != d])


def allreduce_rooted(p):
    # Every element is summed at a root r (any rank, helpers too; lam(r) is the share of the
    # elements rooted there) by a reduce-scatter-style aggregation flow from every other active,
    # then broadcast from r by an all-gather-style multicast flow. The reduce and broadcast routes
    # of a root are independent, so they may use different link directions.
    p.add([(1, "lam", (r,)) for r in p.nodes], "==", 1)
    for r in p.nodes:
        for j in p.actives:
            if j != r and p.representative((r, j)):
                p.flow("g", (r, j), j, r, [(1, "lam", (r,))])
                p.cover("y", "g", (r, j))
                p.flow("h", (r, j), r, j, [(1, "lam", (r,))])
                p.cover("x", "h", (r, j))
    p.load(lambda u, v: [(1, kind, (r, u, v)) for r in p.nodes for kind in ("y", "x")])


COLLECTIVES = {
    "all-gather": all_gather,
    "reduce-scatter": reduce_scatter,
    "all-to-all": all_to_all,
    "allreduce (rooted)": allreduce_rooted,
}


def optimum(collective, A, N, reduce=True):
    p = Program(A, N, reduce)
    COLLECTIVES[collective](p)
    return p.solve()

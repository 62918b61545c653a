"""An exact linear-program solver: two-phase simplex over fractions.Fraction with Bland's rule.

Exact because the bounds are compared as fractions (3/7, 1/6): a floating-point optimum would
need a tolerance, and a ratio of 64-bit integers overflows within a few pivots. Bland's rule
(lowest-index entering and leaving variable) cannot cycle, so degenerate LPs, and the flow LPs
here are very degenerate, terminate. Rows are kept sparse (dict column -> coefficient) because a
flow-conservation row touches only a node's arcs.

    minimize(objective, constraints, num_vars) -> (value, solution)

objective: {column: coefficient}; constraints: [(coefficients, sense, rhs)] with sense one of
'<=', '>=', '=='; every variable is >= 0. Raises ValueError when infeasible or unbounded.
"""

from fractions import Fraction


def _pivot(rows, rhs, basis, cost, r, col):
    """Makes column `col` basic in row r: scale row r to a 1 there, eliminate it elsewhere."""
    a = rows[r][col]
    row = {j: v / a for j, v in rows[r].items()}
    rows[r], rhs[r], basis[r] = row, rhs[r] / a, col
    for k, other in enumerate(rows):
        f = other.get(col)
        if k == r or not f:
            continue
        for j, v in row.items():
            w = other.get(j, 0) - f * v
            if w:
                other[j] = w
            else:
                other.pop(j, None)
        rhs[k] -= f * rhs[r]
    f = cost.get(col)
    if f:
        for j, v in row.items():
            w = cost.get(j, 0) - f * v
            if w:
                cost[j] = w
            else:
                cost.pop(j, None)


def _run(rows, rhs, basis, cost, allowed):
    """Primal simplex on reduced costs `cost` over columns with allowed(j); Bland's rule."""
    while True:
        entering = min((j for j, v in cost.items() if v < 0 and allowed(j)), default=None)
        if entering is None:
            return
        best = None  # (ratio, basic variable index, row)
        for r, row in enumerate(rows):
            a = row.get(entering, 0)
            if a > 0:
                cand = (rhs[r] / a, basis[r], r)
                if best is None or cand[:2] < best[:2]:
                    best = cand
        if best is None:
            raise ValueError("unbounded")
        _pivot(rows, rhs, basis, cost, best[2], entering)


def minimize(objective, constraints, num_vars):
    rows, rhs, basis = [], [], []
    artificial = []
    col = num_vars
    for coeffs, sense, b in constraints:
        coeffs = {j: Fraction(v) for j, v in coeffs.items() if v}
        b = Fraction(b)
        if b < 0:  # phase 1 starts from rhs >= 0
            coeffs = {j: -v for j, v in coeffs.items()}
            b = -b
            sense = {"<=": ">=", ">=": "<=", "==": "=="}[sense]
        if sense == "<=":
            coeffs[col] = Fraction(1)  # slack, basic from the start
            basis.append(col)
            col += 1
        else:
            if sense == ">=":
                coeffs[col] = Fraction(-1)  # surplus
                col += 1
            elif sense != "==":
                raise ValueError(f"unknown sense {sense!r}")
            coeffs[col] = Fraction(1)  # artificial: phase 1 drives it to zero
            artificial.append(col)
            basis.append(col)
            col += 1
        rows.append(coeffs)
        rhs.append(b)
    is_artificial = set(artificial).__contains__

    # Phase 1: minimize the sum of the artificials; reduced cost of j = -(sum of its rows with an
    # artificial basic), since the basic artificials carry cost 1.
    cost = {}
    for r, row in enumerate(rows):
        if is_artificial(basis[r]):
            for j, v in row.items():
                if not is_artificial(j):
                    cost[j] = cost.get(j, 0) - v
    cost = {j: v for j, v in cost.items() if v}
    _run(rows, rhs, basis, cost, lambda j: True)
    if any(is_artificial(basis[r]) and rhs[r] for r in range(len(rows))):
        raise ValueError("infeasible")
    # Artificials still basic sit at zero: pivot them out, or drop their row when it is a
    # combination of the others (no real column left in it).
    for r in reversed(range(len(rows))):
        if is_artificial(basis[r]):
            real = min((j for j in rows[r] if not is_artificial(j)), default=None)
            if real is None:
                del rows[r], rhs[r], basis[r]
            else:
                _pivot(rows, rhs, basis, {}, r, real)
    for row in rows:
        for j in [j for j in row if is_artificial(j)]:
            del row[j]

    # Phase 2: reduced costs of the real objective against the current basis.
    cost = {j: Fraction(v) for j, v in objective.items() if v}
    for r, row in enumerate(rows):
        cb = cost.get(basis[r])
        if cb:
            for j, v in row.items():
                w = cost.get(j, 0) - cb * v
                if w:
                    cost[j] = w
                else:
                    cost.pop(j, None)
    _run(rows, rhs, basis, cost, lambda j: not is_artificial(j))
    solution = {basis[r]: rhs[r] for r in range(len(rows)) if basis[r] < num_vars}
    value = sum((Fraction(objective.get(j, 0)) * v for j, v in solution.items()), Fraction(0))
    return value, solution

#!/usr/bin/env python3
"""Single-group link bounds on mesh(N), solved exactly (docs/cost-model.md, "Single group: the
exact bounds"). Prints three tables; tests/bounds pins the output.

1. The LP optimum of each collective for one group of A actives and N-A idle helpers, beside the
   closed forms it confirms: (A-1)/(N-1) for all-gather, reduce-scatter and all-to-all, and
   2/(2N-A) for allreduce, whose LP here is the "sum at a root, then broadcast" shape with any
   rank as the root. The cut bound 1/(N-1) is printed for comparison: allreduce cannot reach it.
2. The counting lemma that makes 2/(2N-A) a bound for every allreduce schedule, not only rooted
   ones, checked exhaustively for small A (gossip.py).
3. The symmetry reduction checked against the full LP at small N (link_lp.py says why the
   reduced LP has the same optimum).

Standard library only. Exit status 1 when an optimum differs from its closed form, or (with
--expect FILE) when the output differs from FILE. --slow adds full-LP rows that take minutes.
"""

import argparse
import difflib
import io
import sys
from fractions import Fraction

from gossip import min_weighted_calls
from link_lp import optimum

# Every A at the spec's N=8, and the N=16 cases.
SHAPES = [(A, 8) for A in range(2, 8)] + [(2, 16), (4, 16), (8, 16)]
# The full LP grows as N^4; these take seconds, the slow ones (--slow) 7 s to 10 minutes.
FAST_CROSS_CHECK = [
    ("all-gather", 2, 4), ("all-gather", 3, 4), ("reduce-scatter", 3, 4),
    ("all-to-all", 3, 4), ("all-to-all", 3, 5), ("allreduce (rooted)", 2, 4),
]
SLOW_CROSS_CHECK = [
    ("all-gather", 3, 5), ("reduce-scatter", 3, 5),
    ("allreduce (rooted)", 3, 4), ("allreduce (rooted)", 3, 5),
]


def share(x):
    """A share of n as relay-plan writes it: 3n/7, n/6, n."""
    x = Fraction(x)
    num = "n" if x.numerator == 1 else f"{x.numerator}n"
    return num if x.denominator == 1 else f"{num}/{x.denominator}"


def report(out, slow):
    ok = True
    out.write("Single group on mesh(N): least load of the busiest link direction, units of n\n\n")
    out.write("| A | N | all-gather | reduce-scatter | all-to-all | (A-1)n/(N-1) "
              "| allreduce, rooted LP | 2n/(2N-A) | cut n/(N-1) |\n")
    out.write("|---|---|---|---|---|---|---|---|---|\n")
    for A, N in SHAPES:
        flows = [optimum(c, A, N) for c in ("all-gather", "reduce-scatter", "all-to-all")]
        rooted = optimum("allreduce (rooted)", A, N)
        closed, ar = Fraction(A - 1, N - 1), Fraction(2, 2 * N - A)
        row_ok = all(f == closed for f in flows) and rooted == ar
        ok &= row_ok
        cells = [str(A), str(N)] + [share(f) for f in flows] + [share(closed), share(rooted),
                                                                share(ar), share(Fraction(1, N - 1))]
        out.write("| " + " | ".join(cells) + " |" + ("" if row_ok else "  MISMATCH") + "\n")

    out.write("\nAllreduce counting lemma, one element, helpers merged into one hub: least\n"
              "A*m + (A-1)*z over all gossip schemes (m calls between actives, z with the hub)\n\n")
    out.write("| A | least A*m + (A-1)*z | 2A(A-1) |\n|---|---|---|\n")
    for A in (2, 3, 4):
        least = min_weighted_calls(A)
        ok &= least == 2 * A * (A - 1)
        out.write(f"| {A} | {least} | {2 * A * (A - 1)} |\n")

    out.write("\nSymmetry reduction against the full LP (every rank tuple its own variable)\n\n")
    out.write("| collective | A | N | reduced | full |\n|---|---|---|---|---|\n")
    for c, A, N in FAST_CROSS_CHECK + (SLOW_CROSS_CHECK if slow else []):
        reduced, full = optimum(c, A, N), optimum(c, A, N, reduce=False)
        ok &= reduced == full
        out.write(f"| {c} | {A} | {N} | {share(reduced)} | {share(full)} |\n")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--expect", help="compare the output with this file")
    parser.add_argument("--slow", action="store_true", help="add the slow full-LP rows")
    args = parser.parse_args()
    out = io.StringIO()
    ok = report(out, args.slow)
    text = out.getvalue()
    sys.stdout.write(text)
    if not ok:
        print("an optimum differs from its closed form (MISMATCH above)", file=sys.stderr)
        return 1
    if args.expect:
        with open(args.expect, encoding="utf-8") as f:
            expected = f.read()
        if text != expected:
            sys.stderr.writelines(difflib.unified_diff(
                expected.splitlines(True), text.splitlines(True), args.expect, "output"))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

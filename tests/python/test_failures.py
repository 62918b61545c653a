"""Failures on 8 processes over the shm transport: each is reported on every rank within the
timeout (and the margin of a busy machine, world.BUSY_MARGIN_S; whether a rank waited the timeout
out, the error's class says), nothing is written into any output, nothing hangs, and where the
communicator promises to stay usable the next call is correct. One world runs every scenario in
turn (_worker); the tests below judge what each rank reported.

  mismatch         rank 5 passes other counts (a shape new to every rank)
  mismatch_cached  rank 5 passes other counts while the others repeat a cached shape
  dtype            rank 2 passes float64 where the others pass float32
  bad_dtype        rank 6 passes torch.bool, which relay does not move (refused in Python)
  raises           rank 3's tensor has the wrong size: it raises before the call and refuses it
  strided          rank 0's tensor is not contiguous (refused in Python)
  a2a_in_place     rank 1 passes all-to-all an output that is its input (refused in Python)
  rule             every rank asks for the ipc transport on CPU tensors
  aborts           rank 4 aborts its communicator; the others' next call fails naming it
  exits            rank 7 is SIGKILLed before a call: fused (every rank active) and single (rank
                   7 and five others help): relay.PeerLostError on every rank, the dead rank and
                   its pid first
"""

import os
import signal
import time

import pytest
import torch

from world import BUSY_MARGIN_S, run_world

TIMEOUT_S = 6
GROUPS = [[0, 1], [2, 3], [4, 5], [6, 7]]
N = 64
POISON = -7777.0


def _outcome(fn, n=N):
    """What one rank saw: the error's class, peer and text, the time it took, and the output
    (n elements, poisoned)."""
    out = torch.full((n,), POISON)
    start = time.monotonic()
    try:
        fn(out)
        error = None
    except Exception as e:  # noqa: BLE001 (the tests judge every kind)
        error = e
    return {
        "error": None if error is None else type(error).__name__,
        "bases": [] if error is None else [c.__name__ for c in type(error).__mro__],
        "peer": getattr(error, "peer", None),
        "message": None if error is None else str(error),
        "elapsed": time.monotonic() - start,
        "untouched": bool((out == POISON).all()),
    }


def _good_call(comm, rank, tag):
    """A correct call: every rank gets its group's sum."""
    x = torch.full((N,), float(rank + 1))
    out = torch.full((N,), POISON)
    try:
        comm.all_reduce(x, GROUPS, out=out, counts=[N] * 4)
    except Exception as e:  # noqa: BLE001
        return f"{tag}: {type(e).__name__}: {e}"
    g = rank // 2
    want = float(2 * g + 1 + 2 * g + 2)
    return None if bool((out == want).all()) else f"{tag}: wrong sum {out[0].item()} != {want}"


def _worker(rank, size):
    import relay.torch as rt

    seen = {}
    # The transport rule refuses alike on every rank, at creation.
    for name in ("ipc", "carrier-pigeon"):
        try:
            rt.Communicator(device="cpu", transport=name)
            seen[f"rule {name}"] = None
        except Exception as e:  # noqa: BLE001
            seen[f"rule {name}"] = (type(e).__name__, str(e))

    comm = rt.Communicator(device="cpu", timeout=TIMEOUT_S, transport_bytes=1 << 20)
    x = torch.full((N,), float(rank + 1))
    after = {}

    def counts_off(out):  # a shape no rank called before
        counts = [N, N, N, N + (1 if rank == 5 else 0)]
        comm.all_reduce(x, GROUPS, out=out, counts=counts)

    seen["mismatch"] = _outcome(counts_off)
    after["mismatch"] = _good_call(comm, rank, "after mismatch")

    # Each scenario below but mismatch_cached is a shape new to every rank (its own count): a
    # rank on a new shape against peers on a cached one is mismatch_cached's case.
    def full(n):
        return torch.full((n,), float(rank + 1))

    def dtype_off(out):
        t = full(N + 2).double() if rank == 2 else full(N + 2)
        o = out.double() if rank == 2 else out
        comm.all_reduce(t, GROUPS, out=o, counts=[N + 2] * 4)
        if rank == 2:
            out.copy_(o)

    seen["dtype"] = _outcome(dtype_off, N + 2)
    after["dtype"] = _good_call(comm, rank, "after dtype")

    def cached_off(out):  # the others repeat the shape _good_call made; rank 5 a new one
        counts = [N, N, N, N + 1] if rank == 5 else [N] * 4
        comm.all_reduce(x, GROUPS, out=out, counts=counts)

    seen["mismatch_cached"] = _outcome(cached_off)
    after["mismatch_cached"] = _good_call(comm, rank, "after mismatch_cached")

    def bad_dtype(out):
        t = full(N + 3).bool() if rank == 6 else full(N + 3)
        o = out.bool() if rank == 6 else out
        comm.all_reduce(t, GROUPS, out=o, counts=[N + 3] * 4)

    seen["bad_dtype"] = _outcome(bad_dtype, N + 3)
    after["bad_dtype"] = _good_call(comm, rank, "after bad_dtype")

    def raises(out):
        t = torch.ones(N + 3) if rank == 3 else full(N + 4)
        comm.all_reduce(t, GROUPS, out=out, counts=[N + 4] * 4)

    seen["raises"] = _outcome(raises, N + 4)
    after["raises"] = _good_call(comm, rank, "after raises")

    def strided(out):
        t = torch.ones(2 * (N + 6))[::2] if rank == 0 else full(N + 6)
        comm.all_reduce(t, GROUPS, out=out, counts=[N + 6] * 4)

    seen["strided"] = _outcome(strided, N + 6)
    after["strided"] = _good_call(comm, rank, "after strided")

    def a2a_in_place(out):
        t = full(2 * (N + 7))
        comm.all_to_all(t, t if rank == 1 else out, GROUPS, counts=[N + 7] * 4)

    seen["a2a_in_place"] = _outcome(a2a_in_place, 2 * (N + 7))
    after["a2a_in_place"] = _good_call(comm, rank, "after a2a_in_place")
    seen["after"] = after

    def aborts(out):
        if rank == 4:
            comm.abort()
            raise RuntimeError("aborted")
        comm.all_reduce(full(N + 5), GROUPS, out=out, counts=[N + 5] * 4)

    seen["aborts"] = _outcome(aborts, N + 5)
    comm.close()

    # A rank exits, on two fresh communicators (an abort leaves the first unusable).
    comm2 = rt.Communicator(device="cpu", timeout=TIMEOUT_S, transport_bytes=1 << 20)
    comm3 = rt.Communicator(device="cpu", timeout=TIMEOUT_S, transport_bytes=1 << 20)
    for c in (comm2, comm3):
        if _good_call(c, rank, "before exit") is not None:
            raise RuntimeError("a fresh communicator does not work")
    import torch.distributed as dist

    dist.barrier()  # every rank is done with the good calls before rank 7 dies
    if rank == 7:
        os.kill(os.getpid(), signal.SIGKILL)
    seen["exits"] = _outcome(lambda out: comm2.all_reduce(x, GROUPS, out=out, counts=[N] * 4))

    def single(out):  # ranks 2..7 help; rank 7 is gone
        active = rank in (0, 1)
        comm3.all_reduce(x if active else None, [[0, 1]], out=out if active else None,
                         counts=[N], dtype=x.dtype)

    seen["exits_single"] = _outcome(single)
    return seen


@pytest.fixture(scope="module")
def reports():
    results = run_world(8, _worker, (), timeout=300, env={"RELAY_TIMEOUT": str(TIMEOUT_S)})
    assert results[7][0] == "exited" and results[7][1] == -signal.SIGKILL, results[7]
    bad = {r: v for r, v in results.items() if r != 7 and v[0] != "ok"}
    assert not bad, bad
    return {r: v[1] for r, v in results.items() if r != 7}


def _every_rank(reports, scenario, ranks=range(8)):
    return {r: reports[r][scenario] for r in ranks if r in reports}


def _within_timeout(seen):
    """Every failure is an error within the timeout and the margin of a busy machine (whether it
    waited the timeout out, its class says: relay.TimeoutError)."""
    for r, s in seen.items():
        assert s["elapsed"] < TIMEOUT_S + BUSY_MARGIN_S, f"rank {r} took {s['elapsed']:.1f} s"


def _nothing_written(seen):
    for r, s in seen.items():
        assert s["untouched"], f"rank {r}'s output was written by a failed call"


def test_the_transport_rule_refuses_alike_on_every_rank(reports):
    for r, s in reports.items():
        assert s["rule ipc"][0] == "UnsupportedError", s["rule ipc"]
        assert "'ipc' moves device memory" in s["rule ipc"][1]
        assert s["rule carrier-pigeon"][0] == "InvalidArgumentError"


def test_mismatched_sizes_fail_every_rank(reports):
    seen = _every_rank(reports, "mismatch")
    for r, s in seen.items():
        assert s["error"] == "MismatchError", (r, s)
        assert s["peer"] == 5, (r, s)
    _within_timeout(seen)
    _nothing_written(seen)
    assert all(reports[r]["after"]["mismatch"] is None for r in reports), reports


def test_a_wrong_dtype_on_one_rank_fails_every_rank(reports):
    seen = _every_rank(reports, "dtype")
    for r, s in seen.items():
        assert s["error"] == "MismatchError" and s["peer"] == 2, (r, s)
    _within_timeout(seen)
    _nothing_written(seen)
    assert all(reports[r]["after"]["dtype"] is None for r in reports), reports


@pytest.mark.parametrize("scenario", ["exits", "exits_single"])
def test_a_rank_that_exits_is_named_on_every_rank(reports, scenario):
    seen = _every_rank(reports, scenario, range(7))
    for r, s in seen.items():
        # The cause first, with a status of its own: rank 7's process is gone.
        assert s["error"] == "PeerLostError" and s["peer"] == 7, (r, s)
        assert "PeerError" in s["bases"], s
        assert s["message"].startswith("peer lost: rank 7 (pid "), s
        assert "exited" in s["message"], s
    _within_timeout(seen)
    _nothing_written(seen)


def test_an_abort_is_named_on_every_rank_at_once(reports):
    seen = _every_rank(reports, "aborts")
    for r, s in seen.items():
        if r != 4:
            assert s["error"] == "PeerError" and s["peer"] == 4, (r, s)
    _within_timeout(seen)
    _nothing_written(seen)


def test_a_cached_shape_against_a_new_one_is_a_mismatch(reports):
    seen = _every_rank(reports, "mismatch_cached")
    for r, s in seen.items():
        assert s["error"] in ("MismatchError", "PeerError"), (r, s)
    _within_timeout(seen)
    _nothing_written(seen)
    assert all(reports[r]["after"]["mismatch_cached"] is None for r in reports), reports


def test_a_dtype_relay_does_not_move_is_refused_and_named(reports):
    seen = _every_rank(reports, "bad_dtype")
    assert seen[6]["error"] == "TypeError", seen[6]
    assert "torch.bool" in seen[6]["message"]
    for r, s in seen.items():
        if r != 6:
            assert s["error"] == "PeerError" and s["peer"] == 6, (r, s)
    _within_timeout(seen)
    _nothing_written(seen)
    assert all(reports[r]["after"]["bad_dtype"] is None for r in reports), reports


@pytest.mark.parametrize(
    "scenario, culprit, text",
    [
        ("raises", 3, "has 67 elements; this call expects 68"),
        ("strided", 0, "is not contiguous"),
        ("a2a_in_place", 1, "all-to-all has no in-place form"),
    ],
)
def test_a_rank_that_raises_before_the_call_is_named_at_once(reports, scenario, culprit, text):
    seen = _every_rank(reports, scenario)
    assert seen[culprit]["error"] == "ValueError", seen[culprit]
    assert text in seen[culprit]["message"], seen[culprit]
    for r, s in seen.items():
        if r != culprit:
            assert s["error"] == "PeerError" and s["peer"] == culprit, (r, s)
            assert text in s["message"], (r, s)  # the refusing rank's own words
    _within_timeout(seen)
    _nothing_written({r: s for r, s in seen.items() if r != culprit or scenario != "a2a_in_place"})
    assert all(reports[r]["after"][scenario] is None for r in reports), reports

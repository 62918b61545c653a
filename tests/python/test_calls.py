"""What one relay.torch call costs in the library, on 2 processes (shm):

  one crossing    a repeated call makes exactly one call into the library: the collective's
                  (each Communicator method, sync and async, with and without options; a fused
                  helper of one dtype; a torch.library op). A call shape's first call asks for
                  its layout too (and its count, where the tensors give it), once.
  no allocation   inside that one call the library allocates nothing: the malloc family is
                  counted on the calling thread by a preloaded counter (malloc_counter.c,
                  RELAY_TEST_MALLOC_COUNTER) around the call.

Every call's output is checked too (against the sum worked out here), so that a call that does
nothing cannot pass."""

import copy
import ctypes
import os

import pytest
import torch

from world import assert_all_ok, run_world

COUNTER = os.environ.get("RELAY_TEST_MALLOC_COUNTER")


class Counted:
    """Every call a Library makes into the C ABI, with the allocations inside each (where the
    counter is preloaded): [(function, allocations or None)]."""

    def __init__(self, counter):
        self.calls = []
        self._counter = counter

    def wrap(self, name, fn):
        def counted(*args):
            if self._counter is None:
                self.calls.append((name, None))
                return fn(*args)
            self._counter.relay_test_count_begin()
            result = fn(*args)
            self.calls.append((name, self._counter.relay_test_count_end()))
            return result

        return counted


def counting(lib, counter):
    """A copy of `lib` whose every C ABI function (its named ones, and its dll's) is counted."""
    counted = Counted(counter)
    copied = copy.copy(lib)
    for name, value in list(vars(lib).items()):
        if isinstance(value, ctypes._CFuncPtr):
            setattr(copied, name, counted.wrap(name, value))

    class Dll:
        def __getattr__(self, name):
            return counted.wrap(name, getattr(lib.dll, name))

    copied.dll = Dll()
    return copied, counted


def _worker(rank, size):
    import relay.torch as rt
    from relay.torch.ops import groups_args

    counter, live = None, None
    if COUNTER:
        counter = ctypes.CDLL(COUNTER)  # preloaded: the same object
        counter.relay_test_count_end.restype = ctypes.c_long
        live = _counts_an_allocation(counter)
    comm = rt.Communicator(device="cpu", timeout=20, transport_bytes=1 << 20)
    lib, counted = counting(comm._lib, counter)
    comm._lib = lib
    pair = [[0, 1]]
    n = 40
    x = torch.arange(n, dtype=torch.float32) + 1000 * rank
    total = torch.arange(n, dtype=torch.float32) * 2 + 1000  # the pair's sum, by hand
    options = rt.Options(route="direct")
    ranks, sizes = groups_args(pair)
    out = torch.empty(n)
    block = torch.empty(n // 2)
    gathered = torch.empty(2 * n)
    fused_in = [x[:10].clone(), x[10:].clone()]
    fused_out = [torch.empty(10), torch.empty(30)]

    def poison(*ts):
        for t in ts:
            t.fill_(-7.0)

    def allreduce():
        poison(out)
        comm.all_reduce(x, pair, out=out)
        return torch.equal(out, total)

    def allreduce_async():
        poison(out)
        comm.all_reduce(x, pair, out=out, counts=[n], options=options, async_op=True).wait()
        return torch.equal(out, total)

    def reduce_scatter():
        poison(block)
        comm.reduce_scatter(x, block, pair)
        return torch.equal(block, total[rank * n // 2 : (rank + 1) * n // 2])

    def all_gather():
        poison(gathered)
        comm.all_gather(x, gathered, pair, options=options)
        return torch.equal(gathered[rank * n : (rank + 1) * n], x) and bool(
            (gathered != -7.0).all()
        )

    def all_to_all():
        poison(out)
        comm.all_to_all(x, out, pair)
        other = torch.arange(n, dtype=torch.float32) + 1000 * (1 - rank)
        half = slice(rank * n // 2, (rank + 1) * n // 2)
        parts = [x[half], other[half]] if rank == 0 else [other[half], x[half]]
        return torch.equal(out, torch.cat(parts))

    def fused():
        poison(*fused_out)
        rt.all_reduce_tensors(comm, fused_in, pair, out=fused_out)
        return torch.equal(torch.cat(fused_out), total)

    def op():
        poison(out)
        torch.ops.relay.all_reduce_(out.copy_(x), comm.id, ranks, sizes, [n], "sum")
        return torch.equal(out, total)

    calls = {
        "allreduce": (allreduce, "allreduce"),
        "allreduce async, options": (allreduce_async, "allreduce"),
        "reduce-scatter": (reduce_scatter, "reduce_scatter"),
        "all-gather": (all_gather, "all_gather"),
        "all-to-all": (all_to_all, "all_to_all"),
        "all_reduce_tensors": (fused, "allreduce"),
        "torch.ops.relay.all_reduce_": (op, "allreduce"),
    }
    report = {}
    for what, (call, entry) in calls.items():
        counted.calls.clear()
        first_ok = call()
        first = [name for name, _ in counted.calls]
        counted.calls.clear()
        again_ok = call()
        report[what] = (first_ok and again_ok, first, list(counted.calls), entry)
    comm.close()
    return live, report


def _counts_an_allocation(counter):
    """Whether the counter sees a malloc in its window (it does where it is preloaded): without
    it, a count of 0 would say nothing."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    counter.relay_test_count_begin()
    p = libc.malloc(64)
    n = counter.relay_test_count_end()
    libc.free(p)
    return n == 1


@pytest.fixture
def preloaded(monkeypatch):
    """The ranks start with the allocation counter preloaded (where ctest built it)."""
    if COUNTER:
        monkeypatch.setenv("LD_PRELOAD", COUNTER)


def test_a_repeated_call_is_one_call_into_the_library_that_allocates_nothing(preloaded):
    results = assert_all_ok(run_world(2, _worker, timeout=240))
    bad = []
    for rank, (live, report) in results.items():
        if COUNTER and not live:
            bad.append(f"rank {rank}: the allocation counter is not preloaded")
        for what, (right, first, again, entry) in report.items():
            if not right:
                bad.append(f"rank {rank}: {what}: a wrong output")
            if [name for name, _ in again] != [entry]:
                bad.append(f"rank {rank}: {what}: a repeated call made {again}, not [{entry}]")
            if COUNTER and any(n != 0 for _, n in again):
                bad.append(f"rank {rank}: {what}: a repeated call allocated: {again}")
            if first.count(entry) != 1 or first.count("rank_layout_of") > 1:
                bad.append(f"rank {rank}: {what}: a first call made {first}")
    assert not bad, "\n".join(bad)

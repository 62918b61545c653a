"""What one repeated call of relay's Python layer costs on the host, on 2 processes (shm), in
counts (not times): every kind of call (the Communicator's methods, sync and async; the fused
helpers, sync and async; relay.torchcomms' four sharded_relay_multi_group_* methods, sync,
async and with low precision; torchrec's four methods; a torch.library op) made three times
with the same arguments, the second and third time counted:

  library calls   the repeated call crosses into the library exactly as listed: once, the
                  collective (relay_run_call; with async_op relay_run_call_async, which on a
                  stream transport also orders the operation stream after the current one and
                  marks the call's end; a call whose work is numbered without async_op, the
                  torchcomms methods', relay_run_call_async with the current stream as both);
                  a wait asks what failed (relay_comm_async_status), after ordering the current
                  stream after the call where it may not have finished (relay_comm_order_after:
                  never here, where shm's calls have finished when they return); steps of
                  torch's work around calls (the fused helpers' copies, torchcomms' list forms,
                  async) are marked before and after (relay_comm_mark). A call shape's first
                  call asks for its layout too (and its count, where the tensors give it), once.
  no allocation   inside those calls the library allocates nothing: the malloc family is counted
                  on the calling thread by a preloaded counter (malloc_counter.c,
                  RELAY_TEST_MALLOC_COUNTER) around each.
  a budget        the whole repeated call, Python and torch included, makes at most its budget of
                  malloc-family calls (BUDGET: what each one is), and calls at most its budget of
                  functions (FUNCTIONS, the third time: Python's and C's, as sys.setprofile sees
                  them), so that the work a repeated call skips stays skipped.

Every call's output is checked too (against the sum worked out here), so that a call that does
nothing cannot pass."""

import copy
import ctypes
import gc
import os
import sys

import pytest
import torch

from world import assert_all_ok, run_world

COUNTER = os.environ.get("RELAY_TEST_MALLOC_COUNTER")

# The most malloc-family calls a repeated call makes, whole (torch 1.13 on the CPU). A call
# through its prepared arguments makes none: its key, its work and the crossing live on Python's
# own small-object allocator. A torch.library op's budget is what torch's dispatch of an op of the
# same schema that does nothing makes ("dispatch": measured beside it, REFERENCE_OP), relay's
# part none. What a fused helper's budget pays for: a torch view of each tensor read or written
# as blocks (reduce-scatter's inputs, all-gather's outputs, all-to-all's both; 2 tensors each
# here): a view is a TensorImpl, 4 allocations. Its flat buffers' views are made once, with the
# call structure's plan; a dtype of one tensor has no flat buffer (its call runs on the tensor).
BUDGET = {
    "all_reduce": 0,
    "all_reduce in place": 0,
    "all_reduce async, options": 0,
    "reduce_scatter": 0,
    "all_gather": 0,
    "all_to_all": 0,
    "torch.ops.relay.all_reduce_": "dispatch",
    "all_reduce_tensors": 0,
    "reduce_scatter_tensors": 2 * 4,
    "all_gather_tensors": 2 * 4,
    "all_gather_tensors, in place": 2 * 4,
    "all_to_all_tensors": 4 * 4,
    "all_reduce_tensors async": 0,
    "all_reduce_tensors, one tensor": 0,
    "all_reduce_tensors async, one tensor": 0,
    "reduce_scatter_tensors, one tensor": 0,
    "sharded all_reduce": 0,
    "sharded all_reduce async": 0,
    "sharded all_reduce, low_precision": 0,
    "sharded reduce_scatter": 0,
    "sharded all_gather": 0,
    "sharded all_to_all": 0,
    "torchcomms all_reduce": 0,
    "torchcomms all_reduce async": 0,
    "torchrec allreduce_multi_group": 0,
    "torchrec reduce_scatter_multi_group": 0,
    "torchrec all_gather_multi_group": 0,
    "torchrec all_to_all_multi_group": 0,
}


# The most functions a repeated call calls, whole, as sys.setprofile sees them (CPython 3.11,
# torch 1.13, the CPU): each Python function and each C function called from Python (a torch
# method such as data_ptr, a builtin such as len; making an instance of a type counts only its
# Python __init__), and each crossing into the library as two (the counting wrapper and its
# record of the call). Its parts: the method and Communicator._call (2); the call's tensors
# described for its key (data_ptr, numel and is_contiguous: 3 a tensor), which is compared with
# the last call's (no lookup where it is that call again); the current stream (1) and the
# crossing (2); a work (its Work; its run on the operation stream 1, and, where the call
# finished when it returned, as on the CPU, its numbering 1), a wait (1, and its crossing); a
# fused helper's structure (each list described, 1, and 1 a tensor; compared with the last
# call's, 1), its copies (1 each), its step's places (1, and 1 a tensor) and its call (1, and 1
# for the current stream's pointer);
# torchcomms' argument checks (each list's length 1, the op's name 1, a ReduceOp's looked up 3).
# A call that regains per-call work (a key made or looked up again, a plan made again, a layer,
# a crossing, a check repeated that the key covers) goes over.
FUNCTIONS = {
    "all_reduce": 11,
    "all_reduce in place": 8,
    "all_reduce async, options": 17,
    "reduce_scatter": 11,
    "all_gather": 11,
    "all_to_all": 11,
    "torch.ops.relay.all_reduce_": 29,
    "all_reduce_tensors": 22,
    "reduce_scatter_tensors": 24,
    "all_gather_tensors": 24,
    "all_gather_tensors, in place": 24,
    "all_to_all_tensors": 26,
    "all_reduce_tensors async": 40,
    "all_reduce_tensors, one tensor": 15,
    "all_reduce_tensors async, one tensor": 19,
    "reduce_scatter_tensors, one tensor": 15,
    "sharded all_reduce": 17,
    "sharded all_reduce async": 21,
    "sharded all_reduce, low_precision": 20,  # its options looked up; logging's level asked
    "sharded reduce_scatter": 17,
    "sharded all_gather": 16,
    "sharded all_to_all": 16,
    "torchcomms all_reduce": 15,
    "torchcomms all_reduce async": 16,
    "torchrec allreduce_multi_group": 16,  # a ReduceOp (its name looked up by its id)
    "torchrec reduce_scatter_multi_group": 18,
    "torchrec all_gather_multi_group": 17,
    "torchrec all_to_all_multi_group": 17,
}

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
    """A copy of `lib` whose every C ABI function (its named ones, its preconverted ones under
    the same names, and its dll's) is counted."""
    counted = Counted(counter)
    copied = copy.copy(lib)
    for name, value in list(vars(lib).items()):
        if isinstance(value, ctypes._CFuncPtr):
            setattr(copied, name, counted.wrap(name, value))

    class Preconverted:
        pass

    copied.preconverted = Preconverted()
    for name in type(lib.preconverted).__slots__:
        setattr(copied.preconverted, name, counted.wrap(name, getattr(lib.preconverted, name)))

    class Dll:
        def __getattr__(self, name):
            return counted.wrap(name, getattr(lib.dll, name))

    copied.dll = Dll()
    return copied, counted


def _worker(rank, size):
    import relay.torch as rt
    from relay.torch.ops import groups_args
    from relay.torchcomms import TorchCommRelay
    from relay.torchrec import FusedShardedRelayMultiGroup

    counter, live = None, None
    if COUNTER:
        counter = ctypes.CDLL(COUNTER)  # preloaded: the same object
        counter.relay_test_count_end.restype = ctypes.c_long
        counter.relay_test_total_end.restype = ctypes.c_long
        live = _counts_an_allocation(counter)
    comm = rt.Communicator(device="cpu", timeout=20, transport_bytes=1 << 20)
    lib, counted = counting(comm._lib, counter)
    comm._lib = lib
    backend = TorchCommRelay.from_communicator(comm, "calls")
    rec = FusedShardedRelayMultiGroup(backend, size, rank, [[0, 1]])
    pair = [[0, 1]]
    n = 40
    x = torch.arange(n, dtype=torch.float32) + 1000 * rank
    other = torch.arange(n, dtype=torch.float32) + 1000 * (1 - rank)
    total = torch.arange(n, dtype=torch.float32) * 2 + 1000  # the pair's sum, by hand
    half = slice(rank * n // 2, (rank + 1) * n // 2)
    options = rt.Options(route="direct")
    ranks, sizes = groups_args(pair)
    out = torch.empty(n)
    block = torch.empty(n // 2)
    gathered = torch.empty(2 * n)
    inout = torch.empty(n)
    fused_in = [x[:10].clone(), x[10:].clone()]
    fused_out = [torch.empty(10), torch.empty(30)]
    rs_out = [torch.empty(5), torch.empty(15)]
    ag_out = [torch.empty(20), torch.empty(60)]
    a2a_out = [torch.empty(10), torch.empty(30)]

    class Window:
        """The part of a call the budgets count: the relay call alone (poison and check
        aside). Its allocations (where the counter is preloaded), or with `profiling` the
        functions it calls (Python's and C's, as sys.setprofile sees them; the collector off),
        less what an empty window counts (`empty`)."""

        whole = None
        functions = None
        profiling = False
        empty = 0

        def __enter__(self):
            if self.profiling:
                self.functions = 0
                gc.disable()
                sys.setprofile(self._count)
            elif counter is not None:
                counter.relay_test_total_begin()

        def __exit__(self, *exc):
            if self.profiling:
                sys.setprofile(None)
                gc.enable()
                self.functions -= self.empty
            elif counter is not None:
                self.whole = counter.relay_test_total_end()

        def _count(self, frame, event, arg):
            if event == "call" or event == "c_call":
                self.functions += 1

    window = Window()
    window.profiling = True
    with window:
        pass
    window.empty, window.profiling = window.functions, False

    def poison(*ts):
        for t in ts:
            t.fill_(-7.0)

    # What each collective gives this rank, by hand: x's sum with the peer's (allreduce), its half
    # (reduce-scatter), both inputs in rank order (all-gather), and each rank's half (all-to-all).
    def gathered_of(a, b):
        return torch.cat([a, b] if rank == 0 else [b, a])

    want_ag = gathered_of(x, other)
    want_a2a = gathered_of(x[half], other[half])
    mine, theirs = [x[:10], x[10:]], [other[:10], other[10:]]  # the fused helpers' tensors
    sums = [total[:10], total[10:]]

    def allreduce():
        poison(out)
        with window:
            comm.all_reduce(x, pair, out=out)
        return lambda: torch.equal(out, total)

    def allreduce_in_place():
        inout.copy_(x)
        with window:
            result = comm.all_reduce(inout, pair)
        return lambda: result is inout and torch.equal(inout, total)

    def allreduce_async():
        poison(out)
        with window:
            comm.all_reduce(x, pair, out=out, counts=[n], options=options, async_op=True).wait()
        return lambda: torch.equal(out, total)

    def reduce_scatter():
        poison(block)
        with window:
            comm.reduce_scatter(x, block, pair)
        return lambda: torch.equal(block, total[half])

    def all_gather():
        poison(gathered)
        with window:
            comm.all_gather(x, gathered, pair, options=options)
        return lambda: torch.equal(gathered, want_ag)

    def all_to_all():
        poison(out)
        with window:
            comm.all_to_all(x, out, pair)
        return lambda: torch.equal(out, want_a2a)

    def op():
        poison(out)
        with window:
            torch.ops.relay.all_reduce_(out.copy_(x), comm.id, ranks, sizes, [n], "sum")
        return lambda: torch.equal(out, total)

    def fused_all_reduce():
        poison(*fused_out)
        with window:
            rt.all_reduce_tensors(comm, fused_in, pair, out=fused_out)
        return lambda: torch.equal(torch.cat(fused_out), total)

    def fused_all_reduce_async():
        poison(*fused_out)
        with window:
            rt.all_reduce_tensors(comm, fused_in, pair, out=fused_out, async_op=True).wait()
        return lambda: torch.equal(torch.cat(fused_out), total)

    def fused_one_async():
        poison(out)
        with window:
            rt.all_reduce_tensors(comm, [x], pair, out=[out], async_op=True).wait()
        return lambda: torch.equal(out, total)

    def fused_one(coll):
        if coll == "allreduce":
            poison(out)
            with window:
                rt.all_reduce_tensors(comm, [x], pair, out=[out])
            return lambda: torch.equal(out, total)
        poison(block)
        with window:
            rt.reduce_scatter_tensors(comm, [x], [block], pair)
        return lambda: torch.equal(block, total[half])

    def fused_reduce_scatter():
        poison(*rs_out)
        with window:
            rt.reduce_scatter_tensors(comm, fused_in, rs_out, pair)
        # Each tensor's block `rank` of its elements' sums.
        return lambda: all(torch.equal(o, s.view(2, -1)[rank]) for o, s in zip(rs_out, sums))

    def fused_all_gather(in_place=False):
        poison(*ag_out)
        with window:
            rt.all_gather_tensors(comm, fused_in, ag_out, pair, in_place=in_place)
        return lambda: all(torch.equal(o, gathered_of(a, b))
                           for o, a, b in zip(ag_out, mine, theirs))

    def fused_all_to_all():
        poison(*a2a_out)
        with window:
            rt.all_to_all_tensors(comm, fused_in, a2a_out, pair)
        return lambda: all(torch.equal(o, gathered_of(a.view(2, -1)[rank], b.view(2, -1)[rank]))
                           for o, a, b in zip(a2a_out, mine, theirs))

    def sharded_all_reduce(async_op=False, low_precision=False):
        poison(out)
        with window:
            work = backend.sharded_relay_multi_group_all_reduce(
                [x], "sum", pair, [n], async_op=async_op, output_tensors=[out],
                low_precision=low_precision)
            if async_op:
                work.wait()
        return lambda: torch.equal(out, total)

    def whole_all_reduce(async_op=False):
        inout.copy_(x)
        with window:
            backend.all_reduce(inout, "sum", async_op).wait()
        return lambda: torch.equal(inout, total)

    def sharded_reduce_scatter():
        poison(block)
        with window:
            backend.sharded_relay_multi_group_reduce_scatter([x], [block], "sum", pair, [n // 2])
        return lambda: torch.equal(block, total[half])

    def sharded_all_gather():
        poison(gathered)
        with window:
            backend.sharded_relay_multi_group_all_gather([x], [gathered], pair, [n])
        return lambda: torch.equal(gathered, want_ag)

    def sharded_all_to_all():
        poison(out)
        with window:
            backend.sharded_relay_multi_group_all_to_all([x], [out], pair, [n // 2])
        return lambda: torch.equal(out, want_a2a)

    def torchrec_allreduce():
        inout.copy_(x)
        with window:
            # torch.distributed's ReduceOp, as torchrec passes it: its name is looked up.
            rec.allreduce_multi_group([inout], 1, [n], pair, op=torch.distributed.ReduceOp.SUM)
        return lambda: torch.equal(inout, total)

    def torchrec_reduce_scatter():
        poison(block)
        with window:
            rec.reduce_scatter_multi_group([x], [block], 1, [n // 2], pair, op="sum")
        return lambda: torch.equal(block, total[half])

    def torchrec_all_gather():
        poison(gathered)
        with window:
            rec.all_gather_multi_group([x], [gathered], 1, [n], pair)
        return lambda: torch.equal(gathered, want_ag)

    def torchrec_all_to_all():
        poison(out)
        with window:
            rec.all_to_all_multi_group([x], [out], 1, [n // 2], pair)
        return lambda: torch.equal(out, want_a2a)

    # A work's wait on the CPU (shm) orders no stream after its call: the library numbered the
    # call as finished (its calls are done when they return), so the wait only asks what failed.
    once, marked = ["run_call"], ["run_call_async"]
    waited = ["run_call_async", "comm_async_status"]
    steps = ["comm_mark", "run_call", "comm_mark", "comm_async_status"]
    calls = {
        "all_reduce": (allreduce, once),
        "all_reduce in place": (allreduce_in_place, once),
        "all_reduce async, options": (allreduce_async, waited),
        "reduce_scatter": (reduce_scatter, once),
        "all_gather": (all_gather, once),
        "all_to_all": (all_to_all, once),
        "torch.ops.relay.all_reduce_": (op, once),
        "all_reduce_tensors": (fused_all_reduce, once),
        "reduce_scatter_tensors": (fused_reduce_scatter, once),
        "all_gather_tensors": (fused_all_gather, once),
        "all_gather_tensors, in place": (lambda: fused_all_gather(True), once),
        "all_to_all_tensors": (fused_all_to_all, once),
        "all_reduce_tensors async": (fused_all_reduce_async, steps),
        "all_reduce_tensors, one tensor": (lambda: fused_one("allreduce"), once),
        "all_reduce_tensors async, one tensor": (fused_one_async, waited),
        "reduce_scatter_tensors, one tensor": (lambda: fused_one("reduce-scatter"), once),
        "sharded all_reduce": (sharded_all_reduce, marked),
        "sharded all_reduce async": (lambda: sharded_all_reduce(True), waited),
        # fp8 asked; the library takes native at these few bytes (its threshold): the sum exact.
        "sharded all_reduce, low_precision": (lambda: sharded_all_reduce(low_precision=True),
                                              marked),
        "sharded reduce_scatter": (sharded_reduce_scatter, marked),
        "sharded all_gather": (sharded_all_gather, marked),
        "sharded all_to_all": (sharded_all_to_all, marked),
        "torchcomms all_reduce": (whole_all_reduce, marked + ["comm_async_status"]),
        "torchcomms all_reduce async": (lambda: whole_all_reduce(True), waited),
        "torchrec allreduce_multi_group": (torchrec_allreduce, marked),
        "torchrec reduce_scatter_multi_group": (torchrec_reduce_scatter, marked),
        "torchrec all_gather_multi_group": (torchrec_all_gather, marked),
        "torchrec all_to_all_multi_group": (torchrec_all_to_all, marked),
    }
    reference = _reference_op()
    dispatch = None
    if counter is not None:
        for _ in range(3):  # its first calls set up the dispatch
            counter.relay_test_total_begin()
            reference(out, comm.id, ranks, sizes, [n], "sum")
            dispatch = counter.relay_test_total_end()
    report = {}
    for what, (call, entries) in calls.items():
        counted.calls.clear()
        first_ok = call()()
        first = [name for name, _ in counted.calls]
        counted.calls.clear()
        again_ok = call()()
        again = list(counted.calls)
        window.profiling = True
        profiled_ok = call()()
        window.profiling = False
        report[what] = (first_ok and again_ok and profiled_ok, first, again, entries,
                        window.whole, window.functions)
    changed = _changed_arguments(comm, rank, x, other, n)
    backend.finalize()
    return live, report, dispatch, changed


def _changed_arguments(comm, rank, x, other, n):
    """A call that differs from a repeated one in one property its checks read is checked
    again: each kind after the same call made twice; returns what went wrong."""
    import relay

    pair = [[0, 1]]
    base = torch.empty(2 * n)
    out = torch.empty(n)
    wrong = []

    def expect_error(what, fn, kind, text):
        try:
            fn()
            wrong.append(f"{what}: no error")
        except kind as e:
            if text not in str(e):
                wrong.append(f"{what}: {e}")
        except relay.RelayError as e:
            wrong.append(f"{what}: {type(e).__name__}: {e}")

    for _ in range(2):
        base[:n].copy_(x)
        comm.all_reduce(base[:n], pair, out=out, counts=[n])
    expect_error("fewer elements at the same place",
                 lambda: comm.all_reduce(base[: n - 1], pair, out=out, counts=[n]), ValueError,
                 f"has {n - 1} elements")
    expect_error("not contiguous at the same place",
                 lambda: comm.all_reduce(base.view(n, 2)[:, 0], pair, out=out, counts=[n]),
                 ValueError,
                 "not contiguous")
    expect_error("another dtype than given",
                 lambda: comm.all_reduce(base[:n], pair, out=out, counts=[n],
                                         dtype=torch.float64),
                 TypeError, "dtype=torch.float64")
    # Another dtype at the same places: int32's sum of the same bits, by hand.
    base[:n].copy_(x)
    comm.all_reduce(base[:n].view(torch.int32), pair, out=out.view(torch.int32))
    if not torch.equal(out.view(torch.int32), x.view(torch.int32) + other.view(torch.int32)):
        wrong.append("the same places as int32: not int32's sum")
    # Another op: the average.
    comm.all_reduce(x, pair, out=out, op="avg")
    if not torch.equal(out, (x + other) / 2):
        wrong.append("op avg after sum: not the average")
    # The same lists and tensor objects as the last call's, changed in place since: a repeated
    # call compares its arguments with the last call's as they were, not as they are now.
    counts = [n]
    for _ in range(2):
        comm.all_reduce(x, pair, out=out, counts=counts)
    counts[0] = n - 1
    expect_error("the same counts list, changed", lambda: comm.all_reduce(x, pair, out=out,
                                                                          counts=counts),
                 ValueError, f"this call expects {n - 1}")
    groups = [[0, 1]]
    gathered = torch.empty(2 * n)
    for _ in range(2):
        comm.all_gather(x, gathered, groups)
    groups[0].reverse()  # active rank 0 is now rank 1: its input comes first
    comm.all_gather(x, gathered, groups)
    want = torch.cat([x, other] if rank == 1 else [other, x])
    if not torch.equal(gathered, want):
        wrong.append("the same groups list, reversed: not the new order's all-gather")
    resized = torch.empty(n)
    for _ in range(2):
        comm.all_reduce(resized.copy_(x), pair, counts=[n])
    resized.resize_(n - 1)
    expect_error("the same tensor, resized", lambda: comm.all_reduce(resized, pair, counts=[n]),
                 ValueError, f"has {n - 1} elements")
    return wrong


REFERENCE_OP = ('noop_(Tensor(a!) tensor, int comm, int[] ranks, int[] sizes, int[] counts, '
                'str op, str options="") -> ()')


def _reference_op():
    """An op of relay::all_reduce_'s schema that does nothing, registered as relay's ops are (a
    CPU kernel in Python; below autograd on torch 1.13): what torch's dispatch alone costs."""
    from relay.torch.ops import _below_autograd

    lib = torch.library.Library("relay_calls_test", "DEF")
    lib.define(REFERENCE_OP)
    lib.impl("noop_", lambda *args: None, "CPU")
    op = torch.ops.relay_calls_test.noop_
    if not hasattr(torch._C, "_set_autograd_fallback_mode"):
        lib.impl("noop_", _below_autograd(op), "Autograd")
    _reference_op.library = lib  # registered for as long as the process runs
    return op


def _counts_an_allocation(counter):
    """Whether the counter sees a malloc in its windows (it does where it is preloaded): without
    it, a count of 0 would say nothing."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    counter.relay_test_total_begin()
    counter.relay_test_count_begin()
    p = libc.malloc(64)
    n = counter.relay_test_count_end()
    whole = counter.relay_test_total_end()
    libc.free(p)
    return n == 1 and whole == 1


@pytest.fixture
def preloaded(monkeypatch):
    """The ranks start with the allocation counter preloaded (where ctest built it)."""
    if COUNTER:
        monkeypatch.setenv("LD_PRELOAD", COUNTER)


def test_a_repeated_call_makes_its_library_calls_and_allocations_within_budget(preloaded):
    results = assert_all_ok(run_world(2, _worker, timeout=240))
    bad = []
    for rank, (live, report, dispatch, changed) in results.items():
        bad += [f"rank {rank}: a changed argument: {text}" for text in changed]
        if COUNTER and not live:
            bad.append(f"rank {rank}: the allocation counter is not preloaded")
        assert set(report) == set(BUDGET) == set(FUNCTIONS)
        budget = {k: dispatch if v == "dispatch" else v for k, v in BUDGET.items()}
        for what, (right, first, again, entries, whole, functions) in report.items():
            if not right:
                bad.append(f"rank {rank}: {what}: a wrong output")
            if [name for name, _ in again] != entries:
                bad.append(f"rank {rank}: {what}: a repeated call made {again}, not {entries}")
            if COUNTER and any(n != 0 for _, n in again):
                bad.append(f"rank {rank}: {what}: a repeated call's library calls allocated: "
                           f"{again}")
            if COUNTER and whole > budget[what]:
                bad.append(f"rank {rank}: {what}: a repeated call allocated {whole} times, over "
                           f"its budget of {budget[what]}")
            if functions > FUNCTIONS[what]:
                bad.append(f"rank {rank}: {what}: a repeated call called {functions} functions, "
                           f"over its budget of {FUNCTIONS[what]}")
            collective = next(e for e in entries if e.startswith("run_call"))
            if first.count(collective) != 1 or first.count("rank_layout_of") > 1:
                bad.append(f"rank {rank}: {what}: a first call made {first}")
    assert not bad, "\n".join(bad)

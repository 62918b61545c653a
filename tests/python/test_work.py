"""relay.torch.work's bookkeeping of async calls on a stream transport, against a stand-in
communicator and library (CI has no GPU; tests/python/test_gpu.py runs the real thing): which
library entries a call, a wait and a join make, and which calls' tensors the communicator still
holds after each (a call's tensors go back once the current stream is ordered after it, or it is
known finished, and not before)."""

import pytest
import torch

from relay.torch.work import Streams, Work


class _Library:
    """The C ABI entries Streams and Work call, recorded; relay_run_call_async numbers calls
    from 1 and reports `retired` as told."""

    def __init__(self):
        self.calls = []
        self.made = 0
        self.retired = 0
        self.finished = set()
        self.join_status = 0  # what comm_join_call returns

    def run_call_async(self, handle, ref, stream, op_stream, made_ref):
        self.made += 1
        self.calls.append(("run_call_async", stream, op_stream))
        made_ref._obj.call, made_ref._obj.retired = self.made, self.retired
        return 0

    def comm_mark(self, handle, stream, op_stream, made_ref):
        self.made += 1
        self.calls.append(("comm_mark", stream, op_stream))
        made_ref._obj.call, made_ref._obj.retired = self.made, self.retired
        return 0

    def comm_order_after(self, handle, number, stream):
        self.calls.append(("comm_order_after", number, stream))
        return 0

    def comm_join_call(self, handle, number, stream):
        self.calls.append(("comm_join_call", number, stream))
        return self.join_status

    def comm_call_finished(self, handle, number, finished):
        finished._obj.value = int(number in self.finished)
        return 0

    def comm_wait_call(self, handle, number):
        self.calls.append(("comm_wait_call", number))
        return 0

    def comm_async_status(self, handle):
        self.calls.append(("comm_async_status",))
        return 0

    def check(self, status):
        assert status == 0

    def error(self, status):
        return RuntimeError(f"relay status {status}")


class _Comm:
    """A communicator on a stream transport: its current stream's handle is 7, its operation
    stream's 9."""

    def __init__(self):
        self._lib = _Library()
        self._handle = 1
        self._capturing = False
        self._ops = Streams()
        self._ops.stream, self._ops.handle = "operation stream", 9
        self.device = torch.device("cpu")

    def _h(self):
        return self._handle

    def _stream(self):
        return 7

    def async_status(self):
        self._lib.comm_async_status(self._handle)


class _Prepared:
    """A call's prepared arguments: the stand-in library never reads them."""

    ref = "the call's relay_call"


def _call(comm, tensors):
    return comm._ops.run(comm, _Prepared, "out", tensors, None)


def _held(comm):
    return [number for number, _ in comm._ops.held]


def test_an_async_calls_tensors_are_held_until_the_current_stream_is_after_it():
    comm = _Comm()
    lib = comm._lib
    xs = [torch.full((4,), float(i)) for i in range(3)]
    works = [_call(comm, (x, None)) for x in xs]
    assert [w._number for w in works] == [1, 2, 3] and works[0].stream == "operation stream"
    assert lib.calls == [("run_call_async", 7, 9)] * 3
    assert _held(comm) == [1, 2, 3] and comm._ops.pending == 3
    assert comm._ops.held[1][1][0] is xs[1]
    lib.calls.clear()
    assert works[1].wait() is True
    assert lib.calls == [("comm_join_call", 2, 7)]  # ordered, then asked what failed: one crossing
    assert _held(comm) == [3]  # calls 1 and 2 ran before 2 on the operation stream
    # A work of a call made on the current stream is a mark there: waiting for it says nothing
    # of the operation stream.
    done = Work.done(comm, "out")
    assert lib.calls[-1] == ("comm_mark", 7, 7) and done.stream is None and done._number == 4
    done.wait()
    lib.finished.add(4)
    assert done.is_completed()
    assert _held(comm) == [3]
    # Calls the library reports retired (finished) go back at the next call.
    lib.retired = 4
    work5 = _call(comm, (xs[0], None))
    assert _held(comm) == [5] and comm._ops.pending == 5
    assert not work5.is_completed() and _held(comm) == [5]
    lib.finished.add(5)
    assert work5.is_completed() and _held(comm) == []


def test_a_wait_whose_join_fails_raises_and_keeps_the_tensors():
    # The status may be the ordering's failure: the current stream may not be after the call, so
    # its tensors stay held until a later wait, call or synchronize orders it.
    comm = _Comm()
    works = [_call(comm, (torch.zeros(2), None)) for _ in range(2)]
    comm._lib.join_status = 5
    with pytest.raises(RuntimeError, match="relay status 5"):
        works[0].wait()
    assert _held(comm) == [1, 2]
    comm._lib.join_status = 0
    assert works[1].wait() is True and _held(comm) == []


def test_a_later_call_without_async_op_joins_the_pending_one():
    comm = _Comm()
    _call(comm, (torch.zeros(2), None))
    _call(comm, (torch.zeros(2), None))
    comm._lib.calls.clear()
    comm._ops.join(comm)
    assert comm._lib.calls == [("comm_order_after", 2, 7)]
    assert _held(comm) == [] and comm._ops.pending == 0
    comm._ops.join(comm)  # nothing pending: no call
    assert comm._lib.calls == [("comm_order_after", 2, 7)]


def test_wait_blocking_lets_go_of_the_calls_up_to_its_own():
    comm = _Comm()
    works = [_call(comm, (torch.zeros(2), None)) for _ in range(3)]
    works[1].wait_blocking()
    assert ("comm_wait_call", 2) in comm._lib.calls and _held(comm) == [3]


def test_a_captured_call_is_held_but_not_pending():
    comm = _Comm()
    comm._capturing = True
    work = _call(comm, (torch.zeros(2), None))
    assert _held(comm) == [1] and comm._ops.pending == 0
    work.wait()
    assert _held(comm) == []


def test_steps_run_on_the_operation_stream_between_two_marks():
    comm = _Comm()
    _call(comm, (torch.zeros(2), None))
    seen = {}

    def run():
        seen["pending inside"] = comm._ops.pending
        return "result"

    work = comm._ops.run_steps(comm, run, ([torch.zeros(2)], None))
    assert comm._lib.calls[-2:] == [("comm_mark", 7, 9), ("comm_mark", 9, 9)]
    assert seen["pending inside"] == 0  # the operation stream needs no join of its own calls
    assert work.result == "result" and work._number == 3 and comm._ops.pending == 3
    assert _held(comm) == [1, 3]


def test_a_marked_call_runs_on_the_current_stream_in_one_crossing():
    comm = _Comm()
    _call(comm, (torch.zeros(2), None))
    comm._lib.calls.clear()
    work = comm._ops.run_marked(comm, _Prepared, "out", None)
    # The call and its mark in one: the current stream is both its streams.
    assert comm._lib.calls == [("run_call_async", 7, 7)]
    assert work.result == "out" and work.stream is None and work._number == 2
    assert _held(comm) == [1] and comm._ops.pending == 1  # its tensors are the caller's still
    work.wait()  # orders the current stream after the mark; the operation stream's call stays
    assert comm._lib.calls[1:] == [("comm_join_call", 2, 7)]
    assert _held(comm) == [1]


def test_a_call_numbered_finished_orders_no_stream_after_it():
    # The shm transport's calls have finished when they return: the library numbers them
    # retired at once, and their work's wait only asks what failed.
    comm = _Comm()
    lib = comm._lib
    lib.retired = 1
    work = _call(comm, (torch.zeros(2), None))
    assert _held(comm) == [] and comm._ops.pending == 0
    lib.retired = 2
    marked = comm._ops.run_marked(comm, _Prepared, "out", None)
    lib.calls.clear()
    assert work.wait() is True and marked.wait() is True
    assert lib.calls == [("comm_async_status",), ("comm_async_status",)]
    assert work.is_completed() and marked.is_completed()

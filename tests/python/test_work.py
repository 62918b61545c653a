"""relay.torch.work's bookkeeping of async calls on a stream transport, against a stand-in
communicator and library (CI has no GPU; tests/python/test_gpu.py runs the real thing): which
library entries a call, a wait and a join make, and which calls' tensors the communicator still
holds after each (a call's tensors go back once the current stream is ordered after it, or it is
known finished, and not before)."""

import ctypes
from ctypes import CFUNCTYPE, POINTER, byref, c_int, c_int32, c_uint64, c_void_p

import pytest
import torch

from relay import _capi
from relay.torch.work import Streams, Work


def _value(arg, kind):
    """The value of a ctypes object of `kind` passed to a preconverted entry; a bare int (which
    ctypes would pass as a 32-bit C int, cutting a 64-bit pointer) fails the test."""
    assert type(arg) is kind, f"a preconverted entry was given {arg!r}, not a {kind.__name__}"
    return arg.value


class _Preconverted:
    """The library's preconverted entries (relay._capi.Preconverted) over _Library's: each
    argument checked to be a ctypes object, its value passed on."""

    def __init__(self, lib):
        self._lib = lib

    def run_call_async(self, handle, ref, stream, op_stream, made_ref):
        return self._lib.run_call_async(_value(handle, c_void_p), ref, _value(stream, c_void_p),
                                        _value(op_stream, c_void_p), made_ref)

    def comm_mark(self, handle, stream, op_stream, made_ref):
        return self._lib.comm_mark(_value(handle, c_void_p), _value(stream, c_void_p),
                                   _value(op_stream, c_void_p), made_ref)

    def comm_order_after(self, handle, number, stream):
        return self._lib.comm_order_after(_value(handle, c_void_p), _value(number, c_uint64),
                                          _value(stream, c_void_p))

    def comm_join_call(self, handle, number, stream):
        return self._lib.comm_join_call(_value(handle, c_void_p), _value(number, c_uint64),
                                        _value(stream, c_void_p))

    def comm_call_finished(self, handle, number, finished):
        return self._lib.comm_call_finished(_value(handle, c_void_p), _value(number, c_uint64),
                                            finished)

    def comm_async_status(self, handle):
        return self._lib.comm_async_status(_value(handle, c_void_p))


class _Library:
    """The C ABI entries Streams and Work call, recorded (the preconverted ones through
    _Preconverted, which checks their arguments); relay_run_call_async numbers calls from 1 and
    reports `retired` as told."""

    def __init__(self):
        self.calls = []
        self.made = 0
        self.retired = 0
        self.finished = set()
        self.join_status = 0  # what comm_join_call returns
        self.preconverted = _Preconverted(self)

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

    def __init__(self, lib=None, handle=1, stream=7, op_stream=9):
        self._lib = lib or _Library()
        self._handle = c_void_p(handle)
        self._capturing = False
        self._ops = Streams()
        self._ops.use_stream("operation stream", op_stream)
        self._stream = lambda: stream
        self._stream_ptr = c_void_p()
        self.device = torch.device("cpu")

    def _h(self):
        return self._handle

    def _stream_pointer(self):
        self._stream_ptr = c_void_p(self._stream())
        return self._stream_ptr

    def async_status(self):
        self._lib.comm_async_status(self._handle)


class _Prepared:
    """A call's prepared arguments: the stand-in library never reads them."""

    ref = byref(_capi.Call())


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


# The preconverted entries with 64-bit values above 2^32 in every pointer and number they take.
_HANDLE, _STREAM, _OP_STREAM = 0x7F00_0000_1230, 0x7F00_1234_5678, 0x7F00_8765_4320
_FIRST_NUMBER = (1 << 33) + 1


def test_the_preconverted_entries_take_64_bit_pointers_and_numbers_whole():
    """Streams and Work through relay._capi.Preconverted itself, over C functions (ctypes
    callbacks that record what reaches them, typed as relay.h declares the entries): a pointer or
    number passed as a bare Python int would arrive cut to 32 bits."""
    seen = []
    numbered = [_FIRST_NUMBER]

    def number(made):
        made[0].call, made[0].retired = numbered[0], 0
        numbered[0] += 1
        return 0

    void_p, made_p = c_void_p, POINTER(_capi.AsyncCall)
    entries = {
        "relay_run_call": (CFUNCTYPE(c_int, void_p, void_p, void_p),
                           lambda h, call, s: seen.append(("run_call", h, s)) or 0),
        "relay_run_call_async": (
            CFUNCTYPE(c_int, void_p, void_p, void_p, void_p, made_p),
            lambda h, call, s, op, made: seen.append(("run_call_async", h, s, op)) or number(made)),
        "relay_comm_mark": (
            CFUNCTYPE(c_int, void_p, void_p, void_p, made_p),
            lambda h, s, op, made: seen.append(("comm_mark", h, s, op)) or number(made)),
        "relay_comm_order_after": (
            CFUNCTYPE(c_int, void_p, c_uint64, void_p),
            lambda h, n, s: seen.append(("comm_order_after", h, n, s)) or 0),
        "relay_comm_join_call": (
            CFUNCTYPE(c_int, void_p, c_uint64, void_p),
            lambda h, n, s: seen.append(("comm_join_call", h, n, s)) or 0),
        "relay_comm_async_status": (CFUNCTYPE(c_int, void_p),
                                    lambda h: seen.append(("comm_async_status", h)) or 0),
        "relay_comm_call_finished": (
            CFUNCTYPE(c_int, void_p, c_uint64, POINTER(c_int32)),
            lambda h, n, done: seen.append(("comm_call_finished", h, n)) or 0),
    }
    callbacks = {name: proto(fn) for name, (proto, fn) in entries.items()}
    functions = ctypes.CDLL(None)._FuncPtr  # a C function by its address, nothing declared

    class Dll:
        """A loaded library whose entries are the callbacks (as ctypes.CDLL's dll[name])."""

        def __getitem__(self, name):
            return functions(ctypes.cast(callbacks[name], c_void_p).value)

    lib = _Library()
    lib.preconverted = _capi.Preconverted(Dll())
    comm = _Comm(lib, _HANDLE, _STREAM, _OP_STREAM)
    work = _call(comm, (torch.zeros(2), None))
    assert not work.is_completed()
    work.wait()
    marked = Work.done(comm, "out")
    comm._ops.order_after(comm, marked._number, on_op_stream=False)
    n = _FIRST_NUMBER
    assert seen == [
        ("run_call_async", _HANDLE, _STREAM, _OP_STREAM),
        ("comm_call_finished", _HANDLE, n),
        ("comm_join_call", _HANDLE, n, _STREAM),
        ("comm_mark", _HANDLE, _STREAM, _STREAM),
        ("comm_order_after", _HANDLE, n + 1, _STREAM),
    ]


def test_a_works_wire_is_its_own_calls_when_read_after_later_calls():
    """Options report the wire of their last call; a work keeps its own call's report, read into a
    Wire only when asked."""
    from relay.torch import Options

    comm = _Comm()
    names = {0: "native", 1: "fp8_e4m3"}
    comm._lib.name_of = lambda vocabulary, value: names[value]
    options = Options(wire="fp8")
    works = []
    for taken, size in ((1, 1 << 20), (0, 64)):  # the library's report of each call
        report = options._report
        report.requested, report.taken, report.bytes, report.threshold_bytes = 1, taken, size, 4096
        works.append(comm._ops.run(comm, _Prepared, "out", (torch.zeros(2), None), options))
    first, second = works
    assert second.wire.taken == "native" and second.wire.bytes == 64
    assert first.wire.taken == "fp8_e4m3" and first.low_precision and not second.low_precision
    assert first.wire is first.wire  # read once
    assert str(second.wire) == ("wire: native (fp8_e4m3 asked; below the threshold of 4096 bytes "
                                "at 64)")


def test_the_default_streams_pointer_is_made_once_for_repeated_calls():
    # The default stream's handle is 0, whose c_void_p reads None: a repeated call compares its
    # stream with the kept pointer's and must find them the same, not make a pointer per call.
    comm = _Comm(stream=0)
    work = _call(comm, (torch.ones(4), None))
    kept = comm._stream_ptr
    assert kept.value is None
    work.wait()
    _call(comm, (torch.ones(4), None)).wait()
    assert comm._stream_ptr is kept
    assert comm._lib.calls[0] == ("run_call_async", None, 9)  # NULL: the default stream

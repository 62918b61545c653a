"""The work of a relay call made with async_op=True, as torch.distributed's and torchcomms' work
objects are: wait(), wait_blocking() and is_completed(), and what the call chose (its wire).

    work = comm.all_reduce(grad, groups, op="avg", async_op=True)
    ...                                    # other work on the current stream overlaps the call
    work.wait()                            # the current stream now waits for it
    work.wait_blocking()                   # or: this thread waits until it is done

Where a call runs, and what it costs on the host: one crossing into the library per call
(relay_run_call_async), and one per wait: relay_comm_join_call (the current stream ordered after
the call, then what failed) where the call may not have finished yet (not on the CPU), else
relay_comm_async_status:
  - CUDA, async_op=True: on the communicator's operation stream (one per communicator, made at
    its first async call), which first waits for the current stream's earlier work; wait() makes
    the current stream wait for the call and does not block the host. The library orders the
    streams with events it keeps (include/relay/c/relay.h, "Asynchronous calls"). The call's
    tensors are held by the communicator until the current stream is ordered after the call
    (its wait(), or a later call made without async_op) or the call is known to have finished
    (is_completed(), wait_blocking(), or RELAY_ASYNC_DEPTH later async calls): memory the
    caching allocator gives back is then reused by the current stream's later work only, after
    the call (torch's rule for a tensor used on another stream than its own still applies: its
    record_stream is the caller's).
  - CUDA, async_op=False: on the current stream, as before, after any async call of the same
    communicator not yet waited for: one communicator's calls never overlap each other (its
    transport's areas are shared by its calls), as NCCL orders one communicator's operations.
  - In graph capture (Communicator.capture) both work as above within the capture; an async
    call's wait() must come before the capture ends (CUDA's rule: every stream joins).
  - CPU (shm): the call completes before it returns; the work is complete at once.
Communicators are independent: calls of several over the same ranks may be in flight together,
each on its own operation stream (every rank issuing them in the same order).

When a failed call is raised (docs/python.md, "When a failure is known"): a rank's own refusal
raises at its call. Where the transport judges a call on the host (the CPU's shm), every other
rank's call raises too. Where the device judges it (CUDA's ipc), every other rank's call returns
its work, and the failure (relay.PeerError naming the refusing rank and the call, or
relay.MismatchError) is raised once, by the first wait that finds it: wait() where the device
judged the call by then (it does not block), wait_blocking() always (it waits for the call
first), as Communicator.synchronize() and async_status() do. A work's waits raise what its
communicator learned of any call before, not only of its own: failures are the communicator's.
"""

import collections
from ctypes import byref, c_int32, c_uint64, c_void_p

import torch

from .. import _capi
from ..errors import OK

_NEVER = (1 << 64) - 1  # UINT64_MAX: the model says fp8 never pays


class Wire(collections.namedtuple("Wire", "requested taken bytes threshold_bytes")):
    """The wire a call took and why, as the library decided it on every rank alike (the C ABI's
    relay_wire_report): requested and taken are relay's wire names ("native", "fp8_e4m3",
    "fp8_e4m3_fnuz"; "fp8" made the machine's encoding), bytes what the threshold was compared
    with (the largest group count times the element size), threshold_bytes the threshold (0
    where native was asked)."""

    __slots__ = ()

    @classmethod
    def of(cls, lib, report):
        return cls(lib.name_of("wire", report.requested), lib.name_of("wire", report.taken),
                   int(report.bytes), int(report.threshold_bytes))

    @property
    def fp8(self):
        """Whether the call's data crossed links as fp8."""
        return self.taken != "native"

    def __str__(self):
        text = f"wire: {self.taken}"
        if self.taken != self.requested:
            if self.threshold_bytes == _NEVER:
                why = "the model says it never pays for this call"
            else:
                why = f"below the threshold of {self.threshold_bytes} bytes at {self.bytes}"
            text += f" ({self.requested} asked; {why})"
        return text


class Work:
    """One call's work. `result` is what the call returns without async_op (the output, None on
    a helper); `wire` the wire it took (a Wire, where the call had options; else None);
    `stream` the operation stream an async call ran on (None on the CPU, and for a call made
    without async_op: it ran on the current stream). Its waits ask the library about the call
    by its number (relay_async_call); a call the library reported finished when it was made
    (the shm transport's, whose calls are done when they return) needs no stream ordered after
    it.

    `wire` given to it is a Wire, None, or (the call's Options, a copy of their wire report's
    bytes): read into a Wire when `wire` is first read, so that a call whose wire nobody reads
    makes none."""

    __slots__ = ("result", "stream", "_number", "_comm", "_finished", "_wire")

    def __init__(self, result, wire, stream, number, comm, finished=False):
        self.result = result
        self._wire = wire
        self.stream = stream
        self._number = number
        self._comm = comm
        self._finished = finished

    @property
    def wire(self):
        """The wire the call took (a Wire), None where it had no options."""
        wire = self._wire
        if wire is not None and type(wire) is not Wire:
            options, report = wire
            wire = self._wire = options.wire_from(self._comm._lib, report)
        return wire

    @classmethod
    def done(cls, comm, result, wire=None):
        """The work of a call made without async_op, for APIs that return one anyway: its number
        marks the call's end on the current stream (relay_comm_mark)."""
        return comm._ops.mark_done(comm, result, wire)

    def wait(self, timeout=None):
        """Orders the current stream after the call (CUDA; the host does not block), then raises
        what the communicator learned of failed calls so far (async_status), if anything: a
        call another rank refused, or that ranks called differently, once. Returns True, as
        torch.distributed's Work.wait does. `timeout` is accepted for that signature: relay's own
        timeout bounds every wait of the call."""
        comm = self._comm
        handle = comm._handle
        if not handle:
            comm._h()  # raises: the communicator is closed
        lib = comm._lib
        if self._finished:
            status = lib.preconverted.comm_async_status(handle)
        else:
            # One crossing (relay_comm_join_call): the current stream ordered after the call, then
            # the communicator's async status. Its stream as Communicator._stream_pointer reads it,
            # written out here: a repeated call's wait calls no function of its own but the entry.
            stream = comm._stream()
            pointer = comm._stream_ptr
            if pointer.value != (stream or None):  # the default stream, 0, reads None
                pointer = comm._stream_ptr = c_void_p(stream)
            number = self._number
            status = lib.preconverted.comm_join_call(handle, c_uint64(number), pointer)
            # The tensors go back only where the stream was ordered (the status is ok: a failure
            # may be the ordering's), and only those of calls on the operation stream (not a mark
            # of a call on the current stream).
            held = comm._ops.held
            if status == OK and held and self.stream is not None:
                if held[-1][0] <= number:
                    del held[:]
                else:
                    comm._ops.release(number)
        if status != OK:
            raise lib.error(status)
        return True

    def wait_blocking(self):
        """Blocks this thread until the call has finished on its stream (torchcomms'
        TorchWork.wait_blocking; wait() only orders the current stream after it), then raises
        what the communicator learned of failed calls, if anything: a call of this work's that
        another rank refused or that ranks called differently always raises here (or at an
        earlier wait that found it). is_completed() is True after it returns; calling it again
        returns at once. Returns None. Its wait is the call's own, which relay's timeout bounds
        (a peer that dies or stalls fails the call); work queued on the stream before the call
        is waited for too. On the CPU the call is done when it returns: nothing to wait for."""
        comm = self._comm
        comm._lib.check(comm._lib.comm_wait_call(comm._h(), self._number))
        if self.stream is not None:
            comm._ops.release(self._number)
        comm.async_status()

    def is_completed(self):
        """Whether the call has finished on its stream (always, on the CPU)."""
        if self._finished:
            return True
        comm = self._comm
        finished = c_int32()
        comm._lib.check(comm._lib.preconverted.comm_call_finished(
            comm._h(), c_uint64(self._number), byref(finished)))
        if finished.value and self.stream is not None:
            comm._ops.release(self._number)
        return bool(finished.value)

    @property
    def low_precision(self):
        """Whether the call ran on relay's fp8 wire."""
        wire = self.wire
        return wire is not None and wire.fp8

    def __repr__(self):
        state = "completed" if self.is_completed() else "in flight"
        return f"<relay Work {state}, {self.wire or 'wire: native'}>"


class Streams:
    """A communicator's async calls: its operation stream (made at its first async call on
    CUDA; None on the CPU), that stream's handle, as an int and as the preconverted entries take
    it (`handle_ptr`, a c_void_p; NULL on the CPU), the last async call not yet ordered before
    the current stream (`pending`, its number; 0: none), and the tensors of the async calls not
    yet known to be over (`held`: (number, tensors), oldest first).

    The library's entries a repeated call makes are its preconverted ones (relay._capi): each
    argument a ctypes object, the stream's pointer as Communicator._stream_pointer reads it."""

    __slots__ = ("stream", "handle", "handle_ptr", "pending", "held", "_made", "_made_ref",
                 "_started")

    def __init__(self):
        self.stream = self.handle = None
        self.handle_ptr = c_void_p()
        self._started = False  # whether _op_stream ran (the handle is known, None on the CPU)
        self.pending = 0
        self.held = []
        self._made = _capi.AsyncCall()
        self._made_ref = byref(self._made)

    def use_stream(self, stream, handle):
        """Runs the async calls on `stream` (a torch.cuda.Stream), whose handle (cudaStream_t) is
        the int `handle`."""
        self.stream, self.handle, self.handle_ptr = stream, handle, c_void_p(handle)
        self._started = True

    def _op_stream(self, comm):
        """The operation stream's handle (made at the first async call on CUDA; None on the
        CPU)."""
        if self.handle is None and comm.device.type == "cuda":
            stream = torch.cuda.Stream(comm.device)
            self.use_stream(stream, stream.cuda_stream)
        self._started = True
        return self.handle

    def run(self, comm, prepared, result, tensors, options):
        """One async call of `comm` (its _Prepared arguments, made with `options`) on the
        operation stream; its Work."""
        if not self._started:
            self._op_stream(comm)
        stream = comm._stream()  # its pointer as Communicator._stream_pointer reads it
        pointer = comm._stream_ptr
        if pointer.value != (stream or None):  # the default stream, 0, reads None
            pointer = comm._stream_ptr = c_void_p(stream)
        status = comm._lib.preconverted.run_call_async(comm._handle, prepared.ref, pointer,
                                                       self.handle_ptr, self._made_ref)
        if status != OK:
            raise comm._failed(status)
        wire = None if options is None else (options, bytes(options._report))  # see Work
        made = self._made
        number = made.call
        if self.held or number <= made.retired:  # tensors to let go of, or a finished call
            return self._made_one(comm, result, tensors, wire)
        # A call in flight with nothing held before it (a repeated call waited for each time):
        # _made_one's last steps.
        self.held.append((number, tensors))
        if not comm._capturing:
            self.pending = number
        return Work(result, wire, self.stream, number, comm)

    def run_marked(self, comm, prepared, result, options):
        """One call of `comm` (its _Prepared arguments, made with `options`) on the current
        stream, numbered where it ends there by the same crossing (relay_run_call_async with
        the current stream as its operation stream: a call and relay_comm_mark in one); its
        Work, as mark_done's."""
        stream = comm._stream()  # its pointer as Communicator._stream_pointer reads it
        pointer = comm._stream_ptr
        if pointer.value != (stream or None):  # the default stream, 0, reads None
            pointer = comm._stream_ptr = c_void_p(stream)
        status = comm._lib.preconverted.run_call_async(comm._handle, prepared.ref, pointer,
                                                       pointer, self._made_ref)
        if status != OK:
            raise comm._failed(status)
        made = self._made
        number = made.call
        return Work(result, None if options is None else (options, bytes(options._report)),
                    None, number, comm, number <= made.retired)

    def run_steps(self, comm, run, tensors):
        """run() (calls of `comm` with torch's work around them, on the current stream) as one
        async call: on the operation stream, after the current stream's work so far, marked
        where it ends (relay_comm_mark, before and after); its Work."""
        self._op_stream(comm)
        mark = comm._lib.preconverted.comm_mark
        comm._lib.check(mark(comm._h(), comm._stream_pointer(), self.handle_ptr, self._made_ref))
        # Inside, the current stream is the operation stream, where nothing needs joining; the
        # pending call is the caller's stream's to join still.
        pending, self.pending = self.pending, 0
        try:
            if self.stream is not None:
                with torch.cuda.stream(self.stream):
                    result = run()
            else:
                result = run()
        finally:
            self.pending = pending
        comm._lib.check(mark(comm._h(), self.handle_ptr, self.handle_ptr, self._made_ref))
        return self._made_one(comm, result, tensors, None)

    def _made_one(self, comm, result, tensors, wire):
        """The Work of the async call the library just numbered (self._made); its tensors held
        until it is over."""
        made = self._made
        number, retired = made.call, made.retired
        held = self.held
        if held and held[0][0] <= retired:
            self.release(retired)
        if number <= retired:
            return Work(result, wire, self.stream, number, comm, True)
        held.append((number, tensors))
        if not comm._capturing:  # a captured call is joined inside its capture (its wait)
            self.pending = number
        return Work(result, wire, self.stream, number, comm)

    def mark_done(self, comm, result, wire):
        """The Work of a call just made on the current stream: its number marks the call's end
        there."""
        pointer = comm._stream_pointer()
        comm._lib.check(comm._lib.preconverted.comm_mark(comm._h(), pointer, pointer,
                                                         self._made_ref))
        made = self._made
        return Work(result, wire, None, made.call, comm, made.call <= made.retired)

    def order_after(self, comm, number, on_op_stream=True):
        """Orders the current stream after async call `number`. Where that call ran on the
        operation stream (not a mark of a call on the current stream), the current stream is
        then after every earlier call there too, and their tensors go back to their owners."""
        comm._lib.check(comm._lib.preconverted.comm_order_after(
            comm._h(), c_uint64(number), comm._stream_pointer()))
        if on_op_stream and self.held:
            self.release(number)

    def release(self, number):
        """Lets go of the tensors of the async calls up to `number` (the current stream is
        ordered after them, or they finished)."""
        held = self.held
        n = 0
        while n < len(held) and held[n][0] <= number:
            n += 1
        del held[:n]

    def join(self, comm):
        """Orders the current stream after the pending async call (not while capturing: a
        captured call is joined inside its capture, by its work's wait)."""
        if self.pending and not comm._capturing:
            self.order_after(comm, self.pending)
            self.pending = 0


def launch(comm, run, tensors, async_op):
    """Runs run() (calls of `comm` on the current stream, with torch's work around them) as the
    module docstring says; returns its result, or with async_op a Work."""
    if async_op:
        return comm._ops.run_steps(comm, run, tensors)
    if comm._ops.pending:
        comm._ops.join(comm)
    return run()

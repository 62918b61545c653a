"""The work of a relay call made with async_op=True, as torch.distributed's and torchcomms' work
objects are: wait(), wait_blocking() and is_completed(), and what the call chose (its wire).

    work = comm.all_reduce(grad, groups, op="avg", async_op=True)
    ...                                    # other work on the current stream overlaps the call
    work.wait()                            # the current stream now waits for it
    work.wait_blocking()                   # or: this thread waits until it is done

Where a call runs:
  - CUDA, async_op=True: on the communicator's operation stream (one per communicator, made at
    its first async call), which first waits for the current stream's earlier work; wait() makes
    the current stream wait for the call and does not block the host. The call's tensors are
    recorded on that stream, so the caching allocator does not reuse their memory before it ends.
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

import torch

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
    `stream` the CUDA stream it ran on (None on the CPU)."""

    __slots__ = ("result", "wire", "stream", "_event", "_comm")

    def __init__(self, result, wire=None, stream=None, event=None, comm=None):
        self.result = result
        self.wire = wire
        self.stream = stream
        self._event = event
        self._comm = comm

    @classmethod
    def done(cls, comm, result, wire=None):
        """The work of a call made without async_op, for APIs that return one anyway: on CUDA
        its event marks the call's end on the current stream (is_completed asks the device)."""
        if comm.device.type != "cuda":
            return cls(result, wire, comm=comm)
        stream = torch.cuda.current_stream(comm.device)
        event = torch.cuda.Event()
        event.record(stream)
        return cls(result, wire, stream, event, comm)

    def wait(self, timeout=None):
        """Orders the current stream after the call (CUDA; the host does not block), then raises
        what the communicator learned of failed calls so far (async_status), if anything: a
        call another rank refused, or that ranks called differently, once. Returns True, as
        torch.distributed's Work.wait does. `timeout` is accepted for that signature: relay's own
        timeout bounds every wait of the call."""
        if self._event is not None:
            torch.cuda.current_stream(self.stream.device).wait_event(self._event)
        if self._comm is not None:
            self._comm.async_status()
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
        if self._event is not None:
            self._event.synchronize()
        if self._comm is not None:
            self._comm.async_status()

    def is_completed(self):
        """Whether the call has finished on its stream (always, on the CPU)."""
        return self._event is None or self._event.query()

    @property
    def low_precision(self):
        """Whether the call ran on relay's fp8 wire."""
        return self.wire is not None and self.wire.fp8

    def __repr__(self):
        state = "completed" if self.is_completed() else "in flight"
        return f"<relay Work {state}, {self.wire or 'wire: native'}>"


class Streams:
    """A communicator's operation stream (made at its first async call on CUDA) and its last
    async call not yet ordered before the current stream (its event)."""

    __slots__ = ("stream", "pending")

    def __init__(self):
        self.stream, self.pending = None, None

    def join(self, comm):
        """Orders the current stream after the pending async call (not while capturing: a
        captured call is joined inside its capture, by its work's wait)."""
        if self.pending is not None and not comm._capturing:
            torch.cuda.current_stream(comm.device).wait_event(self.pending)
            self.pending = None


def launch(comm, run, tensors, async_op, options=None):
    """Runs run() (one call of `comm`, which enqueues on the current stream) as the module
    docstring says; returns its result, or with async_op a Work."""
    if async_op:
        return launch_async(comm, run, tensors, options)
    if comm.device.type == "cuda":
        comm._ops.join(comm)
    return run()


def launch_async(comm, run, tensors, options=None):
    """run() as an async call of `comm`: its Work (on the CPU, done, and carrying `comm`, so
    that its waits raise what the communicator learns of failed calls)."""
    if comm.device.type != "cuda":
        result = run()
        return Work(result, _wire(comm, options), comm=comm)
    ops = comm._ops
    current = torch.cuda.current_stream(comm.device)
    if ops.stream is None:
        ops.stream = torch.cuda.Stream(comm.device)
    stream = ops.stream
    stream.wait_stream(current)
    with torch.cuda.stream(stream):
        result = run()
    event = torch.cuda.Event()
    event.record(stream)
    for t in _tensors(tensors):
        if t.is_cuda:
            t.record_stream(stream)
    if not comm._capturing:  # a captured call is joined inside its capture (its work's wait)
        ops.pending = event
    return Work(result, _wire(comm, options), stream, event, comm)


def _wire(comm, options):
    return options.wire_of(comm._lib) if options is not None else None


def _tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _tensors(v)
        elif isinstance(v, dict):
            yield from _tensors(list(v.values()))

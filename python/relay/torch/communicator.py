"""relay.torch.Communicator: relay's rank-local collectives on torch tensors, over the C ABI.

    import torch.distributed as dist, relay.torch
    dist.init_process_group("gloo")             # or torchrun's environment, any backend
    comm = relay.torch.Communicator()           # every rank of the world, one node
    comm.all_reduce(grad, [[0, 1], [2, 3], [4, 5], [6, 7]])   # fused: 4 groups at once

Every rank of the communicator makes every call with the same groups (and counts, dtype, op).
A rank active in no group helps: it passes None (or tensors, which are not touched).

Checks that one rank makes alone (dtype, device, contiguity, the tensors' sizes against the
groups' counts, all-to-all in place) raise TypeError or ValueError naming the tensor and what was
expected; before raising, the rank refuses the call through the library, so that its peers fail
at once with relay.PeerError naming it instead of waiting out the timeout. Failures the library
finds raise relay.RelayError subclasses with relay's message and the peer it names (.peer).
The sizes come from the library (relay.layout): nothing here re-derives relay's rules. A call
shape's layout is asked for once and kept. A call whose arguments are those of an earlier call
that passed this rank's checks (the same tensors' places, sizes, dtypes, devices and
contiguity, the same groups, counts, op, options and dtype: the key of
Communicator._call) reuses that call's prepared arguments (a relay_call): its checks'
inputs are the same, so are their results, and the call is one crossing into the library
(relay_run_call), which checks it again as every call does.

When a rank learns that a call failed (docs/python.md, "When a failure is known"): a rank's own
refusal raises at its call, always. On the CPU (the shm transport) every other rank's call raises
too. On CUDA (the ipc transport) every other rank's call returns, as the device judges the call
later: the failure, naming the call and the rank, comes once from the first of Work.wait()
(where the device has judged it by then), Work.wait_blocking(), synchronize() or async_status()
afterwards.
"""

import contextlib
import functools
import itertools
import math
import threading
import weakref
from ctypes import byref, c_char_p, c_int32, c_int64, c_uint64, c_void_p, pointer

import torch
import torch.distributed as dist

from .. import _capi
from .._layout import Groups, count_of, layout
from ..errors import (
    OK,
    InvalidArgumentError,
    InvalidBufferError,
    RelayError,
    RelaySystemError,
    UnsupportedError,
)
from ._flat import FlatBuffers
from ._store import StoreBootstrap, next_prefix
from .work import Streams, Wire

_NO_COLOR = -1  # RELAY_NO_COLOR
_INT32 = (-(2**31), 2**31 - 1)
_KEPT = 256  # call shapes (and group lists, and counts from sizes) a communicator keeps
_PLANE_CALL, _PLANE_SERVE = 1, 2  # relay_plane_role

_ids = itertools.count(1)
_live = weakref.WeakValueDictionary()  # id -> Communicator, for the torch.library ops


def lookup(comm_id):
    """The live Communicator of `comm_id` (what the torch.library ops take)."""
    comm = _live.get(comm_id)
    if comm is None:
        raise RuntimeError(f"relay communicator {comm_id} is not alive (closed or never made)")
    return comm


class Options:
    """A call's options by name: mode ("groups", "fused", "single"), route ("relay", "direct",
    "legacy", "pipelined", "automatic"), wire ("native", "fp8", ...), precision ("fp32_partials",
    "native_partials"), permille, tiles, alignment, wire_threshold. The library parses them.

    Each call made with them reports the wire it took (the library's choice, alike on every
    rank): wire_of(lib) after the call, or the Work of an async call (relay.torch.work)."""

    _named = ("mode", "route", "wire", "precision")
    _numbers = ("permille", "tiles", "alignment", "wire_threshold")

    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(self._named) - set(self._numbers)
        if unknown:
            raise TypeError(f"unknown relay option(s) {sorted(unknown)}")
        self.values = kwargs
        self._structs = {}
        self._report = _capi.WireReport()
        self._wires = {}  # (library, the report's bytes) -> their Wire (a repeated call makes none)

    def struct(self, lib):
        s = self._structs.get(id(lib))
        if s is None:
            s = _capi.Options()
            lib.options_init(byref(s))
            for k, v in self.values.items():
                if k in self._named:
                    setattr(s, k, lib.value_of(k, v))
                else:
                    setattr(s, k, int(v))
            s.wire_report = pointer(self._report)
            self._structs[id(lib)] = s
        return s

    def wire_of(self, lib):
        """The wire the last call made with these options took (a relay.torch.work.Wire)."""
        return self.wire_from(lib, bytes(self._report))

    def wire_from(self, lib, report):
        """The Wire of `report`, a copy of these options' wire report as bytes (what a call's
        Work keeps of it: the next call with these options writes the report again)."""
        key = (lib, report)  # lib: hashed by identity
        wire = self._wires.get(key)
        if wire is None:
            wire = _keep(self._wires, key, Wire.of(lib, _capi.WireReport.from_buffer_copy(report)))
        return wire


def _int32(what, value, kinds="an int"):
    """`value` as a C int32, or TypeError/ValueError naming `what` (which must be `kinds`)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be {kinds}, not {type(value).__name__}")
    if not _INT32[0] <= value <= _INT32[1]:
        raise ValueError(f"{what} {value} is outside a 32-bit int")
    return value


def _milliseconds(seconds):
    """A wait for the C ABI: `seconds` in whole milliseconds (at least 1), 0 for None."""
    if seconds is None:
        return 0
    if seconds <= 0:
        raise ValueError(f"timeout must be positive seconds or None, not {seconds}")
    return max(1, int(math.ceil(seconds * 1000)))


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


# torch's current CUDA stream as a raw handle, without the Stream object torch.cuda.current_stream
# builds (most of a call's cost there): torch 1.13 and 2.x have it; older ones fall back.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _no_stream():
    return None


# How Communicator._call makes a call: on the current stream (its output returned); on the
# operation stream (async_op=True: its Work); on the current stream, numbered where it ends there
# by the same crossing (its Work: relay.torch.work.Streams.run_marked); or not at all (its
# _Prepared arguments returned, for the fused helpers' steps).
_SYNC, _ASYNC, _MARKED, _PREPARED = 0, 1, 2, 3


class _Prepared:
    """A call's prepared arguments: its relay_call (by reference, for relay_run_call and
    relay_run_call_async), what the call returns (0 None, 1 its input, 2 its output), and what
    the struct points into (kept alive with it)."""

    __slots__ = ("ref", "result", "struct", "keep")

    def __init__(self, struct, result, keep):
        self.struct, self.result, self.keep = struct, result, keep
        self.ref = byref(struct)


class _Shape:
    """What a communicator keeps of a call shape: this rank's Layout, and the counts as the C ABI
    takes them."""

    __slots__ = ("layout", "counts")

    def __init__(self, layout, counts):
        self.layout, self.counts = layout, counts


def as_given(groups, counts):
    """(groups, counts) as a call passed them, for comparing a later call's with (==) instead of
    making their key: lists copied (a caller may change its lists between calls), a Groups or
    tuples as they are; None where either is of another kind (not compared: the key finds
    them)."""
    if type(groups) is list and all(type(g) is list for g in groups):
        groups = [list(g) for g in groups]
    elif type(groups) is not Groups and not (
            type(groups) is tuple and all(type(g) is tuple for g in groups)):
        return None
    if type(counts) is list:
        counts = list(counts)
    elif counts is not None and type(counts) is not tuple:
        return None
    return groups, counts


def kept_for(last, given):
    """last[1] where the arguments `given` equal last[0] (a cache's last entry: the arguments it
    was found for, as as_given keeps them, and what was found), else None. Arguments that do not
    compare (an array of several values raises) are not those: their key finds them.
    Communicator._call writes these lines out."""
    try:
        return last[1] if last[0] == given else None
    except Exception:
        return None


def _keep(cache, key, value):
    """Puts value in `cache` (of at most _KEPT entries: the oldest goes) and returns it."""
    if len(cache) >= _KEPT:
        del cache[next(iter(cache))]
    cache[key] = value
    return value


class Communicator:
    """relay's communicator over the ranks of a torch.distributed group (default: the world),
    bootstrapped through the default group's store (a PrefixStore: no second port).

    transport: "auto" (the library's rule: ipc for CUDA tensors on one node, shm for CPU tensors
               on one node), or "shm", "ipc", "nccl" by name.
    device:    where the tensors live: "cpu", "cuda", "cuda:1", ... (default: the current CUDA
               device where CUDA is available, else the CPU).
    timeout:   seconds any rank waits for a peer (default: RELAY_TIMEOUT, else 30).
    transport_bytes: the size of each rank's shm or ipc data area (default: RELAY_SHM_BYTES or
               RELAY_IPC_BYTES, else 64 MiB); a larger call runs in pieces. On shm rank 0's
               value sizes every rank's area; on ipc each rank's own does. Pass the same
               everywhere.
    helper_devices: hosted helpers (docs/hosted-helpers.md): one device per helper rank that
               these processes run beside their own, so the communicator has the group's size
               plus len(helper_devices) ranks (the processes first; `size` says how many). Every
               process passes the same list (an error on every rank otherwise). None:
               RELAY_HELPER_DEVICES where it is set; [] no helper.
    """

    def __init__(self, group=None, *, transport="auto", device=None, timeout=None,
                 transport_bytes=0, helper_devices=None):
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError(
                "relay.torch.Communicator needs torch.distributed initialized first "
                "(torch.distributed.init_process_group)"
            )
        self.group = group if group is not None else dist.group.WORLD
        self.rank = dist.get_rank(self.group)
        self.size = dist.get_world_size(self.group)
        self._set_device(device)
        ranks = (
            dist.get_process_group_ranks(self.group)
            if hasattr(dist, "get_process_group_ranks") and group is not None
            else list(range(dist.get_world_size()))
        )
        store = dist.PrefixStore(next_prefix(ranks), dist.distributed_c10d._get_default_store())
        self._create(store, transport, timeout, transport_bytes, helper_devices)

    @classmethod
    def from_store(cls, store, rank, size, *, transport="auto", device=None, timeout=None,
                   transport_bytes=0, helper_devices=None):
        """A communicator of `size` ranks bootstrapped through `store` (a torch.distributed
        Store that every rank reaches, and that no other communicator uses under the same
        keys: give each a PrefixStore of its own), without torch.distributed's world. Every
        rank calls it; the other arguments as in Communicator()."""
        comm = cls.__new__(cls)
        comm.group = None
        comm.rank, comm.size = int(rank), int(size)
        comm._set_device(device)
        comm._create(store, transport, timeout, transport_bytes, helper_devices)
        return comm

    def _set_device(self, device):
        if device is None:
            device = (
                torch.device("cuda", torch.cuda.current_device())
                if torch.cuda.is_available()
                else torch.device("cpu")
            )
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        if self.device.type not in ("cpu", "cuda"):
            raise ValueError(f"relay moves CPU or CUDA tensors, not {self.device.type}")
        self._lib = _capi.library("device" if self.device.type == "cuda" else "host")
        self._set_stream_reader()

    def _set_stream_reader(self):
        """self._stream(): the handle of the current CUDA stream of the communicator's device
        (where calls run), None for CPU tensors; self._stream_ptr: the last one read as a
        c_void_p (_stream_pointer)."""
        self._stream_ptr = c_void_p()
        if self.device.type != "cuda":
            self._stream = _no_stream
        elif _raw_stream is not None:
            self._stream = functools.partial(_raw_stream, self.device.index)
        else:
            device = self.device
            self._stream = lambda: torch.cuda.current_stream(device).cuda_stream

    def _create(self, store, transport, timeout, transport_bytes, helper_devices):
        self._boot = StoreBootstrap(store, self.rank, self.size, self._lib)
        cfg = _capi.CommConfig()
        self._lib.comm_config_init(byref(cfg))
        cfg.rank, cfg.size = self.rank, self.size
        cfg.device = self.device.index or 0
        self._transport_name = transport.encode()
        cfg.transport = self._transport_name
        cfg.memory = _capi.MEMORY_DEVICE if self.device.type == "cuda" else _capi.MEMORY_HOST
        cfg.timeout_ms = int(timeout * 1000) if timeout else 0
        cfg.transport_bytes = int(transport_bytes)
        cfg.all_gather = self._boot.all_gather
        if helper_devices is not None:
            devices = [_int32("helper_devices: a device", d) for d in helper_devices]
            self._helper_devices = (c_int32 * max(1, len(devices)))(*devices)
            cfg.helper_devices = self._helper_devices
            cfg.num_helper_devices = len(devices)
        handle = c_void_p()
        self._lib.check(self._lib.comm_create(byref(cfg), byref(handle)))
        self._adopt(handle)
        self.processes = cfg.size  # with hosted helpers, fewer than the ranks (`size`)

    def _adopt(self, handle):
        """Takes on the library's communicator `handle` (this object destroys it)."""
        self._handle = handle
        rank, size = c_int32(), c_int32()
        self._lib.check(self._lib.comm_rank(handle, byref(rank)))
        self._lib.check(self._lib.comm_size(handle, byref(size)))
        self.rank, self.size = rank.value, size.value
        self.processes = self.size  # the processes that run the ranks (_create: its group's)
        name = c_char_p()
        self._lib.check(self._lib.comm_transport(self._handle, byref(name)))
        self.transport = name.value.decode()
        self.id = next(_ids)
        _live[self.id] = self
        self._groups = {}
        self._shapes = {}  # (collective, groups, counts) -> _Shape
        self._counts = {}  # (collective, active, input elements, output elements) -> count
        # A call's key (Communicator._call) -> (its arguments as _call compares them, or None:
        # not compared; its _Prepared); the last call's entry.
        self._prepared = {}
        self._last = (None, None)
        self._ops = Streams()  # the operation stream and the last async call not waited for
        self._flat = FlatBuffers(self.device, self.register, self.deregister)
        self._capturing = False
        self._lock = threading.Lock()
        self.serving = None  # attach_plane: whether this rank serves (None: no control plane)
        self._plan_counts = None  # control_consume's room: the most counts a plan may have

    # ---- lifetime ----------------------------------------------------------------------------

    def close(self):
        """Destroys the communicator (collective: every rank closes it)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._prepared.clear()
            self._last = (None, None)
            self._flat.clear()
            self._lib.check(self._lib.comm_destroy(handle))

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown: nothing to report to)
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def split(self, color, key=None):
        """As ncclCommSplit (relay_comm_split): collective over this communicator. The ranks
        that pass one color (an int >= 0) get a Communicator of their own, ranked by `key`
        (default: their rank here; ties by rank here), on this one's transport, device and
        timeout; color None takes part and gets None. It succeeds on every rank or raises on
        every rank (naming the rank that failed), at once where a rank's arguments are wrong
        (TypeError or ValueError there; relay.PeerError naming it on the others). This
        communicator stays usable on every rank either way.

        Why: a call agrees across every rank of its communicator, so groups that need not fail
        together run faster apart (docs/multiprocess.md, "Split communicators"). Prefer it to a
        Communicator over a torch subgroup where ranks share a GPU: a split's ipc transport
        divides the device among all of this communicator's ranks there."""
        try:
            c = _NO_COLOR if color is None else _int32("split: color", color, "an int or None")
            k = self.rank if key is None else _int32("split: key", key)
        except (TypeError, ValueError) as e:
            self._lib.comm_split_refuse(self._h(), InvalidArgumentError.code,
                                        str(e).encode(errors="replace"))
            raise
        handle = c_void_p()
        self._lib.check(self._lib.comm_split(self._h(), c, k, byref(handle)))
        if not handle:
            return None
        child = Communicator.__new__(Communicator)
        child.group = None  # no torch.distributed group has exactly these ranks
        child.device = self.device
        child._lib = self._lib
        child._set_stream_reader()
        child._adopt(handle)
        return child

    def _h(self):
        if not self._handle:
            raise RuntimeError("this relay communicator is closed")
        return self._handle

    def _stream_pointer(self):
        """The current stream's handle as the library's preconverted entries take it (a c_void_p;
        NULL on the CPU). The stream changes rarely, so its last pointer is kept and made again
        only when the handle differs; the hot paths write these lines out."""
        stream = self._stream()
        pointer = self._stream_ptr
        if pointer.value != (stream or None):  # the default stream, 0, reads None
            pointer = self._stream_ptr = c_void_p(stream)
        return pointer

    def abort(self):
        """This rank is gone: its peers fail at once; the communicator is unusable after."""
        self._lib.check(self._lib.comm_abort(self._h()))

    def async_status(self):
        """Raises what the library knows now, without waiting, of this communicator's earlier
        calls: a failure that broke it (a lost peer, a timeout), else the oldest call that its
        device found not to go (a peer refused it: relay.PeerError naming that rank and the
        call; ranks called it differently: relay.MismatchError) and that nothing raised yet:
        each such call once. Nothing when all is fine (and always on the CPU's shm transport,
        whose calls raise their failures themselves)."""
        self._lib.check(self._lib.comm_async_status(self._h()))

    def synchronize(self):
        """Waits until every call of this communicator made so far has finished (CUDA: the
        device's work, this communicator's operation stream and current streams among it; the
        CPU's calls are done when they return), then raises as async_status() does: a call
        that failed on another rank (relay.PeerError naming it, the message naming the call),
        ranks that called differently, a lost peer. Every call's failure is raised once, by the
        first of this, async_status(), or a Work's wait that finds it."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self._ops.held.clear()  # every async call has finished: their tensors go back
        self.async_status()

    def refuse(self, error):
        """Refuses the call the peers are making now (`error`: an exception or a message): they
        fail at once with relay.PeerError naming this rank. Returns the exception to raise."""
        if isinstance(error, str):
            error = ValueError(error)
        if getattr(error, "settled", False):
            return error  # refused already, or the library reported it on every rank
        if isinstance(error, RelayError):
            code, text = error.code, error.message  # its status is the code's: not twice
        else:
            text = str(error)
            if isinstance(error, TypeError):
                code = UnsupportedError.code
            elif isinstance(error, ValueError):
                code = InvalidBufferError.code
            else:
                code = RelaySystemError.code
        if self._handle:
            # After the async calls not yet joined where there are any (the operation stream):
            # one communicator's calls never overlap.
            stream = self._ops.handle if self._ops.pending else self._stream()
            self._lib.comm_refuse(self._handle, code, text.encode(errors="replace"), stream)
        try:
            error.settled = True
        except AttributeError:
            pass
        return error

    def register(self, tensor):
        """Registers `tensor`'s memory (collective; None registers nothing this time): the ipc
        transport then writes outputs there directly. Not during graph capture."""
        ptr = tensor.data_ptr() if tensor is not None else None
        nbytes = tensor.numel() * tensor.element_size() if tensor is not None else 0
        self._lib.check(self._lib.comm_register(self._h(), ptr, nbytes))

    def deregister(self, tensor):
        """Ends `tensor`'s registration (collective, like register)."""
        ptr = tensor.data_ptr() if tensor is not None else None
        self._lib.check(self._lib.comm_deregister(self._h(), ptr))

    @contextlib.contextmanager
    def capture(self, graph=None, register_inputs=True, **graph_kwargs):
        """CUDA graph capture of relay calls (the ipc transport: a call is kernel launches on the
        current stream). Make every call shape once before capturing it (its first call builds
        and uploads its plan), and the fused helpers' buffers with it; inside, nothing registers
        or grows. With `graph` (a torch.cuda.CUDAGraph), this enters torch.cuda.graph(graph,
        **graph_kwargs) too.

        When the block ends, the captured calls' inputs are registered (collective; see
        register_graph_inputs) unless `register_inputs` is False."""
        if self.transport != "ipc":
            raise ValueError(
                f"graph capture runs relay's ipc transport; this communicator uses {self.transport}"
            )
        self._capturing = True
        try:
            if graph is None:
                yield None
            else:
                with torch.cuda.graph(graph, **graph_kwargs):
                    yield graph
        finally:
            self._capturing = False
        if register_inputs:
            self.register_graph_inputs()

    def register_graph_inputs(self):
        """Registers the memory the inputs of the calls captured so far lie in, so that replays
        read them in place instead of staging them (collective; not during capture; replays are
        right before and after). Those tensors must stay allocated until
        deregister_graph_inputs()."""
        self._lib.check(self._lib.comm_register_graph_inputs(self._h()))

    def deregister_graph_inputs(self):
        """Ends every registration register_graph_inputs made (collective); replays stage their
        inputs again, and the graphs' tensors may be freed."""
        self._lib.check(self._lib.comm_deregister_graph_inputs(self._h()))

    # ---- serving ranks (docs/serving.md) ------------------------------------------------------

    def attach_plane(self, serving):
        """Gives this communicator a control plane (collective: every rank calls it). A rank
        with serving=True serves (serve()); the others call exactly as before, and the lowest of
        them publishes each call's shape into the plane before the call's agreement. Raises on
        every rank where no rank calls."""
        role = _PLANE_SERVE if serving else _PLANE_CALL
        self._lib.check(self._lib.comm_attach_plane(self._h(), role))
        self.serving = bool(serving)

    def serve(self, timeout=None):
        """A serving rank: makes, as a helper, every call the calling ranks make, with the shape
        it reads from the plane, until they call stop_serving(); returns the number of calls
        served. A served call that fails alike on every rank (a mismatch, a refusal) does not
        end it. Raises where it cannot go on: a publisher that published nothing for `timeout`
        seconds (default: the communicator's timeout) or died (relay.TimeoutError or
        relay.PeerLostError naming it), a call that broke the communicator."""
        served = c_uint64()
        self._lib.check(self._lib.comm_serve(self._h(), _milliseconds(timeout), self._stream(),
                                             byref(served)))
        return served.value

    def stop_serving(self):
        """Every calling rank, after its last call: the serving ranks return from serve() once
        they served every call made before it."""
        self._lib.check(self._lib.comm_stop_serving(self._h()))

    def control_publish(self, epoch, counts, op_code, dtype, red_op=0, flags=0, timeout=None):
        """torchcomms' control plane: publishes a forward's plan as `epoch` (0, 1, 2, ...):
        op_code (0 shutdown, 1 all_reduce, 2 reduce_scatter, 3 all_gather, 4 all_to_all),
        dtype, red_op, flags (0) and one count per call, carried as given. The plane's publisher
        only (the lowest calling rank); waits at most `timeout` seconds for a consumer still on
        an older epoch. More counts than control_limits() allows raise InvalidArgumentError and
        publish nothing (the epoch can be published next with fewer). A consumer that died or
        closed its communicator raises PeerLostError naming it, and the stream ends."""
        counts = [int(c) for c in counts]
        self._lib.check(self._lib.comm_control_publish(
            self._h(), int(epoch), _capi.int64_array(counts), len(counts), int(op_code),
            int(dtype), int(red_op), int(flags), _milliseconds(timeout)))

    def control_consume(self, epoch, timeout=None):
        """The plan published as `epoch`, waited for at most `timeout` seconds (default: the
        communicator's timeout): (op_code, dtype, red_op, flags, counts), counts a list. The
        wait watches the publisher and every other consumer: one that died, closed its
        communicator or gave up raises (PeerLostError naming it, or its own failure)."""
        if self._plan_counts is None:
            self._plan_counts = self.control_limits()[0]
        room = (c_int64 * self._plan_counts)()
        fields = [c_int32() for _ in range(5)]
        self._lib.check(self._lib.comm_control_consume(
            self._h(), int(epoch), _milliseconds(timeout), *(byref(f) for f in fields[:4]),
            room, len(room), byref(fields[4])))
        op_code, dtype, red_op, flags, n = (f.value for f in fields)
        return op_code, dtype, red_op, flags, list(room[:n])

    def control_limits(self):
        """(max_calls, counts_held): the most counts a plan may have on this communicator
        (NCCL_RELAY_CONTROL_MAX_CALLS where set when the plane was attached, else 128, RCCLX's
        default; every rank's is the same) and the most the plane's plan slots hold."""
        max_calls, held = c_int32(), c_int32()
        self._lib.check(self._lib.comm_control_limits(self._h(), byref(max_calls), byref(held)))
        return max_calls.value, held.value

    def control_join(self):
        """This rank will consume plans: the publisher waits for it from now on before it
        reuses a slot (the first control_consume does it too). A consumer that may start more
        than the stream's depth (4 epochs) behind the publisher joins first, then meets it (a
        barrier). Not on the publisher."""
        self._lib.check(self._lib.comm_control_join(self._h()))

    # ---- the collectives -----------------------------------------------------------------------

    def all_reduce(self, tensors, groups, op="sum", out=None, *, counts=None, dtype=None,
                   options=None, async_op=False):
        """Allreduce within each group: this rank's tensor (in place, or into `out`); a helper
        passes None. `tensors` may also be the spec's list of one entry per group, where the
        entry of this rank's group is its tensor (the others are ignored: relay needs no helper
        scratch). counts: one per group (default: every group has this rank's); a helper passing
        None gives counts and dtype. Returns the output (None on a helper); with async_op, a
        relay.torch.work.Work whose result it is (every call here takes async_op alike)."""
        return self._call("allreduce", tensors, out, groups, counts, op, options, "tensor", dtype,
                          _ASYNC if async_op else _SYNC)

    def reduce_scatter(self, input, output, groups, op="sum", *, counts=None, dtype=None,
                       options=None, async_op=False):
        """Reduce-scatter within each group: input holds A blocks of the group's count, output
        gets this rank's block of the sum. In place when output is input's own block."""
        return self._call("reduce-scatter", input, output, groups, counts, op, options, "input",
                          dtype, _ASYNC if async_op else _SYNC)

    def all_gather(self, input, output, groups, *, counts=None, dtype=None, options=None,
                   async_op=False):
        """All-gather within each group: output gets the A inputs in active order. In place when
        input is output's own slot."""
        return self._call("all-gather", input, output, groups, counts, None, options, "input",
                          dtype, _ASYNC if async_op else _SYNC)

    def all_to_all(self, input, output, groups, *, counts=None, dtype=None, options=None,
                   async_op=False):
        """All-to-all within each group: segment j of the input goes to active rank j, whose
        output holds it at this rank's segment. Out of place only (as NCCL's)."""
        return self._call("all-to-all", input, output, groups, counts, None, options, "input",
                          dtype, _ASYNC if async_op else _SYNC)

    # ---- how a call is made --------------------------------------------------------------------

    def groups(self, groups):
        """`groups` as the C ABI takes them, built once per distinct list."""
        if isinstance(groups, Groups):
            return groups
        try:
            key = tuple(tuple(g) for g in groups)
            g = self._groups.get(key)
        except TypeError:
            key, g = None, None
        if g is None:
            g = Groups(groups)
            if key is not None:
                _keep(self._groups, key, g)
        return g

    def layout(self, collective, groups, counts):
        """This rank's relay.Layout of a call: the sizes its tensors must have."""
        return self._shape(collective, self.groups(groups), counts).layout

    def _shape(self, coll, g, counts):
        """The _Shape of a call of `coll` over Groups `g` with `counts`, asked of the library
        (relay_rank_layout_of) on the shape's first call and kept."""
        counts = tuple(int(c) for c in counts)
        key = (coll, g.key, counts)
        shape = self._shapes.get(key)
        if shape is None:
            lay = layout(coll, self.size, g, counts, self.rank, self._lib)
            shape = _keep(self._shapes, key, _Shape(lay, _capi.int64_array(counts)))
        return shape

    def _count_of(self, coll, active, inp, out):
        """The per-group count of this rank's tensors (relay_count_of), kept per size."""
        key = (coll, active, inp.numel(), out.numel())
        n = self._counts.get(key)
        if n is None:
            n = _keep(self._counts, key, count_of(coll, active, key[2], key[3], self._lib))
        return n

    def _call(self, coll, inp, out, groups, counts, op, options, first_name, dtype, how=_SYNC):
        """One call (`how`: _SYNC on the current stream, after any async call not yet joined;
        _ASYNC on the operation stream, relay.torch.work; _MARKED on the current stream, after
        any async call not yet joined, numbered by the same crossing: Streams.run_marked) with
        its prepared arguments: those of an earlier call with the same key (below), else this
        rank's checks made and the arguments prepared (_prepared_new; a failed check refuses the
        call and raises). Returns the output (None on a helper); _ASYNC and _MARKED: its Work;
        _PREPARED makes no call and returns the _Prepared arguments. Each call is one crossing
        into the library.

        A repeated call's whole work is written out here, so that it calls no function of its
        own but the crossing's: its arguments, its tensors described, compared with the last
        call's (self._last: that call's as they were, and its _Prepared), else its key made and
        looked up; the crossing.

        The key: everything the call's checks and prepared arguments depend on (the
        communicator, its rank and library, is the key's owner): the tensors' places, sizes,
        dtypes, devices and contiguity, the groups, counts, op, options and dtype. An argument
        of a form it does not take (the per-group lists, an unhashable value) leaves the call
        unkeyed: prepared afresh. Counts as given: equal keys are equal counts (5 and 5.0
        alike, as int() reads them)."""
        ops = self._ops
        if ops.pending and (how == _SYNC or how == _MARKED):
            ops.join(self)
        call = key = p = None
        try:
            call = (
                coll,
                None if inp is None else (inp.data_ptr(), inp.numel(), inp.dtype, inp.device,
                                          inp.is_contiguous()),
                None if out is None else (out.data_ptr(), out.numel(), out.dtype, out.device,
                                          out.is_contiguous()),
                groups,
                counts,
                op,
                options,
                dtype,
            )
            last = self._last  # kept_for(self._last, call), written out
            try:
                same = last[0] == call
            except Exception:
                same = False
            if same:
                p = last[1]
            else:
                key = (coll, call[1], call[2],
                       groups.key if type(groups) is Groups else tuple(map(tuple, groups)),
                       None if counts is None else tuple(counts), op, options, dtype)
                last = self._prepared.get(key)
                if last is not None:
                    self._last = last
                    p = last[1]
        except (AttributeError, TypeError, ValueError):  # not tensors, not hashable: not keyed
            key = None
        if p is None:
            p, result = self._prepared_new(call, key, coll, inp, out, groups, counts, op,
                                           options, first_name, dtype)
        else:
            result = None if p.result == 0 else inp if p.result == 1 else out
        if how == _SYNC:
            stream = self._stream()  # its pointer as _stream_pointer reads it
            pointer = self._stream_ptr
            if pointer.value != (stream or None):  # the default stream, 0, reads None
                pointer = self._stream_ptr = c_void_p(stream)
            status = self._lib.preconverted.run_call(self._handle, p.ref, pointer)
            if status != OK:
                raise self._failed(status)
            return result
        if how == _ASYNC:
            return ops.run(self, p, result, (inp, out), options)
        if how == _MARKED:
            return ops.run_marked(self, p, result, options)
        return p

    def _prepared_of(self, coll, inp, out, groups, counts, op, options, first_name, dtype):
        """The _Prepared arguments of a call (_call's, making none)."""
        return self._call(coll, inp, out, groups, counts, op, options, first_name, dtype,
                          _PREPARED)

    def _run_prepared(self, p):
        """Makes the call of _Prepared `p` on the current stream (one crossing)."""
        status = self._lib.preconverted.run_call(self._handle, p.ref, self._stream_pointer())
        if status != OK:
            raise self._failed(status)

    def _failed(self, status):
        """The error of a call the library failed: every rank of the call returns an error, so
        there is nothing to refuse."""
        error = self._lib.error(status)
        error.settled = True
        return error

    def _prepared_new(self, call, key, coll, inp, out, groups, counts, op, options, first_name,
                      dtype):
        """(the _Prepared arguments of a call no kept key has, what it returns): this rank's
        checks made and the arguments prepared (a failed check refuses the call and raises),
        kept under `key` (None: not kept) with `call` (_call's tuple of the arguments) as the
        next call compares with it, and become self._last."""
        try:
            p, result = self._prepare(coll, inp, out, groups, counts, op, options, first_name,
                                      dtype)
        except Exception as e:
            raise self.refuse(e) from None
        if key is not None:
            given = as_given(groups, counts)
            compared = None if given is None else call[:3] + given + call[5:]
            self._last = _keep(self._prepared, key, (compared, p))
        return p, result

    def _tensor_of(self, value, group, what, g):
        """This rank's tensor of an argument: a tensor, None, or the spec's per-group list."""
        if isinstance(value, (list, tuple)):
            if len(value) != g.count:
                raise ValueError(
                    f"{what} is a list of {len(value)}; the per-group form has one entry per "
                    f"group ({g.count})"
                )
            value = value[group] if group is not None else None
        if value is not None and not isinstance(value, torch.Tensor):
            raise TypeError(f"{what} must be a torch.Tensor or None, not {type(value).__name__}")
        return value

    def _check_tensor(self, t, what, expected):
        if t.device != self.device:
            raise ValueError(
                f"{what} is on {t.device}; this relay communicator moves tensors on {self.device}"
            )
        if not t.is_contiguous():
            raise ValueError(f"{what} is not contiguous; relay takes contiguous tensors")
        if t.numel() != expected:
            raise ValueError(
                f"{what} has {t.numel()} elements; this call expects {expected} on rank "
                f"{self.rank}"
            )

    def _dtype_code(self, t, what):
        try:
            return self._lib.value_of("dtype", _dtype_name(t.dtype))
        except RelayError as e:
            raise TypeError(f"{what} is {t.dtype}, which relay does not move: {e.message}") from None

    def _prepare(self, coll, inp, out, groups, counts, op, options, first_name, dtype):
        """(the _Prepared arguments of one call, what it returns), after this rank's own checks
        of its tensors (which raise)."""
        lib = self._lib
        g = self.groups(groups)
        group, _ = g.group_of(self.rank)
        inp = self._tensor_of(inp, group, first_name, g)
        out_name = "out" if coll == "allreduce" else "output"
        out = self._tensor_of(out, group, out_name, g)
        active = group is not None
        if coll == "allreduce" and out is None:
            out = inp  # in place
        if counts is None:
            if not active or inp is None or out is None:
                raise ValueError(
                    f"rank {self.rank} is active in no group of this call and passed no tensors:"
                    f" give counts="
                )
            counts = [self._count_of(coll, len(g.groups[group]), inp, out)] * g.count
        elif len(counts) != g.count:
            raise ValueError(f"{len(counts)} counts for {g.count} groups; give one per group")
        shape = self._shape(coll, g, counts)
        send = recv = None
        send_bytes = recv_bytes = 0
        if active:
            if dtype is not None and inp is not None and inp.dtype != dtype:
                raise TypeError(f"{first_name} is {inp.dtype} but dtype={dtype} was given")
            if inp is None:
                raise ValueError(f"rank {self.rank} is active in group {group}: {first_name} is None")
            if out is None:
                raise ValueError(f"rank {self.rank} is active in group {group}: output is None")
            dtype_code = self._dtype_code(inp, first_name)
            if out.dtype != inp.dtype:
                raise TypeError(f"{out_name} is {out.dtype} but {first_name} is {inp.dtype}")
            self._check_tensor(inp, first_name, shape.layout.input_elements)
            self._check_tensor(out, out_name, shape.layout.output_elements)
            es = inp.element_size()
            send, recv = inp.data_ptr(), out.data_ptr()
            send_bytes, recv_bytes = inp.numel() * es, out.numel() * es
            if not shape.layout.has_in_place and send_bytes and recv_bytes and (
                send < recv + recv_bytes and recv < send + send_bytes
            ):
                raise ValueError(
                    f"all-to-all has no in-place form (as in NCCL): output overlaps {first_name}"
                )
        else:
            # A helper's tensors only lend the dtype; they are never read or written.
            dtype_code = self._helper_dtype(inp, out, first_name, dtype)
        self._h()
        call = _capi.Call()
        lib.call_init(byref(call))
        call.collective = lib.value_of("collective", coll)
        call.dtype = dtype_code
        if op is not None:
            call.op = lib.value_of("op", op)
        call.num_groups = g.count
        call.group_ranks, call.group_sizes, call.counts = g.ranks, g.sizes, shape.counts
        call.send, call.send_bytes, call.recv, call.recv_bytes = send, send_bytes, recv, recv_bytes
        opts = options.struct(lib) if options is not None else None
        if opts is not None:
            call.options = pointer(opts)
        # What a call with these arguments returns (the output, None on a helper) as a
        # _Prepared keeps it: of the tensors a keyed call passes, its input or its output.
        returned = 0 if not active else 1 if out is inp else 2
        return _Prepared(call, returned, (g, shape, opts)), out if active else None

    def _helper_dtype(self, inp, out, first_name, dtype):
        if dtype is not None:
            return self._dtype_code(torch.empty(0, dtype=dtype), "dtype")
        for t, what in ((inp, first_name), (out, "output")):
            if t is not None:
                return self._dtype_code(t, what)
        raise ValueError(
            f"rank {self.rank} helps in this call and passed no tensor: give dtype= (every rank "
            f"passes the call's dtype)"
        )

    # ---- the fused helpers' buffers ------------------------------------------------------------

    def flat_buffer(self, role, dtype, elements, hold=True):
        """A view of `elements` of the cached (role, dtype) buffer of the fused helpers (`role`
        tells apart those used together), grown only and registered when grown. Growing is
        collective: every rank asks for the same sizes in the same order, a helper with
        hold=False (it registers nothing and gets None). Growing registers memory, which graph
        capture forbids: make each size once before. See _flat.py."""
        return self._flat.get(role, dtype, elements, hold, self._capturing)

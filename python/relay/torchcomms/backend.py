"""TorchCommRelay: relay as a torchcomms backend, with RCCLX's four sharded_relay_multi_group_*
calls (their names, positional order, keywords and defaults) and the rest of torchcomms'
TorchCommBackend interface.

    comm = torchcomms.new_comm("relay", device, name="sharded_relay", store=store)
    relay = comm.get_backend_impl()                     # this class
    work = relay.sharded_relay_multi_group_all_reduce(
        tensors, ReduceOp.AVG, [[0, 1], [2, 3], [4, 5], [6, 7]], counts, async_op=True)
    work.wait()

or without torchcomms: TorchCommRelay.from_group() (a torch.distributed group) or
TorchCommRelay.from_environment(device, name, store=...) (as new_comm makes one).

Every call is a relay.torch call on the cost model's route ("automatic": small calls take the
direct exchange). A helper's entries (a rank active in no group, and a group of count 0) are
never read or written: relay needs no helper scratch. low_precision asks for relay's fp8 wire,
which the library takes or not (the dtype, then the threshold) alike on every rank; the work's
`wire` and `low_precision` say which, and so does a debug line on the "relay.torchcomms" logger.
A rank's own argument errors refuse the call through the library, so every peer fails at once.
"""

import logging

import torch

from ..errors import RelayError
from ..torch.communicator import _ASYNC, _MARKED, Communicator, Options, as_given
from ..torch.work import Work, launch
from . import _environment as env
from ._base import TorchCommBackend

log = logging.getLogger("relay.torchcomms")

_NOT_RELAY = (
    "relay runs all-reduce, all-gather, reduce-scatter and all-to-all (and barrier as an "
    "all-reduce of one element)"
)


def reduce_op_name(op):
    """relay's name of a reduction: torchcomms' ReduceOp (.type), torch.distributed's ReduceOp
    (.op) or its RedOpType, or a name ("sum", "avg"). The library parses the name, so an
    operator relay lacks fails there, naming the ones it has. An op object's name is kept by
    the object's identity (its own hash and == may call into torch's bindings, which
    allocate), so a repeated call's op is looked up."""
    if type(op) is str:
        return op.lower()
    kept = _op_names.get(id(op))
    if kept is not None and kept[0] is op:
        return kept[1]
    name = _op_name(op)
    if len(_op_names) >= _OPS_KEPT:  # ops made afresh per call: start again
        _op_names.clear()
    _op_names[id(op)] = (op, name)  # the op kept alive: its id names no other object
    return name


_op_names = {}  # id(op) -> (op, reduce_op_name(op)), for ops that are not names
_OPS_KEPT = 64


def _op_name(op):
    if isinstance(op, str):
        return op.lower()
    for attr in ("type", "op"):
        inner = getattr(op, attr, None)
        if inner is not None and hasattr(inner, "name"):
            op = inner
            break
    name = getattr(op, "name", None)
    if not isinstance(name, str):
        raise TypeError(f"op must be a ReduceOp (SUM or AVG) or a name, not {op!r}")
    return name.lower()


class TorchCommRelay(TorchCommBackend):
    """A relay communicator (relay.torch.Communicator) behind torchcomms' backend interface."""

    def __init__(self):
        super().__init__()
        self._comm = None
        self._name = ""
        self._opts = {}
        self._native = None  # self._opts["native"], once adopted
        # (groups, counts) -> (them as given, for comparing: communicator.as_given; _worked_out's
        # answer); the last call's entry.
        self._shapes = {}
        self._last_shape = (None, None)
        self._fp8 = {}  # dtype -> the options low_precision takes for it (_options)
        self._empty = {}  # (dtype, device) -> a count-0 group's two empty tensors (_sharded)

    # ---- creation ------------------------------------------------------------------------------

    def init(self, device, name, options):
        """torchcomms' init: the rank and size from the environment (TORCHCOMM_RANK,
        TORCHCOMM_SIZE, ...), the store from `options` (CommOptions: store, timeout, hints;
        hints "relay.transport", "relay.transport_bytes" and "relay.helper_devices")."""
        rank, size = env.rank_and_size()
        timeout = env.seconds(getattr(options, "timeout", None))
        hints = dict(getattr(options, "hints", None) or {})
        store = env.store_for(name, getattr(options, "store", None), rank, size, timeout)
        comm = Communicator.from_store(
            store, rank, size, device=device, timeout=timeout,
            transport=hints.get(env.HINT_TRANSPORT, "auto"),
            transport_bytes=env.byte_count(hints.get(env.HINT_TRANSPORT_BYTES, "0")),
            helper_devices=env.devices(hints.get(env.HINT_HELPER_DEVICES)),
        )
        self._adopt(comm, name)

    @classmethod
    def from_environment(cls, device, name, store=None, timeout=None, hints=None):
        """As torchcomms.new_comm("relay", device, name=..., store=...) makes one, without
        torchcomms."""
        options = _CommOptions(store, timeout, hints)
        backend = cls()
        backend.init(torch.device(device), name, options)
        return backend

    @classmethod
    def from_group(cls, group=None, *, device=None, name=None, timeout=None, transport="auto",
                   transport_bytes=0):
        """Over the ranks of a torch.distributed group (default: the world), bootstrapped
        through the default group's store."""
        comm = Communicator(group, device=device, timeout=timeout, transport=transport,
                            transport_bytes=transport_bytes)
        return cls.from_communicator(comm, name or f"relay_{comm.id}")

    @classmethod
    def from_communicator(cls, comm, name):
        """Over a relay.torch.Communicator (this backend closes it in finalize)."""
        backend = cls()
        backend._adopt(comm, name)
        return backend

    def _adopt(self, comm, name):
        # A control plane on which every rank calls (rank 0 publishes: RCCLX's rule) for
        # relay_control_publish and relay_control_consume, unless the communicator has one.
        # A communicator with hosted helpers (docs/hosted-helpers.md) has none: its helpers take
        # their host's calls.
        if comm.serving is None and comm.processes == comm.size:
            comm.attach_plane(serving=False)
        self._comm = comm
        self._name = name
        # torchcomms' world is the processes: with hosted helpers (docs/hosted-helpers.md) the
        # communicator's other ranks are helpers that its processes run.
        self._every = comm.groups([list(range(comm.processes))])
        # route "automatic": the cost model's route per call shape (direct for small calls).
        self._opts = {wire: Options(route="automatic", wire=wire) for wire in ("native", "fp8")}
        self._native = self._opts["native"]

    @property
    def communicator(self):
        """The relay.torch.Communicator underneath (graph capture, split, ...)."""
        if self._comm is None:
            raise RuntimeError("this relay torchcomms backend is not initialized (or finalized)")
        return self._comm

    def finalize(self):
        """Destroys the communicator (collective: every rank finalizes)."""
        comm, self._comm = self._comm, None
        if comm is not None:
            comm.close()

    def get_rank(self):
        return self.communicator.rank

    def get_size(self):
        return self.communicator.processes

    def get_backend_name(self):
        return "relay"

    def get_comm_name(self):
        return self._name

    def get_device(self):
        return self.communicator.device

    # ---- the four sharded relay calls (TorchCommRCCLX's) -------------------------------------

    def sharded_relay_multi_group_all_reduce(self, tensors, op, all_active_ranks,
                                             per_group_counts, async_op=False,
                                             output_tensors=None, low_precision=False):
        """Allreduce within each group (one entry per group in every list): in place, or into
        output_tensors. op: SUM or AVG."""
        outs = output_tensors if output_tensors else None
        return self._sharded("sharded_relay_multi_group_all_reduce", "allreduce", tensors, outs,
                             op, all_active_ranks, per_group_counts, async_op, low_precision)

    def sharded_relay_multi_group_reduce_scatter(self, input_tensors, output_tensors, op,
                                                 all_active_ranks, per_group_recv_counts,
                                                 async_op=False, low_precision=False):
        """Reduce-scatter within each group: an active input holds A x recv count elements, its
        output one block; in place where the output is the input's own block."""
        return self._sharded("sharded_relay_multi_group_reduce_scatter", "reduce-scatter",
                             input_tensors, output_tensors, op, all_active_ranks,
                             per_group_recv_counts, async_op, low_precision)

    def sharded_relay_multi_group_all_to_all(self, input_tensors, output_tensors,
                                             all_active_ranks, per_group_segment_counts,
                                             async_op=False, low_precision=False):
        """All-to-all within each group: A segments in and out; out of place only."""
        return self._sharded("sharded_relay_multi_group_all_to_all", "all-to-all",
                             input_tensors, output_tensors, None, all_active_ranks,
                             per_group_segment_counts, async_op, low_precision)

    def sharded_relay_multi_group_all_gather(self, input_tensors, output_tensors,
                                             all_active_ranks, per_group_send_counts,
                                             async_op=False, low_precision=False):
        """All-gather within each group: the send count in, A of them out; in place where the
        input is output + my index x send count."""
        return self._sharded("sharded_relay_multi_group_all_gather", "all-gather",
                             input_tensors, output_tensors, None, all_active_ranks,
                             per_group_send_counts, async_op, low_precision)

    # ---- the control plane (TorchCommRCCLX's) ----------------------------------------------------

    def relay_control_publish(self, epoch, counts, op_code, dtype, timeout_ns, red_op=0, flags=0):
        """Publishes a forward's plan as `epoch` (0, 1, 2, ...) for the ranks that consume it:
        op_code (0 shutdown, 1 all_reduce, 2 reduce_scatter, 3 all_gather, 4 all_to_all), dtype,
        red_op, flags (0) and one count per call, carried as given. Rank 0 only (the plane's
        publisher); waits at most `timeout_ns` (0: the communicator's timeout) for a consumer
        still on an older epoch. More counts than NCCL_RELAY_CONTROL_MAX_CALLS (default 128, as
        RCCLX's) raise relay.InvalidArgumentError and publish nothing; a consumer that died or
        closed its communicator raises relay.PeerLostError naming it."""
        self.communicator.control_publish(epoch, counts, op_code, dtype, red_op, flags,
                                          timeout=_seconds(timeout_ns))

    def relay_control_consume(self, epoch, timeout_ns):
        """The plan rank 0 published as `epoch`, waited for at most `timeout_ns` (0: the
        communicator's timeout; a wait that times out raises relay.TimeoutError naming rank 0; a
        publisher or another consumer that died or closed its communicator, relay.PeerLostError
        naming it): (op_code, dtype, red_op, flags, counts), counts a list of ints."""
        return self.communicator.control_consume(epoch, timeout=_seconds(timeout_ns))

    def _sharded(self, what, coll, ins, outs, op, groups, counts, async_op, low_precision):
        """One relay.torch call (Communicator._call, as its method for `coll` makes it): with
        async_op on the operation stream, else on the current stream with its end numbered by
        the same crossing (a work without async_op). An entry of a group this rank helps in, or
        of a group of count 0, is not passed on: relay never touches it. A repeated call's
        checks are written out here (exact types first: the usual arguments pass without
        isinstance), its groups' and counts' work looked up (_worked_out), so that it calls no
        function of its own but Communicator._call; the rest raise through _tensor_list and
        _lengths."""
        comm = self._comm if self._comm is not None else self.communicator  # (which raises)
        try:
            if type(ins) not in _SEQUENCES:
                _tensor_list(what, _INPUTS[coll], ins)
            for t in ins:
                if type(t) is not _Tensor:
                    _tensor_list(what, _INPUTS[coll], ins)
                    break
            if outs is not None:
                if type(outs) not in _SEQUENCES:
                    _tensor_list(what, "output_tensors", outs)
                for t in outs:
                    if type(t) is not _Tensor:
                        _tensor_list(what, "output_tensors", outs)
                        break
            n = len(ins)
            if n == 0:
                raise ValueError(f"{what}: the tensor list is empty; give one tensor per group")
            try:  # kept_for(self._last_shape, (groups, counts)), written out
                last = self._last_shape
                found = last[1] if last[0] == (groups, counts) else None
            except Exception:
                found = None
            if found is None:
                found = self._worked_out(groups, counts)
            g, counts, mine, typed, per_group = found
            if not per_group or g.count != n or (outs is not None and len(outs) != n):
                _lengths(what, n, g, counts, outs)
            dtype = ins[typed].dtype
            x = y = None
            if mine is not None:
                if counts[mine] > 0:
                    x = ins[mine]
                    if outs is not None:
                        y = outs[mine]
                else:  # nothing to move: empty buffers of the call's dtype, the placeholder
                    # untouched
                    x, y = self._empty_pair(dtype, ins[mine].device)
                    if coll == "allreduce":
                        y = None
            opts = self._options(what, dtype, low_precision) if low_precision else self._native
            op_name = (None if coll not in _REDUCING else op.lower() if type(op) is str
                       else reduce_op_name(op))
        except Exception as e:
            raise comm.refuse(e) from None
        work = comm._call(coll, x, y, g, counts, op_name, opts, _FIRST_NAME[coll], dtype,
                          _ASYNC if async_op else _MARKED)
        if low_precision and log.isEnabledFor(logging.DEBUG):  # work.wire read only for it
            log.debug("%s: low_precision: %s", what, work.wire)
        return work

    def _empty_pair(self, dtype, device):
        """Two empty tensors of `dtype` on `device` (a count-0 group's input and output: they
        hold no memory, so one pair serves every call)."""
        pair = self._empty.get((dtype, device))
        if pair is None:
            x = torch.empty(0, dtype=dtype, device=device)
            pair = self._empty[(dtype, device)] = (x, x.new_empty(0))
        return pair

    def _worked_out(self, groups, counts):
        """(the communicator's Groups, the counts as ints, this rank's group or None, the group
        whose tensor gives the call's dtype, whether there is one count per group) of a call's
        groups and counts: kept per distinct groups and counts, worked out once. The entry found
        or made becomes self._last_shape, which the next call compares its groups and counts
        with (their key is made only where they differ)."""
        try:
            key = (tuple(map(tuple, groups)), tuple(counts))
            kept = self._shapes.get(key)
        except TypeError:  # an unhashable entry: worked out afresh
            key = kept = None
        if kept is not None:
            self._last_shape = kept
            return kept[1]
        given = as_given(groups, counts)
        groups = [[int(r) for r in g] for g in groups]
        counts = [int(c) for c in counts]
        me = self.communicator.rank
        mine = next((g for g, members in enumerate(groups) if me in members), None)
        # The call's dtype: this rank's group's, else the first group with data's (a count-0
        # group's placeholder need not share it), as TorchCommRCCLX takes it.
        with_data = [g for g in range(len(counts)) if counts[g] > 0]
        typed = (mine if mine is not None and mine < len(counts) and counts[mine] > 0
                 else (with_data or [mine or 0])[0])
        found = (self.communicator.groups(groups), tuple(counts), mine, typed,
                 len(counts) == len(groups))
        if key is not None:
            if len(self._shapes) >= _SHAPES_KEPT:
                del self._shapes[next(iter(self._shapes))]
            self._last_shape = self._shapes[key] = (given, found)
        return found

    def _options(self, what, dtype, low_precision):
        """The call's options: fp8 asked where low_precision is set and the library's fp8 wire
        carries the dtype; the library then decides by the threshold (reported after the
        call)."""
        if not low_precision:
            return self._opts["native"]
        opts = self._fp8.get(dtype)
        if opts is None:
            opts = self._fp8[dtype] = self._opts["fp8" if self._fp8_carries(dtype) else "native"]
        if opts is not self._opts["fp8"]:
            log.debug("%s: low_precision: %s does not travel on the fp8 wire; native", what,
                      dtype)
        return opts

    def _fp8_carries(self, dtype):
        """Whether the library's fp8 wire carries `dtype` (relay_wire_carries), asked once per
        dtype (a dtype relay does not move: no; the call itself refuses it, naming it)."""
        lib = self.communicator._lib
        try:
            code = lib.value_of("dtype", str(dtype).rsplit(".", 1)[-1])
        except RelayError:
            return False
        return bool(lib.wire_carries(lib.value_of("wire", "fp8"), code))

    # ---- torchcomms' collectives: relay calls of one group of every rank -------------------

    def all_reduce(self, tensor, op, async_op):
        return self._whole("allreduce", tensor, None, op, async_op)

    def all_gather_single(self, output, input, async_op):
        return self._whole("all-gather", input, output, None, async_op)

    def all_gather(self, tensor_list, tensor, async_op):
        flat = tensor.new_empty((self.get_size(),) + tuple(tensor.shape))
        return self._whole("all-gather", tensor, flat, None, async_op,
                           after=lambda: _unstack(flat, tensor_list), keep=(tensor_list,))

    def all_gather_v(self, tensor_list, tensor, async_op):
        if any(t.shape != tensor.shape for t in tensor_list):
            raise NotImplementedError(f"all_gather_v of unequal sizes: {_NOT_RELAY}, of equal counts")
        return self.all_gather(tensor_list, tensor, async_op)

    def reduce_scatter_single(self, output, input, op, async_op):
        return self._whole("reduce-scatter", input, output, op, async_op)

    def reduce_scatter(self, output, input_list, op, async_op):
        def run():
            flat = torch.cat([t.reshape(-1) for t in input_list])
            return self._whole("reduce-scatter", flat, output, op, False)

        return self._launch(run, (output, input_list), async_op)

    def reduce_scatter_v(self, output, input_list, op, async_op):
        if any(t.numel() != output.numel() for t in input_list):
            raise NotImplementedError(
                f"reduce_scatter_v of unequal sizes: {_NOT_RELAY}, of equal counts")
        return self.reduce_scatter(output, input_list, op, async_op)

    def all_to_all_single(self, output, input, async_op):
        return self._whole("all-to-all", input, output, None, async_op)

    def all_to_all_v_single(self, output, input, output_splits, input_splits, async_op):
        n = self.get_size()
        for t, splits in ((input, input_splits), (output, output_splits)):
            rows = t.shape[0] if t.dim() else 0
            if rows % n or any(int(s) != rows // n for s in splits):
                raise NotImplementedError(
                    f"all_to_all_v_single of unequal splits: {_NOT_RELAY}, of equal counts")
        return self.all_to_all_single(output, input, async_op)

    def all_to_all(self, output_list, input_list, async_op):
        def run():
            flat_in = torch.cat([t.reshape(-1) for t in input_list])
            flat_out = flat_in.new_empty(flat_in.numel())
            self._whole("all-to-all", flat_in, flat_out, None, False)
            _unstack(flat_out.view(len(output_list), -1), output_list)

        return self._launch(run, (output_list, input_list), async_op)

    def barrier(self, async_op):
        """An all-reduce of one element among every rank: no rank leaves before all arrived."""
        one = torch.zeros(1, dtype=torch.int32, device=self.get_device())
        return self._whole("allreduce", one, None, "sum", async_op)

    def _whole(self, coll, x, y, op, async_op, after=None, keep=()):
        """One relay call of every rank; `after` (torch's work on its output, such as copies
        out) makes it steps of the call and that work (relay.torch.work.launch)."""
        comm = self._comm if self._comm is not None else self.communicator  # (which raises)
        op_name = (None if op is None else op.lower() if type(op) is str
                   else reduce_op_name(op))
        if after is None:  # one call, numbered where it ends without async_op (as _sharded's)
            return comm._call(coll, x, y, self._every, None, op_name, self._native,
                              _FIRST_NAME[coll], None, _ASYNC if async_op else _MARKED)
        method = getattr(comm, _METHODS[coll])
        args = (x, *_out_arg(coll, y), self._every, *(() if op is None else (op_name,)))

        def run():
            result = method(*args, options=self._opts["native"])
            after()
            return result

        return self._launch(run, (x, y) + tuple(keep), async_op)

    def _launch(self, run, tensors, async_op):
        work = launch(self.communicator, run, tensors, async_op)
        return work if async_op else Work.done(self.communicator, work)

    # ---- what relay does not run -----------------------------------------------------------

    def send(self, tensor, dst, async_op):
        raise NotImplementedError(f"relay.torchcomms: send: {_NOT_RELAY}")

    def recv(self, tensor, src, async_op):
        raise NotImplementedError(f"relay.torchcomms: recv: {_NOT_RELAY}")

    def broadcast(self, tensor, root, async_op):
        raise NotImplementedError(f"relay.torchcomms: broadcast: {_NOT_RELAY}")

    def reduce(self, tensor, root, op, async_op):
        raise NotImplementedError(f"relay.torchcomms: reduce: {_NOT_RELAY}")

    def scatter(self, output, input_list, root, async_op):
        raise NotImplementedError(f"relay.torchcomms: scatter: {_NOT_RELAY}")

    def gather(self, output_list, input, root, async_op):
        raise NotImplementedError(f"relay.torchcomms: gather: {_NOT_RELAY}")

    def set_timeout(self, timeout):
        raise NotImplementedError(
            "relay.torchcomms: set_timeout: relay fixes a communicator's timeout when it is made "
            "(new_comm's timeout=)")

    # ---- split -----------------------------------------------------------------------------

    def split(self, ranks, name, options=None):
        """torchcomms' split: the ranks in `ranks` get a communicator of their own, ranked in
        the list's order; an empty list takes part and gets None. Collective (relay_comm_split):
        a rank that is not in its non-empty list fails the split on every rank."""
        comm = self.communicator
        ranks = [int(r) for r in ranks]
        if not ranks:
            comm.split(None)
            return None
        if comm.rank not in ranks:
            error = RuntimeError(
                f"relay.torchcomms: split: ranks {ranks} do not include this rank ({comm.rank})")
            try:
                comm.split(-2 - comm.rank)  # not a color: the library fails it on every rank
            except RelayError as e:
                raise error from e
            raise error
        child = comm.split(min(ranks), key=ranks.index(comm.rank))
        return TorchCommRelay.from_communicator(child, name)


_SHAPES_KEPT = 256  # distinct (groups, counts) of the four methods a backend keeps worked out

_REDUCING = ("allreduce", "reduce-scatter")
_SEQUENCES = (list, tuple)  # the tensor lists' exact types (subclasses: _tensor_list)
_INPUTS = {"allreduce": "tensors", "reduce-scatter": "input tensors",
           "all-gather": "input tensors", "all-to-all": "input tensors"}  # their names in errors
_FIRST_NAME = {"allreduce": "tensor", "reduce-scatter": "input", "all-gather": "input",
               "all-to-all": "input"}  # the Communicator methods' name of their first tensor
_METHODS = {"allreduce": "all_reduce", "reduce-scatter": "reduce_scatter",
            "all-gather": "all_gather", "all-to-all": "all_to_all"}


def _seconds(timeout_ns):
    """torchcomms' nanoseconds as relay.torch's seconds (None: the communicator's timeout)."""
    ns = int(timeout_ns)
    return ns / 1e9 if ns > 0 else None


def _out_arg(coll, y):
    return () if coll == "allreduce" else (y,)


def _unstack(flat, tensors):
    for t, part in zip(tensors, flat):
        t.copy_(part.view(t.shape))


def _lengths(what, n, groups, counts, outs):
    """Raises the ValueError of a call whose lists (groups, counts, output_tensors) are not
    each of the input list's length `n`."""
    for name, values in (("all_active_ranks", groups.groups), ("the counts", counts),
                         ("output_tensors", outs)):
        if values is not None and len(values) != n:
            raise ValueError(f"{what}: {name} has {len(values)} entries for {n} groups")


def _tensor_list(what, name, values):
    """`values`, a list or tuple of tensors (TypeError otherwise). Exact types are compared
    first: a repeated call's usual arguments pass without a call of isinstance."""
    kind = type(values)
    if kind is not list and kind is not tuple and (
            isinstance(values, torch.Tensor) or not isinstance(values, (list, tuple))):
        raise TypeError(f"{what}: {name} must be a list of tensors, one per group")
    for i, t in enumerate(values):
        if type(t) is not _Tensor and not isinstance(t, _Tensor):
            raise TypeError(f"{what}: {name}[{i}] is {type(t).__name__}, not a tensor")
    return values


_Tensor = torch.Tensor


class _CommOptions:
    """torchcomms' CommOptions, for from_environment without torchcomms."""

    def __init__(self, store=None, timeout=None, hints=None):
        self.store, self.timeout, self.hints = store, timeout, dict(hints or {})

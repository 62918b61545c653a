"""torchrec-style fused calls: many tensors of several dtypes, one relay call per dtype across
every group (the spec's sharded_relay_utils.py, over relay.torch.Communicator).

    grads = {name: p.grad for name, p in model.named_parameters()}
    relay.torch.all_reduce_tensors(comm, grads, [[0, 1], [2, 3], [4, 5], [6, 7]], op="avg")

Per dtype: the tensors are packed in order into one flat buffer (cached by the communicator,
grown only, registered when grown), ONE call runs across all groups, and the result is unpacked
into the caller's tensors. A dtype of one tensor needs no packing: its call runs on the tensor
itself (and its output), whose layout is the flat buffer's, so a repeated call of one tensor per
dtype is that dtype's one call into the library and nothing else. Growing registers memory,
which is collective, so every rank asks for the same buffer sizes in the same order, helpers too
(they hold none): every rank passes the same structure (the same tensors' shapes and dtypes,
`out` given or not, `in_place`). The growth of every dtype's buffers depends on the inputs alone
and comes before any check of the outputs, so a rank whose outputs are wrong still takes part in
it and then refuses the call: its peers fail at once. Every group's ranks hold tensors of the
same shapes (replicas), so each group's count is this rank's total. A rank active in no group
(single mode) passes its tensors too, as templates: they are never read or written.

Each takes `options` (relay.torch.Options), as the Communicator methods do: by default every call
takes the route the cost model predicts fastest (a group of every rank: the direct route).

Reduce-scatter and all-to-all inputs (and all-gather and all-to-all outputs) hold A blocks, one
per active rank (A = the ranks per group): each tensor is split into A equal blocks, and block k
of every tensor goes to the flat buffer's block k.
"""

import torch

from .._layout import Groups
from .communicator import as_given, kept_for

__all__ = [
    "all_reduce_tensors",
    "reduce_scatter_tensors",
    "all_gather_tensors",
    "all_to_all_tensors",
]


def _values(tensors, what):
    """The tensors of a list or tuple (itself) or a dict (its values in order). The helpers ask
    only for what is not a list (a repeated call's usual argument calls nothing)."""
    kind = type(tensors)
    if kind is list or kind is tuple or isinstance(tensors, (list, tuple)):
        return tensors
    if isinstance(tensors, dict):
        return list(tensors.values())
    raise TypeError(f"{what} must be a list or a dict of tensors, not {type(tensors).__name__}")


def _by_dtype(tensors):
    """Positions of the tensors per dtype, dtypes in name order (alike on every rank)."""
    out = {}
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"entry {i} is {type(t).__name__}, not a tensor")
        out.setdefault(t.dtype, []).append(i)
    return sorted(out.items(), key=lambda kv: str(kv[0]))


def _check_pairs(ins, outs, in_name, out_name, same_shape=False):
    if len(ins) != len(outs):
        raise ValueError(f"{len(ins)} {in_name} but {len(outs)} {out_name}")
    for i, (a, b) in enumerate(zip(ins, outs)):
        if a.dtype != b.dtype:
            raise TypeError(f"{out_name} entry {i} is {b.dtype} but its input is {a.dtype}")
        if same_shape and a.shape != b.shape:
            raise ValueError(
                f"{out_name} entry {i} has shape {tuple(b.shape)}, not {tuple(a.shape)}"
            )


def _blocks(t, active, what, i):
    """`t` as (active, -1) blocks."""
    if what == "outputs" and not t.is_contiguous():
        raise ValueError(f"{what} entry {i} is not contiguous; the blocks are written in place")
    if t.numel() % active:
        raise ValueError(
            f"{what} entry {i} has {t.numel()} elements, not a multiple of the {active} active "
            f"ranks per group"
        )
    return t.reshape(active, t.numel() // active)


def _grow_all(comm, hold, wants):
    """Every flat buffer of a fused call, before anything in it can raise: growing is a round of
    every rank, so a rank that refuses the call must have grown as its peers did. `wants`:
    [(dtype, {role: elements})] in the call's order; returns [{role: view, or None where this
    rank helps (hold False)}]."""
    return [
        {role: comm.flat_buffer(role, dtype, n, hold) for role, n in roles.items()}
        for dtype, roles in wants
    ]


_PLANS_KEPT = 256  # fused call structures a communicator keeps the plans of (the oldest goes)


class _Step:
    """One dtype's part of a fused call: its per-group counts and dtype, and either the call's
    send and recv views of the flat buffers (None where this rank helps) and the copies around
    the call: pack [(flat view, input index, width)] before, unpack [(flat view, output index,
    width)] after (width None: the flat view is shaped as the tensor; else the tensor is read or
    written as (A, width) blocks, block k from or to the flat view's row k); or, where the dtype
    has one tensor, `direct`: (its index, whether its input and its output are contiguous): the
    call runs on the caller's tensors themselves (a contiguous copy of one that is not), whose
    layout is the flat buffer's, with no flat buffer and no copy. `last`: (send's and recv's
    places, the Communicator's _Prepared call on them) of the step's last call: the plan fixes
    everything else the call's key holds (sizes, dtypes, devices, contiguity, groups, counts,
    op, options), so a call on tensors at the same places is that call again."""

    __slots__ = ("dtype", "counts", "send", "recv", "pack", "unpack", "direct", "last")

    def __init__(self, dtype, counts, send=None, recv=None, pack=(), unpack=(), direct=None):
        self.dtype, self.counts = dtype, counts
        self.send, self.recv, self.pack, self.unpack = send, recv, pack, unpack
        self.direct = direct
        self.last = None

    def prepared(self, comm, packing, send, recv, g, op, options):
        """The Communicator's _Prepared call of this step on `send` and `recv` (None on a
        helper): the last call's where they lie where its did, else asked of the Communicator
        (its key, its checks)."""
        sp = 0 if send is None else send.data_ptr()
        rp = 0 if recv is None else recv.data_ptr()
        last = self.last
        if last is not None and last[0] == sp and last[1] == rp:
            return last[2]
        p = comm._prepared_of(packing.collective, send, recv, g, self.counts, op, options,
                              packing.first_name, self.dtype)
        self.last = (sp, rp, p)
        return p


def _plan(comm, packing, ins, outs, g, active, hold):
    """The steps of a fused call, after the flat buffers grew (every rank, alike) and this
    rank's checks of its tensors passed (which raise). A dtype of one tensor (alike on every
    rank: every rank passes the same structure) has no flat buffer."""
    per = [(dtype, idx, packing.count(ins, idx, active)) for dtype, idx in _by_dtype(ins)]
    bufs = iter(_grow_all(comm, hold, [(d, packing.buffers(n, active))
                                       for d, idx, n in per if len(idx) > 1]))
    if outs is not None:
        _check_pairs(ins, outs, packing.inputs, packing.outputs, packing.same_shape)
    for _, idx, _ in per if hold else ():
        packing.check(ins, outs, idx, active)
    written = outs if outs is not None else ins
    steps = []
    for dtype, idx, count in per:
        counts = [count] * g.count
        if not hold:
            steps.append(_Step(dtype, counts))
            if len(idx) > 1:
                next(bufs)
            continue
        if len(idx) == 1:
            i = idx[0]
            steps.append(_Step(None, counts, direct=(i, ins[i].is_contiguous(),
                                                     written[i].is_contiguous())))
            continue
        send, recv, pack, unpack = packing.moves(comm, g, next(bufs), ins, outs, idx, count,
                                                 active)
        steps.append(_Step(None, counts, send, recv, pack, unpack))
    return steps


def _direct(comm, packing, step, ins, outs, g, op, options):
    """A one-tensor step: the call on the caller's input and output (the input itself for an
    all-reduce in place), each a contiguous copy where it is not contiguous (copied back)."""
    i, in_contiguous, out_contiguous = step.direct
    t = ins[i]
    send = t if in_contiguous else t.contiguous()
    target = outs[i] if outs is not None else None
    if target is None:  # all-reduce in place: the input is the output
        comm._run_prepared(step.prepared(comm, packing, send, None, g, op, options))
        if not in_contiguous:
            t.copy_(send)
        return
    recv = target if out_contiguous else torch.empty_like(target,
                                                          memory_format=torch.contiguous_format)
    comm._run_prepared(step.prepared(comm, packing, send, recv, g, op, options))
    if not out_contiguous:
        target.copy_(recv)


def _fused(comm, packing, ins, outs, groups, op, options, async_op, result):
    """The fused helpers' one skeleton: per dtype (in name order, alike on every rank) the flat
    buffers grown, this rank's outputs checked, then one call across every group, its tensors
    copied into and out of the flat buffers as `packing` lays them out (a helper calls with no
    tensors). The layout is kept per call structure (the tensors' shapes, dtypes, devices and
    contiguity, the groups, op and options) until a flat buffer grows: a repeated call copies
    and calls, its checks' results known. A repeated call that is one call and nothing else
    (one dtype, one contiguous tensor; or on a helper) is that one call (with async_op: that
    one async call); with async_op anything else runs on the communicator's operation stream
    (relay.torch.work), its steps between two marks. An error of its own checks refuses the
    call its peers make now, so they fail at once (Communicator.refuse leaves alone one refused
    or reported already). Returns `result`.

    The call's structure is compared with the last fused call's (comm._flat.last: that call's
    as it was, and its plan) before its key is made and looked up."""
    flat = comm._flat
    call = key = plan = None
    try:
        # What the plan depends on of the tensors: each one's shape, dtype, device and contiguity
        # (its data is copied afresh on every call, wherever it lies).
        call = (packing.key,
                tuple([(t.shape, t.dtype, t.device, t.is_contiguous()) for t in ins]),
                None if outs is None else tuple([(t.shape, t.dtype, t.device, t.is_contiguous())
                                                 for t in outs]),
                groups, op, options)
        plan = kept_for(flat.last, call)
        if plan is None:
            key = (call[0], call[1], call[2],
                   groups.key if type(groups) is Groups else tuple(map(tuple, groups)), op,
                   options)
            kept = flat.plans.get(key)
            if kept is not None:
                flat.last = kept
                plan = kept[1]
    except (AttributeError, TypeError):  # the checks of the plan say what is wrong
        key = None
    if plan is not None and plan[3]:  # one call, on the caller's tensors or none
        g, _, (step,), _ = plan
        send = recv = None
        if step.direct is not None:
            i = step.direct[0]
            send, recv = ins[i], outs[i] if outs is not None else None
        if async_op:
            return comm._ops.run(comm, step.prepared(comm, packing, send, recv, g, op, options),
                                 result, (send, recv), None)
        if comm._ops.pending:
            comm._ops.join(comm)
        try:
            comm._run_prepared(step.prepared(comm, packing, send, recv, g, op, options))
        except Exception as e:
            raise comm.refuse(e) from None
        return result
    if async_op:
        ins, outs = list(ins), None if outs is None else list(outs)  # held as they are now

        def run():
            try:
                _steps(comm, packing,
                       plan or _planned(comm, packing, ins, outs, groups, call, key), ins, outs,
                       op, options)
            except Exception as e:
                raise comm.refuse(e) from None
            return result

        return comm._ops.run_steps(comm, run, (ins, outs))
    if comm._ops.pending:
        comm._ops.join(comm)
    try:
        _steps(comm, packing, plan or _planned(comm, packing, ins, outs, groups, call, key), ins,
               outs, op, options)
    except Exception as e:
        raise comm.refuse(e) from None
    return result


def _planned(comm, packing, ins, outs, groups, call, key):
    """A fused call's plan (its groups, the ranks per group, its steps, and whether it is one
    call and nothing else: one step, on contiguous tensors of the caller's or, where this rank
    helps, none), kept under `key` (None: not kept) with `call` (_fused's tuple) as the next
    call compares with it."""
    g = comm.groups(groups)
    group, _ = g.group_of(comm.rank)
    active = len(g.groups[group if group is not None else 0])
    steps = _plan(comm, packing, ins, outs, g, active, group is not None)
    one = len(steps) == 1 and (all(steps[0].direct[1:]) if steps[0].direct is not None
                               else steps[0].send is None and steps[0].recv is None)
    plan = g, active, steps, one
    if key is not None:
        flat = comm._flat
        plans = flat.plans
        if len(plans) >= _PLANS_KEPT:
            del plans[next(iter(plans))]
        given = as_given(groups, None)
        compared = None if given is None else call[:3] + given[:1] + call[4:]
        flat.last = plans[key] = (compared, plan)
    return plan


def _steps(comm, packing, plan, ins, outs, op, options):
    """A fused call's steps on the current stream, by its plan."""
    g, active, steps, _ = plan
    written = outs if outs is not None else ins
    for step in steps:
        if step.direct is not None:
            _direct(comm, packing, step, ins, outs, g, op, options)
            continue
        if step.send is None and step.recv is None:
            comm._run_prepared(step.prepared(comm, packing, None, None, g, op, options))
            continue
        for view, i, width in step.pack:
            t = ins[i]
            view.copy_(t if width is None else t.reshape(active, width))
        comm._run_prepared(step.prepared(comm, packing, step.send, step.recv, g, op, options))
        for view, i, width in step.unpack:
            t = written[i]
            (t if width is None else t.view(active, width)).copy_(view)


# ---- what each collective packs ------------------------------------------------------------


class _Packing:
    """What one fused collective does per dtype, for the skeleton (_fused): the flat call's
    per-group count (count) and buffers by role (buffers), this rank's outputs checked against
    its inputs (check), where each tensor goes in the flat buffers (moves: the call's send and
    recv views and the copies before and after it), and the Communicator's call (collective,
    and first_name: its method's name of its first tensor, for its messages).

    inputs, outputs: what the helper's messages call its lists; same_shape: whether an output is
    shaped as its input; key: what tells its plans apart from another collective's."""

    inputs = outputs = None
    same_shape = False
    first_name = "input"

    def __init__(self):
        self.key = type(self).__name__

    def check(self, ins, outs, idx, active):
        pass


def _whole(flat, tensors, idx, at=0):
    """[(view of flat shaped as tensor i, i, None)], the tensors of `idx` one after another from
    element `at`."""
    moves = []
    for i in idx:
        n = tensors[i].numel()
        moves.append((flat[at : at + n].view(tensors[i].shape), i, None))
        at += n
    return moves


def _blocked(flat2d, tensors, idx, active, what):
    """[(flat2d's columns of tensor i's blocks, i, width)], the tensors of `idx` side by side."""
    moves, at = [], 0
    for i in idx:
        w = _blocks(tensors[i], active, what, i).shape[1]
        moves.append((flat2d[:, at : at + w], i, w))
        at += w
    return moves


class _AllReduce(_Packing):
    """Each tensor whole: the flat input holds them in order, and so does the output (in place:
    the input)."""

    inputs, outputs, same_shape = "tensors", "out", True
    collective, first_name = "allreduce", "tensor"

    def __init__(self, out_given):
        self.roles = ("input", "output") if out_given else ("input",)
        self.key = ("allreduce", len(self.roles))

    def count(self, ins, idx, active):
        return sum(ins[i].numel() for i in idx)

    def buffers(self, count, active):
        return dict.fromkeys(self.roles, count)

    def moves(self, comm, g, buf, ins, outs, idx, count, active):
        send, recv = buf["input"], buf.get("output")
        return (send, recv, _whole(send, ins, idx),
                _whole(recv if recv is not None else send, outs if outs is not None else ins, idx))


class _ReduceScatter(_Packing):
    """Inputs of A blocks: block k of every input goes to block k of the flat input; the flat
    output holds each output (one block) in order."""

    inputs, outputs, same_shape = "inputs", "outputs", False
    collective = "reduce-scatter"

    def count(self, ins, idx, active):
        return sum(_blocks(ins[i], active, "inputs", i).shape[1] for i in idx)

    def buffers(self, count, active):
        return {"input": active * count, "output": count}

    def check(self, ins, outs, idx, active):
        for i in idx:
            if outs[i].numel() * active != ins[i].numel():
                raise ValueError(
                    f"outputs entry {i} has {outs[i].numel()} elements; its input's block has "
                    f"{ins[i].numel() // active}"
                )

    def moves(self, comm, g, buf, ins, outs, idx, count, active):
        send, recv = buf["input"], buf["output"]
        return (send, recv, _blocked(send.view(active, count), ins, idx, active, "inputs"),
                _whole(recv, outs, idx))


class _AllGather(_Packing):
    """The flat input holds the inputs in order (in place: this rank's block of the flat
    output); block k of the flat output goes to block k of every output."""

    inputs, outputs, same_shape = "inputs", "outputs", False
    collective = "all-gather"

    def __init__(self, in_place):
        self.in_place = in_place
        self.key = ("all-gather", in_place)

    def count(self, ins, idx, active):
        return sum(ins[i].numel() for i in idx)

    def buffers(self, count, active):
        if self.in_place:
            return {"output": active * count}
        return {"output": active * count, "input": count}

    def check(self, ins, outs, idx, active):
        for i in idx:
            if _blocks(outs[i], active, "outputs", i).shape[1] != ins[i].numel():
                raise ValueError(
                    f"outputs entry {i} has {outs[i].numel()} elements; {active} blocks of its "
                    f"input's {ins[i].numel()} are {active * ins[i].numel()}"
                )

    def moves(self, comm, g, buf, ins, outs, idx, count, active):
        recv = buf["output"]
        if self.in_place:
            at = comm.layout("all-gather", g, [count] * g.count).in_place_input_offset
            send = recv[at : at + count]
        else:
            send = buf["input"]
        return (send, recv, _whole(send, ins, idx),
                _blocked(recv.view(active, count), outs, idx, active, "outputs"))


class _AllToAll(_Packing):
    """Inputs and outputs of A segments: segment j of every input goes to segment j of the flat
    input, and segment j of the flat output to segment j of every output."""

    inputs, outputs, same_shape = "inputs", "outputs", False
    collective = "all-to-all"

    def count(self, ins, idx, active):
        return sum(_blocks(ins[i], active, "inputs", i).shape[1] for i in idx)

    def buffers(self, count, active):
        return {"input": active * count, "output": active * count}

    def check(self, ins, outs, idx, active):
        for i in idx:
            if _blocks(outs[i], active, "outputs", i).shape != (active, ins[i].numel() // active):
                raise ValueError(
                    f"outputs entry {i} has {outs[i].numel()} elements, not {ins[i].numel()}"
                )

    def moves(self, comm, g, buf, ins, outs, idx, count, active):
        send, recv = buf["input"], buf["output"]
        return (send, recv, _blocked(send.view(active, count), ins, idx, active, "inputs"),
                _blocked(recv.view(active, count), outs, idx, active, "outputs"))


# One of each: a packing holds no call's state.
_ALL_REDUCE = {False: _AllReduce(False), True: _AllReduce(True)}  # by whether `out` is given
_REDUCE_SCATTER = _ReduceScatter()
_ALL_GATHER = {False: _AllGather(False), True: _AllGather(True)}  # by in_place
_ALL_TO_ALL = _AllToAll()


# ---- the helpers -----------------------------------------------------------------------------


def all_reduce_tensors(comm, tensors, groups, op="sum", out=None, options=None, *,
                       async_op=False):
    """Allreduce of every tensor of `tensors` (a list or a dict) within each group: in place, or
    into `out` (the same structure). Returns what was written (`out` or `tensors`); with
    async_op, a relay.torch.work.Work whose result that is (as for every helper here).
    `options`: a call's options (relay.torch.Options), as the Communicator methods take them."""
    ins = tensors if type(tensors) is list else _values(tensors, "tensors")
    outs = None if out is None else out if type(out) is list else _values(out, "out")
    return _fused(comm, _ALL_REDUCE[outs is not None], ins, outs, groups, op, options, async_op,
                  out if out is not None else tensors)


def reduce_scatter_tensors(comm, inputs, outputs, groups, op="sum", options=None, *,
                           async_op=False):
    """Reduce-scatter of every input (A blocks each) into its output (one block) within each
    group. Returns `outputs`."""
    ins = inputs if type(inputs) is list else _values(inputs, "inputs")
    outs = outputs if type(outputs) is list else _values(outputs, "outputs")
    return _fused(comm, _REDUCE_SCATTER, ins, outs, groups, op, options, async_op, outputs)


def all_gather_tensors(comm, inputs, outputs, groups, in_place=False, options=None, *,
                       async_op=False):
    """All-gather of every input into its output (A blocks: block k from active rank k) within
    each group. in_place packs the inputs straight into this rank's block of the flat output
    (the kernel's in-place path). Returns `outputs`."""
    ins = inputs if type(inputs) is list else _values(inputs, "inputs")
    outs = outputs if type(outputs) is list else _values(outputs, "outputs")
    return _fused(comm, _ALL_GATHER[bool(in_place)], ins, outs, groups, None, options, async_op,
                  outputs)


def all_to_all_tensors(comm, inputs, outputs, groups, options=None, *, async_op=False):
    """All-to-all of every input (A segments: segment j to active rank j) into its output (A
    segments: segment j from active rank j) within each group; out of place. Returns
    `outputs`."""
    ins = inputs if type(inputs) is list else _values(inputs, "inputs")
    outs = outputs if type(outputs) is list else _values(outputs, "outputs")
    return _fused(comm, _ALL_TO_ALL, ins, outs, groups, None, options, async_op, outputs)

"""torchrec-style fused calls: many tensors of several dtypes, one relay call per dtype across
every group (the spec's sharded_relay_utils.py, over relay.torch.Communicator).

    grads = {name: p.grad for name, p in model.named_parameters()}
    relay.torch.all_reduce_tensors(comm, grads, [[0, 1], [2, 3], [4, 5], [6, 7]], op="avg")

Per dtype: the tensors are packed in order into one flat buffer (cached by the communicator,
grown only, registered when grown), ONE call runs across all groups, and the result is unpacked
into the caller's tensors. Growing registers memory, which is collective, so every rank asks for
the same buffer sizes in the same order, helpers too (they hold none): every rank passes the
same structure (the same tensors' shapes and dtypes, `out` given or not, `in_place`). The
growth of every dtype's buffers depends on the inputs alone and comes before any check of the
outputs, so a rank whose outputs are wrong still takes part in it and then refuses the call: its
peers fail at once. Every group's ranks hold tensors of the same shapes (replicas), so each
group's count is this rank's total. A rank active in no group (single mode) passes its
tensors too, as templates: they are never read or written.

Each takes `options` (relay.torch.Options), as the Communicator methods do: by default every call
takes the route the cost model predicts fastest (a group of every rank: the direct route).

Reduce-scatter and all-to-all inputs (and all-gather and all-to-all outputs) hold A blocks, one
per active rank (A = the ranks per group): each tensor is split into A equal blocks, and block k
of every tensor goes to the flat buffer's block k.
"""

import torch

from .work import launch

__all__ = [
    "all_reduce_tensors",
    "reduce_scatter_tensors",
    "all_gather_tensors",
    "all_to_all_tensors",
]


def _items(tensors, what):
    """(keys, list): a dict's keys in order, or positions of a list."""
    if isinstance(tensors, dict):
        return list(tensors.keys()), list(tensors.values())
    if isinstance(tensors, (list, tuple)):
        return list(range(len(tensors))), list(tensors)
    raise TypeError(f"{what} must be a list or a dict of tensors, not {type(tensors).__name__}")


def _by_dtype(tensors):
    """Positions of the tensors per dtype, dtypes in name order (alike on every rank)."""
    out = {}
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"entry {i} is {type(t).__name__}, not a tensor")
        out.setdefault(t.dtype, []).append(i)
    return sorted(out.items(), key=lambda kv: str(kv[0]))


def _check_pairs(ins, outs, in_name, out_name):
    if len(ins) != len(outs):
        raise ValueError(f"{len(ins)} {in_name} but {len(outs)} {out_name}")
    for i, (a, b) in enumerate(zip(ins, outs)):
        if a.dtype != b.dtype:
            raise TypeError(f"{out_name} entry {i} is {b.dtype} but its input is {a.dtype}")


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


def _input_blocks(ins, idx, active):
    """The inputs `idx` as A blocks each, and the per-group count they add up to."""
    blocks = [_blocks(ins[i], active, "inputs", i) for i in idx]
    return blocks, sum(b.shape[1] for b in blocks)


def _run_fused(comm, run, async_op=False, tensors=()):
    """Runs a fused helper (packing, the calls, unpacking; with async_op on the communicator's
    operation stream, relay.torch.work): an error of its own checks refuses the call the peers
    make now, so they fail at once (Communicator.refuse leaves alone one refused or reported
    already)."""

    def guarded():
        try:
            return run()
        except Exception as e:
            raise comm.refuse(e) from None

    return launch(comm, guarded, tensors, async_op)


def _active(comm, groups):
    g = comm.groups(groups)
    group, _ = g.group_of(comm.rank)
    return g, group, len(g.groups[group if group is not None else 0])


def _grow_all(comm, hold, wants):
    """Every flat buffer of a fused call, before anything in it can raise: growing is a round of
    every rank, so a rank that refuses the call must have grown as its peers did. `wants`:
    [(dtype, {role: elements})] in the call's order; returns [{role: view, or None where this
    rank helps (hold False)}]."""
    return [
        {role: comm.flat_buffer(role, dtype, n, hold) for role, n in roles.items()}
        for dtype, roles in wants
    ]


def all_reduce_tensors(comm, tensors, groups, op="sum", out=None, options=None, *,
                       async_op=False):
    """Allreduce of every tensor of `tensors` (a list or a dict) within each group: in place, or
    into `out` (the same structure). Returns what was written (`out` or `tensors`); with
    async_op, a relay.torch.work.Work whose result that is (as for every helper here).
    `options`: a call's options (relay.torch.Options), as the Communicator methods take them."""
    keys, ins = _items(tensors, "tensors")
    outs = _items(out, "out")[1] if out is not None else None
    g, group, _ = _active(comm, groups)
    hold = group is not None

    def run():
        per = [(dtype, idx, sum(ins[i].numel() for i in idx)) for dtype, idx in _by_dtype(ins)]
        roles = ("input", "output") if outs is not None else ("input",)
        bufs = _grow_all(comm, hold, [(d, dict.fromkeys(roles, n)) for d, _, n in per])
        if outs is not None:
            _check_pairs(ins, outs, "tensors", "out")
            for i, (a, b) in enumerate(zip(ins, outs)):
                if a.shape != b.shape:
                    raise ValueError(f"out entry {i} has shape {tuple(b.shape)}, not {tuple(a.shape)}")
        for (dtype, idx, total), buf in zip(per, bufs):
            if not hold:
                comm.all_reduce(None, g, op, counts=[total] * g.count, dtype=dtype,
                                options=options)
                continue
            flat, dst = buf["input"], buf.get("output")
            _pack(flat, [ins[i] for i in idx])
            comm.all_reduce(flat, g, op, out=dst, counts=[total] * g.count, options=options)
            _unpack(dst if dst is not None else flat, [(outs or ins)[i] for i in idx])
        return out if out is not None else tensors

    return _run_fused(comm, run, async_op, (ins, outs))


def reduce_scatter_tensors(comm, inputs, outputs, groups, op="sum", options=None, *,
                           async_op=False):
    """Reduce-scatter of every input (A blocks each) into its output (one block) within each
    group. Returns `outputs`."""
    _, ins = _items(inputs, "inputs")
    _, outs = _items(outputs, "outputs")
    g, group, active = _active(comm, groups)
    hold = group is not None

    def run():
        per = [(dtype, idx, *_input_blocks(ins, idx, active)) for dtype, idx in _by_dtype(ins)]
        wants = [(d, {"input": active * n, "output": n}) for d, _, _, n in per]
        bufs = _grow_all(comm, hold, wants)
        _check_pairs(ins, outs, "inputs", "outputs")
        for _, idx, blocks, _ in per if hold else ():
            for i, b in zip(idx, blocks):
                if outs[i].numel() != b.shape[1]:
                    raise ValueError(
                        f"outputs entry {i} has {outs[i].numel()} elements; its input's block "
                        f"has {b.shape[1]}"
                    )
        for (dtype, idx, blocks, total), buf in zip(per, bufs):
            if not hold:
                comm.reduce_scatter(None, None, g, op, counts=[total] * g.count, dtype=dtype,
                                    options=options)
                continue
            src, dst = buf["input"], buf["output"]
            _pack_blocks(src.view(active, total), blocks)
            comm.reduce_scatter(src, dst, g, op, counts=[total] * g.count, options=options)
            _unpack(dst, [outs[i] for i in idx])
        return outputs

    return _run_fused(comm, run, async_op, (ins, outs))


def all_gather_tensors(comm, inputs, outputs, groups, in_place=False, options=None, *,
                       async_op=False):
    """All-gather of every input into its output (A blocks: block k from active rank k) within
    each group. in_place packs the inputs straight into this rank's block of the flat output
    (the kernel's in-place path). Returns `outputs`."""
    _, ins = _items(inputs, "inputs")
    _, outs = _items(outputs, "outputs")
    g, group, active = _active(comm, groups)
    hold = group is not None

    def run():
        per = [(dtype, idx, sum(ins[i].numel() for i in idx)) for dtype, idx in _by_dtype(ins)]
        wants = [(d, {"output": active * n} if in_place else {"output": active * n, "input": n})
                 for d, _, n in per]
        bufs = _grow_all(comm, hold, wants)
        _check_pairs(ins, outs, "inputs", "outputs")
        out_blocks = []
        for _, idx, _ in per if hold else ():
            blocks = [_blocks(outs[i], active, "outputs", i) for i in idx]
            for i, b in zip(idx, blocks):
                if b.shape[1] != ins[i].numel():
                    raise ValueError(
                        f"outputs entry {i} has {outs[i].numel()} elements; {active} blocks of "
                        f"its input's {ins[i].numel()} are {active * ins[i].numel()}"
                    )
            out_blocks.append(blocks)
        if not hold:
            for dtype, _, total in per:
                comm.all_gather(None, None, g, counts=[total] * g.count, dtype=dtype,
                                options=options)
            return outputs
        for (dtype, idx, total), buf, blocks in zip(per, bufs, out_blocks):
            dst = buf["output"]
            if in_place:
                at = comm.layout("all-gather", g, [total] * g.count).in_place_input_offset
                src = dst[at : at + total]
            else:
                src = buf["input"]
            _pack(src, [ins[i] for i in idx])
            comm.all_gather(src, dst, g, counts=[total] * g.count, options=options)
            _unpack_blocks(dst.view(active, total), blocks)
        return outputs

    return _run_fused(comm, run, async_op, (ins, outs))


def all_to_all_tensors(comm, inputs, outputs, groups, options=None, *, async_op=False):
    """All-to-all of every input (A segments: segment j to active rank j) into its output (A
    segments: segment j from active rank j) within each group; out of place. Returns
    `outputs`."""
    _, ins = _items(inputs, "inputs")
    _, outs = _items(outputs, "outputs")
    g, group, active = _active(comm, groups)
    hold = group is not None

    def run():
        per = [(dtype, idx, *_input_blocks(ins, idx, active)) for dtype, idx in _by_dtype(ins)]
        wants = [(d, {"input": active * n, "output": active * n}) for d, _, _, n in per]
        bufs = _grow_all(comm, hold, wants)
        _check_pairs(ins, outs, "inputs", "outputs")
        out_blocks = []
        for _, idx, blocks, _ in per if hold else ():
            ob = [_blocks(outs[i], active, "outputs", i) for i in idx]
            for i, a, b in zip(idx, blocks, ob):
                if a.shape != b.shape:
                    raise ValueError(
                        f"outputs entry {i} has {outs[i].numel()} elements, not {ins[i].numel()}"
                    )
            out_blocks.append(ob)
        if not hold:
            for dtype, _, _, total in per:
                comm.all_to_all(None, None, g, counts=[total] * g.count, dtype=dtype,
                                options=options)
            return outputs
        for (dtype, idx, blocks, total), buf, ob in zip(per, bufs, out_blocks):
            src, dst = buf["input"], buf["output"]
            _pack_blocks(src.view(active, total), blocks)
            comm.all_to_all(src, dst, g, counts=[total] * g.count, options=options)
            _unpack_blocks(dst.view(active, total), ob)
        return outputs

    return _run_fused(comm, run, async_op, (ins, outs))


# ---- packing: one copy per tensor into views of the flat buffer ------------------------------


def _pack(flat, tensors):
    at = 0
    for t in tensors:
        n = t.numel()
        flat[at : at + n].view(t.shape).copy_(t)
        at += n


def _unpack(flat, tensors):
    at = 0
    for t in tensors:
        n = t.numel()
        t.copy_(flat[at : at + n].view(t.shape))
        at += n


def _pack_blocks(flat2d, blocks):
    at = 0
    for b in blocks:
        w = b.shape[1]
        flat2d[:, at : at + w].copy_(b)
        at += w


def _unpack_blocks(flat2d, blocks):
    at = 0
    for b in blocks:
        w = b.shape[1]
        b.copy_(flat2d[:, at : at + w])
        at += w

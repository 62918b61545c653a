"""At least 1,000 random relay calls over the shm transport on 8 processes, every output compared
bit for bit with torch.distributed's gloo collective on the same processes (reference.py): all
four collectives, A=2 and 4, fused and single, counts 0, 1, odd and a few thousand, float32,
float16, bfloat16, int32 and int64, sum and avg, in and out of place, single calls and the fused
helpers (several tensors and dtypes in one call per dtype). Outputs are poisoned before each
call; the inputs of out-of-place calls and the tensors helpers pass must come back unchanged.

RELAY_PY_SEED and RELAY_PY_CALLS change the seed and the number of calls; a failure names both.
"""

import os
import random

import torch

import reference as ref
from world import assert_all_ok, run_world

SEED = int(os.environ.get("RELAY_PY_SEED", "20261201"))
CALLS = int(os.environ.get("RELAY_PY_CALLS", "1100"))


def _count(rng):
    r = rng.random()
    if r < 0.06:
        return 0
    if r < 0.16:
        return 1
    if r < 0.55:
        return rng.randrange(3, 200, 2)  # odd
    if r < 0.80:
        return rng.randrange(200, 1000)
    return rng.randrange(1000, 4000)


class Checker:
    def __init__(self, rank, seed):
        self.rank, self.seed, self.failures, self.call = rank, seed, [], 0

    def equal(self, what, got, want):
        if got.dtype != want.dtype or got.shape != want.shape:
            self.fail(f"{what}: {got.dtype}{tuple(got.shape)}, want {want.dtype}{tuple(want.shape)}")
            return
        if not torch.equal(got, want):
            bad = (got != want).nonzero().flatten()
            i = int(bad[0])
            self.fail(
                f"{what}: {bad.numel()} of {got.numel()} elements differ, first [{i}] = "
                f"{got.flatten()[i].item()}, want {want.flatten()[i].item()}"
            )

    def fail(self, text):
        self.failures.append(f"seed {self.seed} call {self.call} rank {self.rank}: {text}")


def _single_call(comm, rng, gen, rank, groups, pgs, check, dev):
    coll = rng.choice(ref.COLLECTIVES)
    dtype = rng.choice(ref.DTYPES)
    op = rng.choice(["sum", "avg"]) if coll in ("allreduce", "reduce-scatter") else None
    counts = [_count(rng) for _ in groups]
    if len(groups) > 1 and rng.random() < 0.3:
        counts = [counts[0]] * len(groups)  # equal counts: the active ranks may leave them out
    in_place = coll != "all-to-all" and rng.random() < 0.4
    helper_templates = rng.random() < 0.5
    omit_counts = len(set(counts)) == 1 and rng.random() < 0.5
    desc = f"{coll} {op or ''} {dtype} groups={groups} counts={counts} in_place={in_place}"
    me = next((g for g, members in enumerate(groups) if rank in members), None)
    kw = {} if op is None else {"op": op}
    if me is None:  # a helper: None, or templates that must stay untouched
        if helper_templates:
            t = ref.make_input(dtype, 5, gen).to(dev)
            keep = t.clone()
            _call(comm, coll, t, t if coll != "allreduce" else None, groups, counts, kw)
            check.equal(f"{desc}: the helper's tensor", t, keep)
        else:
            _call(comm, coll, None, None, groups, counts, kw, dtype=dtype)
        return desc
    members = groups[me]
    active, k, n = len(members), members.index(rank), counts[me]
    in_el, out_el = ref.io_elements(coll, active, n)
    saved = ref.make_input(dtype, in_el, gen)
    x = saved.to(dev, copy=True)
    c = None if omit_counts else counts
    if not in_place:
        out = ref.poison_like(dtype, out_el).to(dev)
        if coll == "allreduce":
            comm.all_reduce(x, groups, op, out=out, counts=c)
        else:
            _call(comm, coll, x, out, groups, c, kw)
        check.equal(f"{desc}: the input", x.cpu(), saved)
        got = out
    elif coll == "allreduce":
        comm.all_reduce(x, groups, op, counts=c)
        got = x
    elif coll == "reduce-scatter":
        got = x[k * n : (k + 1) * n]
        comm.reduce_scatter(x, got, groups, op, counts=c)
    else:  # all-gather in place: the input is this rank's slot of the output
        buf = ref.poison_like(dtype, out_el).to(dev)
        buf[k * n : (k + 1) * n] = x
        comm.all_gather(buf[k * n : (k + 1) * n], buf, groups, counts=c)
        got = buf
    want = ref.reference(coll, op, saved, members, pgs[tuple(sorted(members))], dtype)
    check.equal(desc, got.cpu(), want)
    return desc


def _call(comm, coll, x, out, groups, counts, kw, dtype=None):
    if coll == "allreduce":
        return comm.all_reduce(x, groups, out=out, counts=counts, dtype=dtype, **kw)
    fn = {"reduce-scatter": comm.reduce_scatter, "all-gather": comm.all_gather,
          "all-to-all": comm.all_to_all}[coll]
    return fn(x, out, groups, counts=counts, dtype=dtype, **kw)


def _fused_call(comm, rng, gen, rank, groups, pgs, check, dev):
    import relay.torch as rt

    coll = rng.choice(ref.COLLECTIVES)
    op = rng.choice(["sum", "avg"]) if coll in ("allreduce", "reduce-scatter") else None
    active = len(groups[0])
    # Shapes alike on every rank (replicas); data of this rank's own.
    specs = []
    for _ in range(rng.randint(1, 5)):
        dtype = rng.choice(ref.DTYPES)
        m = 0 if rng.random() < 0.05 else rng.randint(1, 300)
        specs.append((dtype, m))
    keyed = rng.random() < 0.5
    in_place = rng.random() < 0.5
    desc = f"fused {coll} {op or ''} groups={groups} tensors={specs} in_place={in_place}"
    me = next((g for g, members in enumerate(groups) if rank in members), None)
    ins, outs = [], []
    for dtype, m in specs:
        in_el, out_el = ref.io_elements(coll, active, m)
        ins.append(ref.make_input(dtype, in_el, gen))
        outs.append(ref.poison_like(dtype, out_el))
    saved = ins
    saved_outs = outs
    ins = [t.to(dev, copy=True) for t in ins]
    outs = [t.to(dev, copy=True) for t in outs]
    wrap = (lambda ts: {f"t{i}": t for i, t in enumerate(ts)}) if keyed else list
    opk = {} if op is None else {"op": op}
    if coll == "allreduce":
        rt.all_reduce_tensors(comm, wrap(ins), groups, out=None if in_place else wrap(outs), **opk)
    elif coll == "reduce-scatter":
        rt.reduce_scatter_tensors(comm, wrap(ins), wrap(outs), groups, **opk)
    elif coll == "all-gather":
        rt.all_gather_tensors(comm, wrap(ins), wrap(outs), groups, in_place=in_place)
    else:
        rt.all_to_all_tensors(comm, wrap(ins), wrap(outs), groups)
    if me is None:
        for i in range(len(specs)):
            check.equal(f"{desc}: helper input {i}", ins[i].cpu(), saved[i])
            check.equal(f"{desc}: helper output {i}", outs[i].cpu(), saved_outs[i])
        return desc
    members = groups[me]
    pg = pgs[tuple(sorted(members))]
    for i, (dtype, _) in enumerate(specs):
        want = ref.reference(coll, op, saved[i], members, pg, dtype)
        if coll == "allreduce" and in_place:
            check.equal(f"{desc}: tensor {i}", ins[i].cpu(), want)
        else:
            check.equal(f"{desc}: tensor {i}", outs[i].cpu(), want)
            check.equal(f"{desc}: input {i}", ins[i].cpu(), saved[i])
    return desc


def random_calls(rank, size, seed, calls, device="cpu"):
    """The random suite on this rank (a world's worker): (wrong outputs, the forms it ran)."""
    import relay.torch as rt

    groupings = ref.layouts(size, seed)
    pgs = ref.subgroups(groupings)
    dev = torch.device(device)
    comm = rt.Communicator(device=dev, timeout=30, transport_bytes=4 << 20)
    rng = random.Random(seed)  # the call's arguments: alike on every rank
    gen = torch.Generator().manual_seed(seed * 1000 + rank)  # this rank's data
    check = Checker(rank, seed)
    seen = {"fused": 0, "single": 0, "fused-helper": 0}
    for i in range(calls):
        check.call = i
        groups = rng.choice(groupings)
        seen["fused" if len(groups) > 1 else "single"] += 1
        try:
            if rng.random() < 0.2:
                seen["fused-helper"] += 1
                _fused_call(comm, rng, gen, rank, groups, pgs, check, dev)
            else:
                _single_call(comm, rng, gen, rank, groups, pgs, check, dev)
        except Exception as e:
            raise AssertionError(f"seed {seed} call {i} rank {rank}: {type(e).__name__}: {e}") from e
        if len(check.failures) > 20:
            break
    comm.close()
    return check.failures, seen


def test_random_calls_match_gloo():
    results = assert_all_ok(
        run_world(8, random_calls, (SEED, CALLS), timeout=900, env={"RELAY_TIMEOUT": "30"})
    )
    failures = [f for r in sorted(results) for f in results[r][0]]
    seen = results[0][1]
    print(f"seed {SEED}: {CALLS} calls per rank: {seen}")
    assert seen["fused"] > 0 and seen["single"] > 0 and seen["fused-helper"] > 0
    assert not failures, f"seed {SEED}: {len(failures)} wrong outputs:\n" + "\n".join(failures[:40])

"""Random relay calls and their references from torch.distributed's own gloo collectives, run on
the same processes: allreduce on new_group subgroups, reduce-scatter as allreduce plus this rank's
slice (gloo has no reduce-scatter in torch 1.13), all-gather in its list form, all-to-all as
all_to_all_single. Never relay's own reference.

The data are multiples of 1/4 small enough that every sum is exact in every dtype (bfloat16
included), so the references are exact and outputs compare bit for bit; avg divides the exact
sum once by A, as relay's contract says (floats: in float32, then rounded to the dtype; integers:
truncated toward zero). gloo has no bfloat16: its reference runs in float32 on the same values.
"""

import random

import torch
import torch.distributed as dist

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64]
COLLECTIVES = ["allreduce", "reduce-scatter", "all-gather", "all-to-all"]


def layouts(size, seed):
    """The groupings the calls use (fused and single, A=2 and 4), the same on every rank."""
    rng = random.Random(seed)
    out = []
    for active in (2, 4):
        if size % active:
            continue
        for _ in range(3):
            perm = list(range(size))
            rng.shuffle(perm)
            out.append([perm[i : i + active] for i in range(0, size, active)])  # fused
        out.append([list(range(active * g, active * g + active)) for g in range(size // active)])
        for _ in range(3):
            out.append([rng.sample(range(size), active)])  # single: the others help
    return out


def subgroups(groupings):
    """A torch.distributed group per distinct set of ranks (every rank creates every one, in the
    same order, as new_group requires)."""
    made = {}
    for groups in groupings:
        for g in groups:
            key = tuple(sorted(g))
            if key not in made:
                made[key] = dist.new_group(list(key))
    return made


def make_input(dtype, n, gen):
    """n values k/4, |k| <= 16 (integers: |k| <= 64), exact under sums of up to 8 terms."""
    if dtype.is_floating_point:
        return (torch.randint(-16, 17, (n,), generator=gen).to(torch.float32) / 4).to(dtype)
    return torch.randint(-64, 65, (n,), generator=gen).to(dtype)


def poison_like(dtype, n):
    value = -12345 if not dtype.is_floating_point else 1234.5
    return torch.full((n,), value, dtype=dtype)


def _gloo(t):
    """gloo's copy of t: float32 for bfloat16 (the values are exact there), t otherwise."""
    return t.to(torch.float32) if t.dtype == torch.bfloat16 else t.clone()


def _divide(summed, active, dtype):
    if dtype.is_floating_point:
        return (summed.to(torch.float32) / active).to(dtype)
    return torch.div(summed, active, rounding_mode="trunc").to(dtype)


def reference(collective, op, x, group_ranks, pg, dtype):
    """This active rank's expected output through gloo, for input x among group_ranks (relay's
    active order; pg is the subgroup of their sorted ranks)."""
    active = len(group_ranks)
    order = sorted(group_ranks)  # gloo's group order
    if collective in ("allreduce", "reduce-scatter"):
        y = _gloo(x)
        if y.numel():
            dist.all_reduce(y, group=pg)
        y = y.to(dtype)
        if op == "avg":
            y = _divide(y, active, dtype)
        if collective == "reduce-scatter":
            k = group_ranks.index(dist.get_rank())
            n = x.numel() // active
            y = y[k * n : (k + 1) * n]
        return y
    if collective == "all-gather":
        n = x.numel()
        if n == 0:
            return x.new_empty(0)
        parts = [torch.empty(n, dtype=_gloo(x).dtype) for _ in range(active)]
        dist.all_gather(parts, _gloo(x), group=pg)
        by_rank = dict(zip(order, parts))
        return torch.cat([by_rank[r] for r in group_ranks]).to(dtype)
    # all-to-all: relay's segment j goes to active rank j; torch's segment p to sorted rank p.
    n = x.numel() // active
    if n == 0:
        return x.new_empty(0)
    seg = {group_ranks[j]: x[j * n : (j + 1) * n] for j in range(active)}
    send = _gloo(torch.cat([seg[r] for r in order]))
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=pg)
    got = {order[p]: recv[p * n : (p + 1) * n] for p in range(active)}
    return torch.cat([got[r] for r in group_ranks]).to(dtype)


def io_elements(collective, active, n):
    """The element counts of an active rank's input and output in the collective's definition
    (NCCL's): what the test makes its tensors from. Checked against relay.layout, which is the
    library's own rule, in test_capi.py."""
    if collective == "allreduce":
        return n, n
    if collective == "reduce-scatter":
        return active * n, n
    if collective == "all-gather":
        return n, active * n
    return active * n, active * n

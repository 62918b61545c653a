"""torchcomms' sharded-relay example's low-precision case (comms/torchcomms/rcclx/examples/
ShardedRelayCollectives.py, --low-precision) on relay: relay.torchcomms' four
sharded_relay_multi_group_* calls with low_precision=True on 8 processes over shm, one group of
the first A ranks (A = 2 and 4; the others help and pass a placeholder), float32 buffers filled
with the example's constants, every output compared with torch.equal against the constants worked
out by hand (the example compares with torch.allclose; relay's fp8 wire makes them exact: every
transfer carries one constant, whose block arrives bit for bit, and so do the fp32 sums of such
blocks). Each call's work must report the fp8 wire taken (work.wire), else it proves nothing.
Placeholders come back untouched; outputs are poisoned first; inputs of out-of-place calls come
back unchanged.
"""

import os

import torch

from world import assert_all_ok, run_world

ENV = {"RELAY_TIMEOUT": "30"}
# Per-group counts: one of whole 128-element blocks, one not; at them every call takes the fp8
# wire on the route the cost model picks (the test checks work.wire, not this comment).
COUNTS = (1 << 20, (1 << 20) + 77)
POISON = -5.0
PLACEHOLDER = 1234.5


def _fills(op, ai, A, count):
    """The example's stage_call for active rank `ai`: (input, output), the output poisoned."""
    if op == "all_reduce":
        t = torch.full((count,), float(ai + 1))
        return t, t  # in place
    if op == "reduce_scatter":  # block i names its sender (ai) and its destination (i)
        x = torch.cat([torch.full((count,), float((ai + 1) + 100 * (i + 1))) for i in range(A)])
        return x, torch.full((count,), POISON)
    if op == "all_gather":
        return torch.full((count,), float(ai + 1)), torch.full((A * count,), POISON)
    x = torch.cat([torch.full((count,), float((ai + 1) * 10 + (j + 1))) for j in range(A)])
    return x, torch.full((A * count,), POISON)


def _expected(op, ai, A, count):
    """The example's verify_call, worked out by hand."""
    rank_sum = float(A * (A + 1) // 2)
    if op == "all_reduce":
        return torch.full((count,), rank_sum)
    if op == "reduce_scatter":
        return torch.full((count,), rank_sum + 100 * A * (ai + 1))
    if op == "all_gather":
        return torch.cat([torch.full((count,), float(i + 1)) for i in range(A)])
    return torch.cat([torch.full((count,), float((sp + 1) * 10 + (ai + 1))) for sp in range(A)])


def _call(b, op, active, inp, out, count):
    """The example's enqueue_call, with the torchcomms ReduceOp stand-in's name."""
    if op == "all_reduce":
        return b.sharded_relay_multi_group_all_reduce([inp], "sum", [active], [count],
                                                      low_precision=True)
    if op == "reduce_scatter":
        return b.sharded_relay_multi_group_reduce_scatter([inp], [out], "sum", [active], [count],
                                                          low_precision=True)
    if op == "all_gather":
        return b.sharded_relay_multi_group_all_gather([inp], [out], [active], [count],
                                                      low_precision=True)
    return b.sharded_relay_multi_group_all_to_all([inp], [out], [active], [count],
                                                  low_precision=True)


def _example(rank, size):
    """Every call at both widths on this rank: [(what, wire taken, low_precision, failure)]."""
    import torch.distributed as dist
    from relay.torchcomms import TorchCommRelay

    os.environ["TORCHCOMM_RANK"], os.environ["TORCHCOMM_SIZE"] = str(rank), str(size)
    store = dist.PrefixStore("lp", dist.distributed_c10d._get_default_store())
    b = TorchCommRelay.from_environment("cpu", "low_precision", store=store, timeout=30)
    seen = []
    for A in (2, 4):
        active = list(range(A))
        for op in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all"):
            for count in COUNTS:
                what = f"{op} A={A} count={count}"
                if rank in active:
                    ai = active.index(rank)
                    inp, out = _fills(op, ai, A, count)
                    before = inp.clone()
                else:  # a helper: one placeholder for input and output, never touched
                    inp = out = torch.full((1,), PLACEHOLDER)
                work = _call(b, op, active, inp, out, count)
                failure = None
                if rank in active:
                    got = inp if op == "all_reduce" else out
                    want = _expected(op, ai, A, count)
                    if not torch.equal(got, want):
                        wrong = (got != want).nonzero().flatten()
                        i = int(wrong[0])
                        failure = (f"{len(wrong)} of {got.numel()} elements differ, first {i}: "
                                   f"{got[i].item()}, want {want[i].item()}")
                    elif op != "all_reduce" and not torch.equal(inp, before):
                        failure = "the input changed"
                elif inp.item() != PLACEHOLDER:
                    failure = f"the placeholder became {inp.item()}"
                seen.append((what, work.wire.taken, work.low_precision, failure))
    b.finalize()
    return seen


def test_example_low_precision_is_exact_on_8_processes():
    results = assert_all_ok(run_world(8, _example, timeout=300, env=ENV))
    problems = []
    for rank, seen in sorted(results.items()):
        assert len(seen) == 2 * 4 * len(COUNTS)
        for what, taken, low_precision, failure in seen:
            # The host library's machine (mi300x) takes e4m3_fnuz for wire "fp8".
            if taken != "fp8_e4m3_fnuz" or not low_precision:
                problems.append(f"rank {rank}, {what}: wire {taken}, not fp8: proves nothing")
            if failure:
                problems.append(f"rank {rank}, {what}: {failure}")
    assert not problems, "\n".join(problems[:40])

"""Calls larger than the shm transport's data area, through relay.torch on 8 processes (one world,
three communicators): every collective, fused (A=2) and single (A=4), in and out of place, with
inputs of 2, 4 and 9.5 times a 64 KiB area (transport_bytes); the same calls served by ranks that
serve (the control plane: every rank cuts them alike); and a fused allreduce of 32 MiB a rank at
the default 64 MiB area (whose plan needs more than the area, as torchcomms' low-precision
example's calls do). Each output is compared bit for bit with torch.distributed's own collective
(reference.py: gloo on the same processes, on data whose sums are exact), and outputs are poisoned
before the call."""

import pytest
import torch

from reference import io_elements, make_input, poison_like, reference, subgroups
from world import assert_all_ok, run_world

AREA = 64 << 10
LAYOUTS = ([[0, 1], [2, 3], [4, 5], [6, 7]], [[5, 2, 7, 0]])
DTYPES = (torch.float32, torch.bfloat16, torch.int32)


def _call(comm, collective, x, y, groups, in_place, n, dtype):
    kw = {"counts": [n] * len(groups), "dtype": dtype}  # a helper passes no tensors
    if collective == "allreduce":
        return comm.all_reduce(x, groups, "sum", out=None if in_place else y, **kw)
    if collective == "reduce-scatter":
        return comm.reduce_scatter(x, y, groups, "sum", **kw)
    if collective == "all-gather":
        return comm.all_gather(x, y, groups, **kw)
    return comm.all_to_all(x, y, groups, **kw)


def _cases():
    k = 0
    for groups in LAYOUTS:
        for collective in ("allreduce", "reduce-scatter", "all-gather", "all-to-all"):
            for times in (2, 4, 9.5):
                for in_place in (False, True):
                    if in_place and collective not in ("allreduce", "all-gather"):
                        continue
                    yield groups, collective, times, in_place, DTYPES[k % len(DTYPES)]
                    k += 1


def _cases_part(rank):
    import relay.torch

    comm = relay.torch.Communicator(device="cpu", transport_bytes=AREA)
    pgs = subgroups(LAYOUTS)
    checked = 0
    for case, (groups, collective, times, in_place, dtype) in enumerate(_cases()):
        gen = torch.Generator().manual_seed(1000 * case + rank)
        active = len(groups[0])
        es = torch.empty(0, dtype=dtype).element_size()
        # The input alone is `times` the area: the call's plan needs more.
        n_in = int(times * AREA) // es // 128 * 128
        n = n_in // (active if collective in ("reduce-scatter", "all-to-all") else 1)
        mine = next((g for g in groups if rank in g), None)
        if mine is None:
            _call(comm, collective, None, None, groups, False, n, dtype)
            continue
        ins, outs = io_elements(collective, active, n)
        x = make_input(dtype, ins, gen)
        if in_place and collective == "allreduce":
            expected = reference(collective, "sum", x, mine, pgs[tuple(sorted(mine))], dtype)
            _call(comm, collective, x, None, groups, True, n, dtype)
            got = x
        elif in_place:  # all-gather: the input is this rank's block of the output
            y = poison_like(dtype, outs)
            k = mine.index(rank)
            y[k * n : (k + 1) * n] = x
            expected = reference(collective, "sum", x, mine, pgs[tuple(sorted(mine))], dtype)
            _call(comm, collective, y[k * n : (k + 1) * n], y, groups, False, n, dtype)
            got = y
        else:
            y = poison_like(dtype, outs)
            kept = x.clone()
            expected = reference(collective, "sum", x, mine, pgs[tuple(sorted(mine))], dtype)
            _call(comm, collective, x, y, groups, False, n, dtype)
            assert torch.equal(x, kept), f"case {case}: the input changed out of place"
            got = y
        assert torch.equal(got, expected), (
            f"case {case}: {collective} {times}x groups={groups} in_place={in_place} {dtype}: "
            f"{int((got != expected).sum())} of {got.numel()} elements differ"
        )
        checked += 1
    comm.close()
    return checked


def _large_part(rank):
    import relay.torch

    comm = relay.torch.Communicator(device="cpu")
    groups = LAYOUTS[0]
    mine = next(g for g in groups if rank in g)
    n = (32 << 20) // 4
    x = torch.full((n,), float(rank + 1))
    comm.all_reduce(x, groups, "sum")
    want = float(sum(r + 1 for r in mine))
    assert bool(x.eq(want).all()), f"rank {rank}: {int(x.ne(want).sum())} elements are not {want}"
    comm.close()
    return n


def _served_part(rank):
    import relay.torch

    actives = [6, 1]
    comm = relay.torch.Communicator(device="cpu", transport_bytes=AREA)
    comm.attach_plane(serving=rank not in actives)
    pgs = subgroups([[actives]])
    if rank not in actives:
        served = comm.serve()
        comm.close()
        return served
    made = 0
    for case, collective in enumerate(("allreduce", "reduce-scatter", "all-gather", "all-to-all")):
        for times in (4, 9.5):
            gen = torch.Generator().manual_seed(100 * case + rank)
            n = int(times * AREA) // 4 // 128 * 128 // (2 if collective == "all-to-all" else 1)
            ins, outs = io_elements(collective, 2, n)
            x = make_input(torch.float32, ins, gen)
            y = poison_like(torch.float32, outs)
            expected = reference(collective, "sum", x, actives, pgs[(1, 6)], torch.float32)
            _call(comm, collective, x, y, [actives], False, n, torch.float32)
            assert torch.equal(y, expected), f"{collective} {times}x: served calls differ"
            made += 1
    comm.stop_serving()
    comm.close()
    return made


def _worker(rank, size):
    """Each part on its own communicator, in turn (every rank makes them in the same order)."""
    import torch.distributed as dist

    out = {"cases": _cases_part(rank), "served": _served_part(rank), "large": _large_part(rank)}
    dist.barrier()
    return out


@pytest.fixture(scope="module")
def results():
    return assert_all_ok(run_world(8, _worker, timeout=600))


def test_calls_of_several_times_the_area(results):
    # Every active rank checked its share: 4 collectives x 3 sizes, in place too where it exists,
    # in each of the two layouts where the rank is active.
    assert results[0]["cases"] == 2 * (4 * 3 + 2 * 3)
    assert results[1]["cases"] == 4 * 3 + 2 * 3  # rank 1 helps in the single layout


def test_served_calls_of_several_times_the_area(results):
    """The serving ranks cut each call they serve as its caller does (the area is one number for
    the job)."""
    assert results[1]["served"] == results[6]["served"] == 8
    assert all(results[r]["served"] == 8 for r in (0, 2, 3, 4, 5, 7))  # every call served


def test_a_fused_allreduce_of_32_mib_a_rank_on_the_default_area(results):
    assert {r["large"] for r in results.values()} == {8 << 20}

"""A group of every rank, with no options anywhere: relay.torch takes the cost model's route
(route automatic: the direct route where A = N), so every Python entry works at N = 2 and N = 4
as it does with NCCL. Each of the Communicator's methods, the fused helpers and the torch.library
ops (functional, in place and out=) against gloo's collective on the same processes."""

import pytest
import torch
import torch.distributed as dist

import reference as ref
from world import assert_all_ok, run_world

COUNT = 37  # per group: odd, so no rule's alignment makes it round


def _worker(rank, size):
    import relay.torch as rt
    from relay.torch.ops import groups_args

    ops = torch.ops.relay

    comm = rt.Communicator(device="cpu", timeout=20, transport_bytes=1 << 20)
    everyone = [list(range(size))]
    pg = dist.new_group(list(range(size)))
    gen = torch.Generator().manual_seed(100 + rank)
    bad = []

    def check(what, got, want):
        if got.dtype != want.dtype or not torch.equal(got.reshape(-1), want.reshape(-1)):
            bad.append(f"rank {rank}: {what}: {got.reshape(-1)[:4].tolist()} against "
                       f"{want.reshape(-1)[:4].tolist()}")

    ranks, sizes = groups_args(everyone)
    for coll, name in (("allreduce", "all_reduce"), ("reduce-scatter", "reduce_scatter"),
                       ("all-gather", "all_gather"), ("all-to-all", "all_to_all")):
        in_el, out_el = ref.io_elements(coll, size, COUNT)
        x = ref.make_input(torch.float32, in_el, gen)
        reducing = coll in ("allreduce", "reduce-scatter")
        want = ref.reference(coll, "sum" if reducing else None, x, list(range(size)), pg,
                             torch.float32)
        op = ("sum",) if reducing else ()

        # The Communicator's method.
        out = ref.poison_like(torch.float32, out_el)
        if coll == "allreduce":
            comm.all_reduce(x, everyone, out=out)
        else:
            getattr(comm, name)(x, out, everyone)
        check(f"Communicator.{name}", out, want)

        # The fused helper, on two tensors of the group's total.
        half = in_el // 2 // size * size if coll != "allreduce" else in_el // 2
        ins = [x[:half].clone(), x[half:].clone()] if coll in ("allreduce", "all-gather") else None
        if coll == "allreduce":
            rt.all_reduce_tensors(comm, ins, everyone)
            check("all_reduce_tensors", torch.cat(ins), want)
        elif coll == "all-gather":
            outs = [ref.poison_like(torch.float32, size * t.numel()) for t in ins]
            rt.all_gather_tensors(comm, ins, outs, everyone)
            parts = [ref.reference(coll, None, t, list(range(size)), pg, torch.float32)
                     for t in ins]
            for o, p in zip(outs, parts):
                check("all_gather_tensors", o, p)
        else:  # one tensor of A blocks: the helper's blocks are the call's
            outs = [ref.poison_like(torch.float32, out_el)]
            getattr(rt, name + "_tensors")(comm, [x.clone()], outs, everyone)
            check(f"{name}_tensors", outs[0], want)

        # The ops: functional, then in place (allreduce) or out=.
        y = getattr(ops, name)(x, comm.id, ranks, sizes, [COUNT], *op)
        check(f"torch.ops.relay.{name}", y, want)
        if coll == "allreduce":
            z = x.clone()
            ops.all_reduce_(z, comm.id, ranks, sizes, [COUNT], "sum")
        else:
            z = ref.poison_like(torch.float32, out_el)
            getattr(ops, name + "_out")(x, z, comm.id, ranks, sizes, [COUNT], *op)
        check(f"torch.ops.relay.{name} (in place or out=)", z, want)
    comm.close()
    return bad


@pytest.mark.parametrize("size", [2, 4])
def test_every_entry_takes_a_group_of_every_rank_with_no_options(size):
    results = assert_all_ok(run_world(size, _worker, (), timeout=240))
    bad = [b for r in sorted(results) for b in results[r]]
    assert not bad, "\n".join(bad)

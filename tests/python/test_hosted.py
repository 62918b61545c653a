"""Hosted helpers (docs/hosted-helpers.md) from Python on 2 processes over shm: a
relay.torch.Communicator with helper_devices=[2..7] has 8 ranks (the processes 0 and 1); each
collective, dtype and route of the pair (in both orders), against gloo's on the same tensors;
RELAY_HELPER_DEVICES and the torchcomms hint name them alike; helper lists that differ raise on
both processes, naming the one that differs."""

import os

import torch

import reference as ref
from world import assert_all_ok, run_world

HELPERS = [2, 3, 4, 5, 6, 7]
DTYPES = [torch.float32, torch.bfloat16, torch.int32]
ROUTES = ["relay", "direct", "automatic"]


def _calls(comm, rank, pg, call):
    """Every collective, dtype and route of the pair in both orders: a list of what was wrong."""
    import relay.torch as rt

    wrong = []
    gen = torch.Generator().manual_seed(20261206 + rank)
    sizes = torch.Generator().manual_seed(20261206)  # the same counts on both processes
    for coll in ref.COLLECTIVES:
        for dtype in DTYPES:
            for route in ROUTES:
                for group in ([0, 1], [1, 0]):
                    n = int(torch.randint(1, 3000, (1,), generator=sizes))
                    ins, outs = ref.io_elements(coll, 2, n)
                    x = ref.make_input(dtype, ins, gen)
                    want = ref.reference(coll, "sum", x, group, pg, dtype)
                    out = ref.poison_like(dtype, outs)
                    call(comm, coll, x.clone(), out, [group], rt.Options(route=route))
                    if not torch.equal(out, want):
                        wrong.append(f"rank {rank}: {coll} {dtype} {route} {group} n={n}")
    return wrong


def _relay_call(comm, coll, x, out, groups, options):
    if coll == "allreduce":
        comm.all_reduce(x, groups, out=out, options=options)
    elif coll == "reduce-scatter":
        comm.reduce_scatter(x, out, groups, options=options)
    elif coll == "all-gather":
        comm.all_gather(x, out, groups, options=options)
    else:
        comm.all_to_all(x, out, groups, options=options)


def _worker(rank, size):
    import torch.distributed as dist

    import relay
    import relay.torch as rt
    from relay.torchcomms import TorchCommRelay

    seen = {}
    pg = dist.group.WORLD
    comm = rt.Communicator(device="cpu", timeout=20, transport="shm", helper_devices=HELPERS)
    seen["ranks"] = (comm.rank, comm.size, comm.processes)
    seen["wrong"] = _calls(comm, rank, pg, _relay_call)
    comm.close()

    # RELAY_HELPER_DEVICES where helper_devices is None; [] is no helper whatever it says.
    os.environ["RELAY_HELPER_DEVICES"] = "0,0"
    by_env = rt.Communicator(device="cpu", timeout=20, transport="shm")
    x = torch.arange(1000, dtype=torch.float32) * (rank + 1)
    by_env.all_reduce(x, [[0, 1]], options=rt.Options(route="relay"))
    seen["env"] = (by_env.size, torch.equal(x, torch.arange(1000, dtype=torch.float32) * 3))
    by_env.close()
    none = rt.Communicator(device="cpu", timeout=20, transport="shm", helper_devices=[])
    seen["none"] = none.size
    none.close()
    del os.environ["RELAY_HELPER_DEVICES"]

    # The torchcomms hint: torchcomms' world is the processes.
    os.environ["TORCHCOMM_RANK"], os.environ["TORCHCOMM_SIZE"] = str(rank), str(size)
    store = dist.PrefixStore("hosted", dist.distributed_c10d._get_default_store())
    b = TorchCommRelay.from_environment(torch.device("cpu"), "hosted", store=store, timeout=20,
                                        hints={"relay.helper_devices": "2,3,4,5,6,7",
                                               "relay.transport": "shm"})
    t = torch.full((777,), float(rank + 1))
    b.all_reduce(t, "sum", False)
    seen["torchcomms"] = (b.get_size(), b.communicator.size, torch.equal(t, torch.full((777,), 3.0)))
    b.finalize()

    # Lists that differ: both raise, naming rank 1.
    try:
        rt.Communicator(device="cpu", timeout=20, transport="shm",
                        helper_devices=HELPERS if rank == 0 else HELPERS[:3])
        seen["differ"] = "ok"
    except relay.RelayError as e:
        seen["differ"] = (type(e).__name__, e.peer, str(e))
    return seen


def test_hosted_helpers_against_gloo():
    reports = assert_all_ok(run_world(2, _worker, (), timeout=240))
    for r, s in reports.items():
        assert s["ranks"] == (r, 8, 2), s["ranks"]
        assert not s["wrong"], s["wrong"][:20]
        assert s["env"] == (4, True), s["env"]
        assert s["none"] == 2
        assert s["torchcomms"] == (2, 8, True), s["torchcomms"]
        name, peer, message = s["differ"]
        assert name == "MismatchError" and peer == 1, s["differ"]
        assert "rank 1 asked for helper devices 2,3,4 but rank 0 for 2,3,4,5,6,7" in message

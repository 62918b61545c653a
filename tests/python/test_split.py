"""relay.torch.Communicator.split (relay_comm_split) on 4 processes over shm: who lands where
and at which rank, worked out by hand; each child's outputs against the sums and concatenations
of the inputs computed here (every rank makes every rank's input from its seed); a rank in no
color, a helper on the relay route of a child, a color refused on one rank (every rank raises,
naming it), a color of the wrong type or outside int32 on one rank (refused through the split:
every rank raises at once, naming it), and the parent unchanged after each."""

import time

import torch

import reference as ref
from world import BUSY_MARGIN_S, assert_all_ok, run_world

N = 29
# A split is a set-up: it waits the communicator's timeout (20 s), or 10 s + 100 ms per rank where
# that is longer (relay's set-up floor, docs/multiprocess.md): 20 s for these 4 ranks.
SPLIT_TIMEOUT_S = 20


def _inputs(size):
    return [ref.make_input(torch.float32, N, torch.Generator().manual_seed(r)) for r in range(size)]


def _worker(rank, size):
    import relay
    import relay.torch as rt

    comm = rt.Communicator(device="cpu", timeout=20, transport_bytes=1 << 20)
    inputs = _inputs(size)
    direct = rt.Options(route="direct")  # a child of one group has no helper to relay through
    seen = {}

    # By parity, keys reversing the order: {2, 0} and {3, 1}.
    half = comm.split(rank % 2, key=-rank)
    seen["half"] = (half.rank, half.size, half.transport)
    x = inputs[rank].clone()
    half.all_reduce(x, [[0, 1]], options=direct)
    seen["half sum"] = torch.equal(x, inputs[rank % 2] + inputs[rank % 2 + 2])
    out = ref.poison_like(torch.float32, 2 * N)
    half.all_gather(inputs[rank].clone(), out, [[0, 1]], options=direct)
    seen["half gather"] = torch.equal(out, torch.cat([inputs[rank % 2 + 2], inputs[rank % 2]]))
    half.close()

    # Ranks 0-2, rank 3 in none; on the child, rank 0 helps the pair {1, 2} (relay route).
    first = comm.split(None if rank == 3 else 0)
    seen["first"] = None if first is None else (first.rank, first.size)
    if first is not None:
        active = rank != 0
        x = inputs[rank].clone() if active else None
        helper = {} if active else {"counts": [N], "dtype": torch.float32}
        first.all_reduce(x, [[1, 2]], **helper)
        seen["first sum"] = not active or torch.equal(x, inputs[1] + inputs[2])
        first.close()

    # Rank 2 refuses its color: every rank raises, naming rank 2.
    try:
        comm.split(-5 if rank == 2 else 0)
        seen["refused"] = "ok"
    except relay.RelayError as e:
        seen["refused"] = (type(e).__name__, e.peer, str(e))

    # A color that is no int is refused here, before any rank meets (every rank passes one).
    try:
        comm.split("red")
        seen["typed"] = "ok"
    except TypeError as e:
        seen["typed"] = str(e)

    # One rank's color is no int (rank 1), or outside int32 (rank 3): that rank refuses through
    # the split, so every rank raises at once, naming it (relay.PeerError, not a timeout: a split
    # waits 20 s here), and the parent's next call is right on every rank.
    for culprit, bad in ((1, "x"), (3, 2**40)):
        start = time.monotonic()
        try:
            comm.split(bad if rank == culprit else 0)
            seen[f"one {culprit}"] = "ok"
        except (TypeError, ValueError, relay.RelayError) as e:
            seen[f"one {culprit}"] = (type(e).__name__, getattr(e, "peer", None), str(e),
                                      time.monotonic() - start)
        x = inputs[rank].clone()
        comm.all_reduce(x, [[0, 1], [2, 3]])
        seen[f"after {culprit}"] = torch.equal(x, inputs[rank // 2 * 2] + inputs[rank // 2 * 2 + 1])

    # The parent after its splits: fused pairs {0, 1}, {2, 3}.
    x = inputs[rank].clone()
    comm.all_reduce(x, [[0, 1], [2, 3]])
    g = rank // 2
    seen["parent sum"] = torch.equal(x, inputs[2 * g] + inputs[2 * g + 1])
    comm.close()
    return seen


def test_split_ranks_and_outputs():
    reports = assert_all_ok(run_world(4, _worker, (), timeout=240))
    for r, s in reports.items():
        assert s["half"] == (1 if r < 2 else 0, 2, "shm"), (r, s["half"])
        assert s["half sum"] and s["half gather"], (r, s)
        assert s["first"] == (None if r == 3 else (r, 3)), (r, s["first"])
        assert s.get("first sum", True), (r, s)
        if r == 2:
            assert s["refused"][0] == "InvalidArgumentError", s["refused"]
            assert "color -5 is neither >= 0 nor relay::no_color (-1)" in s["refused"][2]
        else:
            assert s["refused"][0] != "ok" and s["refused"][1] == 2, (r, s["refused"])
        assert s["typed"] == "split: color must be an int or None, not str", s["typed"]
        for culprit, error, text in ((1, "TypeError", "split: color must be an int or None, not str"),
                                     (3, "ValueError", "split: color 1099511627776 is outside")):
            name, peer, message, took = s[f"one {culprit}"]
            if r == culprit:
                assert name == error and message.startswith(text), (r, s[f"one {culprit}"])
            else:
                assert name == "PeerError" and peer == culprit, (r, s[f"one {culprit}"])
                assert f"rank {culprit} refused the split" in message and text in message, message
            assert took < SPLIT_TIMEOUT_S + BUSY_MARGIN_S, (r, culprit, took)
            assert s[f"after {culprit}"], (r, culprit)
        assert s["parent sum"], (r, s)

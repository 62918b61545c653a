"""Serving ranks through relay.torch (Communicator.attach_plane, serve, stop_serving) on 8
processes over the shm transport, every active output compared bit for bit with torch.distributed's
gloo collective on the same processes (reference.py):
  - one group of A=2 and of A=4 active (drawn from the seed) making random calls (every collective,
    float32, float16, bfloat16, int32 and int64, sum and avg, in and out of place, odd and zero
    counts) while the other ranks only serve, and must have served every call;
  - the parallel scenario: 4 communicators split from the world's, each with one pair active and
    the 6 others serving it, every process calling on one and serving three from threads, at once;
  - a publisher that stalls: every serving rank raises relay.TimeoutError naming it within its
    timeout twice (the call before the stall may come that late) and the margin of a busy machine
    (world.BUSY_MARGIN_S);
  - torchcomms' relay_control_publish and relay_control_consume on TorchCommRelay: the five
    fields against constants; a plan of 129 counts refused (RCCLX's limit, 128), then the epoch
    published within it;
  - serve() from two threads of one process: the second raises InvalidArgumentError at once, the
    first serves every call;
  - the publisher alone stops the serving ranks: the other calling rank's next call raises
    PeerError naming the publisher;
and, on 4 processes, a consumer of the plan stream SIGKILLed mid-stream: the publisher and the
other consumers each raise PeerLostError naming it within the timeout plus 1 s.

RELAY_PY_SEED and RELAY_PY_SERVE_CALLS (default 150 per scenario) change the seed and the number of
calls; a failure names both.
"""

import os
import random
import threading
import time

import pytest
import torch

from test_property import Checker, _single_call
from world import BUSY_MARGIN_S, assert_all_ok, run_world

SEED = int(os.environ.get("RELAY_PY_SEED", "20261206"))
CALLS = int(os.environ.get("RELAY_PY_SERVE_CALLS", "150"))


def _take_part(comm, actives, calls, seed, pg, rank_in_comm):
    """One rank's part on `comm`: the actives make `calls` random calls of the group `actives`
    (checked against gloo on `pg`), then stop the serving ranks; those serve. Returns
    (failures, calls served or made)."""
    if rank_in_comm not in actives:
        return [], comm.serve()
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed * 1000 + rank_in_comm)
    check = Checker(rank_in_comm, seed)
    pgs = {tuple(sorted(actives)): pg}
    for i in range(calls):
        check.call = i
        try:
            _single_call(comm, rng, gen, rank_in_comm, [actives], pgs, check, torch.device("cpu"))
        except Exception as e:
            raise AssertionError(f"seed {seed} call {i} rank {rank_in_comm}: {e}") from e
    comm.stop_serving()
    return check.failures, calls


def _single(rank, size, active, seed, calls, pg):
    import relay.torch as rt

    actives = _actives(size, active, seed)
    comm = rt.Communicator(timeout=30, transport_bytes=4 << 20)
    comm.attach_plane(serving=rank not in actives)
    result = _take_part(comm, actives, calls, seed + 1, pg, rank)
    comm.close()
    return result


def _actives(size, active, seed):
    return sorted(random.Random(seed).sample(range(size), active))


def _parallel(rank, seed, calls, pgs):
    import relay.torch as rt

    world = rt.Communicator(timeout=30, transport_bytes=4 << 20)
    comms = [world.split(0) for _ in range(4)]
    for c, comm in enumerate(comms):
        comm.attach_plane(serving=rank // 2 != c)
    results = [None] * 4

    def part(c):
        try:
            results[c] = _take_part(comms[c], [2 * c, 2 * c + 1], calls, seed + c, pgs[c], rank)
        except BaseException as e:  # noqa: BLE001 (reported below)
            results[c] = ([f"communicator {c}: {type(e).__name__}: {e}"], 0)

    threads = [threading.Thread(target=part, args=(c,)) for c in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for comm in comms + [world]:
        comm.close()
    return results


def _control(rank):
    import relay
    from relay.torchcomms import TorchCommRelay

    os.environ.pop("NCCL_RELAY_CONTROL_MAX_CALLS", None)  # RCCLX's default, 128
    backend = TorchCommRelay.from_group(timeout=30)
    limits = backend.communicator.control_limits()
    if rank == 0:
        refused = []
        for counts, flags in (([1, 2], 1), ([1024] * 129, 0)):  # flags 1; torchcomms' overflow
            try:
                backend.relay_control_publish(0, counts, 3, 7, 10**9, red_op=2, flags=flags)
                refused.append("published")
            except relay.InvalidArgumentError as e:
                refused.append(str(e))
        backend.relay_control_publish(0, torch.tensor([1024, 512, 256]), 3, 7, 10**9, red_op=2)
        backend.relay_control_publish(1, [], 0, 0, 10**9)  # shutdown
        got = ("published", refused)
    else:
        got = (backend.relay_control_consume(0, 10 * 10**9),
               backend.relay_control_consume(1, 10 * 10**9))
    backend.finalize()
    return got, limits


def _two_serves(rank):
    """Ranks 0 and 1 make 10 calls; 2-7 serve, rank 2 from two threads at once. The calls begin
    once every rank has met, which rank 2 does once one of its serve()s returned (the refused
    one), so the two overlap whichever claims first."""
    import relay
    import relay.torch as rt
    import torch.distributed as dist

    comm = rt.Communicator(timeout=30)
    comm.attach_plane(serving=rank >= 2)
    outcomes = {}

    def serve(which):
        start = time.monotonic()
        try:
            outcomes[which] = ("served", comm.serve(), time.monotonic() - start)
        except relay.RelayError as e:
            outcomes[which] = (type(e).__name__, str(e), time.monotonic() - start, e.peer)

    if rank < 2:
        dist.barrier()
        got = [comm.all_reduce(torch.full((i + 1,), float(rank + i)), [[0, 1]]).tolist()
               for i in range(10)]
        comm.stop_serving()
    elif rank > 2:
        dist.barrier()
        serve("one")
        got = outcomes
    else:
        threads = [threading.Thread(target=serve, args=(w,)) for w in ("first", "second")]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while not outcomes and time.monotonic() < deadline:
            time.sleep(0.001)
        dist.barrier()
        for t in threads:
            t.join()
        got = outcomes
    comm.close()
    return got


def _stop_alone(rank):
    """Ranks 2 and 3 call (2 publishes), the others serve; after two calls rank 2 alone stops
    them, which return and close; rank 3 calls again."""
    import relay
    import relay.torch as rt

    comm = rt.Communicator(timeout=5)
    comm.attach_plane(serving=rank not in (2, 3))
    got = None
    if rank not in (2, 3):
        got = comm.serve()
        comm.close()
        return got
    for i in range(2):
        comm.all_reduce(torch.ones(8 + i), [[2, 3]])
    if rank == 2:
        comm.stop_serving()
        time.sleep(2.0)  # open: what rank 3 meets is the serving ranks' leaving
        comm.close()
        return "stopped"
    out = torch.full((8,), -7.0)
    try:
        comm.all_reduce(torch.ones(8), [[2, 3]], out=out)
        got = ("returned", None, "")
    except relay.RelayError as e:
        got = (type(e).__name__, e.peer, str(e))
    return got, out.tolist()


SERVE_TIMEOUT_S = 1.0


def _stall(rank):
    """Ranks 0 and 1 call once, then stall; the others serve with a timeout of 1 s, and must have
    given up before the stalled ranks close their communicator (which would be another failure:
    peer lost), however late on a busy machine."""
    import relay
    import relay.torch as rt

    comm = rt.Communicator(timeout=30)
    comm.attach_plane(serving=rank >= 2)
    if rank >= 2:
        start = time.monotonic()
        try:
            comm.serve(timeout=SERVE_TIMEOUT_S)
            got = ("returned", None, time.monotonic() - start, "")
        except relay.TimeoutError as e:
            got = ("timeout", e.peer, time.monotonic() - start, str(e))
    else:
        comm.all_reduce(torch.ones(64), [[0, 1]])
        time.sleep(2 * SERVE_TIMEOUT_S + 2 * BUSY_MARGIN_S)
        got = ("stalled", None, 0.0, "")
    comm.close()
    return got


def world_worker(rank, size, seed, calls):
    """Every scenario on one world of 8 (spawning a world costs more than its calls): each on a
    communicator of its own."""
    import torch.distributed as dist

    pg = {a: dist.new_group(_actives(size, a, seed + a)) for a in (2, 4)}
    pairs = [dist.new_group([2 * c, 2 * c + 1]) for c in range(4)]
    out = {}
    for a in (2, 4):
        out[f"A={a}"] = _single(rank, size, a, seed + a, calls, pg[a])
    out["parallel"] = _parallel(rank, seed, calls, pairs)
    out["control"] = _control(rank)
    out["stall"] = _stall(rank)
    out["two serves"] = _two_serves(rank)
    out["stop alone"] = _stop_alone(rank)
    return out


@pytest.fixture(scope="module")
def outcomes():
    return assert_all_ok(
        run_world(8, world_worker, (SEED, CALLS), timeout=600, env={"RELAY_TIMEOUT": "30"}))


def _expect(results, actives, calls):
    for rank, (failures, n) in results.items():
        assert failures == [], "\n".join(failures)
        assert n == calls, f"rank {rank} {'made' if rank in actives else 'served'} {n} calls"


def test_single_groups_served(outcomes):
    for a in (2, 4):
        _expect({r: v[f"A={a}"] for r, v in outcomes.items()}, _actives(8, a, SEED + a), CALLS)


def test_parallel_scenario_served(outcomes):
    for c in range(4):
        _expect({r: v["parallel"][c] for r, v in outcomes.items()}, [2 * c, 2 * c + 1], CALLS)


def test_a_stalled_publisher_is_named_within_the_timeout(outcomes):
    for rank in range(2, 8):
        what, peer, waited, text = outcomes[rank]["stall"]
        assert what == "timeout", f"rank {rank}: serve() {what}"
        assert peer == 0, f"rank {rank} names {peer}: {text}"
        assert "rank 0, the publisher, published nothing within 1000 ms" in text, text
        # The one call served first (rank 0 publishes it within the timeout, or that is the
        # timeout), then the 1 s wait.
        bound = 2 * SERVE_TIMEOUT_S + BUSY_MARGIN_S
        assert waited < bound, f"rank {rank} raised after {waited:.2f} s"


def test_torchcomms_control_plane_carries_the_five_fields(outcomes):
    (published, refused), _ = outcomes[0]["control"]
    assert published == "published"
    assert "flags 1" in refused[0], refused
    for rank in range(1, 8):
        (plan, shutdown), _ = outcomes[rank]["control"]
        # op_code 3 (all_gather), dtype 7, red_op 2, flags 0: distinct, so a swap of any two
        # shows.
        assert plan == (3, 7, 2, 0, [1024, 512, 256]), plan
        assert shutdown == (0, 0, 0, 0, []), shutdown


def test_a_plan_over_rcclxs_limit_is_refused_and_the_epoch_published_after(outcomes):
    """torchcomms' inject_overflow: 129 counts where NCCL_RELAY_CONTROL_MAX_CALLS is unset."""
    (_, refused), _ = outcomes[0]["control"]
    assert refused[1].startswith(
        "invalid argument: the plan of epoch 0 has 129 counts; a torchcomms plan holds at most "
        "128"), refused[1]
    for rank in range(8):
        _, limits = outcomes[rank]["control"]
        assert limits == (128, 8186), (rank, limits)  # (65536 - 44) / 8 counts fit a slot
    for rank in range(1, 8):
        (plan, _), _ = outcomes[rank]["control"]
        assert plan[4] == [1024, 512, 256], plan  # epoch 0 is the plan published after


def test_a_second_serve_of_one_communicator_is_refused_on_its_rank_alone(outcomes):
    for rank in (0, 1):
        sums = outcomes[rank]["two serves"]
        # rank 0 passes rank + i = i, rank 1 i + 1: every element 2 i + 1, by hand.
        assert sums == [[2.0 * i + 1] * (i + 1) for i in range(10)], (rank, sums)
    for rank in range(3, 8):
        seen = outcomes[rank]["two serves"]
        assert list(seen) == ["one"] and seen["one"][:2] == ("served", 10), (rank, seen)
    seen = outcomes[2]["two serves"]
    refused = [o for o in seen.values() if o[0] != "served"]
    served = [o for o in seen.values() if o[0] == "served"]
    assert len(refused) == 1 and len(served) == 1, seen
    name, text, took, peer = refused[0]
    assert name == "InvalidArgumentError" and peer is None, refused
    assert "rank 2 serves this communicator already" in text, text
    assert took < 1.0, f"refused after {took:.2f} s"
    assert served[0][1] == 10, served


def test_a_call_after_the_publisher_alone_stopped_names_the_publisher(outcomes):
    (name, peer, text), out = outcomes[3]["stop alone"]
    assert name == "PeerError" and peer == 2, (name, peer, text)
    assert text.startswith(
        "peer error: rank 2, the publisher, stopped the ranks that serve after call #2 "
        "(stop_serving) and made no call since: they take no part in call #3"), text
    assert out == [-7.0] * 8  # nothing written
    for rank in (0, 1, 4, 5, 6, 7):
        assert outcomes[rank]["stop alone"] == 2, (rank, outcomes[rank]["stop alone"])


KILL_TIMEOUT_S = 3.0


def consumer_killed(rank, size):
    """Every rank on TorchCommRelay (rank 0 publishes, as RCCLX's); ranks 1-3 consume epoch 0;
    then rank 3 is SIGKILLed while rank 0 publishes and ranks 1 and 2 consume on. Returns the
    error each survivor raised and when, from before the kill."""
    import signal

    import relay
    import torch.distributed as dist
    from relay.torchcomms import TorchCommRelay

    backend = TorchCommRelay.from_group(timeout=KILL_TIMEOUT_S)
    ns = int(KILL_TIMEOUT_S * 1e9)
    if rank == 0:
        backend.relay_control_publish(0, [1024, 512], 1, 7, ns)
    else:
        backend.relay_control_consume(0, ns)
    dist.barrier()  # every consumer has epoch 0
    start = time.monotonic()
    if rank == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    epoch = 1
    try:
        while time.monotonic() - start < KILL_TIMEOUT_S + 5:
            if rank == 0:
                backend.relay_control_publish(epoch, [1024, 512], 1, 7, ns)
                time.sleep(0.01)
            else:
                backend.relay_control_consume(epoch, ns)
            epoch += 1
        return ("nothing raised", None, time.monotonic() - start, "")
    except relay.RelayError as e:
        return (type(e).__name__, e.peer, time.monotonic() - start, str(e))


def test_a_consumer_killed_mid_stream_is_named_by_every_survivor():
    import signal

    results = run_world(4, consumer_killed, timeout=120, env={"RELAY_TIMEOUT": "30"})
    assert results[3] == ("exited", -signal.SIGKILL), results[3]
    for rank in (0, 1, 2):
        state, value = results[rank]
        assert state == "ok", (rank, state, value)
        name, peer, took, text = value
        assert name == "PeerLostError" and peer == 3, (rank, value)
        assert text.startswith("peer lost: rank 3"), (rank, text)
        assert took < KILL_TIMEOUT_S + 1, f"rank {rank} raised after {took:.2f} s: {text}"

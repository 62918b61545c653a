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
    fields against constants.

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

    backend = TorchCommRelay.from_group(timeout=30)
    if rank == 0:
        try:
            backend.relay_control_publish(0, [1, 2], 3, 7, 10**9, red_op=2, flags=1)
            refused = "published"
        except relay.InvalidArgumentError as e:
            refused = str(e)
        backend.relay_control_publish(0, torch.tensor([1024, 512, 256]), 3, 7, 10**9, red_op=2)
        backend.relay_control_publish(1, [], 0, 0, 10**9)  # shutdown
        got = ("published", refused)
    else:
        got = (backend.relay_control_consume(0, 10 * 10**9),
               backend.relay_control_consume(1, 10 * 10**9))
    backend.finalize()
    return got


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
    published, refused = outcomes[0]["control"]
    assert published == "published"
    assert "flags 1" in refused, refused
    for rank in range(1, 8):
        plan, shutdown = outcomes[rank]["control"]
        # op_code 3 (all_gather), dtype 7, red_op 2, flags 0: distinct, so a swap of any two
        # shows.
        assert plan == (3, 7, 2, 0, [1024, 512, 256]), plan
        assert shutdown == (0, 0, 0, 0, []), shutdown

"""relay.torch's bootstrap over torch.distributed's store (_store.py): an exchange that a rank
never joins names exactly that rank on every rank that waited, with 2 processes spinning beside
the 8 ranks so that the store answers slowly (a 1 ms wait per key named ranks that had joined).
The exchange is the communicator's set-up, so it waits the set-up timeout, not the calls' 2 s."""

import multiprocessing
import time

import pytest

from world import BUSY_MARGIN_S, run_world

TIMEOUT_S = 2
# Set-up waits at least 10 s + 100 ms per rank (docs/multiprocess.md): 10.8 s for these 8.
SETUP_TIMEOUT_MS = 10_800
ABSENT = 7
# How long the world may take: 8 processes import torch beside the spinners first, which on a
# loaded 2-core machine can take minutes.
WORLD_S = 300


def _spin(stop_after):
    end = time.monotonic() + stop_after
    while time.monotonic() < end:
        pass


def _worker(rank, size):
    import relay
    import relay.torch as rt
    from relay.torch import _store

    if rank == ABSENT:  # never makes the communicator: absent from its first exchange
        time.sleep(SETUP_TIMEOUT_MS / 1000 + 1)
        return None
    # How long the exchange's wait and verdict took: its timeout bounds that (the communicator's
    # making around it, its library loaded and its keys set, is no wait).
    decide, waited = _store.StoreBootstrap._decide, []

    def timed_decide(self, k, keys, timeout_ms):
        start = time.monotonic()
        try:
            return decide(self, k, keys, timeout_ms)
        finally:
            waited.append(time.monotonic() - start)

    _store.StoreBootstrap._decide = timed_decide
    try:
        rt.Communicator(device="cpu", timeout=TIMEOUT_S, transport_bytes=1 << 20)
        return ("ok", None, "", waited)
    except relay.RelayError as e:
        return (type(e).__name__, e.peer, e.message, waited)


@pytest.fixture(scope="module")
def busy():
    # Spinning as long as the world may run (they are stopped when the test ends).
    spinners = [multiprocessing.get_context("spawn").Process(target=_spin, args=(WORLD_S,))
                for _ in range(2)]
    for p in spinners:
        p.start()
    yield
    for p in spinners:
        p.kill()
        p.join(5)


def test_an_absent_rank_is_named_exactly_under_load(busy):
    results = run_world(8, _worker, (), timeout=WORLD_S)
    for r in range(8):
        state, seen = results[r]
        assert state == "ok", (r, state, seen)
        if r == ABSENT:
            continue
        name, peer, message, waited = seen
        assert name == "TimeoutError" and peer == ABSENT, (r, seen)
        # Exactly the absent rank, first, after the set-up timeout.
        assert message.startswith(
            f"rank(s) {ABSENT} did not join all-gather #1 within {SETUP_TIMEOUT_MS} ms"), seen
        setup_s = SETUP_TIMEOUT_MS / 1000
        assert len(waited) == 1 and 0.9 * setup_s < waited[0] < setup_s + BUSY_MARGIN_S, (r, waited)

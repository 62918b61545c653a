"""A torch.distributed world of processes for the tests: torch.multiprocessing's spawn context,
gloo, a FileStore (no rank hosts it, so a rank may exit without taking the store along).

    results = run_world(8, worker, args, timeout=120)   # worker(rank, size, *args) -> value

Each rank's outcome comes back through a queue: ("ok", value) or ("error", traceback text).
A rank that does not report within `timeout` is killed and reported as ("hung", None); one that
exits without reporting as ("exited", exitcode). Nothing here runs relay: the workers do.

BUSY_MARGIN_S: how long past a deadline the tests let a wait end (tests/support/busy_margin.hpp):
every time bound a test checks is a timeout plus this, which holds on a loaded machine (CI runs
these tests on 2 cores beside two spinners, scripts/busy).
"""

import os
import queue
import tempfile
import time
import traceback

import torch.multiprocessing as mp

BUSY_MARGIN_S = 2.0


def _entry(rank, size, store_path, fn, args, results, env):
    os.environ.update(env)
    try:
        import torch.distributed as dist

        dist.init_process_group(
            "gloo", init_method="file://" + store_path, rank=rank, world_size=size
        )
        value = fn(rank, size, *args)
        results.put((rank, "ok", value))
    except BaseException:  # noqa: BLE001 (report everything to the parent)
        results.put((rank, "error", traceback.format_exc()))
    # The report reaches the pipe before the exit, and the exit does not wait on gloo's teardown
    # of peers that may be gone.
    results.close()
    results.join_thread()
    os._exit(0)


def run_world(size, fn, args=(), timeout=300, env=None):
    """Runs fn(rank, size, *args) on `size` ranks; {rank: (state, value)}."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    env = dict(env or {})
    with tempfile.TemporaryDirectory(prefix="relay-py-") as tmp:
        store = os.path.join(tmp, "store")
        procs = [
            ctx.Process(target=_entry, args=(r, size, store, fn, args, results, env), daemon=True)
            for r in range(size)
        ]
        for p in procs:
            p.start()
        out = {}
        deadline = time.monotonic() + timeout
        while len(out) < size and time.monotonic() < deadline:
            try:
                rank, state, value = results.get(timeout=0.5)
                out[rank] = (state, value)
            except queue.Empty:
                for r, p in enumerate(procs):
                    if r not in out and not p.is_alive() and p.exitcode not in (None, 0):
                        out[r] = ("exited", p.exitcode)
        for r, p in enumerate(procs):
            if r not in out:
                out[r] = ("hung", None) if p.is_alive() else ("exited", p.exitcode)
            if p.is_alive():
                p.kill()
            p.join(5)
    return out


def assert_all_ok(results):
    """Raises with every failing rank's report."""
    bad = {r: v for r, v in sorted(results.items()) if v[0] != "ok"}
    if bad:
        text = "\n".join(f"--- rank {r}: {state}\n{value}" for r, (state, value) in bad.items())
        raise AssertionError(f"{len(bad)} of {len(results)} ranks failed:\n{text}")
    return {r: v[1] for r, v in results.items()}

"""When each rank learns that a call failed, where the device judges calls after they return (the
ipc transport's contract, modelled on the CPU by the shm transport: RELAY_SHM_VERDICTS=deferred),
on 8 processes. One world runs every scenario in turn (_worker); each is followed by a good call
whose output is checked and by a synchronize() that must raise nothing (the failure was raised
once), and the tests judge what each rank reported:

  refused       rank 3's tensor has the wrong size (relay.torch's own check): rank 3 raises
                ValueError at its call; every other rank's call returns, its output untouched,
                and its synchronize() raises relay.PeerError naming rank 3 and the call
  refused_wait  the same on an async call: every other rank's work.wait() raises it (on the CPU
                the verdict is known when the call returns), a second wait nothing
  mismatch      rank 5 passes other counts: no rank refused, every rank's call returns, and
                every rank's work.wait_blocking() raises relay.MismatchError naming rank 5
  torchcomms    relay.torchcomms' sharded all-reduce with a wrong size on rank 1, sync: rank 1
                raises at the call, every other rank's work.wait_blocking() raises the PeerError
  torchrec      torchrec's reduce_scatter_multi_group with validation, a wrong size on rank 6,
                async: likewise, naming rank 6
  wrapper       test_torchcomms.py's refusal section of torchrec's four methods, which takes
                the peers' errors at wait_blocking where verdicts are deferred, as on CUDA

Every failure names the same call on every rank, and each later failure a later call.
test_gpu.py runs the same scenarios on CUDA tensors (the ipc transport, which judges calls on
the device), where refused_wait's wait() comes after the device has run the call."""

import re

import pytest
import torch

from world import assert_all_ok, run_world

ENV = {"RELAY_SHM_VERDICTS": "deferred", "RELAY_TIMEOUT": "30"}
GROUPS = [[0, 1], [2, 3], [4, 5], [6, 7]]
N = 48
POISON = -7777.0


def _error(e):
    return None if e is None else (type(e).__name__, getattr(e, "peer", None), str(e))


def _attempt(fn):
    """(what fn returned or None, the error it raised or None)."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 (the tests judge every kind)
        return None, e


def _worker(rank, size, device="cpu"):
    """The scenarios on this rank, its tensors on `device` (cpu, or cuda: this rank's GPU)."""
    import relay.torch as rt
    from relay.torchcomms import TorchCommRelay
    from relay.torchrec import FusedShardedRelayMultiGroup

    dev = torch.device(device)
    if dev.type == "cuda":
        dev = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
    comm = rt.Communicator(device=dev, timeout=30, transport_bytes=1 << 20)
    backend = TorchCommRelay.from_communicator(comm, "deferred")
    rec = FusedShardedRelayMultiGroup(backend, size, rank, GROUPS)
    g = rank // 2
    seen = {}

    def good(tag):
        """A correct call every rank makes: its group's sum, and nothing left to raise."""
        x = torch.full((N,), float(rank + 1), device=dev)
        out = torch.full((N,), POISON, device=dev)
        comm.all_reduce(x, GROUPS, out=out)
        _, e = _attempt(comm.synchronize)
        want = float(2 * g + 1 + 2 * g + 2)
        seen[f"{tag}: good call"] = (bool((out == want).all()), _error(e))

    def scenario(name, call, wait, bad):
        """`call(n, out)` on every rank (n: this rank's elements, N + 3 on `bad`), then
        `wait(result)`; what each step raised, whether the output stayed poisoned, and whether a
        second wait raised again."""
        x = torch.full((N,), float(rank + 1), device=dev)
        out = torch.full((N,), POISON, device=dev)
        n = N + 3 if rank == bad else N
        result, at_call = _attempt(
            lambda: call(x[:n] if n <= N else torch.ones(n, device=dev), out))
        at_wait = again = None
        if at_call is None:
            _, at_wait = _attempt(lambda: wait(result))
            _, again = _attempt(lambda: wait(result))
        untouched = bool((out == POISON).all())
        seen[name] = (_error(at_call), _error(at_wait), _error(again), untouched)
        good(name)

    good("start")
    scenario("refused", lambda x, out: comm.all_reduce(x, GROUPS, out=out, counts=[N] * 4),
             lambda _: comm.synchronize(), bad=3)
    def after_the_device(wait):
        """`wait` once the device has run every call so far (CUDA): wait() itself does not block,
        and raises what the device has judged by then."""
        if dev.type == "cuda":
            return lambda work: (torch.cuda.synchronize(dev), wait(work))
        return wait

    scenario("refused_wait",
             lambda x, out: comm.all_reduce(x, GROUPS, out=out, counts=[N] * 4, async_op=True),
             after_the_device(lambda work: work.wait()), bad=3)
    # rank 5's counts differ: a mismatch, which no rank refuses.
    m = N - 8 if rank == 5 else N
    scenario("mismatch",
             lambda x, out: comm.all_reduce(x[:m], GROUPS, out=out[:m], counts=[m] * 4,
                                            async_op=True),
             lambda work: work.wait_blocking(), bad=None)
    entries = [torch.full((1,), POISON, device=dev) for _ in GROUPS]

    def sharded(x, out):
        ins, outs = list(entries), list(entries)
        ins[g], outs[g] = x, out
        return backend.sharded_relay_multi_group_all_reduce(ins, "sum", GROUPS, [N] * 4,
                                                           output_tensors=outs)

    scenario("torchcomms", sharded, lambda work: work.wait_blocking(), bad=1)

    def reduce_scatter(x, out):
        ins, outs = list(entries), list(entries)
        ins[g] = torch.cat([x, x]) if x.numel() == N else torch.ones(2 * N + 3, device=dev)
        outs[g] = out
        return rec.reduce_scatter_multi_group(ins, outs, 4, [N] * 4, GROUPS, op="sum",
                                              skip_validation=False, async_op=True)

    scenario("torchrec", reduce_scatter, lambda work: work.wait_blocking(), bad=6)
    seen["entries untouched"] = all(bool((t == POISON).all()) for t in entries)
    seen["wrapper"] = _wrapper_section(backend, rank, dev)
    backend.finalize()
    return seen


def _wrapper_section(backend, rank, dev):
    """test_torchcomms.py's refusal section of torchrec's methods over `backend`, its tensors on
    `dev`: its failures."""
    import reference as ref
    import test_torchcomms as tc

    tc.DEV = dev
    pgs = ref.subgroups([tc.FUSED2])
    check = tc.DevChecker(rank, tc.SEED)
    gen = torch.Generator().manual_seed(tc.SEED * 100 + rank)
    tc._wrapper(backend, rank, pgs, check, gen)
    return check.failures


@pytest.fixture(scope="module")
def reports():
    return assert_all_ok(run_world(8, _worker, timeout=240, env=ENV))


def _call_number(message):
    found = re.findall(r"call #(\d+)", message)
    assert found, f"the message names no call: {message}"
    return int(found[0])


def _judge(reports, name, bad, at_call, peer_error):
    """The refusing rank raised `at_call` at its call; every other rank's call returned and its
    first wait raised `peer_error` naming `bad`, once; no output was written; every rank named
    the same call. Returns that call's number."""
    numbers = set()
    for rank, seen in reports.items():
        call_error, wait_error, again, untouched = seen[name]
        assert untouched, f"rank {rank}: {name}: the output was written"
        if rank == bad:
            assert call_error is not None and call_error[0] == at_call, (rank, seen[name])
            assert wait_error is None and again is None, (rank, seen[name])
            continue
        assert call_error is None, f"rank {rank}: {name}: the call raised {call_error}"
        assert wait_error is not None and wait_error[0] == peer_error, (rank, seen[name])
        assert wait_error[1] == (bad if bad is not None else 5), (rank, wait_error)
        assert again is None, f"rank {rank}: {name}: a second wait raised {again}"
        numbers.add(_call_number(wait_error[2]))
        assert seen[f"{name}: good call"] == (True, None), (rank, seen[f"{name}: good call"])
    assert len(numbers) == 1, f"{name}: the ranks name different calls: {numbers}"
    return numbers.pop()


def test_every_peer_learns_of_a_refusal_once_at_its_synchronize(reports):
    number = _judge(reports, "refused", 3, "ValueError", "PeerError")
    for rank, seen in reports.items():
        if rank != 3:
            assert f"rank 3 refused call #{number}" in seen["refused"][1][2], seen["refused"]
    assert "51 elements" in reports[3]["refused"][0][2], reports[3]["refused"]


def test_an_async_work_wait_raises_a_refusal_known_by_then(reports):
    first = _judge(reports, "refused", 3, "ValueError", "PeerError")
    assert _judge(reports, "refused_wait", 3, "ValueError", "PeerError") > first


def test_a_mismatch_is_raised_on_every_rank_at_wait_blocking(reports):
    _judge(reports, "mismatch", None, None, "MismatchError")
    for rank, seen in reports.items():
        assert "rank(s) 5 called call #" in seen["mismatch"][1][2], seen["mismatch"]


def test_torchcomms_and_torchrec_calls_raise_the_refusal_at_wait_blocking(reports):
    mismatch = _judge(reports, "mismatch", None, None, "MismatchError")
    sharded = _judge(reports, "torchcomms", 1, "ValueError", "PeerError")
    scattered = _judge(reports, "torchrec", 6, "ValueError", "PeerError")
    assert mismatch < sharded < scattered
    assert reports[6]["torchrec"][0][2].startswith("reduce_scatter_multi_group"), reports[6]
    assert all(seen["entries untouched"] for seen in reports.values())


def test_torchrec_refusals_reach_the_peers_at_wait_blocking_as_on_cuda(reports):
    failures = [f for r in sorted(reports) for f in reports[r]["wrapper"]]
    assert not failures, f"{len(failures)} wrong:\n" + "\n".join(failures[:40])

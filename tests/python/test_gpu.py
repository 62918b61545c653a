"""relay.torch on CUDA tensors over the ipc transport: 8 processes sharing the GPUs there are
(all on one GPU where there is one; under MPS where it runs). Skipped without CUDA (CI has none);
tests/python/gpu_run.sh runs it on a GPU machine.

  random calls   the random suite of test_property.py on device tensors, each output against
                 gloo's collective on CPU copies (RELAY_PY_GPU_CALLS, default 320)
  graph          20 calls captured into one CUDA graph (comm.capture), replayed 10 times, each
                 replay bit-identical to the eager calls
  compile        a function with torch.ops.relay.all_reduce under torch.compile (fullgraph)
                 gives the eager result
  stream         a call on a non-default current stream runs after that stream's earlier work
  split          four pairs split from the 8 (comm.split), each pair's allreduce at 4 KB-4 MB
                 against the sum of the two inputs made here, with no MPS SM share set: the
                 pairs' kernels divide the GPU among all 8 ranks on it, so none starves another
  torchcomms     test_torchcomms.py's suite on CUDA tensors (the four sharded_relay calls in
                 every form against gloo, the interface, 4 communicators with async calls in
                 flight on their operation streams, torchrec's wrapper, low precision)
  op stream      an async call runs on the communicator's operation stream after the current
                 stream's earlier work, is not complete while that work runs, and wait() orders
                 the current stream after it; a call without async_op right after waits for it;
                 wait_blocking() returns only once the call is done on the device (its output
                 read on a stream that never waited for it)
  held tensors   an async call's input, dropped by the caller while the call waits for a slow
                 peer, is not given to a new tensor of the current stream before the call ends
                 (the communicator holds it until wait(); a new tensor's writes cannot reach the
                 call's data), and goes back after wait()
  graph methods  each of the four sharded_relay calls captured into a CUDA graph (and again
                 with async_op=True, waited inside the capture), replays bit-identical to eager
  failed calls   test_deferred.py's scenarios on CUDA tensors: a refusal or a mismatch on one
                 rank is every rank's error once (the refusing rank's at its call, the others'
                 at their first wait, naming the call and the rank), nothing is written, and the
                 next call is right
"""

import os
import time

import pytest
import torch

import reference as ref
from test_property import SEED, random_calls
from world import assert_all_ok, run_world

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
CALLS = int(os.environ.get("RELAY_PY_GPU_CALLS", "320"))
FUSED = [[0, 1], [2, 3], [4, 5], [6, 7]]
SINGLE = [[5, 2, 7, 0]]
ENV = {"RELAY_TIMEOUT": "60"}


def _device(rank):
    d = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(d)
    return d


def _random(rank, size, seed, calls):
    _device(rank)
    return random_calls(rank, size, seed, calls, device="cuda")


def test_random_calls_on_device_tensors_match_gloo():
    results = assert_all_ok(run_world(8, _random, (SEED, CALLS), timeout=600, env=ENV))
    failures = [f for r in sorted(results) for f in results[r][0]]
    print(f"seed {SEED}: {CALLS} calls per rank on CUDA tensors: {results[0][1]}")
    assert not failures, f"seed {SEED}: {len(failures)} wrong outputs:\n" + "\n".join(failures[:40])


def _graph_calls(comm, rank, dev):
    """20 calls with static buffers, 18 single and 2 through the fused helper: (the calls, the
    outputs they write, the tensors a helper holds and passes to none, which stay untouched)."""
    import relay.torch as rt

    gen = torch.Generator().manual_seed(rank)
    calls, outputs, unused = [], [], []
    shapes = [("allreduce", FUSED, torch.bfloat16, 4096), ("reduce-scatter", FUSED, torch.float32, 999),
              ("all-gather", SINGLE, torch.float16, 513), ("all-to-all", FUSED, torch.int32, 77),
              ("allreduce", SINGLE, torch.float32, 1)]
    for i in range(18):
        coll, groups, dtype, n = shapes[i % len(shapes)]
        n += i
        me = next((g for g in groups if rank in g), None)
        a = len(groups[0])
        in_el, out_el = ref.io_elements(coll, a, n)
        x = ref.make_input(dtype, in_el, gen).to(dev)
        out = torch.empty(out_el, dtype=dtype, device=dev)
        counts = [n] * len(groups)
        fn = {"allreduce": lambda x, o, g, c, t: comm.all_reduce(x, g, out=o, counts=c, dtype=t),
              "reduce-scatter": lambda x, o, g, c, t: comm.reduce_scatter(x, o, g, counts=c, dtype=t),
              "all-gather": lambda x, o, g, c, t: comm.all_gather(x, o, g, counts=c, dtype=t),
              "all-to-all": lambda x, o, g, c, t: comm.all_to_all(x, o, g, counts=c, dtype=t)}[coll]
        args = (x if me else None, out if me else None, groups, counts, dtype)
        calls.append(lambda fn=fn, args=args: fn(*args))
        (outputs if me else unused).append(out)
    # Two fused-helper calls among them: their flat buffers exist once the eager pass made them.
    grads = [ref.make_input(torch.float32, 300, gen).to(dev), ref.make_input(torch.bfloat16, 70, gen).to(dev)]
    grad_outs = [torch.empty_like(g) for g in grads]
    calls.insert(7, lambda: rt.all_reduce_tensors(comm, grads, FUSED, out=grad_outs))
    calls.insert(13, lambda: rt.all_reduce_tensors(comm, grads, FUSED, out=grad_outs))
    outputs += grad_outs
    return calls, outputs, unused


def _graph(rank, size):
    import relay.torch as rt

    dev = _device(rank)
    comm = rt.Communicator(device=dev, timeout=60, transport_bytes=16 << 20)
    calls, outputs, unused = _graph_calls(comm, rank, dev)
    for o in outputs + unused:
        o.fill_(7)
    for c in calls:  # eager: each shape's first call builds its plan (capture needs that)
        c()
    torch.cuda.synchronize()
    eager = [o.clone() for o in outputs]
    bad = [f"rank {rank} eager: a tensor it passed to no call changed" for u in unused
           if not bool((u == 7).all())]
    graph = torch.cuda.CUDAGraph()
    with comm.capture(graph):
        for c in calls:
            c()
    for replay in range(10):
        for o in outputs + unused:
            o.fill_(-3)
        graph.replay()
        torch.cuda.synchronize()
        comm.async_status()
        for i, (o, e) in enumerate(zip(outputs, eager)):
            if not torch.equal(o, e):
                bad.append(f"rank {rank} replay {replay} output {i}: differs from eager")
        if any(not bool((u == -3).all()) for u in unused):
            bad.append(f"rank {rank} replay {replay}: a tensor it passed to no call changed")
    comm.close()
    return len(calls), bad


def test_a_captured_graph_replays_bit_identical_to_eager():
    results = assert_all_ok(run_world(8, _graph, (), timeout=300, env=ENV))
    assert all(n == 20 for n, _ in results.values()), results
    bad = [b for r in sorted(results) for b in results[r][1]]
    assert not bad, "\n".join(bad[:20])


def _compile(rank, size):
    import relay.torch as rt
    from relay.torch.ops import groups_args

    dev = _device(rank)
    comm = rt.Communicator(device=dev, timeout=60, transport_bytes=16 << 20)
    ranks, sizes = groups_args(FUSED)
    n = 1000
    cid = comm.id

    def f(x):
        y = torch.ops.relay.all_reduce(x * 2 + 1, cid, ranks, sizes, [n] * 4, "sum")
        return y.sum() + y * 3

    x = ref.make_input(torch.float32, n, torch.Generator().manual_seed(rank)).to(dev)
    eager = f(x)
    out = {}
    for backend in ("aot_eager", "inductor"):
        torch._dynamo.reset()
        compiled = torch.compile(f, backend=backend, fullgraph=True)
        got = compiled(x)
        out[backend] = bool(torch.equal(got, eager))
    comm.close()
    return out


def test_a_relay_op_under_torch_compile_gives_the_eager_result():
    results = assert_all_ok(run_world(8, _compile, (), timeout=400,
                                      env=dict(ENV, TORCHINDUCTOR_COMPILE_THREADS="1")))
    for r, out in sorted(results.items()):
        assert out == {"aot_eager": True, "inductor": True}, (r, out)


def _stream(rank, size):
    import relay.torch as rt

    dev = _device(rank)
    comm = rt.Communicator(device=dev, timeout=60, transport_bytes=16 << 20)
    n = 1 << 16
    x = torch.zeros(n, device=dev)
    out = torch.empty(n, device=dev)
    comm.all_reduce(x, FUSED, out=out)  # the shape's first call, eagerly
    torch.cuda.synchronize()
    side = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s: the input is written only after it
        x.fill_(float(rank + 1))
        comm.all_reduce(x, FUSED, out=out)
    side.synchronize()
    g = rank // 2
    want = float(2 * g + 1 + 2 * g + 2)
    comm.close()
    return bool((out == want).all()), out[0].item()


def test_a_non_default_current_stream_is_respected():
    results = assert_all_ok(run_world(8, _stream, (), timeout=300, env=ENV))
    for r, (ok, first) in sorted(results.items()):
        assert ok, f"rank {r}: got {first}: the call did not wait for its stream's earlier work"


def _split(rank, size):
    import relay.torch as rt

    d = _device(rank)
    comm = rt.Communicator(device=d, timeout=60, transport_bytes=16 << 20)
    pair = comm.split(rank // 2)
    direct = rt.Options(route="direct")
    bad = []
    for n in (2 << 10, 32 << 10, 128 << 10, 512 << 10, 2 << 20):  # bfloat16: 4 KB .. 4 MB
        mine, other = (
            ref.make_input(torch.bfloat16, n, torch.Generator().manual_seed(1000 * r + n))
            for r in (rank, rank ^ 1)
        )
        x = mine.to(d)
        pair.all_reduce(x, [[0, 1]], options=direct)
        torch.cuda.synchronize(d)
        if not torch.equal(x.cpu(), mine + other):
            bad.append(f"rank {rank}: {2 * n} bytes: {x[:4].tolist()}")
    share = pair.size
    pair.close()
    comm.close()
    return bad, share


def test_split_pairs_share_the_gpu_at_every_size():
    env = dict(ENV, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="100")  # no SM share: issue 25's rule
    results = assert_all_ok(run_world(8, _split, (), timeout=300, env=env))
    for r, (bad, size) in sorted(results.items()):
        assert size == 2, (r, size)
        assert not bad, bad


def _torchcomms(rank, size, seed):
    from test_torchcomms import _suite

    return _suite(rank, size, seed, device="cuda")


def test_torchcomms_suite_on_device_tensors():
    from test_torchcomms import SEED as TC_SEED
    from test_torchcomms import assert_suite

    assert_suite(assert_all_ok(run_world(8, _torchcomms, (TC_SEED,), timeout=600, env=ENV)))


def _fused_lists(rank, dev, n, dtype=torch.float32):
    """FUSED's per-group lists: this rank's input and output, 1-element placeholders elsewhere."""
    placeholder = torch.full((1,), -9, dtype=dtype, device=dev)
    ins, outs = [placeholder] * 4, [placeholder] * 4
    g = rank // 2
    ins[g] = torch.zeros(n, dtype=dtype, device=dev)
    outs[g] = torch.empty(n, dtype=dtype, device=dev)
    return ins, outs, placeholder


def _op_stream(rank, size):
    from relay.torchcomms import TorchCommRelay

    dev = _device(rank)
    b = TorchCommRelay.from_group(device=dev, timeout=60, transport_bytes=16 << 20)
    n = 1 << 16
    ins, outs, placeholder = _fused_lists(rank, dev, n)
    ins2, outs2, _ = _fused_lists(rank, dev, n)
    g = rank // 2
    x, out, out2 = ins[g], outs[g], outs2[g]
    call = b.sharded_relay_multi_group_all_reduce
    call(ins, "sum", FUSED, [n] * 4, async_op=True, output_tensors=outs).wait()  # plans, stream
    call(ins2, "sum", FUSED, [n] * 4, output_tensors=outs2)
    torch.cuda.synchronize()
    current = torch.cuda.current_stream(dev)
    torch.cuda._sleep(200_000_000)  # ~0.1 s on the current stream
    x.fill_(float(rank + 1))  # written after the sleep
    ins2[g].fill_(float(10 * (rank + 1)))
    work = call(ins, "sum", FUSED, [n] * 4, async_op=True, output_tensors=outs)
    seen = {"own stream": work.stream is not None and work.stream != current,
            "in flight": not work.is_completed()}
    call(ins2, "sum", FUSED, [n] * 4, output_tensors=outs2)  # no wait between: ordered after
    work.wait()
    y = out * 1  # on the current stream, after wait()
    torch.cuda.synchronize()
    seen["completed"] = work.is_completed()
    want = float(2 * g + 1 + 2 * g + 2)
    seen["result"] = bool((y == want).all())
    seen["then"] = bool((out2 == 10 * want).all())
    seen["placeholder"] = placeholder.item() == -9
    # wait_blocking: this thread waits until the call is done on its stream; the current stream
    # is not made to wait (the output is read on a side stream that never waited for anything).
    out.fill_(-1.0)
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # ~0.1 s before the call, on the current stream
    work = call(ins, "sum", FUSED, [n] * 4, async_op=True, output_tensors=outs)
    seen["blocking: in flight"] = not work.is_completed()
    start = time.monotonic()
    work.wait_blocking()
    seen["blocking: waited"] = time.monotonic() - start > 0.02
    seen["blocking: completed"] = work.is_completed()
    side = torch.cuda.Stream(dev)
    with torch.cuda.stream(side):
        seen["blocking: result"] = bool((out == want).all())
    b.finalize()
    return seen


def test_torchcomms_async_calls_run_on_the_operation_stream():
    results = assert_all_ok(run_world(8, _op_stream, (), timeout=300, env=ENV))
    for r, seen in sorted(results.items()):
        assert all(seen.values()), (r, seen)


def _held(rank, size):
    """Rank 1 starts its call 0.3 s late, so every other rank's async call waits on the device
    meanwhile; each drops its input and fills a new tensor of the same size on the current
    stream (which is not ordered after the call): the call's input stays its own (another
    block; the sum is right), until wait() gives it back."""
    import relay.torch as rt

    dev = _device(rank)
    comm = rt.Communicator(device=dev, timeout=60, transport_bytes=16 << 20)
    n = 1 << 18
    out = torch.empty(n, device=dev)
    for _ in range(2):  # the call shape's first call (and the operation stream) made
        x = torch.full((n,), float(rank + 1), device=dev)
        comm.all_reduce(x, FUSED, out=out, async_op=True).wait()
    torch.cuda.synchronize(dev)
    seen = {}
    x = torch.full((n,), float(rank + 1), device=dev)
    where = x.data_ptr()
    out.fill_(-1.0)
    if rank == 1:
        time.sleep(0.3)
    work = comm.all_reduce(x, FUSED, out=out, async_op=True)
    seen["held"] = len(comm._ops.held) == 1
    del x
    y = torch.empty(n, device=dev)
    seen["not reused"] = y.data_ptr() != where
    y.fill_(-1000.0)
    work.wait()
    g = rank // 2
    seen["sum"] = bool((out == float(2 * g + 1 + 2 * g + 2)).all())
    seen["given back"] = comm._ops.held == []
    torch.cuda.synchronize(dev)
    comm.close()
    return seen


def test_an_async_calls_tensors_are_not_reused_before_it_ends():
    results = assert_all_ok(run_world(8, _held, (), timeout=300, env=ENV))
    for r, seen in sorted(results.items()):
        assert all(seen.values()), (r, seen)


def _graph_methods(rank, size):
    """Static buffers for each of the four calls (fused A=2 and single A=4, four dtypes, out of
    place), made once eagerly, then captured twice (without and with async_op) and replayed."""
    from relay.torchcomms import TorchCommRelay

    dev = _device(rank)
    b = TorchCommRelay.from_group(device=dev, timeout=60, transport_bytes=16 << 20)
    gen = torch.Generator().manual_seed(rank)
    shapes = [("allreduce", FUSED, torch.bfloat16, 4099), ("reduce-scatter", SINGLE, torch.float32, 999),
              ("all-gather", FUSED, torch.float16, 513), ("all-to-all", SINGLE, torch.int32, 77)]
    calls, outputs, placeholders = [], [], []
    for coll, groups, dtype, n in shapes:
        placeholder = torch.full((1,), -9, dtype=dtype, device=dev)
        placeholders.append(placeholder)
        ins, outs = [placeholder] * len(groups), [placeholder] * len(groups)
        me = next((g for g, m in enumerate(groups) if rank in m), None)
        if me is not None:
            in_el, out_el = ref.io_elements(coll, len(groups[me]), n)
            ins[me] = ref.make_input(dtype, in_el, gen).to(dev)
            outs[me] = torch.empty(out_el, dtype=dtype, device=dev)
            outputs.append(outs[me])
        counts = [n] * len(groups)
        fn = {"allreduce": lambda i, o, g, c, a: b.sharded_relay_multi_group_all_reduce(
                  i, "avg", g, c, async_op=a, output_tensors=o),
              "reduce-scatter": lambda i, o, g, c, a: b.sharded_relay_multi_group_reduce_scatter(
                  i, o, "sum", g, c, async_op=a),
              "all-gather": lambda i, o, g, c, a: b.sharded_relay_multi_group_all_gather(
                  i, o, g, c, async_op=a),
              "all-to-all": lambda i, o, g, c, a: b.sharded_relay_multi_group_all_to_all(
                  i, o, g, c, async_op=a)}[coll]
        calls.append(lambda a, fn=fn, args=(ins, outs, groups, counts): fn(*args, a).wait())
    for c in calls:  # eager: each shape's first call builds its plan; the operation stream
        c(False)
        c(True)
    torch.cuda.synchronize()
    eager = [o.clone() for o in outputs]
    bad = []
    for async_op in (False, True):
        graph = torch.cuda.CUDAGraph()
        with b.communicator.capture(graph, register_inputs=not async_op):
            for c in calls:
                c(async_op)
        for replay in range(5):
            for o in outputs:
                o.fill_(-3)
            graph.replay()
            torch.cuda.synchronize()
            b.communicator.async_status()
            for i, (o, e) in enumerate(zip(outputs, eager)):
                if not torch.equal(o, e):
                    bad.append(f"rank {rank} async_op={async_op} replay {replay} output {i}")
        if any(p.item() != -9 for p in placeholders):
            bad.append(f"rank {rank} async_op={async_op}: a placeholder changed")
    b.finalize()
    return len(outputs), bad


def test_torchcomms_each_method_captured_replays_bit_identical():
    results = assert_all_ok(run_world(8, _graph_methods, (), timeout=300, env=ENV))
    assert sum(n for n, _ in results.values()) == 2 * 8 + 2 * 4, results  # fused 8, single 4
    bad = [x for r in sorted(results) for x in results[r][1]]
    assert not bad, "\n".join(bad[:20])


def _failed_calls(rank, size):
    from test_deferred import _worker

    return _worker(rank, size, device="cuda")


def test_failed_calls_are_every_ranks_error_once_and_the_next_call_runs():
    import test_deferred as td

    reports = assert_all_ok(run_world(8, _failed_calls, (), timeout=300, env=ENV))
    td.test_every_peer_learns_of_a_refusal_once_at_its_synchronize(reports)
    td.test_an_async_work_wait_raises_a_refusal_known_by_then(reports)
    td.test_a_mismatch_is_raised_on_every_rank_at_wait_blocking(reports)
    td.test_torchcomms_and_torchrec_calls_raise_the_refusal_at_wait_blocking(reports)
    td.test_torchrec_refusals_reach_the_peers_at_wait_blocking_as_on_cuda(reports)

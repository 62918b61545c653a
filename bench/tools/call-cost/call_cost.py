"""The cost of one small relay.torch call, the loop c_loop.c makes through the C ABI: `calls`
calls among ranks {0, 1} (the others help) on one tensor, back to back after `warmup`, timed on
the host clock per call (and on CUDA between two events on the current stream: one pair around
the whole loop, per call). One process per rank under relay-run or torchrun:

    relay-run -n 2 -- python3 bench/tools/call-cost/call_cost.py [--device cpu|cuda]
        [--bytes 4096] [--calls 20000] [--warmup 200] [--what sync,async,...] [--profile N]
        [--graph K]

what: sync         comm.all_reduce(t, [[0, 1]]) (a helper: None, with counts and dtype)
      async        comm.all_reduce(t, [[0, 1]], async_op=True).wait()
      torchcomms   TorchCommRelay.sharded_relay_multi_group_all_reduce([t], "sum", ...)
      torchrec     FusedShardedRelayMultiGroup.allreduce_multi_group([t], 1, [n], ...)
      fused        relay.torch.all_reduce_tensors(comm, [t], [[0, 1]])
Each call into the library's collective entries (relay_run_call_async too: the ordering of the
operation stream after the current one and the mark of the call's end are the library's) is
timed too (a wrapper around them, whose own cost, about two clock reads, counts as outside):
"outside" is the host time per call spent outside the library, the Python layer's own, which the
transport's waits for the peer (large on a loaded machine) do not blur. The library's other
entries a call or its work makes (relay_comm_mark, relay_comm_join_call, relay_comm_order_after,
relay_comm_async_status: the work's marks and waits) are timed apart: "outside" includes them,
and "of that in marks and waits" says how much they took. --profile N: rank 0 runs N more calls
of each under cProfile and prints the 25 functions of most own time. Rank 0 prints one line per
call kind: "call_cost <what> <bytes> B: <us> us a call (host), <us> outside the library, <us>
(device), <us> of that in marks and waits".
--graph K (CUDA): then K sync calls captured into a torch.cuda.CUDAGraph (comm.capture) and
replayed calls/K times: "call_cost replayed <bytes> B: <us> us a call (host), <us> us (device),
graphs of K calls", both per captured call."""

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import torch
import torch.distributed as dist


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--bytes", type=int, default=4096)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--what", default="sync,async,torchcomms,torchrec,fused")
    p.add_argument("--profile", type=int, default=0)
    p.add_argument("--graph", type=int, default=0)
    args = p.parse_args(argv)

    import relay.torch as rt
    from relay.torchcomms import TorchCommRelay
    from relay.torchrec import FusedShardedRelayMultiGroup

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    comm = rt.Communicator(device=device)
    inside, waits = _time_library(comm, _ENTRIES), _time_library(comm, _WAITS)
    backend = TorchCommRelay.from_communicator(comm, "call_cost")
    fused = FusedShardedRelayMultiGroup(backend, size, rank, [[0, 1]])
    n = args.bytes // 2
    t = torch.ones(n, dtype=torch.bfloat16, device=device) if rank < 2 else None
    pair = [[0, 1]]
    calls = {
        "sync": (lambda: comm.all_reduce(t, [[0, 1]])) if t is not None else
                (lambda: comm.all_reduce(None, [[0, 1]], dtype=torch.bfloat16, counts=[n])),
        "async": lambda: comm.all_reduce(t, [[0, 1]], dtype=torch.bfloat16, counts=[n],
                                         async_op=True).wait(),
        "torchcomms": lambda: backend.sharded_relay_multi_group_all_reduce(
            [t if t is not None else torch.empty(0, dtype=torch.bfloat16, device=device)],
            "sum", pair, [n]),
        "torchrec": lambda: fused.allreduce_multi_group(
            [t if t is not None else torch.empty(0, dtype=torch.bfloat16, device=device)], 1,
            [n], pair, op="sum"),
        "fused": lambda: rt.all_reduce_tensors(
            comm, [t if t is not None else torch.empty(n, dtype=torch.bfloat16, device=device)],
            pair),
    }
    for what in args.what.split(","):
        call = calls[what]
        loop(call, args.warmup, device)
        inside[0] = waits[0] = 0
        host, dev = loop(call, args.calls, device)
        outside = host - inside[0] / 1e3 / args.calls
        if rank == 0:
            shown = f"{dev:.2f}" if dev is not None else "-"
            print(f"call_cost {what} {args.bytes} B: {host:.2f} us a call (host), {outside:.2f} "
                  f"us outside the library, {shown} us (device), "
                  f"{waits[0] / 1e3 / args.calls:.2f} us of that in marks and waits", flush=True)
        if args.profile:
            prof = cProfile.Profile() if rank == 0 else None
            if prof:
                prof.enable()
            loop(call, args.profile, device)
            if prof:
                prof.disable()
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
                print(f"== cProfile of {args.profile} calls: {what}\n{out.getvalue()}", flush=True)
    if args.graph > 0 and device.type == "cuda":
        _replayed(comm, calls["sync"], args, device, rank)
    comm.async_status()
    backend.finalize()
    dist.destroy_process_group()
    return 0


def _replayed(comm, call, args, device, rank):
    """args.graph calls of `call` (its shape made before) captured into one graph, replayed."""
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with comm.capture(graph):
        for _ in range(args.graph):
            call()
    loop(graph.replay, max(args.warmup // args.graph, 1), device)
    host, dev = loop(graph.replay, max(args.calls // args.graph, 1), device)
    if rank == 0:
        print(f"call_cost replayed {args.bytes} B: {host / args.graph:.2f} us a call (host), "
              f"{dev / args.graph:.2f} us (device), graphs of {args.graph} calls", flush=True)
    comm.deregister_graph_inputs()
    torch.cuda.synchronize(device)


_ENTRIES = ("allreduce", "reduce_scatter", "all_gather", "all_to_all", "run_call", "run_call_async")
_WAITS = ("comm_mark", "comm_order_after", "comm_join_call", "comm_async_status")


def _time_library(comm, entries):
    """Replaces comm's library by a copy whose `entries` add their time (ns) to the returned
    list's one entry."""
    import copy

    spent = [0]
    lib = copy.copy(comm._lib)
    clock = time.perf_counter_ns
    # The entries a repeated call makes are its preconverted ones (where the package has them):
    # timed under the same names.
    preconverted = getattr(lib, "preconverted", None)
    if preconverted is not None:
        from relay._capi import Preconverted

        lib.preconverted = _Entries()
        for name in Preconverted.__slots__:
            setattr(lib.preconverted, name, getattr(preconverted, name))
    for name in entries:
        for where in (lib, lib.preconverted) if preconverted is not None else (lib,):
            fn = getattr(where, name, None)
            if fn is None:
                continue

            def timed(*a, fn=fn):
                t = clock()
                try:
                    return fn(*a)
                finally:
                    spent[0] += clock() - t

            setattr(where, name, timed)
    comm._lib = lib
    return spent


class _Entries:
    """A library's preconverted entries, some of them timed."""


def loop(call, calls, device):
    """(host us, device us or None) per call of `calls` calls."""
    cuda = device.type == "cuda"
    if cuda:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    host = (time.perf_counter() - t0) * 1e6 / max(calls, 1)
    if not cuda:
        return host, None
    end.record()
    end.synchronize()
    return host, begin.elapsed_time(end) * 1e3 / max(calls, 1)


if __name__ == "__main__":
    sys.exit(main())

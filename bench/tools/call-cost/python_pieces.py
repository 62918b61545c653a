"""The host time of relay.torch's repeated call, piece by piece, in one process and without a
peer: the library's entries a repeated call makes (relay_run_call, relay_run_call_async,
relay_comm_mark, the waits) are those of a stand-in that answers as a stream transport does and
does nothing else (standin.c), so each line is the Python layer's time per call plus its crossings
through ctypes, not the transport's. The communicator is a real one (2 ranks over shm, both in
this process, made from a HashStore by two threads): its first call of a shape asks the real
library for the layout, as on any machine. The current stream and the operation stream are
64-bit handles above 2^32 (their values are checked at the stand-in after each form), as CUDA's
are; the tensors are the CPU's.

    cc -O2 -shared -fPIC -std=c99 -Iinclude bench/tools/call-cost/standin.c -o /tmp/standin.so
    RELAY_C_LIBRARY_DIR=build-quick/capi PYTHONPATH=python /usr/bin/python3 \\
        bench/tools/call-cost/python_pieces.py --standin /tmp/standin.so [--calls 20000]
        [--repeat 15] [--what ctypes,pieces,forms]

Each line: "<what>: <least> / <median> ns a call", over --repeat loops of --calls calls
(the least is the cost on a machine that other work leaves alone)."""

import argparse
import copy
import ctypes
import itertools
import statistics
import sys
import threading
import time
from ctypes import byref, c_uint64, c_void_p

import torch
import torch.distributed as dist

STREAM = 0x7F00_1234_5678  # the current stream's handle: above 2^32, as CUDA's are
OP_STREAM = 0x7F00_8765_4320  # the operation stream's
# The entries a repeated call makes, by the Library's names.
HOT = ("run_call", "run_call_async", "comm_mark", "comm_order_after", "comm_join_call",
       "comm_async_status", "comm_call_finished")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--standin", required=True, help="standin.c built as a shared library")
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--what", default="ctypes,pieces,forms")
    args = p.parse_args(argv)

    from relay import _capi

    comm, peer = _pair()
    standin = ctypes.CDLL(args.standin)
    standin.relay_standin_seen.restype = c_void_p
    real_lib = comm._lib
    comm._lib = _with_standin(real_lib, standin)
    _as_stream_transport(comm)
    what = args.what.split(",")

    def timed(name, stmt, setup=None):
        ns = _time(stmt, args.calls, args.repeat, setup)
        print(f"{name}: {min(ns):.0f} / {statistics.median(ns):.0f} ns a call", flush=True)

    if "ctypes" in what:
        # One cheap entry of the real library (a live communicator's async status, shm: no
        # device) and the stand-in's five-argument relay_run_call_async, as the declared
        # function (argtypes: ctypes converts each argument per call) and with the arguments
        # converted once (a function without argtypes, given ctypes objects).
        h = comm._handle
        declared = real_lib.comm_async_status
        bare = real_lib.dll["relay_comm_async_status"]
        bare.restype = ctypes.c_int
        timed("ctypes relay_comm_async_status, argtypes", lambda: declared(h))
        timed("ctypes relay_comm_async_status, preconverted", lambda: bare(h))
        made = _capi.AsyncCall()
        made_ref = byref(made)
        call = _capi.Call()
        call_ref = byref(call)
        run = _capi_declared(standin, "relay_run_call_async")
        timed("ctypes stand-in relay_run_call_async, argtypes (ints)",
              lambda: run(h, call_ref, STREAM, OP_STREAM, made_ref))
        bare_run = standin["relay_run_call_async"]
        bare_run.restype = ctypes.c_int
        s, op = c_void_p(STREAM), c_void_p(OP_STREAM)
        timed("ctypes stand-in relay_run_call_async, preconverted",
              lambda: bare_run(h, call_ref, s, op, made_ref))
        _check_seen(standin, h, STREAM, OP_STREAM)
        join = _capi_declared(standin, "relay_comm_join_call")
        timed("ctypes stand-in relay_comm_join_call, argtypes (ints)",
              lambda: join(h, 5, STREAM))
        bare_join = standin["relay_comm_join_call"]
        bare_join.restype = ctypes.c_int
        timed("ctypes stand-in relay_comm_join_call, preconverted (c_uint64 made per call)",
              lambda: bare_join(h, c_uint64(5), s))
        _check_seen(standin, h, STREAM)

    n = 2048  # 4 KB of bfloat16
    t = torch.ones(n, dtype=torch.bfloat16)
    pair = [[0, 1]]
    if "pieces" in what:
        timed("t.data_ptr()", t.data_ptr)
        timed("t.numel()", t.numel)
        timed("t.dtype", lambda: t.dtype)
        timed("t.device", lambda: t.device)
        timed("t.is_contiguous()", t.is_contiguous)
        timed("an empty Python call (the loop's own cost, in every line)", lambda: None)
        comm.all_reduce(t, pair)
        args_of = ("allreduce", t, None, pair, None, "sum", None, "tensor", None)
        timed("Communicator._prepared_of (a repeated call's prepared arguments found)",
              lambda: comm._prepared_of(*args_of))

    if "forms" in what:
        from relay.torch import all_reduce_tensors
        from relay.torchcomms import TorchCommRelay
        from relay.torchrec import FusedShardedRelayMultiGroup

        backend = TorchCommRelay.from_communicator(comm, "pieces")
        fused = FusedShardedRelayMultiGroup(backend, 2, 0, pair)
        bf16 = torch.bfloat16
        in_turn = itertools.cycle([t, torch.ones(n, dtype=torch.bfloat16)]).__next__
        forms = {
            "sync all_reduce(t, pair)": lambda: comm.all_reduce(t, pair),
            "sync all_reduce of two tensors in turn (never the last call's arguments)":
                lambda: comm.all_reduce(in_turn(), pair),
            "async all_reduce(t, pair, dtype, counts, async_op=True).wait()":
                lambda: comm.all_reduce(t, pair, dtype=bf16, counts=[n], async_op=True).wait(),
            "async all_reduce(t, pair, async_op=True) alone (no wait)":
                lambda: comm.all_reduce(t, pair, async_op=True),
            "torchcomms sharded_relay_multi_group_all_reduce([t], 'sum', pair, [n])":
                lambda: backend.sharded_relay_multi_group_all_reduce([t], "sum", pair, [n]),
            "torchcomms the same, async_op=True, .wait()":
                lambda: backend.sharded_relay_multi_group_all_reduce(
                    [t], "sum", pair, [n], async_op=True).wait(),
            "torchrec allreduce_multi_group([t], 1, [n], pair, op='sum')":
                lambda: fused.allreduce_multi_group([t], 1, [n], pair, op="sum"),
            "fused all_reduce_tensors(comm, [t], pair)":
                lambda: all_reduce_tensors(comm, [t], pair),
            "fused all_reduce_tensors(comm, [t], pair, async_op=True).wait()":
                lambda: all_reduce_tensors(comm, [t], pair, async_op=True).wait(),
        }
        for name, form in forms.items():
            form()
            form()
            timed(name, form)
            _check_seen(standin, comm._handle, STREAM)
        backend._comm = None  # the peer closes nothing: both end together below

    _close(comm, peer)
    return 0


def _pair():
    """Two communicators of 2 ranks over shm, made in this process by two threads (rank 0's, to
    call; rank 1's, idle)."""
    from relay.torch import Communicator

    store = dist.HashStore()
    made = [None, None]

    def make(rank):
        made[rank] = Communicator.from_store(store, rank, 2, device="cpu", timeout=60,
                                             transport_bytes=1 << 20)

    _together(make, (0, 1))
    # A control plane (collective), as relay.torchcomms' backend attaches one.
    _together(lambda rank: made[rank].attach_plane(serving=False), (0, 1))
    return made[0], made[1]


def _together(fn, ranks):
    """fn(rank) for every rank, each on a thread of its own (a collective of this process's
    communicators)."""
    threads = [threading.Thread(target=fn, args=(r,)) for r in ranks]
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def _close(comm, peer):
    comm._lib = peer._lib
    _together(lambda rank: (comm, peer)[rank].close(), (0, 1))


def _capi_declared(dll, name):
    """dll's `name` declared as relay's Library declares it (restype and argtypes)."""
    from relay import _capi

    fn = dll[name]
    fn.restype, fn.argtypes = _capi._FUNCTIONS[name]
    return fn


def _with_standin(lib, standin):
    """A copy of `lib` whose hot entries (HOT) are the stand-in's, declared as lib declares its
    own, and preconverted where the package has such entries (Library.preconverted)."""
    from relay import _capi

    copied = copy.copy(lib)
    for name in HOT:
        setattr(copied, name, _capi_declared(standin, "relay_" + name))
    if hasattr(lib, "preconverted"):
        copied.preconverted = _capi.Preconverted(standin)
    return copied


def _as_stream_transport(comm):
    """comm's calls as a stream transport's: the current stream and the operation stream are
    handles, the operation stream made."""
    comm._stream = itertools.repeat(STREAM).__next__  # a C callable, as torch's reader is
    ops = comm._ops
    if hasattr(ops, "use_stream"):
        ops.use_stream("operation stream", OP_STREAM)
    else:
        ops.stream, ops.handle, ops._started = "operation stream", OP_STREAM, True


def _check_seen(standin, handle, *streams):
    got = [standin.relay_standin_seen(i) for i in range(1 + len(streams))]
    want = [handle.value, *streams]
    if got != want:
        raise SystemExit(f"the stand-in saw {[hex(v or 0) for v in got]}, not "
                         f"{[hex(v) for v in want]}: a pointer did not arrive whole")


def _time(fn, calls, repeat, setup=None):
    """ns per call of fn(), each of `repeat` loops of `calls` calls."""
    out = []
    loop = range(calls)
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in loop:
            fn()
        out.append((time.perf_counter_ns() - t0) / calls)
    return out


if __name__ == "__main__":
    sys.exit(main())

"""The torch.library ops (relay/torch/ops.py) on 8 processes over shm: every op's eager result
against gloo's collective, a helper's tensors untouched, and the Meta (shape) kernels; and the
package's example (python/examples/fused_gradients.py) run as a user runs it."""

import os
import subprocess
import sys

import torch

import reference as ref
from world import assert_all_ok, run_world

FUSED = [[1, 0], [3, 2], [5, 4], [7, 6]]
SINGLE = [[6, 1, 3, 4]]


def _worker(rank, size):
    import relay.torch as rt
    from relay.torch.ops import groups_args

    pgs = ref.subgroups([FUSED, SINGLE])
    comm = rt.Communicator(device="cpu", timeout=20, transport_bytes=1 << 20)
    ops = torch.ops.relay
    bad = []
    gen = torch.Generator().manual_seed(rank)

    def check(what, got, want):
        if not torch.equal(got, want):
            bad.append(f"rank {rank}: {what}: {got[:6].tolist()} != {want[:6].tolist()}")

    for groups in (FUSED, SINGLE):
        ranks, sizes = groups_args(groups)
        me = next((g for g, m in enumerate(groups) if rank in m), None)
        members = groups[me] if me is not None else None
        active = len(groups[0])
        n = 37
        counts = [n] * len(groups)
        for coll, name in (("allreduce", "all_reduce"), ("reduce-scatter", "reduce_scatter"),
                           ("all-gather", "all_gather"), ("all-to-all", "all_to_all")):
            dtype = torch.float32 if coll != "all-gather" else torch.int64
            in_el, out_el = ref.io_elements(coll, active, n)
            x = ref.make_input(dtype, in_el, gen)
            keep = x.clone()
            extra = ("sum",) if coll in ("allreduce", "reduce-scatter") else ()
            y = getattr(ops, name)(x, comm.id, ranks, sizes, counts, *extra)  # functional
            check(f"{name} left its input", x, keep)
            # The out= / in-place forms.
            if coll == "allreduce":
                z = x.clone()
                ops.all_reduce_(z, comm.id, ranks, sizes, counts, "sum")
            else:
                z = ref.poison_like(dtype, out_el if me is not None else 1)
                getattr(ops, name + "_out")(x, z, comm.id, ranks, sizes, counts, *extra)
            # Shapes without data.
            meta = getattr(ops, name)(x.to("meta"), comm.id, ranks, sizes, counts, *extra)
            want_shape = (out_el,) if me is not None else (0,)
            if coll == "allreduce" and me is not None:
                want_shape = tuple(x.shape)
            if tuple(meta.shape) != want_shape or meta.device.type != "meta":
                bad.append(f"rank {rank}: {name} on meta: {tuple(meta.shape)} {meta.device}")
            if me is None:
                check(f"{name}: the helper's input", x, keep)
                if y.numel() != 0:  # every functional op: 0 elements on a helper
                    bad.append(f"rank {rank}: {name} on a helper returned {y.numel()} elements")
                continue
            want = ref.reference(coll, extra[0] if extra else None, keep, members,
                                 pgs[tuple(sorted(members))], dtype)
            check(f"{name} {groups}", y, want)
            check(f"{name} (out=) {groups}", z, want)
    comm.close()
    return bad


def test_ops_give_gloos_results():
    results = assert_all_ok(run_world(8, _worker, (), timeout=300))
    bad = [b for r in sorted(results) for b in results[r]]
    assert not bad, "\n".join(bad)


def test_the_example_runs_as_written():
    """python/examples/fused_gradients.py under torch.multiprocessing, as its docstring says."""
    example = os.path.join(os.path.dirname(__file__), "..", "..", "python", "examples",
                           "fused_gradients.py")
    package = os.path.join(os.path.dirname(__file__), "..", "..", "python")
    env = dict(os.environ, RELAY_TIMEOUT="20", PYTHONPATH=os.path.abspath(package))
    done = subprocess.run([sys.executable, example, "--spawn", "8"], env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rank 0: gradients averaged over replica group [0, 1]" in done.stdout, done.stdout

"""nccl-tests-style rows: relay against torch.distributed's own collective, in the same processes,
on the same data, under torchrun or relay-run.

    relay-run -n 8 -- python3 -m relay.torch.bench                    # CPU: shm against gloo
    torchrun --nproc-per-node 8 -m relay.torch.bench --device cuda    # GPU: ipc against NCCL

Per collective, active count A and mode (fused: every group at once; single: one group, the
others help), per size: the time per call of relay and of torch.distributed's collective on the
rank's group (a new_group per group; reduce-scatter on gloo, which has none, is its allreduce),
each the largest over the ranks of the mean over --iters calls, and #wrong, the elements where
relay's output differs from torch's (the data make every sum exact, so the two must agree bit for
bit). Size is nccl-tests' (allreduce: the buffer; the others: the A blocks). The exit status is 1
where any element is wrong.

With --pieces-area BYTES a second communicator, whose data area per rank is BYTES, makes the
same calls, which run in pieces where they are larger than that area; each row adds its time per
call and the per-byte cost of the pieces, its time over the first communicator's on the same
data. The two communicators take turns --rounds times (each turn --iters calls, the first of
each pair alternating), and the row shows the medians over the rounds: both sides see the same
machine, so a busy machine slows both rather than one.
"""

import argparse
import sys
import time

import torch
import torch.distributed as dist

from .communicator import Communicator

COLLECTIVES = ("allreduce", "reduce-scatter", "all-gather", "all-to-all")


def _size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * scale[text[-1].upper()]) if text[-1].upper() in scale else int(text)


def _groups(size, active, mode):
    if mode == "fused":
        return [list(range(g, g + active)) for g in range(0, size, active)]
    return [list(range(active))]


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Baseline:
    """torch.distributed's collective on this rank's group."""

    def __init__(self, pg, backend, members, rank):
        self.pg, self.backend, self.members, self.rank = pg, backend, members, rank
        self.order = sorted(members)  # torch's group order; relay's is `members`

    def __call__(self, coll, x, out):
        a = len(self.members)
        if coll == "allreduce":
            out.copy_(x)
            dist.all_reduce(out, group=self.pg)
        elif coll == "reduce-scatter":
            k = self.members.index(self.rank)
            n = out.numel()
            if self.backend == "nccl" and self.order == self.members:
                dist.reduce_scatter_tensor(out, x, group=self.pg)
            else:
                y = x.clone()
                dist.all_reduce(y, group=self.pg)
                out.copy_(y[k * n : (k + 1) * n])
        elif coll == "all-gather":
            n = x.numel()
            if self.backend == "nccl" and self.order == self.members:
                dist.all_gather_into_tensor(out, x, group=self.pg)
            else:
                parts = [out[j * n : (j + 1) * n] for j in range(a)]
                by_rank = dict(zip(self.order, range(a)))
                gathered = [torch.empty_like(x) for _ in range(a)]
                dist.all_gather(gathered, x, group=self.pg)
                for j, r in enumerate(self.members):
                    parts[j].copy_(gathered[by_rank[r]])
        else:
            if self.order != self.members:
                raise ValueError("the all-to-all baseline needs groups in rank order")
            dist.all_to_all_single(out, x, group=self.pg)


def _time(fn, iters, warmup, device):
    for _ in range(warmup):
        fn()
    _sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / iters


def _largest(value, device):
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m relay.torch.bench", description=__doc__.split("\n")[0])
    p.add_argument("-C", "--collectives", default="all", help="comma-separated, or all")
    p.add_argument("-A", "--active", default="2,4", help="active ranks per group")
    p.add_argument("-m", "--mode", default="fused,single")
    p.add_argument("-b", "--begin", default="4K", help="smallest size")
    p.add_argument("-e", "--end", default="4M", help="largest size")
    p.add_argument("-f", "--factor", type=int, default=4)
    p.add_argument("-n", "--iters", type=int, default=10)
    p.add_argument("-w", "--warmup", type=int, default=2)
    p.add_argument("-d", "--dtype", default="float32")
    p.add_argument("--device", default="cpu", help="cpu (shm, gloo) or cuda (ipc, nccl)")
    p.add_argument("--transport", default="auto")
    p.add_argument("--backend", default=None,
                   help="torch.distributed's backend (default: gloo on cpu, nccl on cuda; NCCL "
                        "takes one rank per GPU)")
    p.add_argument("--transport-bytes", default="0", help="the data area per rank (e.g. 256M)")
    p.add_argument("--pieces-area", default=None,
                   help="a second communicator with this data area per rank, timed beside the "
                        "first (calls larger than it run in pieces)")
    p.add_argument("--rounds", type=int, default=1,
                   help="with --pieces-area: turns of each communicator per row (medians shown)")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds must be at least 1, not {args.rounds}")

    device = torch.device(args.device)
    if device.type == "cuda":
        import os

        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    backend = args.backend or ("nccl" if device.type == "cuda" else "gloo")
    dist.init_process_group(backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    dtype = getattr(torch, args.dtype)
    element_size = torch.empty(0, dtype=dtype).element_size()
    comm = Communicator(device=device, transport=args.transport,
                        transport_bytes=_size(args.transport_bytes))
    small = None
    if args.pieces_area is not None:
        small = Communicator(device=device, transport=args.transport,
                             transport_bytes=_size(args.pieces_area))
    colls = COLLECTIVES if args.collectives == "all" else args.collectives.split(",")
    wrong_total = 0
    if rank == 0:
        print(f"# relay.torch.bench: {size} ranks, {device.type}, relay's {comm.transport} against "
              f"torch.distributed's {backend}, {args.dtype}, {args.iters} iterations")
        if small is not None:
            print(f"# pieces: a second communicator with a {_size(args.pieces_area)}-byte area, "
                  f"{args.rounds} rounds of {args.iters} calls each, medians")
        print(f"# {'collective':>14} {'A':>2} {'mode':>6} {'size(B)':>10} {'count':>9} "
              f"{'relay(us)':>10} {'algbw':>7} {'torch(us)':>10} {'algbw':>7} {'speedup':>7} "
              f"{'#wrong':>6}" + (f" {'pieces(us)':>10} {'cost':>6}" if small else ""))
    made = {}
    for active in [int(a) for a in args.active.split(",")]:
        for mode in args.mode.split(","):
            groups = _groups(size, active, mode)
            for g in groups:
                key = tuple(g)
                if key not in made:
                    made[key] = dist.new_group(list(key))
            me = next((g for g in groups if rank in g), None)
            base = Baseline(made[tuple(me)], backend, me, rank) if me else None
            for coll in colls:
                nbytes = _size(args.begin)
                while nbytes <= _size(args.end):
                    blocks = 1 if coll == "allreduce" else active
                    n = max(1, nbytes // element_size // blocks)
                    bad, t_relay, t_torch, shown, t_pieces = _row(
                        comm, small, base, coll, groups, me, n, active, dtype, device, args)
                    wrong_total += bad
                    if rank == 0:
                        ab = shown / t_relay / 1e9
                        tb = shown / t_torch / 1e9 if t_torch > 0 else float("nan")
                        extra = ""
                        if small is not None:
                            extra = f" {t_pieces * 1e6:>10.1f} {t_pieces / t_relay:>6.3f}"
                        print(f"  {coll:>14} {active:>2} {mode:>6} {shown:>10} {n:>9} "
                              f"{t_relay * 1e6:>10.1f} {ab:>7.2f} {t_torch * 1e6:>10.1f} "
                              f"{tb:>7.2f} {t_torch / t_relay:>7.2f} {bad:>6}{extra}", flush=True)
                    nbytes *= args.factor
    if small is not None:
        small.close()
    comm.close()
    dist.destroy_process_group()
    return 1 if wrong_total else 0


def _median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _row(comm, small, base, coll, groups, me, n, active, dtype, device, args):
    es = torch.empty(0, dtype=dtype).element_size()
    in_el = n if coll in ("allreduce", "all-gather") else active * n
    out_el = n if coll in ("allreduce", "reduce-scatter") else active * n
    counts = [n] * len(groups)
    gen = torch.Generator().manual_seed(dist.get_rank() * 7919 + n)
    x = (torch.randint(-16, 17, (in_el,), generator=gen).to(torch.float32) / 4).to(dtype).to(device)
    out = torch.empty(out_el, dtype=dtype, device=device)
    ref = torch.empty(out_el, dtype=dtype, device=device)

    def call_of(c, into):
        def relay_call():
            if coll == "allreduce":
                c.all_reduce(x if me else None, groups, out=into if me else None, counts=counts,
                             dtype=dtype)
            else:
                fn = {"reduce-scatter": c.reduce_scatter, "all-gather": c.all_gather,
                      "all-to-all": c.all_to_all}[coll]
                fn(x if me else None, into if me else None, groups, counts=counts, dtype=dtype)
        return relay_call

    def torch_call():
        if base is not None:
            base(coll, x, ref)

    out.fill_(-7)  # poisoned: a call that writes nothing is wrong everywhere
    relay_call = call_of(comm, out)
    t_pieces, pieces_out = None, None
    if small is None:
        t_relay = _largest(_time(relay_call, args.iters, args.warmup, device), device)
    else:
        pieces_out = torch.full((out_el,), -7, dtype=dtype, device=device)
        pieces_call = call_of(small, pieces_out)
        whole, pieces = [], []
        for r in range(args.rounds):
            turns = [(relay_call, whole), (pieces_call, pieces)]
            for fn, times in turns if r % 2 == 0 else reversed(turns):
                times.append(_largest(_time(fn, args.iters, args.warmup, device), device))
        t_relay, t_pieces = _median(whole), _median(pieces)
    t_torch = _largest(_time(torch_call, args.iters, args.warmup, device), device)
    bad = int((out != ref).sum().item()) if me else 0
    if me and pieces_out is not None:
        bad += int((pieces_out != ref).sum().item())
    bad_t = torch.tensor([bad], dtype=torch.int64, device=device)
    dist.all_reduce(bad_t)
    return int(bad_t.item()), t_relay, t_torch, max(in_el, out_el) * es, t_pieces


if __name__ == "__main__":
    sys.exit(main())

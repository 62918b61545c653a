# Hosted helpers from relay.torch on CUDA (not part of the project): 2 processes on cuda:0 host
# ranks 2-7 (helper devices all 0), every collective against a reference worked out by hand.
import torch, torch.distributed as dist
import relay.torch

dist.init_process_group("gloo")
r = dist.get_rank()
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
comm = relay.torch.Communicator(device=dev, helper_devices=[0] * 6)
assert comm.size == 8
for route in ("relay", "direct"):
    opts = relay.torch.Options(route=route)
    for n in (4096, 1 << 20):
        x = torch.full((n,), float(r + 1), device=dev, dtype=torch.bfloat16)
        comm.all_reduce(x, [[0, 1]], options=opts)
        assert x.eq(3).all(), (route, n, x[:4])
        out = torch.full((n,), -7.0, device=dev)
        comm.reduce_scatter(torch.arange(2 * n, device=dev, dtype=torch.float32) + r, out, [[0, 1]],
                            options=opts)
        ref = 2 * (torch.arange(n, device=dev, dtype=torch.float32) + r * n) + 1
        assert out.eq(ref).all(), (route, "rs", n)
        g = torch.full((2 * n,), -7.0, device=dev)
        comm.all_gather(torch.full((n,), float(r), device=dev), g, [[0, 1]], options=opts)
        assert g[:n].eq(0).all() and g[n:].eq(1).all(), (route, "ag", n)
        w = comm.all_reduce(torch.full((n,), float(r + 1), device=dev), [[0, 1]], options=opts,
                            async_op=True)
        w.wait_blocking()
        assert w.result.eq(3).all(), (route, "async", n)
torch.cuda.synchronize()
comm.close()
if r == 0:
    print("hosted relay.torch on CUDA: every collective right, relay and direct routes, sync and async")

"""The spec's use of relay from PyTorch: data-parallel replicas in groups of 2 on one node, each
group averaging its gradients with ONE fused call across all groups, the other ranks of the node
helping (relay needs no scratch from a helper: it passes None).

    torchrun --nproc-per-node 8 python/examples/fused_gradients.py
    relay-run -n 8 -- python3 python/examples/fused_gradients.py
    python3 python/examples/fused_gradients.py --spawn 8          # no launcher

Each rank checks relay's average against torch.distributed's all_reduce on its group.
"""

import argparse
import tempfile

import torch
import torch.distributed as dist

import relay.torch


def train(rank, world, store, device):
    dist.init_process_group("gloo", init_method=store, rank=rank, world_size=world)
    rank, world = dist.get_rank(), dist.get_world_size()
    groups = [[g, g + 1] for g in range(0, world, 2)]  # 2-active replica groups of the node
    mine = rank // 2
    torch.manual_seed(0)  # one model, replicated
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model.to(device)
    torch.manual_seed(100 + rank)  # each rank its own batch
    loss = model(torch.randn(8, 16, device=device)).square().mean()
    loss.backward()
    grads = [p.grad for p in model.parameters()]

    comm = relay.torch.Communicator(device=device)
    flat = torch.cat([g.flatten() for g in grads])
    expected = flat.clone()
    # The spec's call: one entry per group, this rank's gradients in its own, None where it helps.
    comm.all_reduce([flat if g == mine else None for g in range(len(groups))], groups, op="avg")

    pairs = [dist.new_group(g) for g in groups]  # torch.distributed's own, to compare with
    dist.all_reduce(expected, group=pairs[mine])
    expected /= 2
    error = (flat - expected).abs().max().item()
    assert error <= 1e-6, f"rank {rank}: relay and torch.distributed differ by {error}"
    # The torchrec-style helper does the packing itself: a dict (or list) of tensors of any dtypes.
    relay.torch.all_reduce_tensors(comm, {n: p.grad for n, p in model.named_parameters()}, groups,
                                   op="avg")
    print(f"rank {rank}: gradients averaged over replica group {groups[mine]} "
          f"({flat.numel()} elements, {comm.transport}), max difference {error:.1e}")
    comm.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawn", type=int, default=0, help="start this many ranks here")
    parser.add_argument("--device", default="cpu", help="cpu (shm) or cuda (ipc)")
    args = parser.parse_args()
    if args.spawn:
        store = "file://" + tempfile.mktemp(prefix="relay-example-")
        torch.multiprocessing.spawn(train, args=(args.spawn, store, args.device),
                                    nprocs=args.spawn)
    else:
        train(-1, -1, "env://", args.device)  # torchrun's or relay-run's variables


if __name__ == "__main__":
    main()

"""relay from PyTorch: a Communicator over torch.distributed's world, torchrec-style fused calls,
torch.library ops and CUDA graph capture.

    import torch.distributed as dist
    import relay.torch

    dist.init_process_group("gloo")                     # torchrun's or relay-run's environment
    comm = relay.torch.Communicator(device="cpu")        # shm for CPU tensors, ipc for CUDA ones
    groups = [[0, 1], [2, 3], [4, 5], [6, 7]]            # 2-active replica groups of a node
    relay.torch.all_reduce_tensors(comm, grads, groups, op="avg")   # one fused call per dtype

The torch.library ops register on import of relay.torch.ops (torch.ops.relay.*).
"""

from .communicator import Communicator, Options, lookup
from .fused import (
    all_gather_tensors,
    all_reduce_tensors,
    all_to_all_tensors,
    reduce_scatter_tensors,
)

__all__ = [
    "Communicator",
    "Options",
    "lookup",
    "all_reduce_tensors",
    "reduce_scatter_tensors",
    "all_gather_tensors",
    "all_to_all_tensors",
]

import torch, torch.distributed as dist
import relay.torch

dist.init_process_group("gloo")                    # relay-run's or torchrun's variables
rank = dist.get_rank()
comm = relay.torch.Communicator(device="cpu")       # shm here; CUDA tensors take ipc
groups = [[0, 1], [2, 3], [4, 5], [6, 7]]           # 2-active groups, all at once (fused)
grads = {"w": torch.full((1000,), float(rank)), "b": torch.ones(10, dtype=torch.bfloat16)}
relay.torch.all_reduce_tensors(comm, grads, groups, op="avg")   # one call per dtype
assert grads["w"].eq(rank // 2 * 2 + 0.5).all() and grads["b"].eq(1).all()

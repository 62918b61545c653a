import torch, torch.distributed as dist
import relay.torch

dist.init_process_group("gloo")  # 2 processes
comm = relay.torch.Communicator(device="cpu", helper_devices=[2, 3, 4, 5, 6, 7])
assert comm.size == 8  # ranks 2-7 are hosted: 3 by each process
grad = torch.full((100_000,), float(dist.get_rank() + 1))
comm.all_reduce(grad, [[0, 1]], op="sum", options=relay.torch.Options(route="relay"))
assert grad.eq(3).all()
comm.close()

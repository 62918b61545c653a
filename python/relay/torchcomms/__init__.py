"""relay as a torchcomms backend: torchcomms' and torchrec's sharded-relay calls, unchanged.

    import torchcomms
    comm = torchcomms.new_comm("relay", device, name="sharded_relay", store=store)
    comm.get_backend_impl().sharded_relay_multi_group_all_reduce(
        tensors, torchcomms.ReduceOp.AVG, all_active_ranks, per_group_counts)

Where torchcomms is importable, importing this module registers TorchCommRelay under the name
"relay" (torchcomms.register_backend); the package's entry point in the group
"torchcomms.backends" imports it when new_comm("relay", ...) first asks. Without torchcomms the
class works on its own: TorchCommRelay.from_group() or .from_environment(). docs/torchcomms.md
maps RCCLX's arguments to relay's.
"""

from ._base import torchcomms as _torchcomms
from .backend import TorchCommRelay, reduce_op_name

__all__ = ["TorchCommRelay", "register", "reduce_op_name", "BACKEND"]

BACKEND = "relay"


def register(name=BACKEND):
    """Registers TorchCommRelay with torchcomms under `name` (done on import where torchcomms
    is importable)."""
    if _torchcomms is None:
        raise ImportError("relay.torchcomms.register: torchcomms is not importable here")
    _torchcomms.register_backend(name, TorchCommRelay)


if _torchcomms is not None:
    register()

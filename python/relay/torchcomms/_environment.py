"""What torchcomms.new_comm gives a backend, as relay uses it: the rank and size from the
environment (torchcomms' own order), the store, the timeout and relay's hints."""

import datetime
import os

import torch.distributed as dist

# torchcomms' query_ranksize: its own variables, then MPI's (Open MPI, MPICH), then torchrun's.
_RANK_SIZE = (
    ("TORCHCOMM_RANK", "TORCHCOMM_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("RANK", "WORLD_SIZE"),
)
# relay's hints (torchcomms' CommOptions.hints, strings): the transport ("auto", "shm", "ipc",
# "nccl") and the size of each rank's data area in bytes (K, M, G suffixes; on shm rank 0's sizes
# every rank's).
HINT_TRANSPORT = "relay.transport"
HINT_TRANSPORT_BYTES = "relay.transport_bytes"
# Hosted helpers (docs/hosted-helpers.md): one device per helper rank the processes run, "2,3,4".
HINT_HELPER_DEVICES = "relay.helper_devices"


def rank_and_size():
    """(rank, size) from the first pair of variables that are both set."""
    for rank_var, size_var in _RANK_SIZE:
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is not None and size is not None and int(rank) >= 0 and int(size) > 0:
            return int(rank), int(size)
    raise RuntimeError(
        "relay.torchcomms: the rank and size are not in the environment; set TORCHCOMM_RANK and "
        "TORCHCOMM_SIZE (or run under torchrun or an MPI launcher)"
    )


def store_for(name, store, rank, size, timeout):
    """The store a communicator named `name` bootstraps through: the one given, else
    torch.distributed's default store, else a TCPStore at MASTER_ADDR:MASTER_PORT (rank 0
    serves it unless torchrun's agent does); under a prefix of the name, as torchcomms does.
    The TCPStore's own timeout (its connect, its wait for every rank, the operations relay
    gives no deadline) is a set-up's, which the calls' `timeout` may lengthen but not shorten:
    torch's default of 300 s at least."""
    if store is None and dist.is_available() and dist.is_initialized():
        store = dist.distributed_c10d._get_default_store()
    if store is None:
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        if host is None or port is None:
            raise RuntimeError(
                "relay.torchcomms: no store was given and MASTER_ADDR / MASTER_PORT are not set"
            )
        serve = rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
        wait = datetime.timedelta(seconds=max(timeout or 0, 300))
        store = dist.TCPStore(host, int(port), size, serve, wait)
    return dist.PrefixStore(f"relay/torchcomms/{name}/", store)


def seconds(timeout):
    """A timeout as seconds (a timedelta, a number of seconds, or None)."""
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def byte_count(text):
    """'64M' -> 67108864."""
    text = str(text).strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def devices(text):
    """'2,3,4' -> [2, 3, 4]; None -> None (RELAY_HELPER_DEVICES decides). The library checks
    each device."""
    if text is None:
        return None
    try:
        return [int(d) for d in str(text).split(",")] if str(text).strip() else []
    except ValueError:
        raise ValueError(
            f"the hint {HINT_HELPER_DEVICES} = {text!r} is not a comma-separated list of device "
            "numbers"
        ) from None

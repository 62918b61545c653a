"""relay from Python: link-balanced relay collectives through relay's C ABI.

    import relay
    relay.version()            # the library's version
    relay.transports()         # ("shm",) or ("shm", "ipc", "nccl")

`relay.torch` has the PyTorch entry: relay.torch.Communicator, the fused helpers and the
torch.library ops. Errors are the classes of relay.errors, all RelayError.
"""

from . import errors
from ._capi import library
from .errors import (
    InvalidArgumentError,
    InvalidBufferError,
    InvalidCountError,
    InvalidGroupError,
    InvalidScheduleError,
    MismatchError,
    PeerError,
    PeerLostError,
    RelayError,
    TimeoutError,
    UnsupportedError,
)

__all__ = [
    "errors",
    "library",
    "version",
    "transports",
    "layout",
    "RelayError",
    "InvalidArgumentError",
    "InvalidBufferError",
    "InvalidCountError",
    "InvalidGroupError",
    "InvalidScheduleError",
    "MismatchError",
    "PeerError",
    "PeerLostError",
    "TimeoutError",
    "UnsupportedError",
]


def version(kind="host"):
    """The version of relay's C ABI library: librelay_c ("host"), librelay_c_cuda ("cuda"),
    librelay_c_hip ("hip"), or the one matching torch's build ("device")."""
    return library(kind).version().decode()


def transports(kind="host"):
    """The transports the library of `kind` was built with."""
    return library(kind).transports


from ._layout import layout  # noqa: E402

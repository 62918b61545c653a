"""The errors relay raises: one class per relay status, each carrying relay's message and the
peer rank the message names (or None). The statuses' numbers are relay.h's relay_status, written
here once for the package: every module compares a status with OK and takes a failure's code from
its class (test_capi checks each against the library's relay_status_name).

Argument errors (a bad group, count, buffer, dtype, ...) are also ValueError or TypeError, so code
written against torch.distributed's conventions catches them; a timeout is also the built-in
TimeoutError. A peer process that exited or closed its communicator is PeerLostError, a PeerError.
"""

import builtins

OK = 0  # RELAY_OK


class RelayError(RuntimeError):
    """A call into relay failed. `status` is relay's status name ("timeout", "peer error", ...),
    `code` its number in the C ABI, `peer` the rank the message names as the cause, or None."""

    status = "error"
    code = -1

    def __init__(self, message, peer=None):
        super().__init__(message)
        self.message = message
        self.peer = peer if peer is not None and peer >= 0 else None

    def __str__(self):
        return f"{self.status}: {self.message}"


class InvalidScheduleError(RelayError, ValueError):
    status, code = "invalid schedule", 1


class InvalidGroupError(RelayError, ValueError):
    status, code = "invalid group", 2


class InvalidCountError(RelayError, ValueError):
    status, code = "invalid count", 3


class InvalidBufferError(RelayError, ValueError):
    status, code = "invalid buffer", 4


class InvalidArgumentError(RelayError, ValueError):
    status, code = "invalid argument", 5


class UnsupportedError(RelayError, TypeError):
    status, code = "unsupported", 6


class GpuError(RelayError):
    status, code = "gpu error", 7


class OutOfMemoryError(RelayError, MemoryError):
    status, code = "out of memory", 8


class TimeoutError(RelayError, builtins.TimeoutError):  # noqa: A001 (relay.TimeoutError)
    status, code = "timeout", 9


class MismatchError(RelayError):
    status, code = "mismatch", 10


class PeerError(RelayError):
    status, code = "peer error", 11


class RelaySystemError(RelayError):
    status, code = "system error", 12


class PeerLostError(PeerError):
    """A peer process exited, was killed or closed its communicator (`peer` names it)."""

    status, code = "peer lost", 13


ERRORS = {
    cls.code: cls
    for cls in (
        InvalidScheduleError,
        InvalidGroupError,
        InvalidCountError,
        InvalidBufferError,
        InvalidArgumentError,
        UnsupportedError,
        GpuError,
        OutOfMemoryError,
        TimeoutError,
        MismatchError,
        PeerError,
        RelaySystemError,
        PeerLostError,
    )
}


def error_for(code, message, peer=None):
    """The exception of relay status `code`."""
    cls = ERRORS.get(code)
    if cls is None:
        err = RelayError(message, peer)
        err.code, err.status = code, f"status {code}"
        return err
    return cls(message, peer)

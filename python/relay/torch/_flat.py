"""The fused helpers' flat buffers: one per (role, dtype), grown only, registered when grown.

Registration is collective (the ipc transport exchanges every rank's memory handles through the
bootstrap), so every rank of a fused call must grow at the same calls, helpers included, or the
ranks that grow wait for the others until the timeout. The growth rule depends only on the
sizes every rank asks for, and every rank asks for the same ones in the same order (fused.py): a
helper asks with hold=False. It then registers nothing in the round and holds no memory; if it
later uses a buffer of that (role, dtype) below the registered size, it allocates one of its own
that it does not register (its calls are staged: the same results, without the in-place path).
"""

import torch

from ..errors import TimeoutError as _RoundTimeout


class _Entry:
    """One (role, dtype): the size of the last growth round every rank took part in, this rank's
    buffer (None while it holds none) and whether that buffer is the one it registered."""

    __slots__ = ("size", "buffer", "registered")

    def __init__(self):
        self.size, self.buffer, self.registered = 0, None, False


class FlatBuffers:
    """The cache. register(tensor or None) and deregister(tensor or None) are the
    communicator's collective calls. `plans`: what fused.py lays out over the buffers per call
    structure (its groups, and views of the buffers), emptied whenever a buffer grows; `last`:
    the last fused call's entry of them (fused.py compares the next call's structure with it),
    forgotten with them."""

    def __init__(self, device, register, deregister):
        self._device = device
        self._register = register
        self._deregister = deregister
        self._entries = {}  # (role, dtype) -> _Entry
        self.plans = {}
        self.last = (None, None)

    def get(self, role, dtype, elements, hold=True, capturing=False):
        """A view of `elements` of the (role, dtype) buffer (None where hold is False)."""
        entry = self._entries.setdefault((role, dtype), _Entry())
        if elements > entry.size:
            if capturing:
                raise RuntimeError(
                    f"the fused {role} buffer of {dtype} must grow to {elements} elements during "
                    f"graph capture; make the same call once before capturing it"
                )
            self._grow(entry, dtype, elements, hold)
        if not hold:
            return None
        if entry.buffer is None:
            if capturing:
                raise RuntimeError(
                    f"this rank has no fused {role} buffer of {dtype} yet (it helped in the "
                    f"calls that made it); make the same call once before capturing it"
                )
            entry.buffer, entry.registered = self._allocate(dtype, entry.size), False
        return entry.buffer[:elements]

    def _allocate(self, dtype, elements):
        return torch.empty(max(elements, 1), dtype=dtype, device=self._device)

    def _grow(self, entry, dtype, elements, hold):
        """Two rounds of every rank: the new buffer registered, the old one deregistered. Where
        this rank's part of the first fails (memory that cannot be registered), it still takes
        part in the second and keeps the new size, unregistered, so that the ranks stay in step;
        the error is raised after. A round that timed out ends it at once."""
        self.forget_plans()  # their views may lie in the buffer that goes
        old = entry.buffer if entry.registered else None
        had_round = entry.size > 0
        new = self._allocate(dtype, elements) if hold else None
        entry.size, entry.buffer, entry.registered = elements, new, False
        error = None
        try:
            self._register(new)
            entry.registered = new is not None
        except _RoundTimeout:
            raise
        except Exception as e:  # noqa: BLE001 (raised below, after the second round)
            error = e
        if had_round:
            self._deregister(old)
        if error is not None:
            raise error

    def forget_plans(self):
        self.plans.clear()
        self.last = (None, None)

    def clear(self):
        self.forget_plans()
        self._entries.clear()

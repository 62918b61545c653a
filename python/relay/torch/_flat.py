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


class FlatBuffers:
    """The cache. register(tensor or None) and deregister(tensor or None) are the
    communicator's collective calls."""

    def __init__(self, device, register, deregister):
        self._device = device
        self._register = register
        self._deregister = deregister
        self._entries = {}  # (role, dtype) -> [size of the round, tensor or None, registered]

    def get(self, role, dtype, elements, hold=True, capturing=False):
        """A view of `elements` of the (role, dtype) buffer (None where hold is False)."""
        key = (role, dtype)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = [0, None, False]
        if elements > entry[0]:
            if capturing:
                raise RuntimeError(
                    f"the fused {role} buffer of {dtype} must grow to {elements} elements during "
                    f"graph capture; make the same call once before capturing it"
                )
            self._grow(entry, dtype, elements, hold)
        if not hold:
            return None
        if entry[1] is None:
            if capturing:
                raise RuntimeError(
                    f"this rank has no fused {role} buffer of {dtype} yet (it helped in the "
                    f"calls that made it); make the same call once before capturing it"
                )
            entry[1] = torch.empty(max(entry[0], 1), dtype=dtype, device=self._device)
            entry[2] = False
        return entry[1][:elements]

    def _grow(self, entry, dtype, elements, hold):
        """Two rounds of every rank: the new buffer registered, the old one deregistered. Where
        this rank's part of the first fails (memory that cannot be registered), it still takes
        part in the second and keeps the new size, unregistered, so that the ranks stay in step;
        the error is raised after. A round that timed out ends it at once."""
        old, old_registered = entry[1], entry[2]
        had_round = entry[0] > 0
        new = torch.empty(max(elements, 1), dtype=dtype, device=self._device) if hold else None
        entry[0], entry[1], entry[2] = elements, new, False
        error = None
        try:
            self._register(new)
            entry[2] = new is not None
        except _RoundTimeout:
            raise
        except Exception as e:  # noqa: BLE001 (raised below, after the second round)
            error = e
        if had_round:
            self._deregister(old if old_registered else None)
        if error is not None:
            raise error

    def clear(self):
        self._entries.clear()

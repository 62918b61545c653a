"""relay's bootstrap served by torch.distributed's store: the C ABI's all-gather callback over a
PrefixStore of the default group's store, so a torch job opens no second port."""

import ctypes
import datetime
import threading

from .._capi import ALL_GATHER_FN

_TIMEOUT, _SYSTEM_ERROR = 9, 12

_prefixes = {}
_prefix_lock = threading.Lock()


def next_prefix(ranks):
    """A store prefix of its own for each communicator over `ranks`: the ranks and how many
    communicators over them this process made before (every rank makes them in the same order,
    as torch's new_group requires too)."""
    key = tuple(ranks)
    with _prefix_lock:
        n = _prefixes.get(key, 0)
        _prefixes[key] = n + 1
    return "relay/" + "_".join(str(r) for r in key) + f"/{n}/"


class StoreBootstrap:
    """The all-gather callback of one communicator. Holds the ctypes callback object, which must
    outlive the communicator (the library calls it at set-up, on each new call shape, and at
    teardown)."""

    def __init__(self, store, rank, size, lib):
        self.store = store
        self.rank = rank
        self.size = size
        self.lib = lib
        self.calls = 0
        self.all_gather = ALL_GATHER_FN(self._all_gather)

    def _missing(self, keys):
        missing = []
        for r, key in enumerate(keys):
            try:
                self.store.wait([key], datetime.timedelta(milliseconds=1))
            except RuntimeError:
                missing.append(str(r))
        return missing

    def _all_gather(self, _user, mine, nbytes, timeout_ms, result):
        # A Python exception must not unwind into C: every failure becomes the result's.
        try:
            self.calls += 1
            k = self.calls
            data = ctypes.string_at(mine, nbytes) if nbytes else b""
            self.store.set(f"{k}/{self.rank}", data)
            keys = [f"{k}/{r}" for r in range(self.size)]
            try:
                self.store.wait(keys, datetime.timedelta(milliseconds=max(1, timeout_ms)))
            except RuntimeError:
                missing = self._missing(keys) or ["?"]
                text = (
                    f"rank(s) {','.join(missing)} did not join all-gather #{k} within "
                    f"{timeout_ms} ms (torch.distributed's store)"
                )
                self.lib.bootstrap_fail(result, _TIMEOUT, text.encode())
                return _TIMEOUT
            for r, key in enumerate(keys):
                value = data if r == self.rank else self.store.get(key)
                status = self.lib.bootstrap_put(result, r, value, len(value))
                if status != 0:
                    return status
            # Every rank has read exchange k-2: each wrote its key of k-1 after reading k-2.
            if k > 2:
                try:
                    self.store.delete_key(f"{k - 2}/{self.rank}")
                except RuntimeError:
                    pass  # a store without deletion keeps the few bytes
            return 0
        except BaseException as e:  # noqa: BLE001 (KeyboardInterrupt too: never into C)
            text = f"the torch.distributed store failed: {type(e).__name__}: {e}"
            try:
                self.lib.bootstrap_fail(result, _SYSTEM_ERROR, text.encode())
            except BaseException:  # noqa: BLE001
                pass
            return _SYSTEM_ERROR

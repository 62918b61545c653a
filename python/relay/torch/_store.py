"""relay's bootstrap served by torch.distributed's store: the C ABI's all-gather callback over a
PrefixStore of the default group's store, so a torch job opens no second port."""

import ctypes
import datetime
import threading

from .._capi import ALL_GATHER_FN
from ..errors import OK, RelaySystemError, TimeoutError as _Timeout

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
    teardown).

    Exchange k: each rank sets its bytes at "k/<rank>" and counts itself in at "k/in/<rank>",
    then waits for every rank's bytes until the timeout the library passes (set-up's exchanges,
    a split's included: the set-up timeout, at least 10 s + 100 ms per rank; the others: the
    communicator's). One outcome for every rank: the first rank to decide the exchange (every
    rank's bytes seen, or its wait over) writes it at "k/outcome" with compare_set, and every
    rank goes by what is there, so a rank that arrives after a peer gave up fails with the peer's
    reason instead of going on without it. Who did not arrive is read from the counters
    (store.add(key, 0) reads without waiting), so the message names exactly those ranks."""

    def __init__(self, store, rank, size, lib):
        self.store = store
        self.rank = rank
        self.size = size
        self.lib = lib
        self.calls = 0
        self.all_gather = ALL_GATHER_FN(self._all_gather)

    def _absent(self, k):
        return [r for r in range(self.size) if self.store.add(f"{k}/in/{r}", 0) == 0]

    def _decide(self, k, keys, timeout_ms):
        """Waits for every rank's bytes and returns the exchange's outcome, the same on every
        rank: b"go", or b"<status> <rank that decided> <text>"."""
        try:
            self.store.wait(keys, datetime.timedelta(milliseconds=max(1, timeout_ms)))
            mine = b"go"
        except RuntimeError:
            absent = ",".join(str(r) for r in self._absent(k)) or "?"
            text = (
                f"rank(s) {absent} did not join all-gather #{k} within {timeout_ms} ms "
                "(torch.distributed's store)"
            )
            mine = f"{_Timeout.code} {self.rank} {text}".encode()
        return self.store.compare_set(f"{k}/outcome", "", mine)

    def _fail(self, result, outcome):
        code, decider, text = outcome.decode(errors="replace").split(" ", 2)
        if int(decider) != self.rank:
            text += f" (seen by rank {decider}; every rank stopped)"
        self.lib.bootstrap_fail(result, int(code), text.encode())
        return int(code)

    def _all_gather(self, _user, mine, nbytes, timeout_ms, result):
        # A Python exception must not unwind into C: every failure becomes the result's.
        try:
            self.calls += 1
            k = self.calls
            data = ctypes.string_at(mine, nbytes) if nbytes else b""
            self.store.set(f"{k}/{self.rank}", data)
            self.store.add(f"{k}/in/{self.rank}", 1)
            keys = [f"{k}/{r}" for r in range(self.size)]
            outcome = self._decide(k, keys, timeout_ms)
            if outcome != b"go":
                return self._fail(result, outcome)
            for r, key in enumerate(keys):
                value = data if r == self.rank else self.store.get(key)
                status = self.lib.bootstrap_put(result, r, value, len(value))
                if status != OK:
                    return status
            # Every rank has read exchange k-2, its outcome included: each wrote its key of k-1
            # after reading k-2.
            if k > 2:
                old = [f"{k - 2}/{self.rank}", f"{k - 2}/in/{self.rank}"]
                if self.rank == 0:
                    old.append(f"{k - 2}/outcome")
                try:
                    for key in old:
                        self.store.delete_key(key)
                except RuntimeError:
                    pass  # a store without deletion keeps the few bytes
            return OK
        except BaseException as e:  # noqa: BLE001 (KeyboardInterrupt too: never into C)
            text = f"the torch.distributed store failed: {type(e).__name__}: {e}"
            try:
                self.lib.bootstrap_fail(result, RelaySystemError.code, text.encode())
            except BaseException:  # noqa: BLE001
                pass
            return RelaySystemError.code

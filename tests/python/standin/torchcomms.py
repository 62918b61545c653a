"""A stand-in for torchcomms' Python surface, as much of it as a Python backend meets
(torchcomms/__init__.py, TorchCommBackendPy.cpp, TorchCommPy.cpp): register_backend, a
TorchCommBackend base, ReduceOp with .type, CommOptions, and new_comm, which looks the backend's
name up among the registered ones (after the entry points of "torchcomms.backends", as
torchcomms' _load_backend does) and returns a TorchComm whose get_backend_impl() is the
backend. Only tests/python/test_torchcomms.py puts it on sys.path."""

import enum
from importlib.metadata import entry_points

_registered = {}


class TorchCommBackend:
    def __init__(self):
        pass


class RedOpType(enum.Enum):
    SUM = 1
    AVG = 9


class ReduceOp:
    def __init__(self, type_):
        self.type = type_


ReduceOp.SUM = ReduceOp(RedOpType.SUM)
ReduceOp.AVG = ReduceOp(RedOpType.AVG)


class CommOptions:
    def __init__(self, store=None, timeout=None, hints=None):
        self.store, self.timeout, self.hints = store, timeout, dict(hints or {})


def register_backend(name, backend_class):
    _registered[name] = backend_class


def _is_backend_registered(name):
    return name in _registered


def _load_backend(name):
    for ep in entry_points().get("torchcomms.backends", []):
        if ep.name == name:
            ep.load()


class _Completed:
    def wait(self):
        return True


class TorchComm:
    def __init__(self, impl):
        self._impl = impl

    def get_backend_impl(self):
        return self._impl

    def get_rank(self):
        return self._impl.get_rank()

    def get_size(self):
        return self._impl.get_size()

    def get_backend(self):
        return self._impl.get_backend_name()

    def all_reduce(self, tensor, op, async_op):
        work = self._impl.all_reduce(tensor, op, async_op)
        return _Completed() if work is None else work

    def finalize(self):
        self._impl.finalize()


def new_comm(backend, device, name, store=None, timeout=None, hints=None):
    if backend not in _registered:
        _load_backend(backend)
    if backend not in _registered:
        raise RuntimeError(f"backend {backend} is not registered")
    impl = _registered[backend]()
    impl.init(device, name, CommOptions(store, timeout, hints))
    return TorchComm(impl)

"""ctypes declarations of relay's C ABI (include/relay/c/relay.h) and where its libraries are.

Three builds of the library export the same functions: librelay_c.so (the shm transport, host
memory), librelay_c_cuda.so (shm, ipc and nccl on NVIDIA) and librelay_c_hip.so (the same on
AMD). `library("host")`, `library("cuda")` or `library("hip")` loads one; `library("device")`
the one matching torch's build (torch.version.hip: hip; torch.version.cuda: cuda), which a ROCm
torch needs since it calls its GPUs "cuda" too. Each is found in the first of these folders that
has it:
  - $RELAY_C_LIBRARY_DIR (a build tree: build/capi);
  - the package's own _lib/ (where `pip install ./python` puts them);
  - the folder `cmake --install` put them in, relative to the package (_installed.py).
No LD_LIBRARY_PATH is needed.
"""

import ctypes
import os
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    byref,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint64,
    c_void_p,
)

from .errors import OK, error_for

ABI_VERSION = 1
LIBRARY_NAMES = {
    "host": "librelay_c.so",
    "cuda": "librelay_c_cuda.so",
    "hip": "librelay_c_hip.so",
}
# Where each is built, and the command that builds it (python/setup.py builds every library the
# machine's compilers allow).
_BUILT_WHERE = {
    "host": "built everywhere",
    "cuda": "built where nvcc is found",
    "hip": "built where a HIP compiler is found: ROCm's clang, or clang-22 with libamdhip64-dev",
}
_TARGETS = {"host": "relay_c", "cuda": "relay_c_cuda", "hip": "relay_c_hip"}

# relay_vocabulary: the names the library parses (Python holds no tables of relay's values).
VOCABULARY = {
    "dtype": 0,
    "op": 1,
    "collective": 2,
    "mode": 3,
    "route": 4,
    "wire": 5,
    "precision": 6,
}
MEMORY_HOST, MEMORY_DEVICE = 0, 1


class RankLayout(Structure):
    _fields_ = [
        ("group", c_int32),
        ("active_index", c_int32),
        ("active", c_int32),
        ("input_elements", c_int64),
        ("output_elements", c_int64),
        ("in_place_input_offset", c_int64),
        ("in_place_output_offset", c_int64),
        ("has_in_place", c_int32),
    ]


ALL_GATHER_FN = CFUNCTYPE(c_int32, c_void_p, c_void_p, c_size_t, c_int64, c_void_p)
BARRIER_FN = CFUNCTYPE(c_int32, c_void_p, c_int64, c_void_p)


class CommConfig(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("rank", c_int32),
        ("size", c_int32),
        ("device", c_int32),
        ("transport", c_char_p),
        ("memory", c_int32),
        ("timeout_ms", c_int64),
        ("transport_bytes", c_uint64),
        ("all_gather", ALL_GATHER_FN),
        ("barrier", BARRIER_FN),
        ("user", c_void_p),
        ("helper_devices", POINTER(c_int32)),
        ("num_helper_devices", c_int32),
    ]


class WireReport(Structure):
    _fields_ = [
        ("requested", c_int32),
        ("taken", c_int32),
        ("bytes", c_uint64),
        ("threshold_bytes", c_uint64),
    ]


class Options(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("mode", c_int32),
        ("route", c_int32),
        ("wire", c_int32),
        ("precision", c_int32),
        ("permille", c_int32),
        ("tiles", c_int32),
        ("alignment", c_int64),
        ("wire_threshold", c_int64),
        ("wire_report", POINTER(WireReport)),
    ]


class Call(Structure):
    """relay_call: one collective call's arguments, filled once for a repeated call."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("collective", c_int32),
        ("dtype", c_int32),
        ("op", c_int32),
        ("num_groups", c_int32),
        ("group_ranks", POINTER(c_int32)),
        ("group_sizes", POINTER(c_int32)),
        ("counts", POINTER(c_int64)),
        ("send", c_void_p),
        ("send_bytes", c_size_t),
        ("recv", c_void_p),
        ("recv_bytes", c_size_t),
        ("options", POINTER(Options)),
    ]


class AsyncCall(Structure):
    """relay_async_call: an async call's number, and up to which number every one has finished."""

    _fields_ = [("call", c_uint64), ("retired", c_uint64)]


_P = c_void_p
_I32P = POINTER(c_int32)
_I64P = POINTER(c_int64)
# name: (restype, argtypes)
_FUNCTIONS = {
    "relay_version": (c_char_p, []),
    "relay_abi_version": (c_int, []),
    "relay_transports": (c_char_p, []),
    "relay_last_error": (c_char_p, []),
    "relay_last_error_peer": (c_int32, []),
    "relay_status_name": (c_char_p, [c_int32]),
    "relay_parse": (c_int, [c_int32, c_char_p, _I32P]),
    "relay_name": (c_char_p, [c_int32, c_int32]),
    "relay_dtype_size": (c_int32, [c_int32]),
    "relay_rank_layout_of": (
        c_int,
        [c_int32, c_int32, _I32P, _I32P, c_int32, _I64P, c_int32, POINTER(RankLayout)],
    ),
    "relay_count_of": (c_int, [c_int32, c_int32, c_int64, c_int64, _I64P]),
    "relay_bootstrap_put": (c_int, [_P, c_int32, _P, c_size_t]),
    "relay_bootstrap_fail": (c_int, [_P, c_int32, c_char_p]),
    "relay_comm_config_init": (None, [POINTER(CommConfig)]),
    "relay_comm_create": (c_int, [POINTER(CommConfig), POINTER(_P)]),
    "relay_comm_create_from_environment": (c_int, [c_char_p, c_int32, POINTER(_P)]),
    "relay_comm_destroy": (c_int, [_P]),
    "relay_comm_abort": (c_int, [_P]),
    "relay_comm_split": (c_int, [_P, c_int32, c_int32, POINTER(_P)]),
    "relay_comm_split_refuse": (c_int, [_P, c_int32, c_char_p]),
    "relay_comm_rank": (c_int, [_P, _I32P]),
    "relay_comm_size": (c_int, [_P, _I32P]),
    "relay_comm_device": (c_int, [_P, _I32P]),
    "relay_comm_transport": (c_int, [_P, POINTER(c_char_p)]),
    "relay_comm_async_status": (c_int, [_P]),
    "relay_comm_refuse": (c_int, [_P, c_int32, c_char_p, _P]),
    "relay_comm_register": (c_int, [_P, _P, c_size_t]),
    "relay_comm_deregister": (c_int, [_P, _P]),
    "relay_comm_register_graph_inputs": (c_int, [_P]),
    "relay_comm_deregister_graph_inputs": (c_int, [_P]),
    "relay_comm_attach_plane": (c_int, [_P, c_int32]),
    "relay_comm_serve": (c_int, [_P, c_int64, _P, POINTER(c_uint64)]),
    "relay_comm_stop_serving": (c_int, [_P]),
    "relay_comm_control_publish": (
        c_int,
        [_P, c_uint64, _I64P, c_int32, c_int32, c_int32, c_int32, c_int32, c_int64],
    ),
    "relay_comm_control_consume": (
        c_int,
        [_P, c_uint64, c_int64, _I32P, _I32P, _I32P, _I32P, _I64P, c_int32, _I32P],
    ),
    "relay_comm_control_limits": (c_int, [_P, _I32P, _I32P]),
    "relay_comm_control_join": (c_int, [_P]),
    "relay_options_init": (None, [POINTER(Options)]),
    "relay_wire_carries": (c_int32, [c_int32, c_int32]),
    "relay_call_init": (None, [POINTER(Call)]),
    "relay_run_call": (c_int, [_P, POINTER(Call), _P]),
    "relay_run_call_async": (c_int, [_P, POINTER(Call), _P, _P, POINTER(AsyncCall)]),
    "relay_comm_mark": (c_int, [_P, _P, _P, POINTER(AsyncCall)]),
    "relay_comm_order_after": (c_int, [_P, c_uint64, _P]),
    "relay_comm_join_call": (c_int, [_P, c_uint64, _P]),
    "relay_comm_call_finished": (c_int, [_P, c_uint64, _I32P]),
    "relay_comm_wait_call": (c_int, [_P, c_uint64]),
}
_COLLECTIVES = {
    "relay_allreduce": True,  # takes an op
    "relay_reduce_scatter": True,
    "relay_all_gather": False,
    "relay_all_to_all": False,
}
for _name, _takes_op in _COLLECTIVES.items():
    _args = [_P, _P, c_size_t, _P, c_size_t, _I32P, _I32P, c_int32, _I64P, c_int32]
    _args += [c_int32] if _takes_op else []
    _args += [POINTER(Options), _P]
    _FUNCTIONS[_name] = (c_int, _args)


# The entries a repeated call makes, declared a second time without argtypes (Library's
# `preconverted`): a declared function converts every argument on every call (one from_param
# each, most of a small entry's cost), which arguments that are ctypes objects already do not
# need. Each argument passed to these must be a ctypes object (c_void_p, c_uint64, a byref) or
# None (NULL): a bare Python int would reach C as a 32-bit int, cutting a 64-bit pointer.
_PRECONVERTED = (
    "relay_run_call",
    "relay_run_call_async",
    "relay_comm_mark",
    "relay_comm_order_after",
    "relay_comm_join_call",
    "relay_comm_async_status",
    "relay_comm_call_finished",
)


class Preconverted:
    """The entries of _PRECONVERTED of a loaded library `dll` (a ctypes.CDLL), by their names
    without "relay_", declared without argtypes: their callers pass ctypes objects only."""

    __slots__ = tuple(name[len("relay_") :] for name in _PRECONVERTED)

    def __init__(self, dll):
        for name in _PRECONVERTED:
            fn = dll[name]  # a function object of its own: the declared one keeps its argtypes
            fn.restype = _FUNCTIONS[name][0]
            setattr(self, name[len("relay_") :], fn)


def _search_dirs():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = []
    if os.environ.get("RELAY_C_LIBRARY_DIR"):
        dirs.append(os.environ["RELAY_C_LIBRARY_DIR"])
    dirs.append(os.path.join(here, "_lib"))
    try:
        from . import _installed  # written by `cmake --install`

        dirs.append(os.path.normpath(os.path.join(here, _installed.LIBRARY_DIR)))
    except ImportError:
        pass
    return dirs


class Library:
    """One loaded build of the C ABI, with its functions declared."""

    def __init__(self, path):
        self.path = path
        self.dll = ctypes.CDLL(path)
        for name, (restype, argtypes) in _FUNCTIONS.items():
            fn = getattr(self.dll, name)
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name[len("relay_") :], fn)
        self.preconverted = Preconverted(self.dll)
        if self.abi_version() != ABI_VERSION:
            raise ImportError(
                f"{path} has relay C ABI version {self.abi_version()}; this package speaks "
                f"{ABI_VERSION}"
            )
        # The structs as the library lays them out (relay_*_init sets struct_size = sizeof).
        for struct, init in ((Options, self.options_init), (CommConfig, self.comm_config_init),
                             (Call, self.call_init)):
            probe = struct()
            init(byref(probe))
            if probe.struct_size != ctypes.sizeof(struct):
                raise ImportError(
                    f"{path}: {struct.__name__} is {probe.struct_size} bytes there and "
                    f"{ctypes.sizeof(struct)} here"
                )
        self._parsed, self._named = {}, {}
        self.transports = tuple(self.relay_transports_list())

    def relay_transports_list(self):
        return self.dll.relay_transports().decode().split(",")

    def check(self, status):
        """Raises the RelayError of a failed status (this thread's last error)."""
        if status != OK:
            raise self.error(status)

    def error(self, status):
        message = self.last_error().decode(errors="replace")
        return error_for(status, message, self.last_error_peer())

    def value_of(self, vocabulary, name):
        """relay's value of `name` in `vocabulary` ("dtype", "op", ...), cached."""
        key = (vocabulary, name)
        value = self._parsed.get(key)
        if value is None:
            out = c_int32()
            self.check(self.dll.relay_parse(VOCABULARY[vocabulary], name.encode(), byref(out)))
            value = self._parsed[key] = out.value
        return value

    def name_of(self, vocabulary, value):
        """relay's name of `value` in `vocabulary` (None outside it), cached."""
        key = (vocabulary, value)
        if key not in self._named:
            n = self.dll.relay_name(VOCABULARY[vocabulary], value)
            self._named[key] = None if n is None else n.decode()
        return self._named[key]


_loaded = {}
_lock = threading.Lock()


def device_kind(version=None):
    """The GPU build matching torch's: "hip" where torch.version.hip is set (a ROCm torch, whose
    GPUs are "cuda" devices too), else "cuda" where torch.version.cuda is. `version` stands in
    for torch.version (tests pass their own)."""
    if version is None:
        import torch

        version = torch.version
    if getattr(version, "hip", None):
        return "hip"
    if getattr(version, "cuda", None):
        return "cuda"
    raise ImportError(
        "relay: this torch is built for neither CUDA nor ROCm (torch.version.cuda and "
        "torch.version.hip are both unset): no GPU library of relay's matches it"
    )


def library(kind="host", version=None):
    """The C ABI build for `kind`, loaded once: "host" (librelay_c), "cuda" (librelay_c_cuda),
    "hip" (librelay_c_hip), or "device": the one matching torch's build (device_kind; `version`
    stands in for torch.version)."""
    if kind == "device":
        kind = device_kind(version)
    with _lock:
        lib = _loaded.get(kind)
        if lib is not None:
            return lib
        name = LIBRARY_NAMES[kind]
        tried = []
        for folder in _search_dirs():
            path = os.path.join(folder, name)
            if os.path.exists(path):
                lib = _loaded[kind] = Library(path)
                return lib
            tried.append(folder)
        raise ImportError(
            f"relay: {name} not found ({_BUILT_WHERE[kind]}); looked in {', '.join(tried)}. "
            f"Build and install it with `pip install --no-build-isolation ./python` on such a "
            f"machine (or `cmake --build <build> --target {_TARGETS[kind]}` and "
            f"`cmake --install`), or set RELAY_C_LIBRARY_DIR to the folder that holds it"
        )


def int32_array(values):
    return (c_int32 * len(values))(*values)


def int64_array(values):
    return (c_int64 * len(values))(*values)

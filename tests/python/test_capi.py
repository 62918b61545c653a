"""The C ABI through the package's ctypes layer, in one process: the library found and checked,
names parsed by the library, sizes from the library against the collectives' definitions, and
errors as exceptions with relay's message."""

import ctypes
import itertools

import pytest

import relay
from relay import _capi
from relay._layout import count_of
from relay import errors
from relay.errors import error_for

import reference as ref


def test_the_library_loads_and_says_what_it_has():
    lib = relay.library("host")
    assert lib.path.endswith("librelay_c.so")
    assert relay.version() == lib.version().decode()
    assert relay.version().count(".") == 2
    assert relay.transports() == ("shm",)
    assert lib.abi_version() == _capi.ABI_VERSION


def test_names_are_the_librarys():
    lib = relay.library()
    assert lib.value_of("dtype", "bfloat16") == 7  # RELAY_BFLOAT16 in relay.h
    assert lib.value_of("dtype", "bf16") == 7
    assert lib.value_of("collective", "all-to-all") == 3
    assert lib.value_of("route", "automatic") == 4
    assert lib.name_of("dtype", 8) == "float32"
    assert lib.name_of("dtype", 10) is None
    with pytest.raises(relay.InvalidArgumentError) as e:
        lib.value_of("dtype", "complex64")
    assert "'complex64' is not one of int8, uint8" in str(e.value)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("collective", ref.COLLECTIVES)
@pytest.mark.parametrize("active", [2, 4])
def test_layouts_follow_the_collectives_definitions(collective, active):
    groups = [list(range(g * active, (g + 1) * active)) for g in range(8 // active)]
    counts = [0, 1, 7, 1000][: len(groups)]
    for rank in range(8):
        lay = relay.layout(collective, 8, groups, counts, rank)
        g, k = rank // active, rank % active
        assert (lay.group, lay.active_index, lay.active) == (g, k, active)
        assert (lay.input_elements, lay.output_elements) == ref.io_elements(
            collective, active, counts[g]
        )
        n = counts[g]
        if collective == "reduce-scatter":
            assert lay.in_place_output_offset == k * n and lay.in_place_input_offset == 0
        elif collective == "all-gather":
            assert lay.in_place_input_offset == k * n and lay.in_place_output_offset == 0
        assert lay.has_in_place == (collective != "all-to-all")
        assert count_of(collective, active, lay.input_elements, lay.output_elements) == n


def test_a_helper_has_no_buffers():
    lay = relay.layout("all-gather", 8, [[6, 2]], [5], 3)
    assert lay.group is None and lay.active_index is None
    assert (lay.input_elements, lay.output_elements) == (0, 0)


def test_the_calls_own_errors_are_raised_with_its_message():
    with pytest.raises(relay.InvalidGroupError, match="rank 1 is active in two groups"):
        relay.layout("allreduce", 4, [[0, 1], [1, 3]], [4, 4], 0)
    with pytest.raises(relay.InvalidCountError, match="negative"):
        relay.layout("allreduce", 4, [[0, 1], [2, 3]], [4, -1], 0)
    with pytest.raises(relay.InvalidCountError, match="1 counts for 2 groups"):
        relay.layout("allreduce", 4, [[0, 1], [2, 3]], [4], 0)
    with pytest.raises(relay.InvalidScheduleError):
        relay.layout("allreduce", 8, [[0, 1, 2]], [3], 0)
    with pytest.raises(TypeError, match="list of lists of ranks"):
        relay.layout("allreduce", 8, [0, 1], [3], 0)
    with pytest.raises(relay.InvalidCountError, match="all-to-all among 4 active ranks"):
        count_of("all-to-all", 4, 13, 13)


def test_every_status_has_its_exception():
    """errors.py's codes are relay.h's, status for status: each the library names has its class,
    named alike, and nothing more."""
    lib = relay.library()
    assert lib.status_name(errors.OK) == b"ok"
    named = itertools.takewhile(lambda c: lib.status_name(c) != b"unknown", itertools.count(1))
    codes = list(named)
    assert sorted(errors.ERRORS) == codes
    for code in codes:
        err = error_for(code, "text", 3)
        assert isinstance(err, relay.RelayError) and type(err).code == code
        assert err.code == code and err.peer == 3 and err.message == "text"
        assert str(err) == f"{lib.status_name(code).decode()}: text"
    assert isinstance(error_for(9, "x"), TimeoutError)  # the built-in one too
    assert error_for(11, "x", -1).peer is None


def test_a_bad_handle_is_an_error_not_a_crash():
    lib = relay.library()
    stray = ctypes.c_int(7)
    for handle in (None, ctypes.addressof(stray)):
        with pytest.raises(relay.InvalidArgumentError, match="communicator"):
            lib.check(lib.comm_async_status(handle))


def test_options_are_parsed_by_the_library():
    from relay.torch import Options

    lib = relay.library()
    s = Options(route="direct", wire="fp8", precision="native_partials", alignment=64).struct(lib)
    assert (s.route, s.wire, s.precision, s.alignment) == (1, 1, 1, 64)
    assert s.struct_size == ctypes.sizeof(_capi.Options)
    with pytest.raises(relay.InvalidArgumentError, match="relay, direct, legacy"):
        Options(route="fastest").struct(lib)
    with pytest.raises(TypeError, match="unknown relay option"):
        Options(speed=3)


def test_a_preconverted_entry_takes_a_64_bit_number_whole():
    """The library's own relay_comm_join_call, declared without argtypes (Library.preconverted),
    on a live communicator of one rank: a call number above 2^32 reaches it whole, as its error
    names it."""
    import torch.distributed as dist
    from relay.torch import Communicator

    comm = Communicator.from_store(dist.HashStore(), 0, 1, device="cpu")
    try:
        lib = comm._lib
        number = (1 << 33) + 5
        status = lib.preconverted.comm_join_call(comm._handle, ctypes.c_uint64(number),
                                                 ctypes.c_void_p(1 << 40))
        with pytest.raises(relay.InvalidArgumentError, match=f"no async call numbered {number} "):
            lib.check(status)
        assert lib.preconverted.comm_async_status(comm._handle) == errors.OK
    finally:
        comm.close()

"""relay's collectives as torch.library ops (namespace `relay`), so that a call traces under
torch.compile and shows in a graph. Registered with the DEF/IMPL API, which torch 1.13 and 2.x
both have, with Meta kernels; the functional forms get fake kernels where torch has them (2.x).

    torch.ops.relay.all_reduce_(t, comm.id, ranks, sizes, counts, "sum")     # in place
    y = torch.ops.relay.all_reduce(x, comm.id, ranks, sizes, counts, "sum")  # functional

comm: Communicator.id; ranks, sizes: the groups flat (the C ABI's form: groups_args(groups));
counts: one per group; options (last, optional): a call's options as text, "route=direct,wire=fp8"
(relay.torch.Options' names; default: none, the cost model's route). The out= forms
(reduce_scatter_out, all_gather_out, all_to_all_out) write into `output`. On a helper the
functional forms return an empty tensor (0 elements).
"""

import torch

from .communicator import Options, lookup

_GROUPS = "int comm, int[] ranks, int[] sizes, int[] counts"
_OPTIONS = 'str options=""'
_SCHEMAS = {
    # in place / out=: Meta kernels (nothing to compute)
    "all_reduce_": f"all_reduce_(Tensor(a!) tensor, {_GROUPS}, str op, {_OPTIONS}) -> ()",
    "reduce_scatter_out": f"reduce_scatter_out(Tensor input, Tensor(a!) output, {_GROUPS}, "
    f"str op, {_OPTIONS}) -> ()",
    "all_gather_out": f"all_gather_out(Tensor input, Tensor(a!) output, {_GROUPS}, {_OPTIONS}) "
    "-> ()",
    "all_to_all_out": f"all_to_all_out(Tensor input, Tensor(a!) output, {_GROUPS}, {_OPTIONS}) "
    "-> ()",
    # functional
    "all_reduce": f"all_reduce(Tensor input, {_GROUPS}, str op, {_OPTIONS}) -> Tensor",
    "reduce_scatter": f"reduce_scatter(Tensor input, {_GROUPS}, str op, {_OPTIONS}) -> Tensor",
    "all_gather": f"all_gather(Tensor input, {_GROUPS}, {_OPTIONS}) -> Tensor",
    "all_to_all": f"all_to_all(Tensor input, {_GROUPS}, {_OPTIONS}) -> Tensor",
}
_REDUCING = ("all_reduce", "reduce_scatter")
_COLLECTIVE = {
    "all_reduce": "allreduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "all_to_all": "all-to-all",
}


def groups_args(groups):
    """(ranks, sizes): the flat form of `groups` the ops take."""
    groups = [list(g) for g in groups]
    return [r for g in groups for r in g], [len(g) for g in groups]


def _groups(ranks, sizes):
    out, at = [], 0
    for n in sizes:
        out.append(list(ranks[at : at + n]))
        at += n
    return out


def _is_active(comm, groups):
    return any(comm.rank in g for g in groups)


_parsed_options = {}


def _options(text):
    """The Options of an op's options text ("route=direct,wire=fp8"), parsed once per text."""
    options = _parsed_options.get(text)
    if options is None and text:
        try:
            options = Options(**dict(item.split("=", 1) for item in text.split(",") if item))
        except ValueError:
            raise ValueError(
                f"relay op options {text!r}: expected name=value pairs separated by commas"
            ) from None
        if len(_parsed_options) < 256:
            _parsed_options[text] = options
    return options


def _op_and_options(name, rest):
    """(op, or (), for a reducing collective; the options) of a kernel's trailing arguments."""
    reducing = name in _REDUCING
    op = rest[:1] if reducing else ()
    text = rest[1 if reducing else 0] if len(rest) > (1 if reducing else 0) else ""
    return op, _options(text)


# ---- kernels (CPU and CUDA) ------------------------------------------------------------------


def _call(c, name, input, output, groups, op, counts, dtype, options):
    """Communicator method `name` on this rank's tensors (None on a helper)."""
    if name == "all_reduce":
        c.all_reduce(input, groups, *op, out=output, counts=counts, dtype=dtype, options=options)
    else:
        getattr(c, name)(input, output, groups, *op, counts=counts, dtype=dtype, options=options)


def _all_reduce_(tensor, comm, ranks, sizes, counts, *rest):
    c, groups = lookup(comm), _groups(ranks, sizes)
    op, options = _op_and_options("all_reduce", rest)
    active = _is_active(c, groups)
    _call(c, "all_reduce", tensor if active else None, None, groups, op, counts, tensor.dtype,
          options)


def _out_kernel(name):
    def kernel(input, output, comm, ranks, sizes, counts, *rest):
        c, groups = lookup(comm), _groups(ranks, sizes)
        op, options = _op_and_options(name, rest)
        active = _is_active(c, groups)
        _call(c, name, input if active else None, output if active else None, groups, op,
              counts, input.dtype, options)

    return kernel


def _functional_kernel(name):
    def kernel(input, comm, ranks, sizes, counts, *rest):
        c, groups = lookup(comm), _groups(ranks, sizes)
        op, options = _op_and_options(name, rest)
        out = _functional_shape(name)(input, comm, ranks, sizes, counts, *rest)
        active = _is_active(c, groups)
        _call(c, name, input if active else None, out if active else None, groups, op, counts,
              input.dtype, options)
        return out

    return kernel


# ---- shape kernels ---------------------------------------------------------------------------


def _nothing(*_args):
    return None


def _functional_shape(name):
    collective = _COLLECTIVE[name]

    def shape(input, comm, ranks, sizes, counts, *rest):
        c, groups = lookup(comm), _groups(ranks, sizes)
        if name == "all_reduce":  # shaped like the input; nothing on a helper
            return torch.empty_like(input) if _is_active(c, groups) else input.new_empty(0)
        return input.new_empty(c.layout(collective, groups, counts).output_elements)

    return shape


def _below_autograd(op):
    """An Autograd kernel of `op` for torch before 2.1: the collectives have no gradient; the
    call goes on to the device's (or Meta's) kernel."""
    guard = torch._C._AutoDispatchBelowAutograd

    def kernel(*args):
        if hasattr(guard, "__enter__"):  # torch 2.x: a context manager
            with guard():
                return op(*args)
        below = guard()  # torch 1.13: a guard for as long as it lives
        try:
            return op(*args)
        finally:
            del below

    return kernel


def _register():
    lib = torch.library.Library("relay", "DEF")
    for schema in _SCHEMAS.values():
        lib.define(schema)
    kernels = {
        "all_reduce_": _all_reduce_,
        "reduce_scatter_out": _out_kernel("reduce_scatter"),
        "all_gather_out": _out_kernel("all_gather"),
        "all_to_all_out": _out_kernel("all_to_all"),
    }
    for name in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all"):
        kernels[name] = _functional_kernel(name)
    # torch from 2.1 has an autograd fallback for ops with no gradient; 1.13 has none for Meta.
    needs_autograd = not hasattr(torch._C, "_set_autograd_fallback_mode")
    for name, fn in kernels.items():
        lib.impl(name, fn, "CPU")
        lib.impl(name, fn, "CUDA")
        if needs_autograd:
            lib.impl(name, _below_autograd(getattr(torch.ops.relay, name)), "Autograd")
    for name in ("all_reduce_", "reduce_scatter_out", "all_gather_out", "all_to_all_out"):
        lib.impl(name, _nothing, "Meta")
    # The functional forms' shapes: a fake kernel where torch has the API (2.x; it refuses an op
    # that has a Meta kernel too), a Meta kernel otherwise (1.13).
    register_fake = getattr(torch.library, "register_fake", None) or getattr(
        torch.library, "impl_abstract", None
    )
    for name in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all"):
        if register_fake is not None:
            register_fake(f"relay::{name}", _functional_shape(name), lib=lib)
        else:
            lib.impl(name, _functional_shape(name), "Meta")
    return lib


_library = _register()

"""What a rank's buffers hold for a call, as the library computes it (relay_rank_layout_of):
the only source of sizes the Python layer uses."""

import collections
from ctypes import byref, c_int64

from ._capi import RankLayout, int32_array, int64_array, library
from .errors import InvalidCountError

Layout = collections.namedtuple(
    "Layout",
    "group active_index active input_elements output_elements in_place_input_offset "
    "in_place_output_offset has_in_place",
)
Layout.__doc__ = """This rank's part of a call. group and active_index are None on a helper (whose
element counts are 0); offsets are in elements: in place, the input lies at output +
in_place_input_offset (all-gather), the output at input + in_place_output_offset
(reduce-scatter)."""


class Groups:
    """A call's groups as the C ABI takes them (flat ranks and per-group sizes), built once per
    distinct list of groups and cached by the caller."""

    __slots__ = ("groups", "ranks", "sizes", "count", "key")

    def __init__(self, groups):
        if isinstance(groups, Groups):
            groups = groups.groups
        try:
            groups = tuple(tuple(int(r) for r in g) for g in groups)
        except TypeError:
            raise TypeError(
                f"groups must be a list of lists of ranks, such as [[0, 1], [2, 3]], not {groups!r}"
            ) from None
        flat = [r for g in groups for r in g]
        self.groups = groups
        self.key = groups
        self.ranks = int32_array(flat)
        self.sizes = int32_array([len(g) for g in groups])
        self.count = len(groups)

    def group_of(self, rank):
        """(group, active index) of `rank`, or (None, None) where it helps."""
        for g, members in enumerate(self.groups):
            if rank in members:
                return g, members.index(rank)
        return None, None


def _collective(lib, name):
    return lib.value_of("collective", name)


def layout(collective, ranks, groups, counts, rank, lib=None):
    """This rank's Layout of a call of `collective` ("allreduce", "reduce-scatter", "all-gather",
    "all-to-all") among `ranks` ranks; raises the call's own error for bad groups or counts."""
    lib = lib or library("host")
    g = groups if isinstance(groups, Groups) else Groups(groups)
    counts = [int(c) for c in counts]
    if len(counts) != g.count:  # the C ABI reads one count per group
        raise InvalidCountError(f"{len(counts)} counts for {g.count} groups; give one count per group")
    out = RankLayout()
    lib.check(
        lib.rank_layout_of(
            _collective(lib, collective),
            ranks,
            g.ranks,
            g.sizes,
            g.count,
            int64_array(counts) if counts else None,
            rank,
            byref(out),
        )
    )
    helper = out.group < 0
    return Layout(
        None if helper else out.group,
        None if helper else out.active_index,
        out.active,
        out.input_elements,
        out.output_elements,
        out.in_place_input_offset,
        out.in_place_output_offset,
        bool(out.has_in_place),
    )


def count_of(collective, active, input_elements, output_elements, lib=None):
    """The per-group count whose buffers hold these many elements (relay_count_of)."""
    lib = lib or library("host")
    out = c_int64()
    lib.check(
        lib.count_of(_collective(lib, collective), active, input_elements, output_elements, byref(out))
    )
    return out.value

"""torchrec's FusedShardedRelayMultiGroup over relay's torchcomms backend: the constructor and
four methods torchrec/distributed/sharded_relay_utils.py calls, with their ValueErrors.

torchrec resolves the class by name at run time (invisible to torch.package); pointing that one
lookup here is the whole change:

    _try_dynamic_import("relay.torchrec", "FusedShardedRelayMultiGroup")

and the communicator it is made with comes from torchcomms.new_comm("relay", ...) (or is a
relay.torchcomms.TorchCommRelay). Each method is one call of the backend's
sharded_relay_multi_group_* (every group in one call), returning its work.

Validation (skip_validation=False; the default is True, as torchrec passes): the entries of this
rank's group must hold what its count says (a ValueError naming both numbers otherwise), and an
all-to-all's input and output must not overlap; a helper's entries and a group of count 0 are
not checked (relay never touches them). A rank that fails it refuses the call through the
library, so its peers raise relay.PeerError naming it at once; nothing is written anywhere. With
validation skipped, relay's own checks still refuse a wrong size on every rank.
"""

from .torchcomms.backend import TorchCommRelay

__all__ = ["FusedShardedRelayMultiGroup"]


class FusedShardedRelayMultiGroup:
    """One object for every sparse group of a node: `rcclx_comm` is the communicator
    (torchcomms' comm of backend "relay", or the backend itself), `world_size` and `rank` this
    rank's place in it, `all_active_ranks` the groups' active ranks."""

    def __init__(self, rcclx_comm, world_size, rank, all_active_ranks):
        self.rcclx_comm = rcclx_comm
        self.world_size = int(world_size)
        self.rank = int(rank)
        self.all_active_ranks = [[int(r) for r in g] for g in all_active_ranks]
        self._backend = _backend_of(rcclx_comm)

    def allreduce_multi_group(self, tensors, num_groups, per_group_sizes, all_active_ranks,
                              op="avg", skip_validation=True, output_tensors=None,
                              async_op=False, low_precision=False):
        """Allreduce of each group's tensor (in place, or into output_tensors); op SUM or AVG
        (default AVG)."""
        what = "allreduce_multi_group"
        if not skip_validation:
            self._validate(what, num_groups, all_active_ranks, per_group_sizes,
                           ("tensors", tensors, 1, "per_group_sizes"),
                           ("output_tensors", output_tensors, 1, "per_group_sizes"))
        backend = self._backend if self._backend is not None else self._impl(what)
        return backend.sharded_relay_multi_group_all_reduce(
            tensors, op, all_active_ranks, per_group_sizes, async_op=async_op,
            output_tensors=output_tensors, low_precision=low_precision)

    def reduce_scatter_multi_group(self, input_tensors, output_tensors, num_groups,
                                   per_group_recv_counts, all_active_ranks, op="avg",
                                   skip_validation=True, async_op=False, low_precision=False):
        """Reduce-scatter within each group: an active input of A x recv count elements, its
        output of the recv count."""
        what = "reduce_scatter_multi_group"
        if not skip_validation:
            self._validate(what, num_groups, all_active_ranks, per_group_recv_counts,
                           ("input_tensors", input_tensors, "A", "per_group_recv_counts"),
                           ("output_tensors", output_tensors, 1, "per_group_recv_counts"))
        backend = self._backend if self._backend is not None else self._impl(what)
        return backend.sharded_relay_multi_group_reduce_scatter(
            input_tensors, output_tensors, op, all_active_ranks, per_group_recv_counts,
            async_op=async_op, low_precision=low_precision)

    def all_to_all_multi_group(self, input_tensors, output_tensors, num_groups,
                               per_group_segment_counts, all_active_ranks, skip_validation=True,
                               async_op=False, low_precision=False):
        """All-to-all within each group: A segments in and out; out of place only."""
        what = "all_to_all_multi_group"
        if not skip_validation:
            self._validate(what, num_groups, all_active_ranks, per_group_segment_counts,
                           ("input_tensors", input_tensors, "A", "per_group_segment_counts"),
                           ("output_tensors", output_tensors, "A", "per_group_segment_counts"),
                           distinct=True)
        backend = self._backend if self._backend is not None else self._impl(what)
        return backend.sharded_relay_multi_group_all_to_all(
            input_tensors, output_tensors, all_active_ranks, per_group_segment_counts,
            async_op=async_op, low_precision=low_precision)

    def all_gather_multi_group(self, input_tensors, output_tensors, num_groups,
                               per_group_send_counts, all_active_ranks, skip_validation=True,
                               async_op=False, low_precision=False):
        """All-gather within each group: the send count in, A of them out; in place where the
        input is the output's slot of this rank."""
        what = "all_gather_multi_group"
        if not skip_validation:
            self._validate(what, num_groups, all_active_ranks, per_group_send_counts,
                           ("input_tensors", input_tensors, 1, "per_group_send_counts"),
                           ("output_tensors", output_tensors, "A", "per_group_send_counts"))
        backend = self._backend if self._backend is not None else self._impl(what)
        return backend.sharded_relay_multi_group_all_gather(
            input_tensors, output_tensors, all_active_ranks, per_group_send_counts,
            async_op=async_op, low_precision=low_precision)

    # ---- checks ----------------------------------------------------------------------------

    def _impl(self, what):
        """The backend (the methods read self._backend themselves where it is set); raises
        without one."""
        if self._backend is None:
            raise RuntimeError(
                f"{what}: no relay communicator (rcclx_comm is None); make one with "
                f"torchcomms.new_comm('relay', ...) or relay.torchcomms.TorchCommRelay")
        return self._backend

    def _validate(self, what, num_groups, groups, counts, *entries, distinct=False):
        try:
            self._check(what, num_groups, groups, counts, entries, distinct)
        except ValueError as e:
            if self._backend is not None:
                raise self._backend.communicator.refuse(e) from None
            raise

    def _check(self, what, num_groups, groups, counts, entries, distinct):
        lists = [("all_active_ranks", groups), ("counts", counts)]
        lists += [(name, values) for name, values, _, _ in entries if values is not None]
        for name, values in lists:
            if len(values) != num_groups:
                raise ValueError(f"{what}: {name} has {len(values)} entries; num_groups is "
                                 f"{num_groups}")
        mine = next((g for g, members in enumerate(groups) if self.rank in members), None)
        if mine is None or int(counts[mine]) == 0:
            return  # a helper's entries and a group of count 0 are never touched
        active, count = len(groups[mine]), int(counts[mine])
        for name, values, per, count_name in entries:
            if values is None:
                continue
            t = values[mine]
            want = count * (active if per == "A" else 1)
            if t.numel() != want:
                times = f"{active} active ranks x {count_name}[{mine}]={count}" if per == "A" \
                    else f"{count_name}[{mine}]={count}"
                raise ValueError(f"{what}: {name}[{mine}] (this rank's group) has {t.numel()} "
                                 f"elements, expected {want} ({times})")
        if distinct:
            a, b = entries[0][1][mine], entries[1][1][mine]
            if _overlap(a, b):
                raise ValueError(f"{what}: input_tensors[{mine}] and output_tensors[{mine}] "
                                 f"overlap; all-to-all is out of place only (no in-place form)")


def _backend_of(comm):
    if comm is None or isinstance(comm, TorchCommRelay):
        return comm
    impl = getattr(comm, "get_backend_impl", None)
    backend = impl() if impl is not None else comm
    if not hasattr(backend, "sharded_relay_multi_group_all_reduce"):
        raise TypeError(
            f"rcclx_comm's backend is {type(backend).__name__}, which has no sharded relay "
            f"calls; make the communicator with torchcomms.new_comm('relay', ...)")
    return backend


def _overlap(a, b):
    if a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()

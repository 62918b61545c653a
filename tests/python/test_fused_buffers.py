"""The fused helpers' buffer growth is in step on every rank (one process, 8 simulated ranks).

Registration is collective: on the ipc transport every register and deregister is a round of
every rank through the bootstrap, so a rank that grows a buffer while another does not waits for
it until the timeout (seen on an H200: a single-mode fused call whose helpers did not grow). The
shm transport registers locally, so the 8-process suites cannot see a rank out of step; here each
simulated rank's communicator logs its rounds, and every rank's log must be the same sequence.

  in step          random fused calls (all four collectives, fused and single groupings, several
                   dtypes, in and out of place) over 8 ranks: the same rounds on every rank;
                   helpers register nothing and pass no buffer; every buffer a call gets has
                   the size the call needs
  helpers hold     a rank that helped at a growth holds nothing, and gets an unregistered buffer
  nothing          of its own when it is active below the registered size (no round)
  wrong outputs    a rank whose outputs are wrong grows every buffer with the others, then
                   raises before any call, nothing written
  a refused part   one rank's registration refused (memory that cannot be registered): it still
                   takes part in the deregistration round, raises, and its later calls work
"""

import random

import pytest
import torch

import reference as ref
import relay
import relay.torch as rt
from relay._layout import Groups, layout
from relay.torch._flat import FlatBuffers
from relay.torch.work import Streams

SEED = 20261202
SIZE = 8


class StubComm:
    """The parts of relay.torch.Communicator the fused helpers use, with its real buffer cache;
    a call records what it was given instead of communicating."""

    def __init__(self, rank, refuse_registration_at=None):
        self.rank, self.size, self.device = rank, SIZE, torch.device("cpu")
        self.rounds = []  # ("register" | "deregister", tensor or None)
        self.registered = []  # tensors registered now
        self.calls = []  # (collective, input, output)
        self._refuse_at = refuse_registration_at
        self._flat = FlatBuffers(self.device, self.register, self.deregister)
        self._ops = Streams()  # its async calls: none here (launch asks for the pending one)

    def register(self, t):
        self.rounds.append(("register", t))
        if self._refuse_at is not None and len(self.rounds) == self._refuse_at:
            raise relay.errors.InvalidBufferError("the test refuses this registration")
        if t is not None:
            self.registered.append(t)

    def deregister(self, t):
        self.rounds.append(("deregister", t))
        if t is not None:
            assert any(r is t for r in self.registered), "deregistered memory it never registered"
            self.registered = [r for r in self.registered if r is not t]

    def flat_buffer(self, role, dtype, elements, hold=True):
        return self._flat.get(role, dtype, elements, hold)

    def groups(self, groups):
        return Groups(groups)

    def layout(self, collective, groups, counts):
        return layout(collective, SIZE, Groups(groups), counts, self.rank)

    def refuse(self, error):
        return error

    def _prepared_of(self, coll, x, out, groups, counts, op, options, first_name, dtype):
        """A call's prepared arguments (Communicator._prepared_of): here, what it records."""
        return coll, x, out

    def _run_prepared(self, call):
        self.calls.append(call)


def _in_registered(t, comm):
    """Whether the view `t` lies in memory `comm` registered."""
    return any(
        r.data_ptr() <= t.data_ptr()
        and t.data_ptr() + t.numel() * t.element_size() <= r.data_ptr() + r.numel() * r.element_size()
        for r in comm.registered
    )


def _fused_call(comms, rng, gen):
    """One random fused call on every simulated rank; checks what each rank's call was given."""
    groups = rng.choice(ref.layouts(SIZE, SEED))
    coll = rng.choice(ref.COLLECTIVES)
    active = len(groups[0])
    specs = [(rng.choice(ref.DTYPES), rng.randint(0, 400)) for _ in range(rng.randint(1, 4))]
    in_place = rng.random() < 0.5
    desc = f"{coll} groups={groups} tensors={specs} in_place={in_place}"
    for comm in comms:
        me = next((g for g, members in enumerate(groups) if comm.rank in members), None)
        ins, outs = [], []
        for dtype, m in specs:
            in_el, out_el = ref.io_elements(coll, active, m)
            ins.append(ref.make_input(dtype, in_el, gen))
            outs.append(ref.poison_like(dtype, out_el))
        before = len(comm.calls)
        if coll == "allreduce":
            rt.all_reduce_tensors(comm, ins, groups, out=None if in_place else outs)
        elif coll == "reduce-scatter":
            rt.reduce_scatter_tensors(comm, ins, outs, groups)
        elif coll == "all-gather":
            rt.all_gather_tensors(comm, ins, outs, groups, in_place=in_place)
        else:
            rt.all_to_all_tensors(comm, ins, outs, groups)
        made = comm.calls[before:]
        dtypes = sorted({d for d, _ in specs}, key=str)
        assert len(made) == len(dtypes), f"{desc}: rank {comm.rank} made {len(made)} calls"
        for (_, x, out), dtype in zip(made, dtypes):
            total = sum(m for d, m in specs if d == dtype)
            if me is None:
                assert x is None and out is None, f"{desc}: helper {comm.rank} passed a buffer"
                continue
            in_el, out_el = ref.io_elements(coll, active, total)
            if coll == "allreduce" and in_place:
                out_el = None
            for t, want, role in ((x, in_el, "input"), (out, out_el, "output")):
                if want is None:
                    assert t is None, f"{desc}: rank {comm.rank} got an output in place"
                    continue
                assert t.numel() == want, f"{desc}: rank {comm.rank} {role} has {t.numel()}"
    return desc


def test_growth_is_in_step_on_every_rank():
    rng = random.Random(SEED)
    gen = torch.Generator().manual_seed(SEED)
    comms = [StubComm(r) for r in range(SIZE)]
    seen = {"grew": 0, "helper rounds": 0}
    for i in range(300):
        lengths = [len(c.rounds) for c in comms]
        desc = _fused_call(comms, rng, gen)
        kinds = [[k for k, _ in c.rounds] for c in comms]
        assert all(k == kinds[0] for k in kinds), (
            f"seed {SEED} call {i} ({desc}): the ranks' registration rounds differ:\n"
            + "\n".join(f"rank {r}: {k[lengths[r]:]}" for r, k in enumerate(kinds))
        )
        seen["grew"] += len(comms[0].rounds) > lengths[0]
        for c in comms:
            new = c.rounds[lengths[c.rank]:]
            seen["helper rounds"] += sum(1 for k, t in new if k == "register" and t is None)
    # The random calls did exercise growth with helpers in it.
    assert seen["grew"] >= 20 and seen["helper rounds"] >= 20, seen


def test_helpers_hold_nothing_until_they_use_a_buffer():
    """Rank 3 helps while [0, 1] grows the float32 input to 1,000 elements (two tensors: a dtype
    of one tensor has no flat buffer), then is active with 500 (below the registered size): it
    gets its own unregistered buffer, no round."""
    comms = [StubComm(r) for r in range(SIZE)]
    x = torch.full((500,), 0.25)
    for c in comms:
        rt.all_reduce_tensors(c, [x.clone(), x.clone()], [[0, 1]])
    assert [k for k, _ in comms[3].rounds] == ["register"]
    assert comms[3].rounds[0][1] is None and comms[0].rounds[0][1].numel() == 1000
    assert comms[3].registered == []
    y = torch.full((250,), 0.5)
    for c in comms:
        rt.all_reduce_tensors(c, [y.clone(), y.clone()], [[3, 4]])
    assert all(len(c.rounds) == 1 for c in comms), "a size below the registered one grew"
    _, x3, _ = comms[3].calls[-1]
    assert x3.numel() == 500 and not _in_registered(x3, comms[3])
    _, x0, _ = comms[0].calls[0]
    assert _in_registered(x0, comms[0])


def test_a_refused_registration_keeps_the_ranks_in_step():
    """Rank 2's second registration is refused: it raises, but takes part in the deregistration
    round as every rank does, and its next call runs on the unregistered buffer."""
    comms = [StubComm(r, refuse_registration_at=2 if r == 2 else None) for r in range(SIZE)]
    groups = [[0, 1], [2, 3], [4, 5], [6, 7]]
    for n in (100, 200):
        for c in comms:
            x = [torch.full((n // 2,), 1.5), torch.full((n // 2,), 1.5)]
            if c.rank == 2 and n == 200:
                with pytest.raises(relay.errors.InvalidBufferError, match="refuses"):
                    rt.all_reduce_tensors(c, x, groups)
            else:
                rt.all_reduce_tensors(c, x, groups)
    kinds = [[k for k, _ in c.rounds] for c in comms]
    assert all(k == ["register", "register", "deregister"] for k in kinds), kinds
    assert comms[2].rounds[2][1] is not None  # the first buffer, registered: ended
    for c in comms:
        rt.all_reduce_tensors(c, [torch.full((75,), 2.5), torch.full((75,), 2.5)], groups)
    assert all(len(c.rounds) == 3 for c in comms)
    _, x2, _ = comms[2].calls[-1]
    assert x2.numel() == 150 and not _in_registered(x2, comms[2])


def test_a_rank_with_wrong_outputs_grows_in_step_then_refuses():
    """Rank 1's outputs are wrong (the second dtype's has the wrong size, or one is missing): it
    takes part in the growth of every dtype's buffers (which depends on the inputs alone), then
    raises naming the output before any call, with nothing written; every rank's rounds are the
    same."""
    groups = [[0, 1], [2, 3], [4, 5], [6, 7]]
    fns = {"allreduce": lambda c, x, o: rt.all_reduce_tensors(c, x, groups, out=o),
           "reduce-scatter": lambda c, x, o: rt.reduce_scatter_tensors(c, x, o, groups),
           "all-gather": lambda c, x, o: rt.all_gather_tensors(c, x, o, groups),
           "all-to-all": lambda c, x, o: rt.all_to_all_tensors(c, x, o, groups)}
    for coll, fn in fns.items():
        for wrong, match in (("size", "entry 1"), ("missing", "4 .* but 3")):
            comms = [StubComm(r) for r in range(SIZE)]
            for c in comms:
                x, out = [], []
                # Two tensors of each dtype (a dtype of one tensor has no flat buffer).
                for dtype, m in ((torch.bfloat16, 64), (torch.float32, 40)) * 2:
                    in_el, out_el = ref.io_elements(coll, 2, m)
                    x.append(torch.full((in_el,), 0.75, dtype=dtype))
                    out.append(torch.full((out_el,), 1234.5, dtype=dtype))
                if c.rank == 1 and wrong == "size":
                    out[1] = torch.full((out[1].numel() + 2,), 1234.5)
                elif c.rank == 1:
                    out.pop()
                if c.rank == 1:
                    with pytest.raises(ValueError, match=match):
                        fn(c, x, out)
                    assert c.calls == [], f"{coll}: the refusing rank made a call"
                    assert all(bool((o == 1234.5).all()) for o in out), f"{coll}: written"
                else:
                    fn(c, x, out)
            kinds = [[k for k, _ in c.rounds] for c in comms]
            assert all(k == kinds[0] for k in kinds) and len(kinds[0]) == 4, f"{coll}: {kinds}"

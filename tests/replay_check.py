"""Lowering a schedule and the schedule its history rebuilds, for comparison (conftest.py's
TESSEL_REPLAY_CHECK plugin and test_replay.py)."""

from __future__ import annotations

import copy

import tessel
from tessel.errors import TesselError
from tessel.schedule.history import corresponding
from tessel.te.tensor import Tensor


class OriginalLoweringFailed(Exception):
    """The schedule itself does not lower (what the calling test is about): nothing to compare."""


def replayed_schedule(sch, args):
    """``sch`` rebuilt by its history on fresh tensors (a deep copy of the operations it was
    created for), with ``args`` found there by their stage's position; None for a schedule
    without a history (built by hand)."""
    from tessel.schedule.history import History

    if not isinstance(getattr(sch, "history", None), History) or not sch.history:
        return None
    memo: dict = {}
    fresh = copy.deepcopy(sch.history.origin.outputs, memo)
    again = sch.history.replay(onto=fresh)
    return again, _fresh_args(args, sch, again, memo)


def _fresh_args(args, sch, again, memo: dict) -> list:
    """The tensors found in the replayed schedule by their stage's position; a scalar argument
    (a te.var) is its copy among the fresh operations, when they use it."""
    return [_fresh_arg(a, sch, again) if isinstance(a, Tensor) else memo.get(id(a), a) for a in args]


def _fresh_arg(a: Tensor, sch, again) -> Tensor:
    """A storage a primitive made (``storage_fold``'s ``h.folded``, passed to build in place of
    ``h``) is the replayed stage's own; any other tensor is found by its stage's position."""
    for st, st2 in zip(sch.stages, again.stages):
        got = getattr(st, "storage", None)
        if got is not None and got.buffer is a and a.op not in sch.stage_map:
            return st2.storage.buffer
    return corresponding(a, sch, again)


def replayed_lowering(sch, args) -> tuple[str, str]:
    """The lowered IR of ``sch`` and of the schedule its history rebuilds on fresh tensors.

    The fresh tensors are a deep copy of the operations the schedule was created for (the same
    program, other objects); the arguments are found there by their stage's position."""
    try:
        want = str(tessel.lower(sch, args, simple_mode=True))
    except TesselError as err:
        raise OriginalLoweringFailed(str(err)) from err
    memo: dict = {}
    fresh = copy.deepcopy(sch.history.origin.outputs, memo)
    again = sch.history.replay(onto=fresh)
    return want, str(tessel.lower(again, _fresh_args(args, sch, again, memo), simple_mode=True))

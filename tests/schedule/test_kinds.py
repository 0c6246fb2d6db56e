"""Placement (kinds.py): one value per stage, shared and cached; a schedule pickles whatever
was lowered before it (TVM's test_singleton pickles a schedule)."""

from __future__ import annotations

import pickle

import tessel
from tessel import te


def test_a_schedule_pickles_after_another_was_lowered():
    A = te.placeholder((5,), name="A")
    B = te.compute((5,), lambda i: A[i] + 1.0, name="B")
    tessel.lower(te.create_schedule(B.op), [A, B])  # caches the root placement's shared_map
    s = te.create_schedule(B.op)
    s[B].fuse()
    again = pickle.loads(pickle.dumps(s))
    assert [st.name for st in again.stages] == ["A", "B"] and dict(again[again.stages[1].op].shared_loops) == {}
    assert again.stages[1].placement == s.stages[1].placement

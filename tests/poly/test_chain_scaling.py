"""Issue 31: a chain of stages each computed inside the next builds in time that grows with the
chain. What made it quadratic, and is asserted here as structure rather than time: the exact
analysis built each stage's box in the loops of every stage around it (sets with up to 2N
parameters) although intervals prove every box exact; lowering rewrote each stage's whole inner
body once per loop around it; the analyzer re-keyed everything it knew at each new loop."""

from __future__ import annotations

import pytest
from helpers import TARGETS, check, rand

from tessel import te
from tessel.arith import analyzer as A
from tessel.bound.infer import run_infer_bound
from tessel.ir import expr as E
from tessel.poly.exact import plan


def _step(p, k: int):
    return lambda i, j: p[i, j] * (1.0 + 0.001 * k) - 0.5


def _chain(n: int, size: tuple[int, int] = (7, 13)):
    X = te.placeholder(size, name="X")
    ts = [X]
    for k in range(n):
        ts.append(te.compute(size, _step(ts[-1], k), name=f"T{k}"))
    s = te.create_schedule(ts[-1].op)
    for k in range(1, n):
        s[ts[k]].compute_at(s[ts[k + 1]], s[ts[k + 1]].op.axis[1])
    return X, ts, s


def test_boxes_that_intervals_prove_exact_are_never_built_as_sets():
    X, ts, s = _chain(40)
    got = plan(run_infer_bound(s, check=False))
    infos = [got.stages[id(s[t])] for t in ts[1:-1]]
    assert infos and all(info.make is not None for info in infos)  # not one context was intersected
    assert not got.changed


@pytest.mark.parametrize("target", TARGETS)
def test_a_chain_of_300_stages_each_inside_the_next_matches_numpy(target):
    X, ts, s = _chain(300)
    x = rand(7, 13, seed=11)
    want = x.astype("float64")
    for k in range(300):
        want = want * (1.0 + 0.001 * k) - 0.5
    check(s, [X, ts[-1]], [x], [want.astype("float32")], targets=(target,), rtol=1e-4, atol=1e-4)


def test_binding_a_new_variable_numbers_the_state_from_the_one_before(monkeypatch):
    # a full key walks everything known; counted, the walks must not grow with the loops bound
    walked = []
    real = A.Analyzer._state_key

    def counting(self):
        if self._state is None:
            walked.append(len(self._bounds) + len(self._subst) + len(self._var_facts))
        return real(self)

    monkeypatch.setattr(A.Analyzer, "_state_key", counting)
    ana = A.Analyzer()
    n = te.var("n")
    loops = [te.var(f"i{k}") for k in range(200)]
    for k, v in enumerate(loops):
        ana.bind(v, E.Range(loops[k - 1] if k else 0, n))  # each loop starts where the one outside is
        assert isinstance(ana.simplify(v + 1 - v), E.IntImm)
    assert sum(walked) < 10, walked[-5:]

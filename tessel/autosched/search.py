"""Refining the rule-based schedule by measurement: knob values near the defaults, timed.

Why a small local search and not a model: the defaults come from the Target's analytical
model already (register tile, panel group, partials, strips), so the space worth measuring is
a neighbourhood of them, and on a budget of a few trials the first candidates must be the
likeliest ones (one knob moved at a time, in the order the plan lists them). Candidates are
built and timed in this process on random data; one that tessel refuses or that fails to build
is recorded as failed and the search goes on. ``tessel.tune``'s cost model and isolated
runner replace this loop where the tuner is available (issue 17, item 2).
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import TesselError
from .plan import Plan


@dataclass
class Trial:
    knobs: dict[str, object]
    seconds: float | None          # median time of one call; None: failed
    error: str = ""


@dataclass
class SearchLog:
    trials: list[Trial] = field(default_factory=list)

    def best(self) -> Trial | None:
        ok = [t for t in self.trials if t.seconds is not None]
        return min(ok, key=lambda t: t.seconds) if ok else None


def neighbours(plan: Plan, rng: random.Random):
    """Knob settings to try after the defaults: each knob moved to each other candidate alone,
    then random combinations."""
    base = plan.defaults()
    seen = {_key(base)}
    for k in plan.knobs:
        for c in k.candidates:
            if c != k.default:
                cand = {**base, k.name: c}
                if _key(cand) not in seen:
                    seen.add(_key(cand))
                    yield cand
    for _ in itertools.count():
        cand = {k.name: rng.choice(k.candidates) for k in plan.knobs}
        if _key(cand) not in seen:
            seen.add(_key(cand))
            yield cand
        if len(seen) > 10_000:
            return


def _key(knobs: dict) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in knobs.items()))


def random_inputs(args, rng: np.random.Generator) -> list[np.ndarray]:
    """Arrays for a kernel's arguments (inputs random and never zero, outputs empty)."""
    out = []
    for t in args:
        shape = tuple(int(getattr(d, "value", d)) for d in t.shape)
        dt = np.dtype(str(t.dtype))
        if dt.kind == "f":
            out.append(rng.uniform(0.5, 1.5, size=shape).astype(dt))
        else:
            out.append(rng.integers(1, 5, size=shape).astype(dt))
    return out


def measure(sch, args, target, repeat: int = 3, seconds: float = 2.0) -> float:
    """The median seconds of one call of the built kernel (after one warm-up call)."""
    from ..driver import build

    f = build(sch, args, target=target)
    data = random_inputs(args, np.random.default_rng(0))
    f(*data)
    times = []
    start = time.perf_counter()
    for _ in range(repeat):
        t0 = time.perf_counter()
        f(*data)
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > seconds:
            break
    return float(np.median(times))


def refine(plan: Plan, make, args, target, trials: int, seconds: float | None,
           log: SearchLog | None = None) -> tuple[dict, SearchLog]:
    """The best knob values of the defaults and up to ``trials - 1`` neighbours, measured;
    ``make(knobs)`` gives a schedule. Stops after ``seconds`` of searching."""
    log = log or SearchLog()
    start = time.perf_counter()
    cands = itertools.chain([plan.defaults()], neighbours(plan, random.Random(0)))
    for knobs in itertools.islice(cands, max(trials, 1)):
        if seconds is not None and log.trials and time.perf_counter() - start > seconds:
            break
        try:
            t = measure(make(knobs), args, target)
            log.trials.append(Trial(knobs, t))
        except TesselError as err:
            log.trials.append(Trial(knobs, None, f"{type(err).__name__}: {err}"))
    best = log.best()
    return (best.knobs if best is not None else plan.defaults()), log

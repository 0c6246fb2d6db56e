"""The few kinds of random choice the fuzzer's generators make, drawable two ways.

The generators call ``draw(sampled_from(xs))``, ``draw(integers(lo, hi))`` and so on. In the
test suite ``draw`` is hypothesis' (``hypothesis_draw``), which gives hypothesis' seeds,
notes and shrinking; the script draws from a ``random.Random`` (``random_draw``) so that
tessel itself does not need hypothesis and a case is named by two numbers, a seed and an index.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Choice:
    kind: str  # "one", "int", "bool" or "perm"
    args: tuple

    def sample(self, rng: random.Random) -> Any:
        if self.kind == "one":
            return rng.choice(self.args[0])
        if self.kind == "int":
            return rng.randint(*self.args)
        if self.kind == "bool":
            return rng.random() < 0.5
        xs = list(self.args[0])
        rng.shuffle(xs)
        return xs

    def strategy(self):
        from hypothesis import strategies as st

        if self.kind == "one":
            return st.sampled_from(self.args[0])
        if self.kind == "int":
            return st.integers(*self.args)
        if self.kind == "bool":
            return st.booleans()
        return st.permutations(self.args[0])


def sampled_from(xs: Sequence) -> Choice:
    return Choice("one", (tuple(xs),))


def integers(lo: int, hi: int) -> Choice:
    return Choice("int", (lo, hi))


def booleans() -> Choice:
    return Choice("bool", ())


def permutations(xs: Sequence) -> Choice:
    return Choice("perm", (tuple(xs),))


Draw = Callable[[Choice], Any]


def random_draw(rng: random.Random) -> Draw:
    return lambda c: c.sample(rng)


def hypothesis_draw(draw: Callable) -> Draw:
    """``draw`` is hypothesis' (``data.draw`` of an ``st.data()`` value)."""
    return lambda c: draw(c.strategy())

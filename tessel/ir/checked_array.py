"""The flat array that generated Python indexes: both Python interpreters of the loop IR (the
python target and cuda-sim) run on it.

NumPy would wrap a negative index and raise an IndexError naming nothing; here an index outside
the buffer is refused with the kernel and the buffer named, the way each runner says it
(``_oob``). It lives beside the IR because the code generators and the runtime both build on
it and neither may import the other.
"""

from __future__ import annotations

import numpy as np


class CheckedArray:
    """Scalar (``a[i]``) and vector (``vget``/``vset``, one index per lane) access with bounds."""

    __slots__ = ("a", "n", "name")

    def __init__(self, a: np.ndarray, name: str):
        self.a, self.n, self.name = a, a.shape[0], name

    def __getitem__(self, i):
        if 0 <= i < self.n:
            return self.a[i]
        raise self._oob("reads", i)

    def __setitem__(self, i, v) -> None:
        if 0 <= i < self.n:
            self.a[i] = v
        else:
            raise self._oob("writes", i)

    def _inside(self, i: np.ndarray) -> bool:
        return i.size == 0 or (i.min() >= 0 and i.max() < self.n)

    def vget(self, i: np.ndarray) -> np.ndarray:
        if self._inside(i):
            return self.a[i]
        raise self._oob("reads", i[(i < 0) | (i >= self.n)][0])

    def vset(self, i: np.ndarray, v) -> None:
        if self._inside(i):
            self.a[i] = v
        else:
            raise self._oob("writes", i[(i < 0) | (i >= self.n)][0])

    def _oob(self, what: str, i) -> Exception:
        raise NotImplementedError  # each runner says in its own words where it caught the index


__all__ = ["CheckedArray"]

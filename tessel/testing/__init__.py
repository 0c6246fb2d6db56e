"""Tools for testing tessel itself and programs built with it: NumPy comparisons on random
data (:mod:`.numeric`) and the cross-feature differential fuzzer (``python -m
tessel.testing.fuzz``, see :mod:`.fuzz`), which the test suite runs a slice of."""

from .numeric import TARGETS, check, garbage_like, rand, refused

__all__ = ["TARGETS", "check", "garbage_like", "rand", "refused"]

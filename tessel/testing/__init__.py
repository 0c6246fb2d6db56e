"""Tools for testing tessel itself and programs built with it: NumPy comparisons on random
data (:mod:`.numeric`) and the cross-feature differential fuzzer (``python -m
tessel.testing.fuzz``, see :mod:`.fuzz`), which the test suite runs a slice of; and the
comparison of the generated sources of two trees (``python -m tessel.testing.sources``), which
shows a refactoring changed no kernel."""

from .numeric import TARGETS, check, garbage_like, rand, refused

__all__ = ["TARGETS", "check", "garbage_like", "rand", "refused"]

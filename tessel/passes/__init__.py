"""Loop IR to loop IR: one pass per module, composed by :mod:`tessel.driver`."""

from .simplify import simplify_stmt
from .storage_flatten import flat_index, storage_flatten

__all__ = ["flat_index", "simplify_stmt", "storage_flatten"]

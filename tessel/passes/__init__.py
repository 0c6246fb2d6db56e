"""Loop IR to loop IR: one pass per module, composed by :mod:`tessel.driver`."""

from .index_dtype import index_dtype
from .loop_partition import loop_partition
from .peel import peel_borders
from .simplify import simplify_stmt
from .storage_flatten import flat_index, storage_flatten
from .unroll import simplify_vector_stmt, unroll
from .vectorize import streaming_outputs, vectorize

__all__ = ["flat_index", "index_dtype", "loop_partition", "peel_borders", "simplify_stmt", "simplify_vector_stmt", "storage_flatten",
           "streaming_outputs", "unroll", "vectorize"]

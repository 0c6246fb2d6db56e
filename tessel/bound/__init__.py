"""InferBound (seed 000): ranges of every loop and every realized region."""

from .infer import BoundContext, infer_bound, run_infer_bound
from .propagate import pass_down_domain, pass_up_domain, pass_up_index

__all__ = ["BoundContext", "infer_bound", "pass_down_domain", "pass_up_domain", "pass_up_index",
           "run_infer_bound"]

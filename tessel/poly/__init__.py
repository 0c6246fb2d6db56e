"""The polyhedral view of a schedule (seed 004): isl sets for what runs, isl's AST for loops."""

from .exact import ExactPlan, plan

__all__ = ["ExactPlan", "plan"]

"""How to compute: stages, IterVar relations and the schedule primitives."""

from . import document
from .kinds import INLINE, ROOT, SCOPE, IterVarAttr
from .relations import Fuse, Rebase, Relation, Singleton, Split
from .schedule import Schedule, create_schedule
from .stage import Stage

__all__ = ["INLINE", "ROOT", "SCOPE", "Fuse", "IterVarAttr", "Rebase", "Relation", "Schedule",
           "Singleton", "Split", "Stage", "create_schedule"]

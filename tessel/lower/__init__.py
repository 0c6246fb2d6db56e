"""Schedule plus bounds to loop IR (ScheduleOps)."""

from .schedule_ops import schedule_ops

__all__ = ["schedule_ops"]

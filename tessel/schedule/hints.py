"""The rest of TVM's stage primitives: storage_align, set_store_predicate, prefetch and
double_buffer (groups are groups.py's). Each is a recorded step of the stage or schedule (see stage.py/schedule.py,
which forward here), so a schedule using them replays like any other.

* ``storage_align(axis, factor, offset)``: the stride of dimension ``axis`` of the stage's
  storage becomes ``k * factor + offset`` (rows padded, e.g. to keep rows of a shared tile
  off one cache set); storage flattening lays the realized tensor out so.
* ``set_store_predicate(cond)``: the stage stores only where ``cond`` holds (its loops still
  run); the predicate is over the stage's axes.
* ``prefetch(tensor, var, offset)``: a hint: at the top of loop ``var``, ask the caches for
  what ``tensor`` will be read ``offset`` iterations later (C: ``__builtin_prefetch``; values
  never change).
* ``double_buffer()``: two copies of the stage's storage on a GPU, one filled while the other is
  read (a hint the device pipeline acts on; ``attr double_buffer_scope`` in the IR).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir.expr import convert

if TYPE_CHECKING:
    from .stage import Stage


def storage_align(stage: Stage, axis: E.IterVar, factor: int, offset: int) -> None:
    axes = list(getattr(stage.op, "axis", ()))
    if axis not in axes:
        raise ScheduleError(f"stage {stage.name}: storage_align needs one of the axes of its storage "
                            f"({', '.join(a.name for a in axes) or 'none'}), got {getattr(axis, 'name', axis)}")
    for what, v in (("factor", factor), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ScheduleError(f"stage {stage.name}: storage_align {what} must be an int >= 0, got {v!r}")
    if factor == 0 or offset >= factor:
        raise ScheduleError(f"stage {stage.name}: storage_align({axis.name}, {factor}, {offset}) needs "
                            "factor > 0 and 0 <= offset < factor")
    stage.dim_align = {**stage.dim_align, axes.index(axis): (factor, offset)}


def set_store_predicate(stage: Stage, predicate) -> None:
    pred = convert(predicate)
    if not pred.dtype.is_bool:
        raise ScheduleError(f"stage {stage.name}: the store predicate `{pred}` must be a condition (bool), "
                            f"not {pred.dtype}")
    stage.store_predicate = pred


def double_buffer(stage: Stage) -> None:
    """Mark the stage's storage for double buffering (TVM's ``double_buffer``): a GPU pipeline
    keeps two copies and fills the next while the current is read. A hint for device code: the
    lowered IR carries ``attr double_buffer_scope`` on the buffer; values never change."""
    if stage.is_placeholder:
        raise ScheduleError(f"stage {stage.name} is an input placeholder: it has no storage of its own to "
                            "double buffer; double buffer a cache_read copy of it instead")
    if stage.is_output:
        raise ScheduleError(f"stage {stage.name} is an output, stored in the caller's array: double buffer a "
                            "stage computed inside a loop (a cache_read/cache_write copy)")
    stage.double_buffered = True


def prefetch(stage: Stage, tensor, var: E.IterVar, offset) -> None:
    from ..te.tensor import Tensor

    stage._check_leaf(var, "prefetch at")
    if not isinstance(tensor, Tensor):
        raise ScheduleError(f"stage {stage.name}: prefetch needs the tensor to fetch, got {tensor!r}")
    off = convert(offset)
    if not off.dtype.is_integer:
        raise ScheduleError(f"stage {stage.name}: the prefetch offset must be an integer, got {off}")
    from .kinds import IterVarAttr

    attr = stage.iter_var_attrs.setdefault(var, IterVarAttr())
    attr.prefetch = (*attr.prefetch, (tensor, off))


__all__ = ["double_buffer", "prefetch", "set_store_predicate", "storage_align"]


#: compiles and registers code a pragma brings (``import_llvm`` / ``import_c``): the runtime's
#: ``imported.import_code``, set by tessel's top level (a schedule does not import the runtime)
CODE_IMPORTER = None


def import_code(key: str, code: str, label: str) -> None:
    if CODE_IMPORTER is None:
        raise ScheduleError(f"{label}): no runtime is loaded to compile the code; import tessel")
    CODE_IMPORTER(key, code, label)

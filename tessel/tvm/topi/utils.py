"""``tvm.topi.utils``: small helpers TE programs call."""

from __future__ import annotations

from ...errors import DefinitionError
from ...ir import expr as E


def get_const_tuple(shape) -> tuple[int, ...]:
    """The shape as Python ints (every dimension must be a constant)."""
    out = []
    for d in shape:
        if not isinstance(d, E.IntImm | int):
            raise DefinitionError(f"get_const_tuple: dimension {d} is not a constant")
        out.append(int(d))
    return tuple(out)


def get_const_int(x) -> int:
    return get_const_tuple([x])[0]


__all__ = ["get_const_int", "get_const_tuple"]

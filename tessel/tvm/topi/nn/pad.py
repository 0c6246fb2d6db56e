"""``tvm.topi.nn.pad``: a tensor surrounded by a constant, the first stage of windowed operators."""

from __future__ import annotations

from ....errors import DefinitionError
from ....ir import expr as E
from ....te import all as _all
from ....te import compute, const, if_then_else


def pad(data, pad_before, pad_after=None, pad_value=0.0, name: str = "PadInput"):
    """``data`` with ``pad_before[k]`` and ``pad_after[k]`` elements of ``pad_value`` around axis k."""
    n = len(data.shape)
    pad_after = pad_before if pad_after is None else pad_after
    if len(pad_before) != n or len(pad_after) != n:
        raise DefinitionError(f"topi.nn.pad: {n} dimensions, but {len(pad_before)} and {len(pad_after)} paddings")
    shape = tuple(E.add(E.add(d, int(b)), int(a)) for d, b, a in zip(data.shape, pad_before, pad_after))

    def value(*i):
        inside = [E.logical_and(E.ge(x, int(b)), E.lt(x, E.add(d, int(b))))
                  for x, b, d in zip(i, pad_before, data.shape)]
        src = tuple(E.sub(x, int(b)) for x, b in zip(i, pad_before))
        return if_then_else(_all(*inside), data[src], const(pad_value, data.dtype))

    return compute(shape, value, name=name, tag="injective,pad")


__all__ = ["pad"]

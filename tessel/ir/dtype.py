"""Data types of scalar (and, later, vector) values.

A :class:`DType` *is* a string ("float32", "int64", "float32x8") so that users can compare it
with the names they know, while carrying the parsed code, bit width and lane count that the
promotion rules and code generators need. Instances are interned: one object per name.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import DefinitionError

_PATTERN = re.compile(r"^(bool|int|uint|float)(\d*)(?:x(\d+))?$")
# an opaque pointer (TVM's "handle"): what access_ptr and packed-call arrays are; never data
HANDLE = "handle"
_CACHE: dict[str, DType] = {}


class DType(str):
    code: str
    bits: int
    lanes: int

    def __new__(cls, name: str) -> DType:
        name = str(name)
        if name in _CACHE:
            return _CACHE[name]
        if name == HANDLE:
            obj = super().__new__(cls, HANDLE)
            obj.code, obj.bits, obj.lanes = HANDLE, 64, 1
            _CACHE[name] = obj
            return obj
        m = _PATTERN.match(name)
        if not m:
            raise DefinitionError(
                f"unknown dtype {name!r}: use bool, int8..int64, uint8..uint64, "
                "float16/float32/float64 (optionally with a lane suffix like float32x8), or handle (a pointer)"
            )
        code, bits_s, lanes_s = m.groups()
        bits = 1 if code == "bool" else int(bits_s or (32 if code != "bool" else 1))
        if code == "bool" and bits_s:
            raise DefinitionError(f"unknown dtype {name!r}: bool takes no bit width")
        valid = {"int": (8, 16, 32, 64), "uint": (8, 16, 32, 64), "float": (16, 32, 64), "bool": (1,)}
        if bits not in valid[code]:
            raise DefinitionError(f"unknown dtype {name!r}: {code} comes in {valid[code]} bits")
        lanes = int(lanes_s) if lanes_s else 1
        canon = ("bool" if code == "bool" else f"{code}{bits}") + (f"x{lanes}" if lanes > 1 else "")
        if canon in _CACHE:
            _CACHE[name] = _CACHE[canon]
            return _CACHE[canon]
        obj = super().__new__(cls, canon)
        obj.code, obj.bits, obj.lanes = code, bits, lanes
        _CACHE[canon] = obj
        _CACHE[name] = obj
        return obj

    def __getnewargs__(self):  # pickling keeps interning
        return (str(self),)

    @property
    def is_bool(self) -> bool:
        return self.code == "bool"

    @property
    def is_int(self) -> bool:
        return self.code == "int"

    @property
    def is_uint(self) -> bool:
        return self.code == "uint"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (bool excluded)."""
        return self.code in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.code == "float"

    @property
    def is_handle(self) -> bool:
        """An opaque pointer (``access_ptr``, an array passed to a packed call)."""
        return self.code == HANDLE

    @property
    def element(self) -> DType:
        """The scalar type of one lane."""
        return self if self.lanes == 1 else DType(str(self).split("x")[0])

    def with_lanes(self, lanes: int) -> DType:
        base = str(self.element)
        return DType(base if lanes == 1 else f"{base}x{lanes}")

    @property
    def numpy(self) -> np.dtype:
        if self.lanes != 1 or self.is_handle:
            raise DefinitionError(f"dtype {self} has no NumPy equivalent")
        return np.dtype(bool) if self.is_bool else np.dtype(str(self))

    def min_value(self) -> int | float:
        if self.is_int:
            return -(1 << (self.bits - 1))
        if self.is_uint or self.is_bool:
            return 0
        return float(np.finfo(self.numpy).min)

    def max_value(self) -> int | float:
        if self.is_int:
            return (1 << (self.bits - 1)) - 1
        if self.is_uint:
            return (1 << self.bits) - 1
        if self.is_bool:
            return 1
        return float(np.finfo(self.numpy).max)


DTypeLike = str | DType | np.dtype | type


def dtype(x: DTypeLike) -> DType:
    """Parse anything a user may write for a dtype ("float32", np.float32, np.dtype('f4'))."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        return DType(x)
    try:
        nd = np.dtype(x)
    except TypeError as e:
        raise DefinitionError(f"cannot interpret {x!r} as a dtype") from e
    return DType("bool" if nd == np.bool_ else nd.name)


bool_ = DType("bool")
int32 = DType("int32")
int64 = DType("int64")
float32 = DType("float32")
float64 = DType("float64")


def promote(a: DType, b: DType) -> DType:
    """The type both operands of a binary operation are converted to.

    Rules (as TVM's BinaryOpMatchTypes): float beats integer beats bool; between two floats or
    two integers of the same signedness the wider wins; between signed and unsigned the signed
    type wins when it is at least as wide, else the unsigned one.
    """
    if a == b:
        return a
    if a.lanes != b.lanes:
        if a.lanes == 1:
            return promote(a.with_lanes(b.lanes), b)
        if b.lanes == 1:
            return promote(a, b.with_lanes(a.lanes))
        raise DefinitionError(f"cannot combine vector types {a} and {b} with different lanes")
    if a.is_handle or b.is_handle:
        raise DefinitionError(f"a pointer (handle) takes no part in arithmetic: cannot combine {a} with {b}")
    rank = {"bool": 0, "uint": 1, "int": 1, "float": 2}
    if rank[a.code] != rank[b.code]:
        return a if rank[a.code] > rank[b.code] else b
    if a.code == b.code:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.is_int else (b, a)
    return signed if signed.bits >= unsigned.bits else unsigned

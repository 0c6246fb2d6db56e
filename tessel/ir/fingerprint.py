"""A content hash of a piece of IR: equal hashes mean the same program, node for node.

``tessel.build`` keys its memo of generated C on this hash of the kernel after the schedule has
been lowered (see ``driver.build``): the passes after that point and the C generator are pure
functions of the IR, so an equal hash lets a later build skip them. A false match would hand
back another kernel's code, so the hash errs on the side of difference:

* every slot of every node is written, not only the constructor fields the visitors walk
  (a ``BinaryOp``'s dtype is a slot of its own);
* variables, buffers and other objects are numbered in the order they are first met, so
  identity is part of the hash (two loops over one ``Var`` differ from two loops over two
  variables of the same name) while the names are part of it too;
* a value of any type it does not know raises :class:`Unhashable`, and the caller builds
  without the memo.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .dtype import DType
from .expr import Node


class Unhashable(TypeError):
    """The IR holds an object whose content cannot be written down faithfully."""


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots(cls: type) -> tuple[str, ...]:
    """All ``__slots__`` of ``cls`` and its bases, base first (cached per class)."""
    got = _SLOTS.get(cls)
    if got is None:
        names: list[str] = []
        for k in reversed(cls.__mro__):
            for s in k.__dict__.get("__slots__", ()):
                if s not in names and s != "__weakref__":
                    names.append(s)
        got = _SLOTS[cls] = tuple(names)
    return got


class _Writer:
    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.ids: dict[int, int] = {}
        self.keep: list[Any] = []  # objects numbered: alive until the end, so no id is reused

    def put(self, text: str) -> None:
        self.h.update(text.encode("utf-8", "surrogatepass"))  # a lone surrogate in a name is data
        self.h.update(b"\x1f")

    def value(self, v: Any) -> None:
        # DType and bool before str and int: they are subclasses and must not look like them
        if v is None:
            self.put("N")
        elif isinstance(v, DType):
            self.put("D" + str(v))
        elif isinstance(v, bool):
            self.put("B1" if v else "B0")
        elif type(v) is int:
            self.put(f"I{v}")
        elif type(v) is float:
            self.put("F" + v.hex())
        elif isinstance(v, str):  # an enum of names (a loop's kind) is the name it stands for
            self.put(f"S{len(v)}:{v}")
        elif isinstance(v, tuple | list):
            self.put(f"T{len(v)}")
            for x in v:
                self.value(x)
        elif isinstance(v, Node):
            self.node(v)
        else:
            self.other(v)

    def seen(self, obj: Any) -> bool:
        """Write a back-reference if ``obj`` was met before; else number it."""
        key = id(obj)
        if key in self.ids:
            self.put(f"@{self.ids[key]}")
            return True
        self.ids[key] = len(self.ids)
        self.keep.append(obj)
        return False

    def node(self, n: Node) -> None:
        if self.seen(n):
            return
        cls = type(n)
        self.put(f"<{cls.__module__}.{cls.__qualname__}")
        for s in _slots(cls):
            self.value(getattr(n, s, None))
        self.put(">")

    def other(self, v: Any) -> None:
        """An object the IR points at without owning (a te operation named by an attribute)."""
        name = getattr(v, "name", None)
        if not isinstance(name, str):
            raise Unhashable(f"cannot hash a {type(v).__name__} in the IR")
        if not self.seen(v):
            self.put(f"O{type(v).__qualname__}:{name}")


def fingerprint(*parts: Any) -> str:
    """The sha256 (hex) of ``parts``: IR nodes, and plain values such as a target name."""
    w = _Writer()
    for p in parts:
        w.value(p)
    return w.h.hexdigest()

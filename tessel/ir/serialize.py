"""``save_json`` / ``load_json``: IR as a JSON document (TVM's ``tvm.ir.save_json`` in tessel's
own, versioned format).

A document is data and only data: loading it builds nodes of the classes in a fixed table by
calling their constructors with the stored fields, and nothing in it is ever evaluated,
imported or looked up by name outside that table. So a document from anywhere can be read;
a malformed one is refused with a :class:`~tessel.errors.DefinitionError`.

The format (version 1)::

    {"format": "tessel-ir", "version": 1, "root": <value>, "nodes": [<node>, ...]}

where a node is ``{"type": NAME, "fields": [<value>, ...]}`` (its constructor's arguments, in
the order of its ``_fields``) and a value is a JSON number, string, bool or null, a list
(a tuple), ``{"ref": k}`` (node ``k``; nodes appear after every node they refer to),
``{"dtype": "float32"}``, ``{"float": "inf" | "-inf" | "nan"}`` or ``{"int": "123..."}`` for an
integer JSON readers could round. Every object is stored once and referred to by number, so
sharing survives the round trip: a variable used in many places is one variable again, which
matters because variables are the same only when they are the same object.

Classes outside ``ir`` (te's tensors and operations, which a compute body or a ``produce``
attribute refers to) join the table through :func:`register`, with their own encoder and
decoder; ``te`` registers its own at import.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from ..errors import DefinitionError, InternalError, TesselError
from . import expr as E
from . import stmt as S
from .dtype import DType
from .dtype import dtype as to_dtype

FORMAT, VERSION = "tessel-ir", 1


def _node_classes() -> dict[str, type]:
    out: dict[str, type] = {}
    for mod in (E, S):
        for name, cls in vars(mod).items():
            if isinstance(cls, type) and issubclass(cls, E.Node) and cls.__module__ == mod.__name__ \
                    and cls._fields and not cls.__subclasses__():  # concrete classes only
                out[name] = cls
    return out


_NODES = _node_classes()
# name -> (class, encode: obj -> list of values, decode: list of values -> obj)
_CODECS: dict[str, tuple[type, Callable[[Any], list], Callable[[list], Any]]] = {}


def register(name: str, cls: type, encode: Callable[[Any], list], decode: Callable[[list], Any]) -> None:
    """Let documents hold objects of ``cls`` under ``name``: ``encode`` gives the values to
    store (anything this module stores), ``decode`` rebuilds the object from them."""
    _CODECS[name] = (cls, encode, decode)


class _Writer:
    def __init__(self) -> None:
        self.nodes: list[dict] = []
        self.index: dict[int, int] = {}
        self.keep: list[Any] = []  # the objects numbered, alive so that their ids stay theirs

    def value(self, v: Any) -> Any:
        if isinstance(v, DType):
            return {"dtype": str(v)}
        if v is None or isinstance(v, bool | str):
            return v
        if isinstance(v, int):
            return v if abs(v) < 2 ** 53 else {"int": str(v)}
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": str(v)}
        if isinstance(v, tuple | list):
            return [self.value(x) for x in v]
        return {"ref": self.ref(v)}

    def ref(self, obj: Any) -> int:
        """The number of ``obj``, numbering first every object it refers to (an explicit
        stack: an expression may be a chain of thousands of nodes)."""
        stack: list[tuple[Any, bool]] = [(obj, False)]
        while stack:
            o, ready = stack.pop()
            if id(o) in self.index:
                continue
            name, fields = self._describe(o)
            if not ready:
                stack.append((o, True))
                stack.extend((c, False) for c in reversed(_objects(fields)) if id(c) not in self.index)
                continue
            entry = {"type": name, "fields": [self.value(f) for f in fields]}
            self.index[id(o)] = len(self.nodes)
            self.keep.append(o)
            self.nodes.append(entry)
        return self.index[id(obj)]

    @staticmethod
    def _describe(obj: Any) -> tuple[str, list]:
        for name, (cls, encode, _) in _CODECS.items():
            if type(obj) is cls:
                return name, list(encode(obj))
        name = type(obj).__name__
        if _NODES.get(name) is type(obj):
            return name, list(obj.fields())
        raise DefinitionError(f"save_json cannot store a {type(obj).__name__} ({obj!r:.60}); "
                              "it stores tessel IR: expressions, statements and te tensors")


def _objects(fields: list) -> list:
    """The objects (not plain values) among ``fields``, through nested tuples."""
    out: list = []
    todo = list(fields)
    while todo:
        v = todo.pop(0)
        if isinstance(v, tuple | list):
            todo[:0] = list(v)
        elif not (v is None or isinstance(v, bool | int | float | str)):
            out.append(v)
    return out


def save_json(node: Any) -> str:
    """The JSON document of an expression, a statement (or any IR value): see the module doc."""
    w = _Writer()
    root = w.value(node)
    return json.dumps({"format": FORMAT, "version": VERSION, "root": root, "nodes": w.nodes})


class _Reader:
    def __init__(self, nodes: list) -> None:
        self.raw = nodes
        self.built: list[Any] = []

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, bool | int | float | str):
            return v
        if isinstance(v, list):
            return tuple(self.value(x) for x in v)
        if isinstance(v, dict) and len(v) == 1:
            (key, x), = v.items()
            if key == "ref" and isinstance(x, int) and 0 <= x < len(self.built):
                return self.built[x]
            if key == "dtype" and isinstance(x, str):
                return to_dtype(x)
            if key == "float" and x in ("inf", "-inf", "nan"):
                return float(x)
            if key == "int" and isinstance(x, str):
                return int(x)
        raise DefinitionError(f"load_json: {v!r:.80} is not a value of a tessel IR document")

    def build_all(self) -> None:
        for k, entry in enumerate(self.raw):
            if not (isinstance(entry, dict) and isinstance(entry.get("type"), str)
                    and isinstance(entry.get("fields"), list)):
                raise DefinitionError(f"load_json: node {k} is not {{'type': ..., 'fields': [...]}}")
            fields = [self.value(f) for f in entry["fields"]]
            self.built.append(_construct(entry["type"], fields, k))


def _construct(name: str, fields: list, k: int) -> Any:
    if name in _CODECS:
        return _CODECS[name][2](fields)
    cls = _NODES.get(name)
    if cls is None:
        raise DefinitionError(f"load_json: node {k} has type {name!r}, which is not a tessel IR class")
    if len(fields) != len(cls._fields):
        raise DefinitionError(f"load_json: node {k} ({name}) has {len(fields)} fields, {name} has "
                              f"{len(cls._fields)} ({', '.join(cls._fields)})")
    return cls(*fields)


def load_json(text: str | bytes) -> Any:
    """The IR a :func:`save_json` document holds (a new object graph, sharing as saved)."""
    try:
        doc = json.loads(text)
    except (ValueError, TypeError) as err:
        raise DefinitionError(f"load_json: not a JSON document ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DefinitionError(f"load_json: not a tessel IR document (no \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise DefinitionError(f"load_json: the document has version {doc.get('version')!r}; this tessel "
                              f"reads version {VERSION}")
    if not isinstance(doc.get("nodes"), list):
        raise DefinitionError("load_json: the document has no list of nodes")
    reader = _Reader(doc["nodes"])
    try:
        reader.build_all()
        return reader.value(doc.get("root"))
    except InternalError as err:  # a constructor's invariant: the document's fault, not tessel's
        raise DefinitionError(f"load_json: the document does not describe valid IR: {err}") from None
    except TesselError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, AssertionError) as err:
        raise DefinitionError(f"load_json: the document does not describe valid IR: "
                              f"{type(err).__name__}: {err}") from None


__all__ = ["FORMAT", "VERSION", "load_json", "register", "save_json"]

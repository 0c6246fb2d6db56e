"""``te.tag_scope``: a tag given to every operation defined inside it (TVM's spelling, with its
rules: a scope is used as a ``with`` block or as a decorator of a function that defines
operations; scopes do not nest, and an operation inside one takes no tag of its own)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from ..errors import DefinitionError


class _Current(threading.local):
    scope: TagScope | None = None


_current = _Current()


class TagScope:
    def __init__(self, tag: str):
        if not isinstance(tag, str):
            raise DefinitionError(f"te.tag_scope: the tag must be a str, got {type(tag).__name__}")
        self.tag = tag

    def __enter__(self) -> TagScope:
        if _current.scope is not None:
            raise DefinitionError(f"te.tag_scope({self.tag!r}) inside te.tag_scope({_current.scope.tag!r}): "
                                  "tag scopes do not nest; close the outer one first")
        _current.scope = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _current.scope = None

    def __call__(self, fdecl: Callable) -> Callable:
        @functools.wraps(fdecl)
        def tagged(*args, **kwargs):
            with self:
                return fdecl(*args, **kwargs)
        return tagged


def tag_scope(tag: str) -> TagScope:
    """Every operation defined inside ``with te.tag_scope(tag):`` (or by a function decorated
    with ``@te.tag_scope(tag)``) gets ``tag``."""
    return TagScope(tag)


def scoped_tag(tag: str, name: str) -> str:
    """The tag an operation named ``name`` gets: the scope's, which it may not also give."""
    scope = _current.scope
    if scope is None:
        return tag
    if tag:
        raise DefinitionError(f"operation {name!r} gives tag={tag!r} inside te.tag_scope({scope.tag!r}); "
                              "give the tag in one place: the scope or the operation")
    return scope.tag


__all__ = ["TagScope", "tag_scope"]

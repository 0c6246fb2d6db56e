"""``tvm.tir.stmt``: the statement classes, which are tessel's loop IR (``isinstance(s,
tvm.tir.stmt.For)``); TVM's other statement names are looked up in :mod:`tessel.ir.stmt`."""

from __future__ import annotations

from ...ir.stmt import (
                        Allocate,
                        AttrStmt,
                        BufferStore,
                        Evaluate,
                        For,
                        IfThenElse,
                        LetStmt,
                        ProducerRealize,
                        ProducerStore,
                        SeqStmt,
                        Stmt,
)
from .._names import missing_names

__all__ = ["Allocate", "AttrStmt", "BufferStore", "Evaluate", "For", "IfThenElse", "LetStmt", "ProducerRealize",
           "ProducerStore", "SeqStmt", "Stmt"]

__getattr__ = missing_names(__name__, ("tessel.ir.stmt",))

"""Text form of the IR, written to be read by a person.

Expressions print with the fewest parentheses their precedence allows (``i*8 + j``);
statements print in the brace style of TVM's listings (``for (i, 0, 16) {``), which is the
style of seed 000. Two different variables live at once under the same name are told apart
with a suffix, so that a printed program never silently means something else; a name is
shown by :func:`tessel.ir.names.shown` (in full), so no name can break a line of the listing.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from . import expr as E
from . import stmt as S
from .names import shown
from .stmt import AttrKey, LoopKind

_PREC = {
    E.Or: 1, E.And: 2,
    E.EQ: 3, E.NE: 3, E.LT: 3, E.LE: 3, E.GT: 3, E.GE: 3,
    E.Add: 4, E.Sub: 4,
    E.Mul: 5, E.Div: 5, E.Mod: 5, E.FloorDiv: 5, E.FloorMod: 5,
}
_ATOM = 9


class Printer:
    def __init__(self) -> None:
        self.names: dict[E.Var, str] = {}
        self.taken: dict[str, E.Var] = {}
        self.storage: dict[int, str] = {}
        self.storage_taken: dict[str, object] = {}
        self.op_names: dict[int, str] = {}
        self.op_taken: dict[str, object] = {}
        self.lines: list[str] = []
        self.indent = 0

    # ---- names -------------------------------------------------------------------------
    def name(self, v: E.Var) -> str:
        if v in self.names:
            return self.names[v]
        base = shown(v.name, None) or "v"
        cand, k = base, 0
        while cand in self.taken and self.taken[cand] is not v:
            k += 1
            cand = f"{base}_{k}"
        self.names[v] = cand
        self.taken[cand] = v
        return cand

    def sname(self, obj, ops: bool = False) -> str:
        """The name of a tensor, buffer (or, apart, an operation); two different ones never print alike."""
        names, taken = (self.op_names, self.op_taken) if ops else (self.storage, self.storage_taken)
        key = id(obj)
        if key not in names:
            base = shown(obj.name, None)
            cand, k = base, 0
            while cand in taken and taken[cand] is not obj:
                k += 1
                cand = f"{base}_{k}"
            names[key] = cand
            taken[cand] = obj
        return names[key]

    @contextmanager
    def scoped(self, v: E.Var):
        """A loop or let variable: its name is free again once its scope ends."""
        fresh = v not in self.names
        name = self.name(v)
        yield name
        if fresh:
            del self.names[v]
            del self.taken[name]

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: Any, parent: int = 0) -> str:
        text, prec = self._expr(e)
        return f"({text})" if prec < parent else text

    def _expr(self, e: Any) -> tuple[str, int]:
        if isinstance(e, E.Var | E.IterVar | E.IntImm | E.FloatImm | E.StringImm):
            return self._leaf(e)
        if isinstance(e, E.Min | E.Max):
            fn = "min" if isinstance(e, E.Min) else "max"
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, E.Div | E.Mod) and not e.dtype.is_float:
            fn = "truncdiv" if isinstance(e, E.Div) else "truncmod"
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, E.BinaryOp):
            p = _PREC[type(e)]
            # left-associative: the right operand needs parentheses at equal precedence
            sep = e.symbol if p == 5 else f" {e.symbol} "
            return f"{self.expr(e.a, p)}{sep}{self.expr(e.b, p + 1)}", p
        if isinstance(e, E.Not):
            return f"!{self.expr(e.a, _ATOM)}", 6
        if isinstance(e, E.Select):
            return f"select({self.expr(e.condition)}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", _ATOM
        if isinstance(e, E.Cast):
            return f"{e.dtype}({self.expr(e.value)})", _ATOM
        if isinstance(e, E.Call):
            return f"{e.op}({', '.join(self.expr(a) for a in e.args)})", _ATOM
        if isinstance(e, E.Let):
            return f"let {self.name(e.var)} = {self.expr(e.value)} in {self.expr(e.body)}", 0
        if isinstance(e, E.Ramp):
            return f"ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM
        if isinstance(e, E.Broadcast):
            return f"x{e.lanes}({self.expr(e.value)})", _ATOM
        if isinstance(e, E.ProducerLoad):
            return f"{self.sname(e.producer)}[{', '.join(self.expr(i) for i in e.indices)}]", _ATOM
        if isinstance(e, E.BufferLoad):
            return f"{self.sname(e.buffer)}[{', '.join(self.expr(i) for i in e.indices)}]", _ATOM
        if isinstance(e, E.Reduce):
            src = ", ".join(self.expr(s) for s in e.source)
            axes = ", ".join(self.name(a.var) for a in e.axis)
            text = f"{shown(e.combiner.name, None)}({src}, axis=[{axes}]"
            if not (isinstance(e.condition, E.IntImm) and e.condition.value):
                text += f", where={self.expr(e.condition)}"
            if len(e.source) > 1:
                text += f", value_index={e.value_index}"
            if e.finish is not None:
                text += f", then {self.name(e.acc)} -> {self.expr(e.finish)}"
            return text + ")", _ATOM
        if isinstance(e, E.Range):
            return f"range(min={self.expr(e.min)}, ext={self.expr(e.extent)})", _ATOM
        if isinstance(e, S.Buffer):
            return self.sname(e), _ATOM
        return repr(e) if not isinstance(e, E.Node) else type(e).__name__, _ATOM

    def _leaf(self, e: Any) -> tuple[str, int]:
        """A variable or a literal, spelled so that its dtype can be read back."""
        if isinstance(e, E.Var):
            return self.name(e), _ATOM
        if isinstance(e, E.IterVar):
            return self.name(e.var), _ATOM
        if isinstance(e, E.StringImm):
            return repr(e.value), _ATOM
        if isinstance(e, E.IntImm):
            if e.dtype.is_bool:
                return ("True" if e.value else "False"), _ATOM
            if e.dtype == "int32":
                return str(e.value), _ATOM if e.value >= 0 else 6
            return f"{e.dtype}({e.value})", _ATOM
        r = repr(e.value)
        if r in ("inf", "-inf", "nan"):
            return f"{e.dtype}({r})", _ATOM
        if e.dtype == "float32":
            return r + "f", _ATOM if e.value >= 0 else 6
        if e.dtype == "float64":
            return r, _ATOM if e.value >= 0 else 6
        return f"{e.dtype}({r})", _ATOM

    # ---- statements ----------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def block(self, head: str, body: S.Stmt) -> None:
        self.emit(head + " {")
        self.indent += 1
        self.stmt(body)
        self.indent -= 1
        self.emit("}")

    def stmt(self, s: Any) -> None:
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                self.stmt(x)
        elif isinstance(s, S.For):
            kw = {LoopKind.SERIAL: "for", LoopKind.PARALLEL: LoopKind.PARALLEL, LoopKind.VECTORIZED: LoopKind.VECTORIZED,
                  LoopKind.UNROLLED: LoopKind.UNROLLED, LoopKind.THREAD_BINDING: f"launch[{s.thread_tag}]"}[s.kind]
            with self.scoped(s.loop_var) as v:
                self.block(f"{kw} ({v}, {self.expr(s.min)}, {self.expr(s.extent)})", s.body)
        elif isinstance(s, S.IfThenElse):
            self.block(f"if ({self.expr(s.condition)})", s.then_case)
            if s.else_case is not None:
                self.lines[-1] += " else {"
                self.indent += 1
                self.stmt(s.else_case)
                self.indent -= 1
                self.emit("}")
        elif isinstance(s, S.LetStmt):
            value = self.expr(s.value)
            with self.scoped(s.var) as v:
                self.emit(f"let {v} = {value}")
                self.stmt(s.body)
        elif isinstance(s, S.AttrStmt):
            if s.key == AttrKey.PRODUCE:
                self.block(f"produce {self.sname(s.node, ops=True)}", s.body)
            elif s.key in (AttrKey.HEAP, AttrKey.REGISTERS):  # the c target's decisions (passes/memory.py)
                where = {"once": "allocated here, once", "per_thread": "allocated once by each thread of the loop below"}
                said = where.get(s.value, "") if s.key == AttrKey.HEAP else \
                    "kept in registers: " + ", ".join(f"[{b}:{b + n}]" if n > 1 else f"[{b}]" for b, n in s.value)
                self.emit(f"// {shown(s.node.name, None)}: {said}")
                self.stmt(s.body)
            else:
                node = shown(getattr(s.node, "name", None) or self.expr(s.node), None)
                value = self.expr(s.value) if isinstance(s.value, E.Node) else repr(s.value)
                self.emit(f"// attr [{node}] {shown(s.key, None)} = {value}")
                self.stmt(s.body)
        elif isinstance(s, S.Evaluate):
            self.emit(self.expr(s.value))
        elif isinstance(s, S.ProducerStore):
            idx = ", ".join(self.expr(i) for i in s.indices)
            self.emit(f"{self.sname(s.producer)}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, S.BufferStore):
            idx = ", ".join(self.expr(i) for i in s.indices)
            self.emit(f"{self.sname(s.buffer)}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, S.ProducerRealize):
            bounds = ", ".join(f"[{self.expr(r.min)}, {self.expr(r.extent)}]" for r in s.bounds)
            scope = "" if s.scope == "global" else f" scope={s.scope}"
            self.block(f"realize {self.sname(s.producer)}({bounds}){scope}", s.body)
        elif isinstance(s, S.Allocate):
            b = s.buffer
            size = " * ".join(self.expr(x, 6) for x in b.shape)
            scope = "" if b.scope == "global" else f" scope={b.scope}"
            self.emit(f"allocate {self.sname(b)}[{b.dtype} * {size}]{scope}")
            self.stmt(s.body)
        elif isinstance(s, S.PrimFunc):
            params = []
            for b in s.params:
                params.append(f"{self.sname(b)}: {b.dtype}[{', '.join(self.expr(x) for x in b.shape)}]")
            for k, v in s.scalar_args:  # passed by value, at their places in the call
                params.insert(k, f"{self.name(v)}: {v.dtype}")
            self.block(f"func {shown(s.name, None)}({', '.join(params)})", s.body)
        else:
            self.emit(self.expr(s))


def to_text(node: Any) -> str:
    p = Printer()
    if isinstance(node, S.Stmt | S.PrimFunc):
        p.stmt(node)
        return "\n".join(p.lines)
    if isinstance(node, E.IterVar):
        dom = p.expr(node.dom) if node.dom is not None else "None"
        return f"iter_var({p.name(node.var)}, {dom})"
    if isinstance(node, S.Buffer):
        return f"Buffer({shown(node.name, None)}, {node.dtype}, [{', '.join(p.expr(x) for x in node.shape)}])"
    if isinstance(node, E.CommReducer):
        return f"comm_reducer({shown(node.name, None)})"
    return p.expr(node)

"""Text form of the IR, written to be read by a person.

Expressions print with the fewest parentheses their precedence allows (``i*8 + j``);
statements print in the brace style of TVM's listings (``for (i, 0, 16) {``), which is the
style of seed 000. Two different variables live at once under the same name are told apart
with a suffix, so that a printed program never silently means something else; a name is
shown by :func:`tessel.ir.names.shown` (in full), so no name can break a line of the listing.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .kinds import AttrKey, LoopKind
from .names import shown

if TYPE_CHECKING:
    from .expr import Var
    from .stmt import Stmt

_PREC = {
    "Or": 1, "And": 2,
    "EQ": 3, "NE": 3, "LT": 3, "LE": 3, "GT": 3, "GE": 3,
    "Add": 4, "Sub": 4,
    "Mul": 5, "Div": 5, "Mod": 5, "FloorDiv": 5, "FloorMod": 5,
}
_ATOM = 9


class Printer:
    def __init__(self) -> None:
        self.names: dict[Var, str] = {}
        self.taken: dict[str, Var] = {}
        self.storage: dict[int, str] = {}
        self.storage_taken: dict[str, object] = {}
        self.op_names: dict[int, str] = {}
        self.op_taken: dict[str, object] = {}
        self.lines: list[str] = []
        self.indent = 0

    # ---- names -------------------------------------------------------------------------
    def name(self, v: Var) -> str:
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
    def scoped(self, v: Var):
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
        fn = _dispatch(type(self), type(e), "_e_")
        if fn is not None:
            return fn(self, e)
        return repr(e) if not hasattr(e, "fields") else type(e).__name__, _ATOM

    def _e_BinaryOp(self, e: Any) -> tuple[str, int]:
        name = type(e).__name__
        if name in ("Min", "Max") or (name in ("Div", "Mod") and not e.dtype.is_float):
            fn = {"Min": "min", "Max": "max", "Div": "truncdiv", "Mod": "truncmod"}[name]
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        p = _PREC[name]
        # left-associative: the right operand needs parentheses at equal precedence
        sep = e.symbol if p == 5 else f" {e.symbol} "
        return f"{self.expr(e.a, p)}{sep}{self.expr(e.b, p + 1)}", p

    def _e_Not(self, e: Any) -> tuple[str, int]:
        return f"!{self.expr(e.a, _ATOM)}", 6

    def _e_Select(self, e: Any) -> tuple[str, int]:
        return f"select({self.expr(e.condition)}, {self.expr(e.true_value)}, {self.expr(e.false_value)})", _ATOM

    def _e_Cast(self, e: Any) -> tuple[str, int]:
        return f"{e.dtype}({self.expr(e.value)})", _ATOM

    def _e_Call(self, e: Any) -> tuple[str, int]:
        return f"{e.op}({', '.join(self.expr(a) for a in e.args)})", _ATOM

    def _e_Let(self, e: Any) -> tuple[str, int]:
        return f"let {self.name(e.var)} = {self.expr(e.value)} in {self.expr(e.body)}", 0

    def _e_Ramp(self, e: Any) -> tuple[str, int]:
        return f"ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM

    def _e_Broadcast(self, e: Any) -> tuple[str, int]:
        return f"x{e.lanes}({self.expr(e.value)})", _ATOM

    def _e_ProducerLoad(self, e: Any) -> tuple[str, int]:
        return f"{self.sname(e.producer)}[{', '.join(self.expr(i) for i in e.indices)}]", _ATOM

    def _e_BufferLoad(self, e: Any) -> tuple[str, int]:
        return f"{self.sname(e.buffer)}[{', '.join(self.expr(i) for i in e.indices)}]", _ATOM

    def _e_Reduce(self, e: Any) -> tuple[str, int]:
        src = ", ".join(self.expr(s) for s in e.source)
        axes = ", ".join(self.name(a.var) for a in e.axis)
        text = f"{shown(e.combiner.name, None)}({src}, axis=[{axes}]"
        if not (type(e.condition).__name__ == "IntImm" and e.condition.value):
            text += f", where={self.expr(e.condition)}"
        if len(e.source) > 1:
            text += f", value_index={e.value_index}"
        if e.finish is not None:
            text += f", then {self.name(e.acc)} -> {self.expr(e.finish)}"
        return text + ")", _ATOM

    def _e_Range(self, e: Any) -> tuple[str, int]:
        return f"range(min={self.expr(e.min)}, ext={self.expr(e.extent)})", _ATOM

    def _e_Buffer(self, e: Any) -> tuple[str, int]:
        return self.sname(e), _ATOM

    # a variable or a literal, spelled so that its dtype can be read back
    def _e_Var(self, e: Any) -> tuple[str, int]:
        return self.name(e), _ATOM

    def _e_IterVar(self, e: Any) -> tuple[str, int]:
        return self.name(e.var), _ATOM

    def _e_StringImm(self, e: Any) -> tuple[str, int]:
        return repr(e.value), _ATOM

    def _e_IntImm(self, e: Any) -> tuple[str, int]:
        if e.dtype.is_bool:
            return ("True" if e.value else "False"), _ATOM
        if e.dtype == "int32":
            return str(e.value), _ATOM if e.value >= 0 else 6
        return f"{e.dtype}({e.value})", _ATOM

    def _e_FloatImm(self, e: Any) -> tuple[str, int]:
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

    def block(self, head: str, body: Stmt) -> None:
        self.emit(head + " {")
        self.indent += 1
        self.stmt(body)
        self.indent -= 1
        self.emit("}")

    def stmt(self, s: Any) -> None:
        fn = _dispatch(type(self), type(s), "_s_")
        if fn is not None:
            fn(self, s)
        else:
            self.emit(self.expr(s))

    def _s_SeqStmt(self, s: Any) -> None:
        for x in s.seq:
            self.stmt(x)

    def _s_For(self, s: Any) -> None:
        kw = {LoopKind.SERIAL: "for", LoopKind.PARALLEL: LoopKind.PARALLEL, LoopKind.VECTORIZED: LoopKind.VECTORIZED,
              LoopKind.UNROLLED: LoopKind.UNROLLED, LoopKind.THREAD_BINDING: f"launch[{s.thread_tag}]"}[s.kind]
        with self.scoped(s.loop_var) as v:
            self.block(f"{kw} ({v}, {self.expr(s.min)}, {self.expr(s.extent)})", s.body)

    def _s_IfThenElse(self, s: Any) -> None:
        self.block(f"if ({self.expr(s.condition)})", s.then_case)
        if s.else_case is not None:
            self.lines[-1] += " else {"
            self.indent += 1
            self.stmt(s.else_case)
            self.indent -= 1
            self.emit("}")

    def _s_LetStmt(self, s: Any) -> None:
        value = self.expr(s.value)
        with self.scoped(s.var) as v:
            self.emit(f"let {v} = {value}")
            self.stmt(s.body)

    def _s_AttrStmt(self, s: Any) -> None:
        if s.key == AttrKey.PRODUCE:
            return self.block(f"produce {self.sname(s.node, ops=True)}", s.body)
        if s.key in (AttrKey.HEAP, AttrKey.REGISTERS):  # the c target's decisions (passes/memory.py)
            where = {"once": "allocated here, once", "per_thread": "allocated once by each thread of the loop below"}
            said = where.get(s.value, "") if s.key == AttrKey.HEAP else \
                "kept in registers: " + ", ".join(f"[{b}:{b + n}]" if n > 1 else f"[{b}]" for b, n in s.value)
            self.emit(f"// {shown(s.node.name, None)}: {said}")
        else:
            node = shown(getattr(s.node, "name", None) or self.expr(s.node), None)
            value = self.expr(s.value) if hasattr(s.value, "fields") else repr(s.value)
            self.emit(f"// attr [{node}] {shown(s.key, None)} = {value}")
        self.stmt(s.body)

    def _s_Evaluate(self, s: Any) -> None:
        self.emit(self.expr(s.value))

    def _s_ProducerStore(self, s: Any) -> None:
        idx = ", ".join(self.expr(i) for i in s.indices)
        self.emit(f"{self.sname(s.producer)}[{idx}] = {self.expr(s.value)}")

    def _s_BufferStore(self, s: Any) -> None:
        idx = ", ".join(self.expr(i) for i in s.indices)
        self.emit(f"{self.sname(s.buffer)}[{idx}] = {self.expr(s.value)}")

    def _s_ProducerRealize(self, s: Any) -> None:
        bounds = ", ".join(f"[{self.expr(r.min)}, {self.expr(r.extent)}]" for r in s.bounds)
        scope = "" if s.scope == "global" else f" scope={s.scope}"
        self.block(f"realize {self.sname(s.producer)}({bounds}){scope}", s.body)

    def _s_Allocate(self, s: Any) -> None:
        b = s.buffer
        size = " * ".join(self.expr(x, 6) for x in b.shape)
        scope = "" if b.scope == "global" else f" scope={b.scope}"
        self.emit(f"allocate {self.sname(b)}[{b.dtype} * {size}]{scope}")
        self.stmt(s.body)

    def _s_PrimFunc(self, s: Any) -> None:
        params = []
        for b in s.params:
            params.append(f"{self.sname(b)}: {b.dtype}[{', '.join(self.expr(x) for x in b.shape)}]")
        for k, v in s.scalar_args:  # passed by value, at their places in the call
            params.insert(k, f"{self.name(v)}: {v.dtype}")
        self.block(f"func {shown(s.name, None)}({', '.join(params)})", s.body)


def _dispatch(printer: type, node: type, prefix: str):
    """The printer's method for ``node``'s class or its nearest base that has one, by class
    name (as the visitors of ``functor`` find theirs): the printer knows the nodes by their
    names only, so every node module may use it for its ``repr`` without an import cycle."""
    key = (node, prefix)
    table = _METHODS.setdefault(printer, {})
    if key not in table:
        table[key] = next((getattr(printer, prefix + c.__name__) for c in node.__mro__
                           if hasattr(printer, prefix + c.__name__)), None)
    return table[key]


_METHODS: dict[type, dict] = {}
_STATEMENTS = frozenset(("Stmt", "PrimFunc"))


def to_text(node: Any) -> str:
    p = Printer()
    kinds = {c.__name__ for c in type(node).__mro__}
    if kinds & _STATEMENTS:
        p.stmt(node)
        return "\n".join(p.lines)
    if "IterVar" in kinds:
        dom = p.expr(node.dom) if node.dom is not None else "None"
        return f"iter_var({p.name(node.var)}, {dom})"
    if "Buffer" in kinds:
        return f"Buffer({shown(node.name, None)}, {node.dtype}, [{', '.join(p.expr(x) for x in node.shape)}])"
    if "CommReducer" in kinds:
        return f"comm_reducer({shown(node.name, None)})"
    return p.expr(node)

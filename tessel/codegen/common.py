"""What both code generators need to agree on: names, intrinsics, and facts about a PrimFunc.

The python and c targets must give the same answers, so everything that decides *meaning*
(which intrinsics exist and with how many arguments, which buffers a kernel writes, which
variables are bound where) lives here once, and the two backends differ only in spelling.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BuildError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Functor, GuardVisitor, Visitor, collect
from ..ir.intrinsics import ADDRESS_OPS, EXTERN_CALLS, INTRINSICS, PREDICATES, VARIADIC
from ..ir.names import identifier


def check_call(func: S.PrimFunc, call: E.Call) -> None:
    """Reject an intrinsic neither backend can give a meaning to, naming it and the kernel."""
    spec = INTRINSICS.get(call.op)
    if spec is None:
        known = ", ".join(sorted(INTRINSICS))
        raise BuildError(f"kernel {func.name!r}: unknown intrinsic {call.op!r} in `{call}`; known: {known}")
    nargs = spec.arity
    if nargs == VARIADIC:
        return _check_variadic(func, call)
    if call.op == "address_of" and not isinstance(call.args[0], E.BufferLoad):
        raise BuildError(f"kernel {func.name!r}: address_of takes a load, got `{call}`")
    if len(call.args) != nargs:
        raise BuildError(
            f"kernel {func.name!r}: intrinsic {call.op!r} takes {nargs} argument(s), got {len(call.args)} in `{call}`"
        )
    if spec.float_only and not call.dtype.is_float:
        raise BuildError(f"kernel {func.name!r}: intrinsic {call.op!r} needs a float dtype, got {call.dtype} in `{call}`")
    if call.op in PREDICATES and not call.args[0].dtype.is_float:
        raise BuildError(f"kernel {func.name!r}: {call.op} needs a float argument, got {call.args[0].dtype}")


def _check_variadic(func: S.PrimFunc, call: E.Call) -> None:
    if call.op in EXTERN_CALLS:
        if not call.args or not isinstance(call.args[0], E.StringImm):
            raise BuildError(f"kernel {func.name!r}: {call.op} needs the function's name first, got `{call}`")
        for a in call.args[1:]:
            if a.dtype.lanes != 1:
                raise BuildError(f"kernel {func.name!r}: {call.op}({call.args[0].value!r}) got the vector `{a}`; "
                                 "arguments of a call are scalars, pointers or arrays")
    elif call.op == "tsl_array" and (len(call.args) < 2 or not isinstance(call.args[0], E.BufferLoad)
                                     or len(call.args) % 2):
        raise BuildError(f"kernel {func.name!r}: malformed array argument `{call}`")


@dataclass(frozen=True)
class ExternSig:
    """One slot of a kernel's table of outside functions: the function ``name`` called through
    ``kind`` ("packed": arrays and scalars, TVM's packed convention; "extern": a plain C call)
    returning ``ret``, with arguments of dtypes ``args`` ("handle" for a pointer; none for
    packed calls, whose values carry their type). The runtime fills the table when it loads
    the kernel, so a name never becomes C text."""

    name: str
    kind: str
    ret: str
    args: tuple[str, ...] = ()

    def as_json(self) -> list:
        return [self.name, self.kind, self.ret, list(self.args)]

    @classmethod
    def from_json(cls, x) -> ExternSig:
        return cls(str(x[0]), str(x[1]), str(x[2]), tuple(str(a) for a in x[3]))


def extern_sig(call: E.Call) -> ExternSig:
    name = call.args[0].value
    if call.op == "call_packed":
        return ExternSig(name, "packed", "int32")
    return ExternSig(name, "extern", str(call.dtype), tuple(str(a.dtype) for a in call.args[1:]))


def extern_table(func: S.PrimFunc) -> list[ExternSig]:
    """The outside functions ``func`` calls, each once, in the order of first use."""
    out: list[ExternSig] = []
    for c in collect(func.body, lambda n: isinstance(n, E.Call) and n.op in EXTERN_CALLS):
        sig = extern_sig(c)
        if sig not in out:
            out.append(sig)
    return out


def address_mask(call: E.Call) -> str:
    """The access mask of an ``address_of``/``tsl_array`` call ("r", "w" or "rw")."""
    return call.args[1].value


def unsupported_vector(func: S.PrimFunc, node: E.PrimExpr, target: str) -> BuildError:
    return BuildError(
        f"kernel {func.name!r}: the {target} target has no vector form of `{node}` (dtype {node.dtype}); "
        "the vectorize pass leaves such loops scalar, so this IR was built by hand"
    )


class NameTable:
    """Unique, valid identifiers of one generated language for IR variables, buffers, kernels.

    A name is data: :func:`tessel.ir.names.identifier` spells any user string as an identifier
    of the language (IR names may contain dots, ``i.outer``, or anything else a user typed),
    keeping it off the keywords, the ``reserved`` names the generated code itself relies on
    (helpers, libm functions, module names) and the ``prefixes`` of its own helpers; this
    table adds uniqueness, since two different objects may share a name or spell alike.
    """

    def __init__(self, lang: str, reserved: set[str], prefixes: tuple[str, ...] = ("tsl_",)):
        self.lang = lang
        self.reserved = frozenset(reserved)
        self.prefixes = prefixes
        self.by_obj: dict[int, str] = {}
        self.taken: set[str] = set()
        self._keep: list[object] = []  # keep objects alive so id() stays unique

    def get(self, obj: object, hint: object) -> str:
        key = id(obj)
        if key in self.by_obj:
            return self.by_obj[key]
        base = identifier(hint or "v", self.lang, self.reserved, self.prefixes)
        cand, k = base, 0
        while cand in self.taken or cand in self.reserved:
            k += 1
            cand = f"{base}_{k}"
        self.taken.add(cand)
        self.by_obj[key] = cand
        self._keep.append(obj)
        return cand

    def known(self, obj: object) -> bool:
        return id(obj) in self.by_obj


def written_buffers(func: S.PrimFunc) -> set[S.Buffer]:
    """Buffers the body stores into: outputs, plus any param the lowering chose to write, and
    any whose address it hands to an outside function for writing."""
    out: set[S.Buffer] = set()

    class _W(Visitor):
        def visit_BufferStore(self, s: S.BufferStore) -> None:
            out.add(s.buffer)
            self.generic_visit(s)

        def visit_Call(self, e: E.Call) -> None:
            if e.op in ADDRESS_OPS and "w" in address_mask(e):
                out.add(e.args[0].buffer)
            self.generic_visit(e)

    _W().visit(func.body)
    return out


def calls_out(call: E.Call) -> bool:
    """A call of a function outside the kernel, which may write memory (a pure one cannot)."""
    return call.op in EXTERN_CALLS and call.op != "call_pure_extern"


@dataclass(frozen=True)
class FuncFacts:
    """What the checking walk of ``check_func`` learns on its way, so that a generator needs no
    second walk for it: the buffers the body writes (``written_buffers``, outputs not added)
    and whether a load runs only under a condition (the C target's ``has_guarded_loads``) or
    a function outside the kernel is called (else no register run need look for one)."""

    written: frozenset
    guarded_loads: bool
    calls_out: bool  # a call of a function outside the kernel (which may write memory)


def check_func(func: S.PrimFunc) -> FuncFacts:
    """Structural preconditions both backends rely on, reported before any code is emitted."""
    if not isinstance(func, S.PrimFunc):
        raise BuildError(f"expected a lowered PrimFunc, got {type(func).__name__}")
    names = [b.name for b in func.params]
    for b in func.params:
        if not isinstance(b, S.Buffer):
            raise BuildError(f"kernel {func.name!r}: parameter {b!r} is not a Buffer")
        if b.dtype.lanes != 1:
            raise BuildError(f"kernel {func.name!r}: parameter {b.name} has vector dtype {b.dtype}")
    if len(set(map(id, func.params))) != len(func.params):
        raise BuildError(f"kernel {func.name!r}: a buffer appears twice among the parameters {names}")
    params = set(func.params)
    for o in func.outputs:
        if o not in params:
            raise BuildError(f"kernel {func.name!r}: output {o.name} is not one of the parameters {names}")
    walk = _Check(func)
    walk.visit(func.body)
    return FuncFacts(frozenset(walk.written), walk.found, walk.calls_out)


class _Check(GuardVisitor):
    """``check_func``'s walk: every access in one flat index to a live buffer, no tensor-level
    node left, every call valid; on the way, what ``FuncFacts`` holds (one walk of the body
    instead of three: a checking walk and two generators' scans each cost a build a few ms)."""

    def __init__(self, func: S.PrimFunc):
        self.func = func
        self.live: set[S.Buffer] = set(func.params)
        self.written: set[S.Buffer] = set()
        self.found = False  # a load under a condition
        self.calls_out = False

    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        _one_index(self.func, e.buffer, e.indices, "load from")
        _live(self.func, e.buffer, self.live)
        self.found = self.found or self.guard > 0
        self.generic_visit(e)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        func = self.func
        _one_index(func, s.buffer, s.indices, "store to")
        _live(func, s.buffer, self.live)
        self.written.add(s.buffer)
        lanes = s.indices[0].dtype.lanes
        if s.value.dtype.lanes != lanes:
            raise BuildError(
                f"kernel {func.name!r}: the store to {s.buffer.name} writes a value of {s.value.dtype.lanes} "
                f"lane(s) (`{s.value}`) at an index of {lanes}: a vector value needs a vector index of "
                "as many lanes (a Ramp), a scalar one a scalar index")
        self.generic_visit(s)

    def visit_Allocate(self, s: S.Allocate) -> None:
        fresh = s.buffer not in self.live
        self.live.add(s.buffer)
        self.generic_visit(s)
        if fresh:
            self.live.discard(s.buffer)

    def visit_ProducerLoad(self, e) -> None:
        raise BuildError(f"kernel {self.func.name!r}: `{e}` reads a tensor; storage flattening has not run")

    def visit_ProducerStore(self, s) -> None:
        raise BuildError(f"kernel {self.func.name!r}: a ProducerStore remains; storage flattening has not run")

    def visit_ProducerRealize(self, s) -> None:
        raise BuildError(f"kernel {self.func.name!r}: a ProducerRealize remains; storage flattening has not run")

    def visit_Reduce(self, e) -> None:
        raise BuildError(f"kernel {self.func.name!r}: `{e}` is a Reduce; lowering should have made it a loop")

    def visit_Call(self, e: E.Call) -> None:
        check_call(self.func, e)
        self.calls_out = self.calls_out or calls_out(e)
        if e.op in ADDRESS_OPS and "w" in address_mask(e):
            self.written.add(e.args[0].buffer)
        super().visit_Call(e)  # the branches of an if_then_else are guarded


def _live(func: S.PrimFunc, buf: S.Buffer, live: set[S.Buffer]) -> None:
    if buf not in live:
        raise BuildError(
            f"kernel {func.name!r}: buffer {buf.name!r} is accessed but is neither a parameter nor "
            "allocated around the access (an Allocate must enclose every use of a temporary)"
        )


def _one_index(func: S.PrimFunc, buf: S.Buffer, indices: tuple, what: str) -> None:
    if len(indices) != 1:
        raise BuildError(
            f"kernel {func.name!r}: {what} {buf.name} has {len(indices)} indices; the backends "
            "expect one flat index (run storage flattening first)"
        )


def unbound_var(func: S.PrimFunc, v: E.Var) -> BuildError:
    sizes = ", ".join(x.name for x in func.size_vars) or "none"
    return BuildError(
        f"kernel {func.name!r}: variable {v.name!r} is used but never bound (not a loop or let "
        f"variable, not among the size vars: {sizes})"
    )


class ExprWriter(Functor):
    """What both source generators share: names of bound variables and precedence-aware text.

    Subclasses set ``func``, ``names`` (a NameTable) and ``bound`` (ids of variables in scope)
    and print each kind of expression in a ``visit_<Node>`` method returning ``(text,
    precedence)``; the parent asks for parentheses by passing its own precedence to ``expr``.
    """

    func: S.PrimFunc
    names: NameTable
    bound: set[int]

    def var(self, v: E.Var) -> str:
        if id(v) not in self.bound:
            raise unbound_var(self.func, v)
        return self.names.get(v, v.name)

    def expr(self, e: E.PrimExpr, parent: int = 0) -> str:
        text, prec = self.visit(e)
        return f"({text})" if prec < parent else text

    def let_parts(self, e: E.Let) -> tuple[str, str, str]:
        """The variable's name, value and body of ``e``: the value printed outside the
        variable's scope, the body inside it."""
        value = self.expr(e.value)
        self.bound.add(id(e.var))
        name = self.names.get(e.var, e.var.name)
        body = self.expr(e.body)
        self.bound.discard(id(e.var))
        return name, value, body

"""One generic visitor and one mutator for every node, plus structural equality and hashing.

Both walk the fields listed in each class's ``_fields`` and descend into expressions,
statements and ranges only: buffers, IterVars, reducers and tensors are leaves referenced by
identity. A pass overrides ``visit_<ClassName>`` for the nodes it cares about; the mutator
returns the very same object when nothing below changed (copy-on-write), so untouched
subtrees are shared and ``is`` tells a pass whether anything happened.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .expr import CommReducer, IterVar, Node, PrimExpr, Range, Var
from .stmt import Buffer, Stmt

_CHILD = (PrimExpr, Stmt, Range)


def _method(cls: type, kind: type) -> Callable | None:
    """``cls``'s ``visit_<kind>`` as found on the class (unbound), or None: looked up once per
    pair of classes (a build visits tens of thousands of nodes, and the name is the same each
    time), in a table of ``cls``'s own (a subclass may define what its base does not)."""
    table = cls.__dict__.get("_visit_table")
    if table is None:
        table = {}
        cls._visit_table = table
    try:
        return table[kind]
    except KeyError:
        fn = table[kind] = getattr(cls, "visit_" + kind.__name__, None)
        return fn


class Visitor:
    """Read-only walk; ``visit_<Class>`` methods may call ``self.generic_visit(node)``."""

    def visit(self, node: Any) -> None:
        fn = _method(type(self), type(node))
        if fn is not None:
            fn.__get__(self)(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: Any) -> None:
        for v in node.fields():
            if isinstance(v, _CHILD):
                self.visit(v)
            elif isinstance(v, tuple):
                for x in v:
                    if isinstance(x, _CHILD):
                        self.visit(x)


class GuardVisitor(Visitor):
    """A read-only walk that knows, in ``self.guard``, how many conditions the node it visits
    is under: the branches of an ``if``, of a select or ``if_then_else`` (only the chosen side
    runs) and the right operand of ``&&``/``||``. For the passes and generators that must not
    move or speculate a memory access out of its condition."""

    guard = 0

    def _guarded(self, *parts) -> None:
        self.guard += 1
        for p in parts:
            if p is not None:
                self.visit(p)
        self.guard -= 1

    def visit_IfThenElse(self, s) -> None:
        self.visit(s.condition)
        self._guarded(s.then_case, s.else_case)

    def visit_Select(self, e) -> None:
        self.visit(e.condition)
        self._guarded(e.true_value, e.false_value)

    def visit_Call(self, e) -> None:
        if e.op != "if_then_else":
            return self.generic_visit(e)
        self.visit(e.args[0])
        self._guarded(*e.args[1:])

    def visit_And(self, e) -> None:
        self.visit(e.a)
        self._guarded(e.b)

    visit_Or = visit_And


class Mutator:
    """Rebuilding walk; returns the same object when no child changed.

    A pass that rewrites statements only (its ``visit_*`` methods are for statements, and
    nothing it does depends on visiting an expression) sets ``statements_only``: the generic
    walk then leaves expressions and ranges as they are without walking them, which matters
    when a body is an expression of 10,000 nodes."""

    statements_only: bool = False

    def visit(self, node: Any) -> Any:
        fn = _method(type(self), type(node))
        if fn is not None:
            return fn.__get__(self)(node)
        return self.generic_visit(node)

    def _field(self, v: Any) -> Any:
        kinds = Stmt if self.statements_only else _CHILD
        if isinstance(v, kinds):
            return self.visit(v)
        if isinstance(v, tuple):
            new: list[Any] | None = None
            for k, x in enumerate(v):
                if isinstance(x, kinds):
                    y = self.visit(x)
                    if y is not x:
                        if new is None:
                            new = list(v)
                        new[k] = y
            return v if new is None else tuple(new)
        return v

    def generic_visit(self, node: Any) -> Any:
        old = node.fields()
        kinds = Stmt if self.statements_only else _CHILD
        new: list[Any] | None = None
        for k, v in enumerate(old):
            if isinstance(v, kinds):
                w = self.visit(v)
            elif isinstance(v, tuple):
                w = self._field(v)
            else:
                continue
            if w is not v:
                if new is None:
                    new = list(old)
                new[k] = w
        return node if new is None else type(node)(*new)


def _children(node: Any, kinds: type | tuple[type, ...] = _CHILD) -> list[Any]:
    """The expressions, statements and ranges (``kinds``) directly below ``node``, in field
    order (for a walk on an explicit stack that may stop early)."""
    out: list[Any] = []
    for v in node.fields():
        if isinstance(v, kinds):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(x for x in v if isinstance(x, kinds))
    return out


children = _children  # the public name (no wrapper: a walk calls it once per node)


def post_order_visit(node: Any, fn: Callable[[Any], None], unique: bool = False,
                     statements_only: bool = False) -> None:
    """Call ``fn`` on every expression/statement below ``node`` (children first, in field
    order; a node reached twice is visited twice, as a recursive walk would, unless ``unique``:
    then each object once, at its first place, as TVM's ``stmt_functor.post_order_visit``).
    ``statements_only``: on the statements alone, in the same order; no expression holds a
    statement, so a walk for statements need not enter the expressions, most of an unrolled
    kernel's nodes.

    An explicit stack, not recursion: a body summing 10,000 terms is a chain of 10,000 nodes,
    and ``collect``/``free_vars`` run on user expressions before any deep-stack measure
    (``tessel.deep``) could apply."""
    kinds = Stmt if statements_only else _CHILD
    if not unique:
        # each node, then its children right to left: read backwards, that is the post order
        # (children left to right, then the node), with one push and pop per node
        order: list[Any] = []
        todo = [node]
        while todo:
            n = todo.pop()
            order.append(n)
            todo.extend(_children(n, kinds))
        for n in reversed(order):
            fn(n)
        return
    stack: list[tuple[Any, bool]] = [(node, False)]
    seen: set[int] = set()
    keep: list[Any] = []  # what ``seen`` numbers, alive so that no id is reused meanwhile
    while stack:
        n, expanded = stack.pop()
        if expanded:
            fn(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        keep.append(n)
        stack.append((n, True))
        stack.extend((c, False) for c in reversed(_children(n, kinds)))


def depth(node: Any, limit: int | None = None) -> int:
    """The number of nodes on the longest path from ``node`` down to a leaf (shared subtrees
    counted once: an explicit stack and a memo by identity, so it is cheap even where every
    other walk would need ``tessel.deep``'s big stack). With ``limit``, it may stop and return
    a value above ``limit`` as soon as one path is that long."""
    memo: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if expanded:
            d = 1 + max((memo[id(c)] for c in _children(n)), default=0)
            memo[id(n)] = d
            if limit is not None and d > limit:
                return d
        elif id(n) not in memo:
            stack.append((n, True))
            stack.extend((c, False) for c in _children(n) if id(c) not in memo)
    return memo[id(node)]


def collect(node: Any, pred: Callable[[Any], bool], statements_only: bool = False) -> list[Any]:
    """The nodes below ``node`` for which ``pred`` holds, children first (``statements_only``:
    see ``post_order_visit``; for a ``pred`` that only statements satisfy)."""
    out: list[Any] = []
    post_order_visit(node, lambda n: out.append(n) if pred(n) else None, statements_only=statements_only)
    return out


def free_vars(node: Any) -> set[Var]:
    return set(collect(node, lambda n: isinstance(n, Var)))


class _Transform(Mutator):
    """TVM's ``ir_transform`` on the one mutator: ``preorder`` may replace a node before its
    children are visited (its result is kept as it is), ``postorder`` after; either returning
    None keeps the node. ``only_enable``: the class names (TVM's type keys such as
    ``"tir.For"`` are accepted) of the nodes the two functions see."""

    def __init__(self, preorder, postorder, only_enable) -> None:
        self.pre, self.post = preorder, postorder
        self.only = None if only_enable is None else {k.rsplit(".", 1)[-1] for k in only_enable}

    def _enabled(self, node: Any) -> bool:
        return self.only is None or type(node).__name__ in self.only

    def visit(self, node: Any) -> Any:
        if self.pre is not None and self._enabled(node):
            out = self.pre(node)
            if out is not None:
                return out
        node = self.generic_visit(node)
        if self.post is not None and self._enabled(node):
            out = self.post(node)
            if out is not None:
                return out
        return node


def ir_transform(node: Any, preorder: Callable[[Any], Any] | None, postorder: Callable[[Any], Any] | None,
                 only_enable: list[str] | None = None) -> Any:
    """``node`` rebuilt bottom up, each node passed to ``preorder`` then (children done) to
    ``postorder``, which may return a replacement (TVM's ``stmt_functor.ir_transform``)."""
    return _Transform(preorder, postorder, only_enable).visit(node)


class Substituter(Mutator):
    """Variables replaced by expressions in one walk, whatever the nesting.

    ``inline``: ``Binding`` statements are replaced by their bodies as the walk meets them
    (the value, itself substituted, replaces the variable there): a builder that must rename a
    loop's variable in a body it has already built binds it there and leaves the renaming to
    one walk at the end, instead of rewriting the body once per loop around it, which is
    quadratic in the depth of a chain of nested stages.

    An allocation's size may use the loops around it (a compute_at region whose extent varies
    with the consumer's loop, after storage flattening). Buffers are leaves shared by identity,
    so a substitution there makes a new buffer, and the accesses in its body are moved onto it
    in the same walk; without this, a pass that renames or fixes a loop variable (a partitioned
    loop's fresh variable, an unrolled copy, a unit loop folded away) would leave the size
    reading a variable that no longer exists."""

    def __init__(self, vmap: Mapping[Var, Any], inline: bool = False):
        self.vmap = dict(vmap)
        self.inline = inline
        self.buffers: dict[int, Buffer] = {}  # id of a buffer whose size changed: its new buffer

    def visit_Var(self, v: Var):
        return self.vmap.get(v, v)

    def visit_Binding(self, s):
        if not self.inline:
            return self.generic_visit(s)
        value, saved = self.visit(s.value), self.vmap.get(s.var)
        self.vmap[s.var] = value
        try:
            return self.visit(s.body)
        finally:
            if saved is None:
                del self.vmap[s.var]
            else:
                self.vmap[s.var] = saved

    def visit_Reduce(self, r):
        """A combiner may read variables besides its operands (``max(x + y, n)`` with ``n`` an
        axis of the compute, as TE allows): they are substituted there too, one new combiner
        per old one, so the outputs of a tuple reduction keep sharing theirs."""
        out = self.generic_visit(r)
        comb = r.combiner
        done = self.__dict__.setdefault("_combiners", {})
        if id(comb) not in done:
            result, identity = tuple(self.visit(x) for x in comb.result), tuple(self.visit(x) for x in comb.identity)
            same = all(a is b for a, b in zip((*result, *identity), (*comb.result, *comb.identity)))
            done[id(comb)] = comb if same else CommReducer(comb.lhs, comb.rhs, result, identity, comb.name)
        new = done[id(comb)]
        return out if new is comb else type(out)(new, *out.fields()[1:])

    def visit_Allocate(self, s):
        old = s.buffer
        shape = tuple(self.visit(x) for x in old.shape)
        if all(a is b for a, b in zip(shape, old.shape)):
            body = self.visit(s.body)
            return s if body is s.body else type(s)(old, body)
        new = Buffer(old.name, old.dtype, shape, old.scope)
        self.buffers[id(old)] = new
        try:
            return type(s)(new, self.visit(s.body))
        finally:
            del self.buffers[id(old)]

    def generic_visit(self, node: Any) -> Any:
        node = super().generic_visit(node)
        if self.buffers:
            return moved(node, self.buffers)
        return node


def moved(node: Any, buffers: dict[int, Buffer]) -> Any:
    """``node`` with its buffer field, if any, moved to the buffer ``buffers`` gives for it."""
    new = buffers.get(id(getattr(node, "buffer", None)))
    if new is None or "buffer" not in node._fields:
        return node
    return type(node)(*[new if f == "buffer" else getattr(node, f) for f in node._fields])


class _BufferReplacer(Mutator):
    def __init__(self, old: Buffer, new: Buffer):
        self.buffers = {id(old): new}

    def generic_visit(self, node: Any) -> Any:
        return moved(super().generic_visit(node), self.buffers)


def replace_buffer(node: Any, old: Buffer, new: Buffer) -> Any:
    """``node`` with every access to (or allocation of) buffer ``old`` made to ``new``."""
    return _BufferReplacer(old, new).visit(node)


def substitute(node: Any, vmap: Mapping[Var, Any]) -> Any:
    """Replace variables by expressions (keys are Vars; IterVars are accepted for convenience)."""
    if not vmap:
        return node
    m = {(k.var if isinstance(k, IterVar) else k): v for k, v in vmap.items()}
    return Substituter(m).visit(node)


def inline_lets(node: Any) -> Any:
    """``node`` with every ``Binding`` replaced by its body, the variable replaced by the
    value there (see Substituter), in one walk."""
    return Substituter({}, inline=True).visit(node)


class _SubstituteEach(Substituter):
    """A Substituter that skips the nodes an earlier copy found unchanged (``same``, ids of
    nodes of the tree being copied, which the caller keeps alive)."""

    def __init__(self, vmap: Mapping[Var, Any], same: set[int]):
        super().__init__(vmap)
        self.same = same

    def visit(self, node: Any) -> Any:
        if id(node) in self.same:
            return node
        out = super().visit(node)
        if out is node:
            self.same.add(id(node))
        return out


def substitute_each(node: Any, var: Var, values: Sequence[Any]) -> list[Any]:
    """``[substitute(node, {var: x}) for x in values]``, the copies of an unrolled loop's body:
    whether a subtree changes does not depend on the value (only on whether it uses ``var``),
    so the subtrees the first copy left alone are not walked again for the others."""
    same: set[int] = set()
    return [_SubstituteEach({var: x}, same).visit(node) for x in values]


def uses_var(node: Any, pred: Callable[[Var], bool]) -> bool:
    stack = [node]  # an explicit stack, as in post_order_visit
    while stack:
        n = stack.pop()
        if isinstance(n, Var):
            if pred(n):
                return True
            continue
        stack.extend(_children(n))
    return False


_IDENTITY = (Var, IterVar, Buffer)


def structural_equal(a: Any, b: Any) -> bool:
    """Same shape and values; variables, IterVars and buffers must be the same objects.

    An explicit stack of pairs (no recursion: the simplifier compares expressions as deep as
    the user's); pairs are compared in no particular order, which a yes/no answer cannot tell."""
    stack = [(a, b)]
    while stack:
        a, b = stack.pop()
        if a is b:
            continue
        if isinstance(a, tuple) and isinstance(b, tuple):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b))
        elif isinstance(a, Node) and isinstance(b, Node):
            if type(a) is not type(b) or isinstance(a, _IDENTITY):
                return False
            stack.extend(zip(a.fields(), b.fields()))
        elif isinstance(a, Node) or isinstance(b, Node) or not _equal_leaf(a, b):
            return False
    return True


def _equal_leaf(a: Any, b: Any) -> bool:
    """Equal values of one type; ``0.0`` and ``-0.0`` differ (``1/x``, ``copysign`` tell them
    apart, and a memo keyed by structure must not hand one back for the other)."""
    try:
        if type(a) is float and type(b) is float:
            return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False


# structural hashes of nodes already hashed, by identity, each entry holding its node (so that
# no id is reused while it is remembered): nodes are immutable, and a pass that copies a loop
# body (unroll, loop partitioning) hashes mostly subtrees the copies share. Bounded: it is
# emptied when full.
_HASHES: dict[int, tuple[Any, int]] = {}
_HASHES_MAX = 1 << 17


def forget_hashes() -> None:
    """Empty the memo of structural hashes (a cold build measured in a warm process)."""
    _HASHES.clear()


def structural_hash(a: Any) -> int:
    """The hash of a node from its class name and its fields' hashes (identity for variables
    and buffers), computed children first on an explicit stack, like ``structural_equal``."""
    done: list[int] = []  # hashes of finished values, in the order a recursive walk would give
    stack: list[tuple[Any, int]] = [(a, -1)]  # (value, -1) to expand; (value, n) to combine n hashes
    memo = _HASHES
    while stack:
        x, n = stack.pop()
        if n >= 0:
            parts = tuple(done[len(done) - n:]) if n else ()
            del done[len(done) - n:]
            if isinstance(x, Node):
                h = hash((type(x).__name__, parts))
                if len(memo) >= _HASHES_MAX:
                    memo.clear()
                memo[id(x)] = (x, h)
                done.append(h)
            else:
                done.append(hash(parts))
        elif isinstance(x, _IDENTITY):
            done.append(id(x))
        elif isinstance(x, Node):
            hit = memo.get(id(x))
            if hit is not None and hit[0] is x:
                done.append(hit[1])
                continue
            kids = x.fields()
            stack.append((x, len(kids)))
            stack.extend((k, -1) for k in reversed(kids))
        elif isinstance(x, tuple):
            stack.append((x, len(x)))
            stack.extend((k, -1) for k in reversed(x))
        else:
            done.append(_hash_leaf(x))
    return done[0]


def _hash_leaf(x: Any) -> int:
    try:
        return hash(x)
    except TypeError:
        return id(x)


class StructKey:
    """Wraps a node so that dicts and sets compare it structurally."""

    __slots__ = ("node", "_h")

    def __init__(self, node: Any):
        self.node = node
        self._h = structural_hash(node)

    def __hash__(self) -> int:
        return self._h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructKey) and structural_equal(self.node, other.node)


def memoized(memo: dict, node: Any, compute: Callable[[Any], Any]) -> Any:
    """``compute(node)``, remembered by the node's identity: IR is a DAG whose shared
    subexpressions would otherwise be analysed once per use. The node is kept beside the
    result, so an id reused by a new object after the old one died never finds a stale entry."""
    hit = memo.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    out = compute(node)
    memo[id(node)] = (node, out)
    return out



class Functor:
    """Dispatch by node type for a walk that computes something per node (a printer's text).

    The convention of :class:`Visitor` and :class:`Mutator`, a method ``visit_<ClassName>``,
    with the one thing a printer needs besides a return value: a class without a method of its
    own falls back on its bases', in method resolution order, so ``visit_CmpOp`` serves all six
    comparisons and a ``visit_PrimExpr`` or ``visit_Stmt`` catches whatever a subclass leaves
    unhandled. There is no generic walk: each method recurses where it wants to. The method
    found is remembered per (functor class, node class); extra arguments of ``visit`` go to it.
    """

    _handlers: dict[type, Callable[..., Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handlers = {}

    @classmethod
    def handler(cls, node_type: type) -> Callable[..., Any]:
        """The (unbound) method that handles nodes of ``node_type``."""
        fn = cls._handlers.get(node_type)
        if fn is None:
            for base in node_type.__mro__:
                fn = getattr(cls, "visit_" + base.__name__, None)
                if fn is not None:
                    break
            else:
                raise TypeError(f"{cls.__name__} has no visit_ method for {node_type.__name__} or its bases")
            cls._handlers[node_type] = fn
        return fn

    def visit(self, node: Any, *args: Any) -> Any:
        return self.handler(type(node))(self, node, *args)

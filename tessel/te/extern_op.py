"""``te.extern``: a stage whose values come from code outside tessel's loops, and the calls
that reach such code (``call_packed``, ``call_extern``, ``call_pure_extern``).

An :class:`ExternOp` is an ordinary operation of the open interface (``operation.py``): it
reads all of each input and writes all of each output (the interface's defaults, which are
exactly TVM's rule for extern stages: InferBound cannot see inside the call), it has no loops
of its own, and its ``build_provide`` is the user's statement with each declared buffer bound
to its tensor (``buffer_bind_scope``; storage flattening resolves the binds).

The called function is found when the kernel is built, by name, among the functions given to
``tessel.register_func`` (a NumPy-backed Python function, C source, or a shared library) and
then the C library: a name is data and never becomes C text (see ``runtime/extern.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import DefinitionError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import BufferBind, DeclBuffer, array_arg, decl_buffer
from ..ir.dtype import DTypeLike
from ..ir.dtype import dtype as to_dtype
from ..ir.stmt import AttrKey
from .operation import LoopNest, Operation
from .tag import scoped_tag
from .tensor import Tensor, _check_shape


class ExternOp(Operation):
    """Outputs computed by ``body``, a statement over the declared buffers of the inputs and
    outputs (``input_placeholders`` / ``output_placeholders``, in order)."""

    def __init__(self, name: str, tag: str, attrs: dict | None, inputs: Sequence[Tensor],
                 input_placeholders: Sequence[DeclBuffer], output_placeholders: Sequence[DeclBuffer], body: S.Stmt):
        self.name, self.tag, self.attrs = name, tag, dict(attrs or {})
        self.inputs = tuple(inputs)
        self.input_placeholders = tuple(input_placeholders)
        self.output_placeholders = tuple(output_placeholders)
        self.body = body
        self.outputs = tuple(Tensor(self, k, b.shape, b.dtype) for k, b in enumerate(self.output_placeholders))

    def input_tensors(self) -> list[Tensor]:
        seen: dict[int, Tensor] = {}
        for t in self.inputs:
            seen.setdefault(id(t), t)
        return list(seen.values())

    def replace_inputs(self, tmap: dict[Tensor, Tensor]) -> ExternOp:
        if not any(t in tmap for t in self.inputs):
            return self
        return ExternOp(self.name, self.tag, self.attrs, [tmap.get(t, t) for t in self.inputs],
                        self.input_placeholders, self.output_placeholders, self.body)

    def inline_refusal(self) -> str | None:
        return "an extern stage cannot be inlined: its values come from a function call, not an expression"

    def build_provide(self, nest: LoopNest, stage, body: tuple) -> S.Stmt:
        """The user's statement, every declared buffer bound to all of its tensor."""
        stmt = self.body
        pairs = list(zip(self.output_placeholders, self.outputs)) + list(zip(self.input_placeholders, self.inputs))
        for buf, t in reversed(pairs):
            stmt = bind_buffer(buf, t, tuple(E.Range(0, n) for n in t.shape), stmt)
        return stmt


def bind_buffer(buf: DeclBuffer, tensor: Tensor, region: tuple[E.Range, ...], body: S.Stmt) -> S.Stmt:
    """``body`` with ``buf`` standing for ``region`` of ``tensor`` (resolved by storage flattening)."""
    return S.AttrStmt(BufferBind(buf, tensor), AttrKey.BUFFER_BIND_SCOPE, tuple(region), body)


def _shapes(shape, name: str) -> list[tuple[E.PrimExpr, ...]]:
    if isinstance(shape, int | E.PrimExpr):
        return [_check_shape((shape,), name)]
    shape = list(shape)
    if not shape or isinstance(shape[0], int | E.PrimExpr):
        return [_check_shape(shape, name)]
    return [_check_shape(s, name) for s in shape]


def _buffers(given, shapes, dtypes, names, what: str, op: str) -> list[DeclBuffer]:
    if given is None:
        return [decl_buffer(s, d, n) for s, d, n in zip(shapes, dtypes, names)]
    given = list(given) if isinstance(given, list | tuple) else [given]
    if len(given) != len(shapes):
        raise DefinitionError(f"extern {op}: {len(given)} {what} buffer(s) given for {len(shapes)} {what}(s)")
    for k, (b, s, d) in enumerate(zip(given, shapes, dtypes)):
        if not isinstance(b, DeclBuffer):
            raise DefinitionError(f"extern {op}: {what} buffer {k} is {b!r}; make it with tvm.tir.decl_buffer")
        if b.dtype != d or len(b.shape) != len(s):
            raise DefinitionError(
                f"extern {op}: {what} buffer {b.name} is {b.dtype} of {len(b.shape)} dimension(s), but its "
                f"tensor is {d} of {len(s)}: declare the buffer with the tensor's dtype and rank")
    return given


def extern(shape, inputs, fcompute: Callable, name: str = "extern", dtype: DTypeLike | Sequence | None = None,
           in_buffers=None, out_buffers=None, tag: str = "", attrs: dict | None = None):
    """Tensors of ``shape`` (one shape, or a list for several outputs) computed by the statement
    ``fcompute(ins, outs)`` builds over declared buffers of ``inputs`` and of the outputs (a
    call such as ``call_packed("f", ins[0], outs[0])``, or an expression, evaluated for its effect).

    ``dtype`` defaults to the first input's; ``in_buffers``/``out_buffers`` give the buffers
    (``decl_buffer``) when the function needs other strides or offsets than the compact default.
    """
    shapes = _shapes(shape, name)
    inputs = list(inputs) if isinstance(inputs, list | tuple) else [inputs]
    for t in inputs:
        if not isinstance(t, Tensor):
            raise DefinitionError(f"extern {name}: inputs must be tensors, got {t!r}")
    if dtype is None:
        if not inputs:
            raise DefinitionError(f"extern {name}: without inputs, say the output dtype (dtype='float32')")
        dtype = inputs[0].dtype
    dtypes = [to_dtype(d) for d in dtype] if isinstance(dtype, list | tuple) else [to_dtype(dtype)] * len(shapes)
    if len(dtypes) != len(shapes):
        raise DefinitionError(f"extern {name}: {len(dtypes)} dtypes for {len(shapes)} outputs")
    ins = _buffers(in_buffers, [t.shape for t in inputs], [t.dtype for t in inputs], [t.name for t in inputs],
                   "input", name)
    outs = _buffers(out_buffers, shapes, dtypes, [name] * len(shapes), "output", name)
    for b in ins:
        b.writes = False
    for b in outs:
        b.writes = True
    body = fcompute(ins, outs)
    if isinstance(body, E.PrimExpr | int | float):
        body = S.Evaluate(E.convert(body))
    if not isinstance(body, S.Stmt):
        raise DefinitionError(f"extern {name}: fcompute returned {body!r}; return a statement or a call "
                              "(e.g. tvm.tir.call_packed('my_func', ins[0], outs[0]))")
    op = ExternOp(name, scoped_tag(tag, name), attrs, inputs, ins, outs, body)
    return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)


def _name(fn: str, what: str) -> E.StringImm:
    if not isinstance(fn, str) or not fn or "\0" in fn:
        raise DefinitionError(f"{what}: the function name must be a non-empty string, got {fn!r}")
    return E.StringImm(fn)


def _arg(a, what: str, packed: bool) -> E.PrimExpr:
    if isinstance(a, DeclBuffer):
        return array_arg(a) if packed else a.access_ptr("rw" if a.writes else "r")
    if isinstance(a, Tensor):
        raise DefinitionError(f"{what}: tensor {a.name} cannot be passed directly; pass its declared buffer "
                              "(the ins/outs te.extern gives fcompute)")
    if isinstance(a, str):
        return E.StringImm(a)
    return E.convert(a)


def call_packed(*args) -> E.PrimExpr:
    """Call the registered function ``args[0]`` with the rest: a buffer arrives as an array
    (a NumPy array in Python, a DLTensor in C), a number as itself. Its value is 0."""
    if not args:
        raise DefinitionError("call_packed needs the function's name as its first argument")
    name = _name(args[0], "call_packed")
    return E.Call("int32", "call_packed", (name, *(_arg(a, f"call_packed({args[0]!r})", True) for a in args[1:])))


def _extern_call(op: str, dtype: DTypeLike, func_name: str, args) -> E.PrimExpr:
    name = _name(func_name, op)
    return E.Call(to_dtype(dtype), op, (name, *(_arg(a, f"{op}({func_name!r})", False) for a in args)))


def call_extern(dtype: DTypeLike, func_name: str, *args) -> E.PrimExpr:
    """Call the C function ``func_name`` (registered, or from the C library) with scalar and
    pointer (``buffer.access_ptr``) arguments; its value has ``dtype``."""
    return _extern_call("call_extern", dtype, func_name, args)


def call_pure_extern(dtype: DTypeLike, func_name: str, *args) -> E.PrimExpr:
    """``call_extern`` of a function without side effects (a scalar function such as ``expf``)."""
    return _extern_call("call_pure_extern", dtype, func_name, args)


__all__ = ["ExternOp", "bind_buffer", "call_extern", "call_packed", "call_pure_extern", "decl_buffer", "extern"]

"""Register-tile operands in C: a vector loaded once per step, kept in a register for its uses.

An unrolled register tile (matmul's, conv2d's) is a run of statements that update accumulators
kept in variables (``Y_local_3 = Y_local_3 + tsl_ld_f32x8(X + ...) * tsl_bc_f32x8(W[...])``);
each loaded vector is used by several of them (one per broadcast row). The register model of
:mod:`tessel.target.tiles` counts that vector as one load. GCC instead folds the load into each
FMA that uses it (``vfmadd231ps (mem), ...``): with 4 rows, four loads where one was planned, and
a load-port-bound loop (measured on AVX2: a 1x1 conv at 0.63x the speed of the same code with
its loads kept in registers).

So, within such a run, a vector load that occurs more than once is written once, into a
variable, just before its first use, and pinned there by an empty ``asm`` whose operand must
be a vector register (``tsl_keep_*``): the compiler can no longer re-read the memory in its
place. The run holds no store to memory (every statement writes a variable), so reading the
value earlier than the statements did changes nothing -- for a load C reads whenever its
statement runs: one on a side of a scalar ``?:`` (a read past a tensor's edge, guarded) stays
where it is, or the early read would be the one the guard prevents. The pin exists only where the C
compiler's target has registers of the vector's width (x86 SSE/AVX/AVX-512, AArch64 NEON);
elsewhere it is nothing and the variable is an ordinary one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DType
from ..ir.functor import children, collect
from .common import calls_out

if TYPE_CHECKING:
    from .c_stmt import CStmtWriter

# the vector register constraint of an empty asm, by vector bytes: x86 (SSE, AVX, AVX-512) and AArch64
_PIN = {16: ("defined(__SSE2__)", "x"), 32: ("defined(__AVX__)", "x"), 64: ("defined(__AVX512F__)", "v")}


def keep_macro(name: str, nbytes: int) -> str:
    """The definition of ``name(v)``: pins ``v`` to a vector register where one holds it."""
    lines = []
    if nbytes in _PIN:
        cond, letter = _PIN[nbytes]
        lines.append(f"#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && {cond}")
        lines.append(f'#define {name}(v) __asm__("" : "+{letter}"(v))')
    if nbytes == 16:
        lines.append(f"#{'el' if lines else ''}if defined(__GNUC__) && defined(__aarch64__)")
        lines.append(f'#define {name}(v) __asm__("" : "+w"(v))')
    if not lines:
        return f"#define {name}(v) ((void)0)"
    return "\n".join([*lines, "#else", f"#define {name}(v) ((void)0)", "#endif"])


def _register_update(w: CStmtWriter, s: S.Stmt) -> bool:
    """A store into a tile kept in variables (no memory is written): a vector, or a single
    element (a row's last column in a tile of mixed widths, passes.memory.promotion_cells)."""
    return isinstance(s, S.BufferStore) and id(s.buffer) in w.promoted


def flat(s: S.Stmt) -> list[S.Stmt]:
    """The statements of nested sequences, in order."""
    if isinstance(s, S.SeqStmt):
        return [x for item in s.seq for x in flat(item)]
    return [s]


def register_runs(w: CStmtWriter, items: list[S.Stmt]) -> list[tuple[bool, list[S.Stmt]]]:
    """``items`` cut into maximal runs of register updates (True) and single other statements."""
    out: list[tuple[bool, list[S.Stmt]]] = []
    for s in items:
        if _register_update(w, s) and out and out[-1][0]:
            out[-1][1].append(s)
        else:
            out.append((_register_update(w, s), [s]))
    return out


def _always_read(value: E.PrimExpr) -> list[E.PrimExpr]:
    """The subexpressions of ``value`` that C evaluates whenever ``value`` is: not the sides of
    a scalar ``?:`` (``if_then_else`` guarding a read past a tensor's edge), nor the right of
    ``&&``/``||``, nor a ``Let``'s body (its variable is declared only inside). A load read
    earlier than its statement must be one C would have read anyway."""
    out: list[E.PrimExpr] = []
    stack = [value]
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, E.Select) and n.condition.dtype.lanes == 1:
            stack.append(n.condition)
        elif isinstance(n, E.Call) and n.op == "if_then_else" and n.args[0].dtype.lanes == 1:
            stack.append(n.args[0])
        elif isinstance(n, E.And | E.Or) and n.dtype.lanes == 1:
            stack.append(n.a)
        elif isinstance(n, E.Let):
            stack.append(n.value)
        else:
            stack.extend(children(n))
    return out


def _vector_loads(w: CStmtWriter, s: S.BufferStore) -> list[tuple[str, DType]]:
    """The contiguous vector loads from memory that ``s``'s value always reads, as the C they
    print to; not one whose address reads the tile (an earlier update of the run may change it)."""
    loads = [n for n in _always_read(s.value) if isinstance(n, E.BufferLoad) and n.dtype.lanes > 1
             and id(n.buffer) not in w.promoted and isinstance(n.indices[0], E.Ramp)
             and E.is_const_int(n.indices[0].stride, 1)
             and not collect(n.indices[0], lambda x: isinstance(x, E.BufferLoad) and id(x.buffer) in w.promoted)]
    return [(w.vec.load(ld), ld.dtype) for ld in loads]


def _calls_out(s: S.BufferStore) -> bool:
    """Whether ``s``'s value calls a function outside the kernel (which may write memory)."""
    return bool(collect(s.value, lambda n: isinstance(n, E.Call) and calls_out(n)))


def emit_run(w: CStmtWriter, run: list[S.Stmt]) -> None:
    """``run`` (register updates), its loads used more than once read once each, pinned."""
    # an outside function might write what a later update reads (``w.calls_out``: the kernel
    # calls one somewhere, as check_func found)
    if w.calls_out and any(_calls_out(s) for s in run):
        for s in run:
            w.stmt(s)
        return
    per_stmt = [_vector_loads(w, s) for s in run]
    uses: dict[str, int] = {}
    for loads in per_stmt:
        for text, _ in loads:
            uses[text] = uses.get(text, 0) + 1
    if not any(n > 1 for n in uses.values()):
        for s in run:
            w.stmt(s)
        return
    w.open("")
    for s, loads in zip(run, per_stmt):
        for text, dt in loads:
            if uses[text] > 1 and text not in w.vec.reuse:
                name = w.names.get(object(), "operand")
                w.emit(f"{w.vec.vtype(dt)} {name} = {text};")
                w.emit(f"{w.vec.keep_fn(dt)}({name});")
                w.vec.reuse[text] = name
        w.stmt(s)
    w.vec.reuse.clear()
    w.close()

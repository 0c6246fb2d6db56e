"""What every PolyBench kernel of this directory is, and how one is run and checked.

PolyBench/C 4.2 states each kernel as C loops over arrays it allocates once (``init_array``,
then ``kernel_*``, in place). Here each is written as tessel states programs: what is computed
(``te.compute``, ``te.recurrence``, ``te.scan``) and a schedule, over the same arrays. A
:class:`Kernel` holds both sides of the comparison:

* ``define(sizes)``: the tessel program, a :class:`Program` (a schedule and its arguments, each
  named by the PolyBench array or scalar it is);
* ``init(sizes)``: PolyBench's ``init_array``, in NumPy (the same formulas, so values match);
* ``reference(sizes, arrays)``: PolyBench's loops transcribed to NumPy (whole rows where the
  loop order allows, Python loops where it does not), updating ``arrays`` in place;
* ``c_loops``: the same loops in plain C, for ``python -m benchmarks.polybench`` to time
  against ``gcc -O3`` (a function body over the arrays, sizes as ``#define``\\ s).

``check`` runs one kernel at one size on one target and compares every array PolyBench's
kernel writes. ``footprint`` is the memory a built kernel needs: the distinct arrays it is
called with and the temporaries it allocates, to set beside PolyBench's own arrays.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

import tessel
from tessel.ir import stmt as S
from tessel.ir.functor import collect

Sizes = Mapping[str, int]
Arrays = dict[str, np.ndarray | float]


@dataclass(frozen=True)
class Program:
    """A tessel program for one PolyBench kernel at one size.

    ``args``: what ``tessel.build`` is given, in order; ``names``: the PolyBench array or scalar
    each argument is (two arguments may not name one array); ``outputs``: the PolyBench arrays
    the kernel writes (each must be among ``names``: a value PolyBench keeps in an array that
    tessel would hand back in a new one is not PolyBench's footprint)."""

    schedule: object
    args: Sequence[object]
    names: Sequence[str]
    outputs: Sequence[str]


@dataclass(frozen=True)
class Kernel:
    name: str
    category: str
    sizes: Mapping[str, Sizes]  # PolyBench's datasets ("MINI", "SMALL", ...) and ours ("ODD")
    define: Callable[[Sizes], Program]
    init: Callable[[Sizes], Arrays]
    reference: Callable[[Sizes, Arrays], None]
    c_loops: str
    dtype: str = "float64"
    tolerance: float = 1e-9
    notes: str = field(default="")


def product_rows(s: object, t: object, rows: int = 4) -> None:
    """A matrix product's rows in parallel, ``rows`` at a time, built from whole rows of its right
    operand (loops ``i.outer, k, i.inner, j``, ``i.inner`` unrolled, ``j`` as vector code): the
    order gcc's vectorizer gives PolyBench's C, with each row of the right operand read once for
    ``rows`` rows of the product (each sum still in order over ``k``)."""
    i, j = t.op.axis
    io, ii = s[t].split(i, rows)
    s[t].reorder(io, t.op.reduce_axis[0], ii, j)
    s[t].unroll(ii)
    s[t].parallel(io)
    s[t].vectorize(j)


def _copies(arrays: Arrays) -> Arrays:
    return {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v) for k, v in arrays.items()}


def run(kernel: Kernel, size: str, target: str = "c") -> tuple[Arrays, Arrays, Program]:
    """Build and run ``kernel`` at dataset ``size``: (what tessel left, what the reference left,
    the program)."""
    sizes = kernel.sizes[size]
    prog = kernel.define(sizes)
    if len(set(prog.names)) != len(prog.names):
        raise ValueError(f"{kernel.name}: two arguments name one array ({list(prog.names)})")
    missing = set(prog.outputs) - set(prog.names)
    if missing:
        raise ValueError(f"{kernel.name}: outputs {sorted(missing)} are not arguments")
    start = kernel.init(sizes)
    got, want = _copies(start), _copies(start)
    fn = tessel.build(prog.schedule, list(prog.args), target=target, name=kernel.name.replace("-", "_"))
    fn(*(got[n] for n in prog.names))
    kernel.reference(sizes, want)
    return got, want, prog


def check(kernel: Kernel, size: str, target: str = "c") -> None:
    """Raise AssertionError unless every array the kernel writes matches the reference."""
    got, want, prog = run(kernel, size, target)
    for name in prog.outputs:
        g, w = np.asarray(got[name]), np.asarray(want[name])
        if not np.allclose(g, w, rtol=kernel.tolerance, atol=kernel.tolerance):
            bad = ~np.isclose(g, w, rtol=kernel.tolerance, atol=kernel.tolerance)
            at = tuple(int(x) for x in np.argwhere(bad)[0])
            raise AssertionError(f"{kernel.name} {size} on {target}: {name} differs at {bad.sum()} of "
                                 f"{bad.size} elements, first {at}: {g[at]!r} instead of {w[at]!r}")


def footprint(kernel: Kernel, size: str) -> tuple[int, int]:
    """Bytes (tessel's kernel, PolyBench's): tessel's counts the distinct arrays the kernel is
    called with and every temporary it allocates (once each); PolyBench's, its arrays and the
    arrays its kernel declares for itself (durbin's ``z``): leaving those out would count a
    temporary against tessel that PolyBench's own loops need too."""
    sizes = kernel.sizes[size]
    prog = kernel.define(sizes)
    start = kernel.init(sizes)
    ours = sum(start[n].nbytes for n in prog.names if isinstance(start[n], np.ndarray))
    func = tessel.lower(prog.schedule, list(prog.args))
    for a in collect(func.body, lambda n: isinstance(n, S.Allocate), statements_only=True):
        shape = a.buffer.shape
        if not all(hasattr(x, "value") for x in shape):
            raise ValueError(f"{kernel.name}: temporary {a.buffer.name} has a symbolic size")
        ours += math.prod(x.value for x in shape) * max(a.buffer.dtype.bits // 8, 1)
    theirs = sum(v.nbytes for v in start.values() if isinstance(v, np.ndarray))
    return ours, theirs + c_temporaries(kernel, sizes)


_C_ARRAY = re.compile(r"\b(double|float|int)\s+([A-Za-z_]\w*\s*\[[^;=(]*);")  # a declaration, no initializer
_C_DECL = re.compile(r"([A-Za-z_]\w*)((?:\s*\[[^\]]+\])+)")
_C_BYTES = {"double": 8, "float": 4, "int": 4}


def c_temporaries(kernel: Kernel, sizes: Sizes) -> int:
    """Bytes of the arrays PolyBench's kernel body declares itself (``double z[N];``), their
    extents evaluated from ``sizes`` (the ``#define``\\ s the C is compiled with)."""
    total = 0
    for ctype, decls in _C_ARRAY.findall(kernel.c_loops):
        for _name, dims in _C_DECL.findall(decls):
            extents = [eval_size(d, sizes) for d in re.findall(r"\[([^\]]+)\]", dims)]
            total += math.prod(extents) * _C_BYTES[ctype]
    return total


def eval_size(text: str, sizes: Sizes) -> int:
    """An array extent of PolyBench's C (``N``, ``N + 1``, ``2*M``): sizes, integers, + - *,
    evaluated over the parsed expression (never as code)."""
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in sizes:
            return int(sizes[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"the C array extent {text!r}: {ast.dump(node)} is not a size, an integer, + - or *")

    return value(ast.parse(text.strip(), mode="eval").body)

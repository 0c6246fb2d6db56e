"""The cross-feature fuzzer's own stages: where tessel's features meet, with NumPy twins.

Issue 29 found every wrong value where features meet: positions x reductions, TE primitives x
Tiramisu commands x in-place storage, exact region plans x ``init=``/``where=``, the C compiler x
loop-carried dependences. So these stages are the features themselves -- a 2-D stencil, a
reduction with ``init=`` (and a ``where=`` over the reduction or the output's axes), a
recurrence (``te.recurrence``: carried dependences along one or two axes, forwards or
backwards, a reduction over the previous row), a scan (``te.scan``) and a stencil written in
place into the input (``store_in``) -- and the schedules of :mod:`.fuzz_schedules` are drawn
over them. Each NumPy twin that has a carried dependence is a plain Python loop run in the
program's order (the definition's order for a recurrence, the stage's for an in-place one).
"""

from __future__ import annotations

from . import choices as st

# the dependence vectors a recurrence's second definition reads h at (h[i - di, j - dj]): no two
# of one set ask opposite directions of one axis (tessel refuses those when they are written)
RECURRENCES_2D = (((1, 0),), ((0, 1),), ((1, 1),), ((1, -1),), ((1, 0), (0, 1)), ((-1, 0),),
                  ((0, -1), (1, 0)), ((2, 0),), ((1, 0), (2, 1)), "row")
RECURRENCES_1D = (((1,),), ((2,),), ((-1,),), ((1,), (2,)))
COEFS = ("0.5", "-0.25", "0.375")


def feature_kinds(prog, cur: str, shape) -> list[str]:
    """The features a stage after ``cur`` can be; the integer types keep to those whose NumPy
    twin wraps as the kernel's arithmetic does (no carried products)."""
    is_int = prog.dtype.startswith("int")
    out = ["init", "init"]
    if len(shape) == 2 and all(d.value >= 3 for d in shape):
        out.append("stencil2d")
        if cur == "A" and not is_int and not prog.symbolic:  # only the first stage can: drawn more often
            out += ["inplace"] * 3
    if not is_int:
        out += ["recurrence", "recurrence"]
        if len(shape) == 2 and shape[0].value >= 2:
            out.append("scan")
    return [k for k in out if k != "init" or len(shape) == 2]


def build_feature(draw, prog, kind: str, name: str, cur: str, ref: str, shape, c) -> tuple:
    """Add stage ``name`` of ``kind`` reading ``cur`` (NumPy value ``ref``); returns its shape."""
    return {"stencil2d": _stencil2d, "init": _init_reduce, "recurrence": _recurrence, "scan": _scan,
            "inplace": _inplace}[kind](draw, prog, name, cur, ref, shape, c)


def _stencil2d(draw, prog, name, cur, ref, shape, c):
    """Five points of a 3x3 window: a stencil reading both axes shifted both ways."""
    n, m = shape
    out = (n.minus(2), m.minus(2))
    pts = ((0, 1), (1, 0), (1, 1), (1, 2), (2, 1)) if draw(st.booleans()) else ((0, 0), (0, 2), (1, 1), (2, 0), (2, 2))
    ks = [c(1.0, 1), c(-0.5, -2), c(0.25, 3), c(0.75, 1), c(-0.125, -1)]
    terms = " + ".join(f"{cur}[i + {a}, j + {b}] * {k}" for (a, b), k in zip(pts, ks))
    nterms = " + ".join(f"{ref}[{a}:{a} + {out[0].expr}, {b}:{b} + {out[1].expr}] * {k}" for (a, b), k in zip(pts, ks))
    prog.run(f"{name} = te.compute(({out[0].text}, {out[1].text}), lambda i, j: {terms}, name='{name}')")
    prog.data(f"r{name.lower()} = {nterms}")
    return out


def _init_reduce(draw, prog, name, cur, ref, shape, c):
    """``te.sum``/``te.max`` with ``init=`` read from another stage, under a ``where=`` on the
    reduction axis, on the output's axes (a triangle), or none."""
    n, m = shape
    r, kv, p = f"r{name.lower()}", f"k{name.lower()}", f"{name}p"
    how = draw(st.sampled_from(["sum", "sum", "max"]))
    tri = n.text == m.text and draw(st.booleans())  # B[i, j] over j <= i, as issue 29's item 6
    where = draw(st.sampled_from(["", f"{kv} > i", f"{kv} <= i", f"{kv} % 2 == 0"] if not tri else ["j <= i", "j > i"]))
    prog.run(f"{kv} = te.reduce_axis((0, {m.text}), name='{kv}')")
    axes = "i, j" if tri else "i"
    out = (n, n) if tri else (n,)
    prog.run(f"{p} = te.compute(({', '.join(d.text for d in out)},), lambda {axes}: {cur}[i, 0] * {c(2.0, 2)} + {c(0.5, 1)}, name='{p}')")
    body = f"{cur}[i, {kv}] * {cur}[j, {kv}]" if tri else f"{cur}[i, {kv}] * {c(0.5, 2)}"
    w = f", where={where}" if where else ""
    prog.run(f"{name} = te.compute(({', '.join(d.text for d in out)},), lambda {axes}: te.{how}({body}, axis={kv}, init={p}[{axes}]{w}), name='{name}')")
    init = f"({ref}[:, 0] * {c(2.0, 2)} + {c(0.5, 1)})"
    if tri:
        prog.data(f"I_, J_ = np.meshgrid(np.arange({n.expr}), np.arange({n.expr}), indexing='ij')")
        # integers in int64, whose cast to the dtype wraps as the kernel does (a float64 sum past
        # the int32 range casts to an undefined value: 0 on x86)
        acc = "np.int64" if prog.dtype.startswith("int") else "np.float64"
        terms = f"np.einsum('ik,jk->ij', {ref}.astype({acc}), {ref}.astype({acc}))"
        init = f"{init}[:, None] * np.ones(({n.expr}, {n.expr}), {acc})"
        mask = {"j <= i": "(J_ <= I_)", "j > i": "(J_ > I_)"}[where]
        prog.data(f"{r} = {init} + ({terms} if '{how}' == 'sum' else 0) * {mask}" if how == "sum" else
                  f"{r} = np.where({mask}, np.maximum({init}, ({ref}[:, None, :] * {ref}[None, :, :]).max(axis=2)), {init})")
    else:
        cond = {"": "np.ones(({n}, {m}), bool)", f"{kv} > i": "(K_ > I_)", f"{kv} <= i": "(K_ <= I_)",
                f"{kv} % 2 == 0": "(K_ % 2 == 0)"}[where].format(n=n.expr, m=m.expr)
        prog.data(f"I_, K_ = np.meshgrid(np.arange({n.expr}), np.arange({m.expr}), indexing='ij')")
        if how == "sum":
            acc = "np.int64" if prog.dtype.startswith("int") else "np.float64"
            prog.data(f"{r} = {init}.astype({acc}) + np.where({cond}, {ref}.astype({acc}) * {c(0.5, 2)}, 0).sum(axis=1)")
        else:
            low = f"np.iinfo(np.{prog.dtype}).min" if prog.dtype.startswith("int") else "-np.inf"
            prog.data(f"{r} = np.maximum({init}, np.where({cond}, {ref} * {c(0.5, 2)}, {low}).max(axis=1))")
    prog.reductions.add(name)
    prog.helpers.append(p)
    return out


def _recurrence(draw, prog, name, cur, ref, shape, c):
    """``h`` copies ``cur``, then a second definition adds ``h``'s values at the drawn offsets
    (or a row sum of the previous row: a reduction over its own reads)."""
    r = f"r{name.lower()}"
    deps = draw(st.sampled_from(RECURRENCES_2D if len(shape) == 2 else RECURRENCES_1D))
    vs = ["i", "j"][: len(shape)]
    idx = ", ".join(vs)
    dims = ", ".join(d.text for d in shape)
    first = f"te.define(lambda h, {idx}: {cur}[{idx}])"
    loop_dims = [f"range({d.expr})" for d in shape]
    if deps == "row":  # h[i, j] = sum_k h[i-1, k] / 16 for i > 0
        kv = f"k{name.lower()}"
        prog.run(f"{kv} = te.reduce_axis((0, {shape[1].text}), name='{kv}')")
        second = f"te.define(lambda h, i, j: te.sum(h[i - 1, {kv}] * 0.0625, axis={kv}), where=lambda i, j: i > 0)"
        update = f"{r}[i, j] = {r}[i - 1, :].sum() * 0.0625"
        loop_dims[0] = f"range(1, {shape[0].expr})"
    else:
        reads, conds, np_conds = [], [], []
        for k, off in enumerate(deps):
            ix = [f"{v} - {d}" if d > 0 else f"{v} + {-d}" if d < 0 else v for v, d in zip(vs, off)]
            reads.append(f"h[{', '.join(ix)}] * {COEFS[k]}")
            for v, d, dim in zip(vs, off, shape):
                if d and (f"{v} >= {d}" if d > 0 else f"{v} < {dim.text} - {-d}") not in conds:
                    conds.append(f"{v} >= {d}" if d > 0 else f"{v} < {dim.text} - {-d}")
                    np_conds.append(f"{v} >= {d}" if d > 0 else f"{v} < {dim.expr} - {-d}")
        where = conds[0] if len(conds) == 1 else f"te.all({', '.join(conds)})"
        second = f"te.define(lambda h, {idx}: {cur}[{idx}] + {' + '.join(reads)}, where=lambda {idx}: {where})"
        np_reads = " + ".join(x.replace("h[", f"{r}[") for x in reads)
        update = f"{r}[{idx}] = {ref}[{idx}] + {np_reads} if {' and '.join(np_conds)} else {r}[{idx}]"
        for p in range(len(vs)):  # an axis runs backwards where the definition reads a later index
            if any(off[p] < 0 for off in deps):
                loop_dims[p] = f"reversed({loop_dims[p]})"
    prog.run(f"{name} = te.recurrence(({dims}{',' if len(shape) == 1 else ''}), [{first}, {second}], name='{name}')")
    prog.run(f"{name}d0 = {name}.op.definitions[0]")
    prog.data(f"{r} = {ref}.astype(np.float64).copy()")
    loops = " ".join(f"for {v} in {d}" for v, d in zip(vs, loop_dims))
    prog.data(f"for {idx} in [({idx}) {loops}]: {update}")
    prog.helpers.append(f"{name}d0")
    return shape


def _scan(draw, prog, name, cur, ref, shape, c):
    """``te.scan`` down the first axis: out[t] = out[t-1] * a + cur[t]."""
    n, m = shape
    r, state = f"r{name.lower()}", f"{name}s"
    a = draw(st.sampled_from(["0.5", "1.0", "-0.75"]))
    prog.run(f"{state} = te.placeholder(({n.text}, {m.text}), name='{state}', dtype='{prog.dtype}')")
    prog.run(f"{name}i = te.compute((1, {m.text}), lambda _, j: {cur}[0, j], name='{name}i')")
    prog.run(f"{name}u = te.compute(({n.text}, {m.text}), lambda t, j: {state}[t - 1, j] * {a} + {cur}[t, j], name='{name}u')")
    prog.run(f"{name} = te.scan({name}i, {name}u, {state}, name='{name}')")
    prog.data(f"{r} = {ref}.astype(np.float64).copy()")
    prog.data(f"for t in range(1, {n.expr}): {r}[t] = {r}[t - 1] * {a} + {ref}[t]")
    prog.helpers += [f"{name}i", f"{name}u"]
    return shape


def _inplace(draw, prog, name, cur, ref, shape, c):
    """A stencil over A's interior written into A itself (``store_in``): each point reads its
    neighbours as the points before it in the stage's order left them (Gauss-Seidel)."""
    n, m = shape
    out = (n.minus(2), m.minus(2))
    pts = draw(st.sampled_from([((0, 0), (1, 1), (0, 2), (2, 0)), ((0, 0), (0, 1), (0, 2), (1, 1)),
                                ((0, 1), (1, 0), (1, 1), (1, 2), (2, 1)), ((1, 0), (1, 1), (0, 1))]))
    ks = ("0.5", "1.0", "-0.25", "0.125", "0.375")
    terms = " + ".join(f"{cur}[i + {a}, j + {b}] * {k}" for (a, b), k in zip(pts, ks))
    prog.run(f"{name} = te.compute(({out[0].text}, {out[1].text}), lambda i, j: {terms}, name='{name}')")
    prog.after_schedule.append(f"s[{name}].store_in({cur}, lambda i, j: (i + 1, j + 1))")
    x = f"x{name.lower()}"
    prog.data(f"{x} = {ref}.astype(np.float64).copy()")
    upd = " + ".join(f"{x}[i + {a}, j + {b}] * {k}" for (a, b), k in zip(pts, ks))
    prog.data(f"for i, j in [(i, j) for i in range({out[0].expr}) for j in range({out[1].expr})]: {x}[i + 1, j + 1] = {upd}")
    prog.data(f"r{name.lower()} = {x}[1:-1, 1:-1]")
    prog.updated[cur] = x
    prog.in_place.add(name)
    return out

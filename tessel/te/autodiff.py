"""Reverse-mode differentiation of tensor expressions: ``te.gradient`` with TVM's meaning.

``gradient(output, inputs, head)`` returns, for each input ``X``, the tensor
``dX[p, j] = sum_i head[p, i] * d output[i] / d X[j]``: the Jacobian of ``output`` with respect
to ``X`` multiplied by ``head``, whose shape is ``prefix + output.shape``. Without a head it is
the identity, so the result is the whole Jacobian of shape ``output.shape + X.shape``.

The adjoints are new compute operations, so they are scheduled, bound, lowered and built like
any other. They are made consumer first: each tensor between the inputs and the output gets
the sum of one contribution per (consumer, group of reads of the same element). A contribution
sums the consumer's adjoint times the local derivative over the consumer's points that read
the element; ``autodiff_solve`` turns that sum into direct indexing wherever the index
expressions are affine. Reductions: a sum passes its adjoint to every term; a max or min to
the terms equal to the result (with ties each tied term receives it, a subgradient).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..arith import Analyzer
from ..errors import DefinitionError
from ..ir import expr as E
from ..ir.functor import StructKey, collect, substitute
from . import reduce as R
from .autodiff_rules import derivative, mul
from .autodiff_solve import clamp_reads, solve
from .operation import post_dfs_order
from .tensor import ComputeOp, Tensor, compute


def _post_order(output: Tensor) -> list[Tensor]:
    """Every tensor ``output`` depends on, producers before their consumers, ``output`` last."""
    order = [t for op in post_dfs_order([output.op]) for t in op.outputs if t is not output]
    return [*order, output]


def _check_head(output: Tensor, head: Tensor | None) -> Tensor:
    if head is None:
        shape = output.shape + output.shape
        n = output.ndim

        def identity(*ij):
            same = E.all_(*[E.eq(a, b) for a, b in zip(ij[:n], ij[n:])])
            return E.select(same, E.FloatImm(1.0, output.dtype), E.FloatImm(0.0, output.dtype))

        return compute(shape, identity, name=f"{output.name}.identity")
    if not isinstance(head, Tensor):
        raise DefinitionError(f"te.gradient: head must be a tensor of shape prefix + {output.shape}, got {head!r}")
    tail = head.shape[head.ndim - output.ndim:] if output.ndim else ()
    ana = Analyzer()
    if head.ndim < output.ndim or not all(ana.can_prove_equal(a, b) for a, b in zip(tail, output.shape)):
        raise DefinitionError(
            f"te.gradient: head {head.name} has shape {head.shape}, which does not end with the shape "
            f"{output.shape} of the output {output.name}; give a head of shape prefix + output.shape"
        )
    if head.dtype != output.dtype:
        raise DefinitionError(f"te.gradient: head {head.name} is {head.dtype} but the output {output.name} is "
                              f"{output.dtype}; cast the head")
    return head


def _terms(y: Tensor) -> list[tuple[E.PrimExpr, E.PrimExpr, tuple[E.IterVar, ...]]]:
    """``(value, condition, domain)`` whose sum over the domain (where the condition holds) is
    ``y`` at its axes, with max/min turned into the term equal to the result."""
    op = y.op
    if not isinstance(op, ComputeOp):
        raise DefinitionError(f"te.gradient cannot differentiate through {op.name} ({type(op).__name__}); "
                              "only te.compute stages are differentiable")
    body = op.body[y.value_index]
    true = E.const(True)
    if not isinstance(body, E.Reduce):
        return [(body, true, op.axis)]
    comb = body.combiner
    dtypes = tuple(s.dtype for s in body.source)
    if body.finish is not None:
        raise DefinitionError(f"te.gradient: {op.name}'s value is finished after its reduction ({comb.name}, then "
                              "an expression of it); write the reduction in a te.compute of its own to differentiate")
    if len(body.source) != 1:
        raise DefinitionError(f"te.gradient: {op.name} is a tuple reduction ({comb.name}); only sum, max and "
                              "min reductions of one value are differentiable")
    src, domain = body.source[0], op.axis + body.axis
    if comb is R.sum.combiner(dtypes):
        terms = [(src, body.condition, domain)]
        terms += [(i, true, op.axis) for i in body.init]
        return terms
    if comb in (R.max.combiner(dtypes), R.min.combiner(dtypes)):
        if body.init:
            raise DefinitionError(f"te.gradient: {op.name} is a {comb.name} reduction with an init value; "
                                  "write the init as a separate te.max/te.min of two values")
        hit = E.eq(src, E.ProducerLoad(y, [iv.var for iv in op.axis]))
        picked = E.Call(src.dtype, "if_then_else", (hit, src, E.FloatImm(0.0, src.dtype)))
        return [(picked, body.condition, domain)]
    raise DefinitionError(f"te.gradient: {op.name} reduces with the reducer {comb.name}; only sum, max and "
                          "min reductions are differentiable")


def _groups(value: E.PrimExpr, x: Tensor) -> list[tuple[E.PrimExpr, ...]]:
    """The distinct index tuples at which ``value`` reads ``x``."""
    keys: dict[StructKey, tuple[E.PrimExpr, ...]] = {}
    for load in collect(value, lambda n: isinstance(n, E.ProducerLoad) and n.producer is x):
        keys.setdefault(StructKey(load.indices), load.indices)
    return list(keys.values())


def _contribution(y: Tensor, adj_y: Tensor, x: Tensor, prefix, job, name: str) -> Tensor:
    """``sum`` over ``y``'s points reading ``x`` at ``indices`` of ``y``'s adjoint times ``d``."""
    (_, cond, domain), indices, d = job
    npre = len(prefix)

    def body(*pj):
        p, j = pj[:npre], pj[npre:]
        ana = Analyzer()
        for v, n in zip(pj, tuple(prefix) + x.shape):
            ana.bind(v, E.Range(0, n))
        for iv in domain:
            ana.bind(iv.var, iv.dom)
        sol = solve(indices, list(j), list(domain), ana)
        fresh = {iv.var: R.reduce_axis(iv.dom, name=iv.var.name) for iv in sol.remaining}
        rename = {v: iv.var for v, iv in fresh.items()}
        vmap = {**{v: substitute(x, rename) for v, x in sol.values.items()}, **rename}
        load = E.ProducerLoad(adj_y, list(p) + [iv.var for iv in y.op.axis])
        for iv in fresh.values():
            ana.bind(iv.var, iv.dom)
        val = clamp_reads(substitute(mul(load, d), vmap), ana)
        guard = E.all_(*[substitute(c, rename) for c in sol.conditions], substitute(cond, vmap))
        if fresh:
            return R.sum(val, axis=list(fresh.values()), where=guard)
        if isinstance(guard, E.IntImm):
            return val if guard.value else E.FloatImm(0.0, val.dtype)
        return E.Call(val.dtype, "if_then_else", (guard, val, E.FloatImm(0.0, val.dtype)))

    return compute(tuple(prefix) + x.shape, body, name=name)


def _adjoint(x: Tensor, consumers: list[Tensor], adj: dict[Tensor, Tensor], prefix) -> Tensor:
    jobs = []
    for y in consumers:
        for term in _terms(y):
            for indices in _groups(term[0], x):
                key = StructKey(indices)
                d = derivative(term[0], lambda ld, key=key: ld.producer is x and StructKey(ld.indices) == key)
                if d is not None:
                    jobs.append((y, (term, indices, d)))
    one = len(jobs) == 1
    parts = [_contribution(y, adj[y], x, prefix, job, f"{x.name}.grad" + ("" if one else f".{k}"))
             for k, (y, job) in enumerate(jobs)]
    shape = tuple(prefix) + x.shape
    if not parts:
        return compute(shape, lambda *a: E.FloatImm(0.0, x.dtype), name=f"{x.name}.grad")
    if len(parts) == 1:
        return parts[0]

    def total(*a):
        out = parts[0][a]
        for t in parts[1:]:
            out = E.add(out, t[a])
        return out

    return compute(shape, total, name=f"{x.name}.grad")


def gradient(output: Tensor, inputs: Sequence[Tensor] | Tensor, head: Tensor | None = None) -> list[Tensor]:
    """The adjoint of each of ``inputs``: ``head`` (prefix + output.shape; identity when None)
    times the Jacobian of ``output`` with respect to it, as new tensors of shape prefix + input.shape."""
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if not isinstance(output, Tensor):
        raise DefinitionError(f"te.gradient: output must be a tensor, got {output!r}")
    for t in inputs:
        if not isinstance(t, Tensor):
            raise DefinitionError(f"te.gradient: inputs must be tensors, got {t!r}")
        if not t.dtype.is_float:
            raise DefinitionError(f"te.gradient: input {t.name} is {t.dtype}; only floating-point tensors have gradients")
    if not output.dtype.is_float:
        raise DefinitionError(f"te.gradient: the output {output.name} is {output.dtype}; it must be floating point")
    head = _check_head(output, head)
    prefix = head.shape[:head.ndim - output.ndim]
    order = _post_order(output)
    wanted = {id(t) for t in inputs}
    needed: set[int] = set()  # tensors through which the output depends on an input
    for t in order:
        if id(t) in wanted or any(id(s) in needed for s in t.op.input_tensors()):
            needed.add(id(t))
    adj: dict[Tensor, Tensor] = {output: head}
    for x in reversed(order[:-1]):
        if id(x) not in needed:
            continue
        consumers = [y for y in order if id(y) in needed and y in adj and x in y.op.input_tensors()]
        adj[x] = _adjoint(x, consumers, adj, prefix)
    out = []
    for t in inputs:
        if t in adj:
            out.append(adj[t])
        else:
            out.append(compute(tuple(prefix) + t.shape, lambda *a, t=t: E.FloatImm(0.0, t.dtype), name=f"{t.name}.grad"))
    return out


__all__ = ["gradient"]

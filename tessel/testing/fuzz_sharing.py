"""The fuzzer's loop-sharing path: nvFuser-shaped programs x position primitives in every mode.

``python -m tessel.testing.fuzz --sharing --cases 3000`` draws, with seeds of its own (the
general path's fixed-seed examples are unchanged), the programs where stages share loops
without one being attached inside the other: two reductions of one producer over the same axis
(nvFuser's ReductionMultiConsumer, a reduction loop shared with the init outside it), a producer
broadcast along a new axis into a fused and split output beside a second output
(AdvancedComputeAt7/8), broadcast chains into fused loops (SimpleBCast, ComplexBCast: broadcast
forwarding), and a reduction broadcast back onto its producer (ComputeWith1, GetMaxPosAll). On
each: splits, fuses and reorders of the outputs, compute_at by position in every mode at any
later stage, propagation (both directions, bounded), inline_at, inline_most (uninlinable loops
too), inline_all_at, compute_with at any position with any reader, parallelize_all_like and
compute_root; then lowered, built and checked against NumPy on random data at awkward sizes as
every fuzzed case is (:func:`.fuzz.run_example`).
"""

from __future__ import annotations

from . import choices as st
from .fuzz_programs import FACTORS, Program
from .fuzz_schedules import _stage

SIZES = (1, 2, 3, 5, 7, 10, 13, 17, 33)
FAMILIES = ("two_reductions", "two_outputs", "bcast_chain", "with_rows")


def build_sharing(draw, prog: Program) -> None:
    """One program of a family above, at random sizes, with its NumPy twin."""
    n, m = draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES))
    prog.data(f"N, M = {n}, {m}")
    family = draw(st.sampled_from(FAMILIES))
    if family == "two_reductions":
        op2, op3 = draw(st.sampled_from(["max", "min", "sum"])), draw(st.sampled_from(["max", "min", "sum"]))
        both = draw(st.booleans())  # both reductions outputs (no common consumer), or summed
        prog.run(f"A = te.placeholder(({n}, {m}), name='A')")
        prog.run("B = te.compute(A.shape, lambda i, j: A[i, j] * 0.5 + 0.25, name='B')")
        prog.run(f"r2, r3 = te.reduce_axis((0, {m}), name='r2'), te.reduce_axis((0, {m}), name='r3')")
        prog.run(f"C = te.compute(({n},), lambda i: te.{op2}(B[i, r2], axis=r2), name='C')")
        prog.run(f"D = te.compute(({n},), lambda i: te.{op3}(B[i, r3] * 2.0, axis=r3), name='D')")
        prog.data(f"a = rand({n}, {m})")
        prog.data("rb = a * np.float32(0.5) + np.float32(0.25)")
        prog.data(f"rc, rd = rb.{op2}(axis=1), (rb * np.float32(2)).{op3}(axis=1)")
        names, outs = ["B", "C", "D"], ["C", "D"]
        if not both:
            prog.run("E = te.compute(C.shape, lambda i: C[i] - D[i], name='E')")
            prog.data("re = rc - rd")
            names, outs = [*names, "E"], ["E"]
        prog.refs.update(A="a", B="rb", C="rc", D="rd", E="re")
    elif family == "two_outputs":
        prog.run(f"A, G = te.placeholder(({n},), name='A'), te.placeholder(({n},), name='G')")
        prog.run(f"H = te.placeholder(({n}, {m}), name='H')")
        prog.run("B = te.compute(A.shape, lambda i: A[i] + 1.0, name='B')")
        prog.run("C = te.compute(A.shape, lambda i: G[i] + 3.0, name='C')")
        prog.run("D = te.compute(A.shape, lambda i: B[i] + C[i], name='D')")
        prog.run(f"E = te.compute(({n}, {m}), lambda i, j: B[i], name='E')")
        prog.run("F = te.compute(H.shape, lambda i, j: E[i, j] * H[i, j], name='F')")
        prog.data(f"a, g, h = rand({n}), rand({n}, seed=1), rand({n}, {m}, seed=2)")
        prog.data("rd, rf = a + 1 + g + 3, (a + 1)[:, None] * h")
        prog.inputs += ["G", "H"]
        prog.refs.update(A="a", G="g", H="h", D="rd", F="rf")
        names, outs = ["B", "C", "D", "E", "F"], ["D", "F"]
    elif family == "bcast_chain":
        k = draw(st.sampled_from((1, 2, 4)))
        prog.run(f"A, H = te.placeholder(({m},), name='A'), te.placeholder(({n}, {m}, {k}), name='H')")
        prog.run("B = te.compute(A.shape, lambda j: A[j] / 2.0, name='B')")
        prog.run(f"C = te.compute(({m}, {k}), lambda j, l: B[j] + l, name='C')")
        prog.run(f"D = te.compute(({n}, {m}, {k}), lambda i, j, l: C[j, l], name='D')")
        prog.run("E = te.compute(H.shape, lambda i, j, l: D[i, j, l] + H[i, j, l], name='E')")
        prog.data(f"a, h = rand({m}), rand({n}, {m}, {k}, seed=1)")
        prog.data(f"re = ((a / 2)[:, None] + np.arange({k}, dtype=np.float32)[None])[None] + h")
        prog.inputs.append("H")
        prog.refs.update(A="a", H="h", E="re")
        names, outs = ["B", "C", "D", "E"], ["E"]
    else:  # with_rows: ComputeWith1's fusion
        prog.run(f"A = te.placeholder(({n}, {m}), name='A')")
        prog.run("B = te.compute(A.shape, lambda i, j: A[i, j] * 1.5, name='B')")
        prog.run(f"k = te.reduce_axis((0, {m}), name='k')")
        prog.run(f"C = te.compute(({n},), lambda i: te.sum(B[i, k], axis=k), name='C')")
        prog.run("D = te.compute(A.shape, lambda i, j: C[i], name='D')")
        prog.run("E = te.compute(A.shape, lambda i, j: D[i, j] - B[i, j], name='E')")
        prog.data(f"a = rand({n}, {m})")
        prog.data("re = (a * np.float32(1.5)).sum(axis=1)[:, None] - a * np.float32(1.5)")
        prog.refs.update(A="a", E="re")
        names, outs = ["B", "C", "D", "E"], ["E"]
    prog.inputs.insert(0, "A")
    prog.outputs = outs
    prog.computed = names
    prog.stage_names = list(names)
    prog.run(f"s = te.create_schedule([{', '.join(t + '.op' for t in outs)}])")
    if family in ("two_outputs", "bcast_chain") and draw(st.booleans()):  # one output's loops fused
        out = "F" if family == "two_outputs" else "E"  # (AdvancedComputeAt7, ComplexBCast1)
        prog.attempt(f"_jo, _ = s[{out}].split({out}.op.axis[1], factor={draw(st.sampled_from([1, 2, 3]))})\n"
                     f"_f = s[{out}].fuse({out}.op.axis[0], _jo)\n"
                     f"s[{out}].split(_f, factor={draw(st.sampled_from([2, 4, 8, 16]))})")
        if family == "two_outputs" and draw(st.booleans()):  # t1 at t7's outer loops: t4 must follow
            mode = draw(st.sampled_from(["standard", "best_effort", "most_inlined"]))
            prog.attempt(f"s[B].compute_at(s[F], {draw(st.integers(1, 2))}, mode={mode!r})")


def apply_sharing_primitive(draw, prog: Program) -> None:
    """One step: mostly position primitives (every mode, every later stage), compute_with, and
    the loop changes of the outputs that make stages share loops through fuses and splits."""
    names = [t for t in prog.stage_names if _stage(prog, t).attach_type != "inline"]
    name = draw(st.sampled_from(names))
    stage = _stage(prog, name)
    n = len(stage.leaf_iter_vars)
    lv = f"s[{name}].leaf_iter_vars"
    what = draw(st.sampled_from(["compute_at"] * 4 + ["compute_with"] * 4 + [
        "split", "split", "fuse", "reorder", "propagate", "inline_most", "inline_at", "inline_all_at",
        "parallelize_all_like", "compute_root", "max_position"]))
    later = [t for t in names if t != name]
    if what == "compute_at" and later:
        c = draw(st.sampled_from(later))
        cn = len(_stage(prog, c).leaf_iter_vars)
        mode = draw(st.sampled_from(["standard", "best_effort", "most_inlined"]))
        prog.attempt(f"s[{name}].compute_at(s[{c}], {draw(st.integers(-cn - 1, cn))}, mode={mode!r})")
    elif what == "compute_with":
        reader = draw(st.sampled_from(["", *[f", s[{t}]" for t in later]]))
        pos = draw(st.integers(1, n)) if draw(st.integers(0, 3)) else draw(st.integers(-n - 1, 0))
        prog.attempt(f"s[{name}].compute_with({pos}{reader})")
    elif what == "split":
        how = draw(st.sampled_from(["factor", "nparts"]))
        prog.attempt(f"s[{name}].split({lv}[{draw(st.integers(0, n - 1))}], {how}={draw(st.sampled_from(FACTORS))})")
    elif what == "fuse" and n >= 2:
        k = draw(st.integers(0, n - 2))
        if stage.leaf_iter_vars[k].is_reduce == stage.leaf_iter_vars[k + 1].is_reduce:
            prog.attempt(f"s[{name}].fuse({lv}[{k}], {lv}[{k + 1}])")
    elif what == "reorder" and n >= 2:
        prog.attempt(f"s[{name}].reorder(*[{lv}[p] for p in {list(draw(st.permutations(range(n))))}])")
    elif what == "propagate":
        direction = draw(st.sampled_from(["", ", direction='backward'", ", direction='forward'"]))
        prog.attempt(f"s.propagate({name}, {draw(st.integers(-n - 1, n))}{direction})")
    elif what == "inline_most":
        unin = draw(st.sampled_from(["", f"uninlinable=[{lv}[-1]]"]))
        prog.attempt(f"s.inline_most({unin})")
    elif what == "inline_at":
        prog.attempt(f"s[{name}].inline_at({draw(st.integers(-n - 1, n))}, best_effort={draw(st.booleans())})")
    elif what == "inline_all_at":
        prog.attempt(f"s.inline_all_at({name}, {draw(st.integers(-n - 1, n))}, best_effort=True)")
    elif what == "parallelize_all_like":
        prog.attempt(f"s[{name}].parallel({lv}[0])\ns.parallelize_all_like({name})")
    elif what == "compute_root" and stage.attach_type == "scope":
        prog.attempt(f"s[{name}].compute_root()")
    elif what == "max_position":
        prog.attempt(f"s.max_position({name})")


__all__ = ["FAMILIES", "apply_sharing_primitive", "build_sharing"]

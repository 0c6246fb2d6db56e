"""The fuzzer's schedules: random primitives applied to a :class:`~.fuzz_programs.Program`.

TE primitives (split by factor or nparts, non-divisible and larger than the extent included;
fuse, reorder, tile, compute_at at a loop of a reader, compute_inline, compute_root,
vectorize/unroll, parallel, pragma, set_scope, cache_read, cache_write, rfactor), seed 003's
position primitives (compute_at by position in every mode, propagate, inline_at, inline_most,
inline_all_at), seed 004's commands (shift, skew, reverse, interchange, after and before) and
the storage commands (store_in, storage_fold). A primitive tessel refuses is left out of the
program, unless the refusal proposes a fix, which is then applied instead (and must give the
right values, as every accepted schedule must).
"""

from __future__ import annotations

from ..schedule.kinds import INLINE, SCOPE
from . import choices as st
from .fuzz_programs import FACTORS, Program


def _stage(prog: Program, name: str):
    return prog.ns["s"][prog.ns[name]]


def _readers(prog: Program, name: str) -> list[str]:
    """Schedulable stages whose current operation reads ``name``'s current tensor."""
    s = prog.ns["s"]
    mine = _stage(prog, name)
    out = []
    for other in prog.stage_names:
        st_ = _stage(prog, other)
        if st_ is mine or st_.attach_type == INLINE:
            continue
        if any(s.stage_map.get(t.op) is mine for t in st_.op.input_tensors()):
            out.append(other)
    return out


def apply_position_primitive(draw, prog: Program, name: str) -> None:
    """seed 003's primitives: compute_at by position (any mode, any later stage), propagation
    from a stage, inline_at, inline_most and inline_all_at."""
    stage = _stage(prog, name)
    n = len(stage.leaf_iter_vars)
    later = [t for t in prog.stage_names if t != name and _stage(prog, t).attach_type != INLINE]
    what = draw(st.sampled_from(["compute_at", "compute_at", "compute_at", "propagate", "inline_at",
                                 "inline_most", "inline_all_at"]))
    if what == "compute_at" and later:
        c = draw(st.sampled_from(later))
        cn = len(_stage(prog, c).leaf_iter_vars)
        pos = draw(st.integers(-cn - 1, cn))
        mode = draw(st.sampled_from(["standard", "best_effort", "most_inlined"]))
        prog.attempt(f"s[{name}].compute_at(s[{c}], {pos}, mode={mode!r})")
    elif what == "propagate":
        prog.attempt(f"s.propagate({name}, {draw(st.integers(-n - 1, n))})")
    elif what == "inline_at":
        prog.attempt(f"s[{name}].inline_at({draw(st.integers(-n - 1, n))}, best_effort={draw(st.booleans())})")
    elif what == "inline_most":
        prog.attempt("s.inline_most()")
    elif what == "inline_all_at":
        prog.attempt(f"s.inline_all_at({name}, {draw(st.integers(-n - 1, n))}, best_effort=True)")


SKEWS = ((1, 1), (2, 1), (1, 2), (1, -1), (3, 2), (0, 1))


def apply_command(draw, prog: Program, name: str, stats: dict) -> None:
    """seed 004's commands: shift, skew, reverse, interchange, after/before at a loop or the
    root. tessel checks each against the exact dependences; a refused one is replaced by the
    fix tessel proposes, when it proposes one."""
    stage = _stage(prog, name)
    n = len(stage.leaf_iter_vars)
    lv = f"s[{name}].leaf_iter_vars"
    what = draw(st.sampled_from(["shift", "skew", "skew", "reverse", "interchange", "after", "after", "before"]))
    k = draw(st.integers(0, n - 1))
    if what == "shift":
        line = f"s[{name}].shift({lv}[{k}], {draw(st.sampled_from([-2, -1, 1, 2, 3]))})"
    elif what == "reverse":
        line = f"s[{name}].reverse({lv}[{k}])"
    elif what in ("skew", "interchange") and n >= 2:
        k = min(k, n - 2)
        if what == "skew":
            a, b = draw(st.sampled_from(SKEWS))
            line = f"s[{name}].skew({lv}[{k}], {lv}[{k + 1}], {a}, {b})"
        else:
            line = f"s[{name}].interchange({lv}[{k}], {lv}[{draw(st.integers(0, n - 1))}])"
    elif what in ("after", "before"):
        others = [t for t in prog.stage_names if t != name]
        producers = [t for t in others if name in _readers(prog, t)]
        if not others:
            return
        # mostly after a stage it reads (a fusion to repair), now and then any other
        other = draw(st.sampled_from(producers if producers and draw(st.integers(0, 2)) else others))
        level = "None" if draw(st.integers(0, 3)) == 0 else f"{lv}[{k}]"
        line = f"s[{name}].{what}(s[{other}], {level})"
    else:
        return
    prog.attempt_or_fix(line, stats)


def apply_storage_command(draw, prog: Program, name: str) -> None:
    """store_in into new storage (the same shape, transposed or reversed) or storage_fold of a
    stage whose values no caller sees; only the legal ones must be accepted."""
    stage = _stage(prog, name)
    shape = prog.shapes.get(name)
    if stage.is_output or shape is None or name in prog.in_place or stage.op.num_outputs != 1:
        return
    lv = f"s[{name}].leaf_iter_vars"
    if draw(st.integers(0, 2)) == 0:
        k = draw(st.integers(0, len(stage.leaf_iter_vars) - 1))
        prog.attempt(f"s[{name}].storage_fold({lv}[{k}], {draw(st.sampled_from([1, 2, 3, 4]))})")
        return
    how = draw(st.sampled_from(["same", "flip"] + (["transpose"] if len(shape) == 2 else [])))
    dims = [d.text for d in shape]
    vs = ", ".join("ij"[: len(shape)])
    if how == "transpose":
        dims, index = dims[::-1], "(j, i)"
    elif how == "flip":
        index = f"({dims[0]} - 1 - i{', j' if len(shape) == 2 else ','})"
    else:
        index = f"({vs}{',' if len(shape) == 1 else ''})"
    buf = f"{name}S{len(prog.lines)}"
    prog.run(f"{buf} = te.placeholder(({', '.join(dims)}{',' if len(dims) == 1 else ''}), name='{buf}', "
             f"dtype={name}.dtype)")
    prog.attempt(f"s[{name}].store_in({buf}, lambda {vs}: {index})")


def apply_primitive(draw, prog: Program, positions: bool = False, commands: dict | None = None,
                    storage: bool = False) -> None:
    name = draw(st.sampled_from(prog.stage_names))
    stage = _stage(prog, name)
    if stage.attach_type == INLINE:
        return
    if storage and draw(st.integers(0, 5)) == 0:
        apply_storage_command(draw, prog, name)
        return
    if positions and draw(st.integers(0, 2)) == 0:
        apply_position_primitive(draw, prog, name)
        return
    if commands is not None and draw(st.integers(0, 1)) == 0:
        apply_command(draw, prog, name, commands)
        return
    leaves = stage.leaf_iter_vars
    n = len(leaves)
    lv = f"s[{name}].leaf_iter_vars"
    what = draw(st.sampled_from([
        "split", "split", "split", "fuse", "reorder", "reorder", "compute_at", "compute_at", "compute_at",
        "inline", "vectorize", "unroll", "parallel", "cache_read", "cache_write", "rfactor", "tile",
        "compute_root", "pragma", "set_scope",
    ]))
    if what == "split":
        k = draw(st.integers(0, n - 1))
        f = draw(st.sampled_from(FACTORS))
        how = draw(st.sampled_from(["factor", "factor", "nparts"]))
        prog.attempt(f"s[{name}].split({lv}[{k}], {how}={f})")
    elif what == "fuse" and n >= 2:
        k = draw(st.integers(0, n - 2))
        if leaves[k].is_reduce == leaves[k + 1].is_reduce:
            prog.attempt(f"s[{name}].fuse({lv}[{k}], {lv}[{k + 1}])")
    elif what == "reorder" and n >= 2:
        perm = draw(st.permutations(range(n)))
        m = draw(st.integers(2, n))
        sub = list(perm[:m])
        prog.attempt(f"s[{name}].reorder(*[{lv}[p] for p in {sub}])")
    elif what == "compute_at":
        if stage.is_output:
            return
        readers = _readers(prog, name)
        if not readers:
            return
        if draw(st.integers(0, 4)) == 0:  # any later stage, not just a direct reader
            later = [t for t in prog.stage_names if t != name and _stage(prog, t).attach_type != INLINE]
            readers = later or readers
        c = draw(st.sampled_from(readers))
        cn = len(_stage(prog, c).leaf_iter_vars)
        k = draw(st.integers(0, cn - 1))
        prog.attempt(f"s[{name}].compute_at(s[{c}], s[{c}].leaf_iter_vars[{k}])")
    elif what == "inline":
        if not stage.is_output and not stage.op.is_reduction:
            prog.attempt(f"s[{name}].compute_inline()")
    elif what in ("vectorize", "unroll"):
        # mostly the innermost loop; now and then another one (legal, if less useful)
        k = n - 1 if draw(st.integers(0, 3)) else draw(st.integers(0, n - 1))
        if what == "unroll" or not leaves[k].is_reduce:
            prog.attempt(f"s[{name}].{what}({lv}[{k}])")
    elif what == "parallel":
        outer = []
        for k, iv in enumerate(leaves):
            if iv.is_reduce:
                break
            outer.append(k)
        if draw(st.integers(0, 4)) == 0:  # any data-parallel loop, also one inside a reduction loop
            outer = [k for k, iv in enumerate(leaves) if not iv.is_reduce]
        if outer:
            k = draw(st.sampled_from(outer))
            prog.attempt(f"s[{name}].parallel({lv}[{k}])")
    elif what == "cache_read":
        src = draw(st.sampled_from([name, *prog.inputs]))  # a computed tensor or an input
        readers = _readers(prog, src)
        if readers and draw(st.integers(0, 1)) == 0:
            c = draw(st.sampled_from(readers))
            new = f"{src}R{len(prog.stage_names)}"
            scope = draw(st.sampled_from(["local", "shared"]))
            if prog.attempt(f"{new} = s.cache_read({src}, '{scope}', [s[{c}]])"):
                prog.stage_names.append(new)
    elif what == "tile" and n >= 2:
        k = draw(st.integers(0, n - 2))
        fx, fy = draw(st.sampled_from(FACTORS)), draw(st.sampled_from(FACTORS))
        prog.attempt(f"s[{name}].tile({lv}[{k}], {lv}[{k + 1}], {fx}, {fy})")
    elif what == "compute_root":
        if stage.attach_type == SCOPE:
            prog.attempt(f"s[{name}].compute_root()")
    elif what == "pragma":  # unrolls the small loops of a nest; the other pragmas change no value
        k = draw(st.integers(0, n - 1))
        steps = draw(st.sampled_from([1, 4, 16, 64]))
        prog.attempt(f"s[{name}].pragma({lv}[{k}], 'auto_unroll_max_step', {steps})")
    elif what == "set_scope":
        if not stage.is_output:
            prog.attempt(f"s[{name}].set_scope('{draw(st.sampled_from(['local', 'shared', 'global']))}')")
    elif what == "cache_write":
        if draw(st.integers(0, 2)) == 0:
            new = f"{name}W{len(prog.stage_names)}"
            if prog.attempt(f"{new} = s.cache_write({name}, 'local')"):
                prog.stage_names.append(new)
    elif what == "rfactor":
        red = [k for k, iv in enumerate(leaves) if iv.is_reduce]
        if red and draw(st.integers(0, 1)) == 0:
            k = draw(st.sampled_from(red))
            new = f"{name}F{len(prog.stage_names)}"
            fa = draw(st.sampled_from(["", "", ", factor_axis=1", ", factor_axis=-1"]))
            # a reduction with several outputs (argmax) gives one tensor of B.rf per output
            if prog.attempt(f"{new} = s.rfactor({name}, {lv}[{k}]{fa})\n"
                            f"{new} = {new}[0] if isinstance({new}, tuple) else {new}"):
                prog.stage_names.append(new)



"""Config spaces: the knobs of a schedule template and one point of them (AutoTVM's template API).

A template is a function that builds a schedule while asking a config object for its choices:
``cfg.define_split("tile_x", x, num_outputs=2)`` declares a knob, ``cfg["tile_x"].apply(s, C,
x)`` applies the choice. Running the template once with a :class:`ConfigSpace` collects the
knobs (each ``cfg[name]`` answers the knob's first choice meanwhile, so the template runs
through); running it with a :class:`ConfigEntity` builds the schedule of one point. A point is
an index into the product of the knobs (mixed radix, the first knob varying fastest), so a
config is an integer, a JSON record, or a vector of numbers for the cost model alike.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import NotOfferedError, TuneError


class VirtualAxis:
    """A loop's name and extent as the space knows it (a schedule axis, or just a length)."""

    def __init__(self, var: Any, name: str | None = None):
        if isinstance(var, int):
            self.length, self.name = var, name or f"axis{var}"
        elif isinstance(var, VirtualAxis):
            self.length, self.name = var.length, var.name
        else:
            extent = getattr(getattr(var, "dom", None), "extent", None)
            value = getattr(extent, "value", extent)
            if not isinstance(value, int):
                raise TuneError(f"cfg.axis({getattr(var, 'name', var)!r}): the space needs a loop of constant "
                                f"extent; give its length as an int instead")
            self.length, self.name = int(value), name or getattr(var, "name", "axis")

    def __repr__(self) -> str:
        return f"VirtualAxis({self.name}, {self.length})"


def _axes(axes) -> list[VirtualAxis]:
    return [a if isinstance(a, VirtualAxis) else VirtualAxis(a) for a in axes]


# ---- entities: one choice of one knob -------------------------------------------------------


class SplitEntity:
    """A split into ``len(size)`` loops, outermost first; ``size[0] == -1`` means "the rest"."""

    kind = "sp"

    def __init__(self, size: Sequence[int]):
        self.size = [int(v) for v in size]

    def apply(self, sch, op, axis) -> list:
        """Split ``axis`` of ``op``'s stage as chosen: the loops, outermost first."""
        out = []
        for i in range(1, len(self.size)):
            outer, axis = sch[op].split(axis, factor=math.prod(self.size[i:]))
            out.append(outer)
        return [*out, axis]

    @property
    def value(self):
        return self.size

    def __eq__(self, other) -> bool:
        return isinstance(other, SplitEntity) and other.size == self.size

    def __repr__(self) -> str:
        return f"sp{self.size}"


class ReorderEntity:
    """A permutation of the template's axes: ``perm[i]`` is the axis placed at position i."""

    kind = "re"

    def __init__(self, perm: Sequence[int]):
        self.perm = [int(v) for v in perm]

    def apply(self, sch, op, axes) -> list:
        ordered = [axes[i] for i in self.perm]
        sch[op].reorder(*ordered)
        return ordered

    @property
    def value(self):
        return self.perm

    def __eq__(self, other) -> bool:
        return isinstance(other, ReorderEntity) and other.perm == self.perm

    def __repr__(self) -> str:
        return f"re{self.perm}"


class AnnotateEntity:
    """One annotation per axis: ``"none"``, ``"unroll"``, ``"vec"``, ``"parallel"``."""

    kind = "an"

    def __init__(self, anns: Sequence[str]):
        self.anns = [str(a) for a in anns]

    def apply(self, sch, op, axes, axis_lens=None, max_unroll=None, vec_size=None, cfg=None, source=None):
        """Annotate ``axes``; an unroll longer than ``max_unroll`` or a vector whose length is not in
        ``vec_size`` makes ``cfg`` invalid (the measurement skips it), as in AutoTVM."""
        for i, (axis, ann) in enumerate(zip(axes, self.anns, strict=False)):
            length = axis_lens[i] if axis_lens is not None else None
            if ann == "none":
                continue
            if ann == "unroll":
                if max_unroll is not None and length is not None and length > max_unroll:
                    if cfg is not None:
                        cfg.raise_error(f"unroll of a loop of {length} iterations exceeds max_unroll={max_unroll}")
                    continue
                sch[op].unroll(axis)
            elif ann == "vec":
                sizes = vec_size if isinstance(vec_size, list | tuple) else [vec_size]
                if vec_size is not None and length is not None and length not in sizes:
                    if cfg is not None:
                        cfg.raise_error(f"vector of {length} lanes not among vec_size={vec_size}")
                    continue
                sch[op].vectorize(axis)
            elif ann == "parallel":
                sch[op].parallel(axis)
            else:
                raise NotOfferedError(f"annotation {ann!r}: tessel's tuner annotates loops with none, unroll, vec "
                                      f"or parallel; bind GPU threads in the template itself")
        return list(axes)

    @property
    def value(self):
        return self.anns

    def __eq__(self, other) -> bool:
        return isinstance(other, AnnotateEntity) and other.anns == self.anns

    def __repr__(self) -> str:
        return f"an{self.anns}"


class OtherOptionEntity:
    """A knob's chosen value (``cfg["unroll"].val``)."""

    kind = "ot"

    def __init__(self, val):
        self.val = val

    @property
    def value(self):
        return self.val

    def __eq__(self, other) -> bool:
        return isinstance(other, OtherOptionEntity) and other.val == self.val

    def __repr__(self) -> str:
        return f"ot{self.val!r}"


ENTITIES: dict[str, type] = {c.kind: c for c in (SplitEntity, ReorderEntity, AnnotateEntity, OtherOptionEntity)}


# ---- subspaces: every choice of one knob ----------------------------------------------------


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _split_choices(length: int, policy: str, num_outputs: int, max_factor: int | None,
                   candidate) -> list[list[int]]:
    """Every split of a loop of ``length`` into ``num_outputs`` loops, as inner factors (outer first)."""
    if policy == "candidate":
        if not candidate:
            raise TuneError("define_split(policy='candidate') needs candidate=[[-1, f1, ...], ...]")
        return [list(c)[1:] for c in candidate]
    if policy == "factors":
        pool = _divisors(length)
    elif policy == "power2":
        pool = [1 << k for k in range(max(length, 1).bit_length())]
    elif policy == "verbose":
        pool = sorted(set(_divisors(length)) | {1 << k for k in range(max(length, 1).bit_length())})
    else:
        raise TuneError(f"define_split: unknown policy {policy!r}; use factors, power2, verbose or candidate")
    if max_factor is not None:
        pool = [f for f in pool if f <= max_factor]
    out = []
    for inner in itertools.product(pool, repeat=num_outputs - 1):
        prod = math.prod(inner)
        if prod <= length and (policy != "factors" or length % prod == 0):
            out.append(list(inner))
    return out


class SplitSpace:
    def __init__(self, axes, policy: str = "factors", num_outputs: int = 2, max_factor: int | None = None,
                 filter: Callable | None = None, candidate=None, no_tail: bool = False):
        self.axis = _axes(axes)[0]
        self.num_output = int(num_outputs)
        if self.num_output < 1:
            raise TuneError(f"define_split of {self.axis.name}: num_outputs must be at least 1")
        length = self.axis.length
        choices = _split_choices(length, policy, self.num_output, max_factor, candidate)
        if no_tail:
            choices = [c for c in choices if length % math.prod(c) == 0]
        self.entities = [SplitEntity([-1, *c]) for c in choices]
        if filter is not None:
            self.entities = [e for e in self.entities if filter(e)]
        if not self.entities:
            raise TuneError(f"define_split of {self.axis.name} (length {length}, policy {policy!r}): no split "
                            "satisfies the filter; loosen it")

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, i: int):
        return self.entities[i]


class ReorderSpace:
    def __init__(self, axes, policy: str = "identity", candidate=None, interval=None):
        self.axes = list(axes)
        n = len(self.axes)
        if policy == "identity":
            perms = [list(range(n))]
        elif policy == "all":
            perms = [list(p) for p in itertools.permutations(range(n))]
        elif policy == "interval_all":
            lo, hi = interval if interval is not None else (0, n)
            perms = [[*range(lo), *p, *range(hi, n)] for p in itertools.permutations(range(lo, hi))]
        elif policy == "candidate":
            if not candidate:
                raise TuneError("define_reorder(policy='candidate') needs candidate=[[axes in order], ...]")
            perms = [[_position(self.axes, a) for a in order] for order in candidate]
        else:
            raise NotOfferedError(f"define_reorder: policy {policy!r} is not offered; use identity, all, "
                                  "interval_all or candidate")
        self.entities = [ReorderEntity(p) for p in perms]

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, i: int):
        return self.entities[i]


def _position(axes: list, axis) -> int:
    for i, a in enumerate(axes):
        if a is axis or (isinstance(a, VirtualAxis) and isinstance(axis, VirtualAxis) and a.name == axis.name):
            return i
    raise TuneError(f"define_reorder candidate names an axis {getattr(axis, 'name', axis)!r} that is not "
                    "among the axes given")


_ANNOTATIONS = {
    "none": lambda n: [["none"] * n],
    "unroll": lambda n: [["unroll"] * n],
    "vec": lambda n: [["none"] * (n - 1) + ["vec"]],
    "parallel": lambda n: [["parallel"] + ["none"] * (n - 1)],
    "try_unroll": lambda n: [list(c) for c in itertools.product(["none", "unroll"], repeat=n)],
    "try_unroll_vec": lambda n: [[*c, last] for c in itertools.product(["none", "unroll"], repeat=n - 1)
                                 for last in ("none", "unroll", "vec")],
    "try_vec": lambda n: [["none"] * n, ["none"] * (n - 1) + ["vec"]],
    "try_parallel": lambda n: [["none"] * n, ["parallel"] + ["none"] * (n - 1)],
}


class AnnotateSpace:
    def __init__(self, axes, policy: str = "none", candidate=None):
        self.axes = list(axes)
        n = len(self.axes)
        if policy == "candidate":
            choices = [list(c) for c in (candidate or [])]
        elif policy in _ANNOTATIONS and n > 0:
            choices = _ANNOTATIONS[policy](n)
        else:
            raise NotOfferedError(f"define_annotate: policy {policy!r} is not offered; use one of "
                                  f"{', '.join(sorted(_ANNOTATIONS))} or candidate (on at least one axis)")
        self.entities = [AnnotateEntity(c) for c in choices]

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, i: int):
        return self.entities[i]


class OtherOptionSpace:
    def __init__(self, candidate: Sequence):
        if not candidate:
            raise TuneError("define_knob needs a non-empty list of candidate values")
        self.entities = [OtherOptionEntity(v) for v in candidate]

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, i: int):
        return self.entities[i]


# ---- the config objects a template sees ------------------------------------------------------


class _Config:
    """What every config answers: the define_* calls, ``cfg[name]``, flops and errors."""

    is_fallback = False

    def __init__(self) -> None:
        self._entity_map: dict[str, Any] = {}
        self.errors: list[str] = []
        self.flop = 0
        self.code_hash = None

    def axis(self, var, name: str | None = None) -> VirtualAxis:
        """An axis for ``define_split``/``define_reorder`` from a loop (or a plain length)."""
        return VirtualAxis(var, name)

    reduce_axis = axis

    def define_split(self, name: str, axis, policy: str = "factors", **kwargs) -> list[VirtualAxis]:
        """A knob choosing how to split ``axis`` (``num_outputs`` loops; policies factors, power2,
        verbose, candidate; ``max_factor``, ``filter``, ``no_tail``)."""
        self._define(name, lambda: SplitSpace([axis], policy, **kwargs))
        return [VirtualAxis(1, f"{name}.{i}") for i in range(int(kwargs.get("num_outputs", 2)))]

    def define_reorder(self, name: str, axes, policy: str = "identity", **kwargs) -> None:
        """A knob choosing an order of ``axes`` (identity, all, interval_all, candidate)."""
        self._define(name, lambda: ReorderSpace(axes, policy, **kwargs))

    def define_annotate(self, name: str, axes, policy: str = "none", **kwargs) -> None:
        """A knob choosing an annotation per axis (unroll, vec, parallel; try_unroll, try_unroll_vec ...)."""
        self._define(name, lambda: AnnotateSpace(axes, policy, **kwargs))

    def define_knob(self, name: str, candidate: Sequence) -> None:
        """A knob choosing one of ``candidate``; the template reads ``cfg[name].val``."""
        self._define(name, lambda: OtherOptionSpace(candidate))

    def _define(self, name: str, make: Callable) -> None:
        raise NotImplementedError

    def __getitem__(self, name: str):
        if name not in self._entity_map:
            raise TuneError(f"cfg[{name!r}]: the template defines no knob {name!r} (defined: "
                            f"{', '.join(self._entity_map) or 'none'}); call cfg.define_...({name!r}, ...) first")
        return self._entity_map[name]

    def __contains__(self, name: str) -> bool:
        return name in self._entity_map

    def add_flop(self, flop: float) -> None:
        """Flops of one run of the kernel, so measurements read as GFLOP/s."""
        self.flop += flop

    def raise_error(self, msg: str) -> None:
        """Mark this config invalid (measured as an error without being built)."""
        self.errors.append(msg)

    def valid(self) -> bool:
        return not self.errors

    def multi_filter(self, filter: Callable) -> None:
        """Restrict the space to configs for which ``filter(cfg)`` holds (a no-op on one config)."""


class ConfigSpace(_Config):
    """Every knob a template defines; ``len(space)`` configs, ``space.get(i)`` the i-th."""

    def __init__(self) -> None:
        super().__init__()
        self.space_map: dict[str, Any] = {}
        self._filters: list[Callable] = []

    def _define(self, name: str, make: Callable) -> None:
        if name not in self.space_map:
            self.space_map[name] = make()
            self._entity_map[name] = self.space_map[name][0]

    def multi_filter(self, filter: Callable) -> None:
        self._filters.append(filter)

    @property
    def dims(self) -> list[int]:
        """The number of choices of each knob, in definition order."""
        return [len(s) for s in self.space_map.values()]

    def __len__(self) -> int:
        return math.prod(self.dims)

    def point2knob(self, index: int) -> list[int]:
        """The choice of each knob at ``index`` (mixed radix, first knob fastest)."""
        out = []
        for d in self.dims:
            out.append(index % d)
            index //= d
        return out

    def knob2point(self, knob: Sequence[int]) -> int:
        index, scale = 0, 1
        for k, d in zip(knob, self.dims, strict=True):
            index += k * scale
            scale *= d
        return index

    def get(self, index: int) -> ConfigEntity:
        """The config at ``index``."""
        if not 0 <= index < len(self):
            raise TuneError(f"config index {index} is outside the space of {len(self)} configs")
        entities = {name: space[k] for (name, space), k in zip(self.space_map.items(), self.point2knob(index),
                                                                strict=True)}
        return ConfigEntity(index, self.code_hash, entities, self.flop)

    def is_index_valid(self, index: int) -> bool:
        """False for configs a ``multi_filter`` of the template excludes."""
        return all(f(self.get(index)) for f in self._filters)

    def __iter__(self):
        return (self.get(i) for i in range(len(self)))

    def __repr__(self) -> str:
        knobs = "\n".join(f"  {i:2d} {name}: {type(s).__name__}(len={len(s)})"
                          for i, (name, s) in enumerate(self.space_map.items()))
        return f"ConfigSpace (len={len(self)}):\n{knobs}"


class ConfigEntity(_Config):
    """One point of a space: the choice of every knob; the define_* calls only check the name."""

    def __init__(self, index: int, code_hash, entity_map: dict[str, Any], flop: float = 0):
        super().__init__()
        self.index = index
        self.code_hash = code_hash
        self._entity_map = dict(entity_map)
        self.flop = flop

    def _define(self, name: str, make: Callable) -> None:
        if name not in self._entity_map:
            raise TuneError(f"the template defines knob {name!r}, which this config does not hold (it holds "
                            f"{', '.join(self._entity_map)}): was the template changed after the log was written?")

    def get_flatten_feature(self) -> list[float]:
        """The knobs as numbers: log2 of split factors, permutations, annotation codes, option values."""
        out: list[float] = []
        for e in self._entity_map.values():
            if isinstance(e, SplitEntity):
                out += [math.log2(v) if v > 0 else 0.0 for v in e.size[1:]]
            elif isinstance(e, ReorderEntity):
                out += [float(v) for v in e.perm]
            elif isinstance(e, AnnotateEntity):
                out += [float(("none", "unroll", "vec", "parallel").index(a)) if a in ("none", "unroll", "vec",
                        "parallel") else -1.0 for a in e.anns]
            else:
                out.append(float(e.val) if isinstance(e.val, int | float | bool) else float(hash(str(e.val)) % 97))
        return out

    def get_other_option(self) -> dict:
        return {k: e.val for k, e in self._entity_map.items() if isinstance(e, OtherOptionEntity)}

    def to_json_dict(self) -> dict:
        return {"index": self.index, "code_hash": self.code_hash,
                "entity": [[k, e.kind, e.value] for k, e in self._entity_map.items()]}

    @staticmethod
    def from_json_dict(data: dict) -> ConfigEntity:
        try:
            entities = {name: ENTITIES[kind](value) for name, kind, value in data["entity"]}
            return ConfigEntity(int(data["index"]), data.get("code_hash"), entities)
        except (KeyError, TypeError, ValueError) as e:
            raise TuneError(f"a tuning record's config {data!r} is malformed ({e}); the log line is not one "
                            "tessel.tune wrote") from e

    def __eq__(self, other) -> bool:
        return isinstance(other, ConfigEntity) and other._entity_map == self._entity_map

    def __hash__(self) -> int:
        return hash(repr(self._entity_map))

    def __repr__(self) -> str:
        return f"{list(self._entity_map.items())},{self.code_hash},{self.index}"


class FallbackConfigEntity(ConfigEntity):
    """The config a template gets when no tuning record matches: every knob at a default choice
    (splits by 1, identity order, no annotation, a knob's first value); ``fallback_split`` picks
    splits near given sizes."""

    is_fallback = True

    def __init__(self) -> None:
        super().__init__(-1, None, {})
        self._spaces: dict[str, Any] = {}

    def _define(self, name: str, make: Callable) -> None:
        if name in self._entity_map:
            return
        space = make()
        self._spaces[name] = space
        if isinstance(space, SplitSpace):
            self._entity_map[name] = SplitEntity([-1] + [1] * (space.num_output - 1))
        elif isinstance(space, ReorderSpace | AnnotateSpace) and space.entities:
            kind = ReorderEntity if isinstance(space, ReorderSpace) else AnnotateEntity
            self._entity_map[name] = kind(list(range(len(space.axes))) if kind is ReorderEntity
                                          else ["none"] * len(space.axes))
        else:
            self._entity_map[name] = space[0]

    def fallback_split(self, name: str, constraints: Sequence[int]) -> None:
        """Choose for split ``name`` the split whose inner factors are the largest within
        ``constraints`` (one bound per output loop, the outermost's ignored)."""
        space = self._spaces.get(name)
        if not isinstance(space, SplitSpace):
            raise TuneError(f"fallback_split({name!r}): define_split({name!r}, ...) must come first")

        def fits(e: SplitEntity) -> bool:
            return all(v <= c for v, c in zip(e.size[1:], constraints[1:], strict=False))

        fitting = [e for e in space.entities if fits(e)] or space.entities
        self._entity_map[name] = max(fitting, key=lambda e: tuple(reversed(e.size[1:])))

    def __repr__(self) -> str:
        return f"fallback {list(self._entity_map.items())}"

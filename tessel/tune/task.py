"""Templates and tasks: a function that builds a schedule from a config, and that function
applied to concrete arguments.

``@template("name")`` registers a function ``f(*args) -> (schedule, tensors)`` that reads its
choices from :func:`get_config`. ``Task(f, args, target)`` runs it once with a
:class:`~tessel.tune.space.ConfigSpace` to collect the knobs (``task.config_space``), and
``task.instantiate(cfg)`` runs it with one config. The workload key (what a tuning record is
filed under) is the template's name and its arguments; the target key is the Target's text.
A function taking the config as its first parameter (``f(cfg, *args)``) is a template too.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import inspect
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import TuneError
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity, _Config

TEMPLATES: dict[str, Callable] = {}
_CURRENT: contextvars.ContextVar[_Config | None] = contextvars.ContextVar("tessel_tune_config", default=None)
# the history (apply_history_best) a template without an explicit config consults
DISPATCH: contextvars.ContextVar[Any] = contextvars.ContextVar("tessel_tune_dispatch", default=None)


def template(name: str | Callable, func: Callable | None = None):
    """Register a schedule template under ``name``: ``@template("matmul")`` (AutoTVM's
    ``autotvm.template``). Called outside tuning, the template builds with the best config of
    the history in force (:func:`~tessel.tune.records.apply_history_best`), else a fallback."""
    if callable(name):  # @template without a name
        return template(name.__name__, name)
    if func is None:
        return lambda f: template(name, f)

    def build(*args, **kwargs):
        if _CURRENT.get() is not None:
            return func(*args, **kwargs)
        cfg = _dispatched(name, args)
        with config_scope(cfg):
            return func(*args, **kwargs)

    build.template_name = name  # type: ignore[attr-defined]
    build.__wrapped__ = func  # type: ignore[attr-defined]
    build.__doc__ = func.__doc__
    build.__name__ = getattr(func, "__name__", name)
    TEMPLATES[name] = build
    return build


def _dispatched(name: str, args) -> _Config:
    history = DISPATCH.get()
    if history is not None:
        best = history.query_template(name, _arg_text(list(args)))
        if best is not None:
            return best
    return FallbackConfigEntity()


def get_config() -> _Config:
    """The config the running template reads its choices from."""
    cfg = _CURRENT.get()
    if cfg is None:
        return FallbackConfigEntity()
    return cfg


@contextlib.contextmanager
def config_scope(cfg: _Config) -> Iterator[_Config]:
    token = _CURRENT.set(cfg)
    try:
        yield cfg
    finally:
        _CURRENT.reset(token)


def _arg_text(arg) -> Any:
    """An argument as JSON data: numbers, strings, tuples, tensors by shape and dtype."""
    if isinstance(arg, bool | int | float | str) or arg is None:
        return arg
    if isinstance(arg, list | tuple):
        return [_arg_text(a) for a in arg]
    shape = getattr(arg, "shape", None)
    if shape is not None:
        return ["TENSOR", [_arg_text(getattr(d, "value", d)) for d in shape], str(getattr(arg, "dtype", ""))]
    raise TuneError(f"template argument {arg!r} ({type(arg).__name__}): a tuning task's arguments must be "
                    "numbers, strings, tuples of them or tensors, so its records can be found again")


def workload_key(name: str, args: Sequence, digest: str | None = None) -> str:
    """The stable key of a template applied to arguments (what records are filed under), with
    the digest of the computation it schedules when known (so an edited compute is a new workload)."""
    return json.dumps([name, _arg_text(list(args)), digest], separators=(",", ":"))


def compute_digest(tensors: Sequence) -> str:
    """A content key of the computation: the tensors' definitions as tessel-ir documents."""
    from ..ir.serialize import save_json

    h = hashlib.sha256()
    for t in tensors:
        h.update(save_json(t).encode())
    return h.hexdigest()[:16]


def _template_name(func: Callable) -> str:
    qual = getattr(func, "__qualname__", None) or type(func).__qualname__  # a partial or callable object has none
    return getattr(func, "template_name", None) or f"{getattr(func, '__module__', None) or 'template'}.{qual}"


def _takes_config(func: Callable) -> bool:
    """A plain function ``f(cfg, *args)`` (not registered) gets its config as first argument."""
    if hasattr(func, "template_name"):
        return False
    params = list(inspect.signature(func).parameters)
    return bool(params) and params[0] in ("cfg", "config")


class Task:
    """A template applied to arguments for one target: its config space and its instances."""

    def __init__(self, func: Callable | str, args: Sequence = (), target=None, sizes: Mapping | None = None):
        from ..target import as_target, resolve

        if isinstance(func, str):
            if func not in TEMPLATES:
                raise TuneError(f"no template is registered as {func!r} (registered: "
                                f"{', '.join(sorted(TEMPLATES)) or 'none'}); decorate it with @template({func!r})")
            func = TEMPLATES[func]
        if not callable(func):
            raise TuneError(f"tune: a template is a function f(cfg, *args) -> (schedule, [tensors]), a name "
                            f"registered with @template(name) or a Task; got {type(func).__name__}")
        self.func = func
        self.name = _template_name(func)
        self.args = tuple(args)
        self.target = resolve(as_target(target))
        self.config_space = ConfigSpace()
        _, tensors = self.instantiate(self.config_space)
        self.flop = self.config_space.flop
        self.sizes = representative_sizes(tensors, sizes, self.name)
        digest = compute_digest(tensors) + "".join(f"|{k}={v}" for k, v in sorted(self.sizes.items()))
        self.workload = workload_key(self.name, self.args, digest)

    @property
    def target_key(self) -> str:
        return str(self.target)

    def instantiate(self, cfg: _Config):
        """Run the template with ``cfg``: the schedule and the tensors the kernel takes."""
        inner = getattr(self.func, "__wrapped__", self.func)
        call = (cfg, *self.args) if _takes_config(self.func) else self.args
        _check_arguments(self.name, inner, call, self.args)
        with config_scope(cfg):
            out = inner(*call)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TuneError(f"template {self.name} must return (schedule, [tensors]), got {type(out).__name__}")
        return out

    def config(self, index: int) -> ConfigEntity:
        return self.config_space.get(index)

    def __repr__(self) -> str:
        return f"Task(func_name={self.name}, args={self.args}, target={self.target_key}, space={len(self.config_space)})"


REPRESENTATIVE_SIZE = 256  # what a symbolic size is bound to for measuring, unless given


def representative_sizes(tensors: Sequence, given: Mapping | None, name: str) -> dict[str, int]:
    """The value each symbolic size of the kernel's tensors takes while candidates are measured
    (a schedule is generic in its sizes; its speed is measured at some): ``given`` by name
    (``{"n": 1000}``, or by the ``te.var`` itself), else :data:`REPRESENTATIVE_SIZE`."""
    from ..ir.expr import Var
    from ..ir.functor import free_vars

    given = dict(given or {})
    by_name = {getattr(k, "name", k): v for k, v in given.items()}
    free = sorted({v.name for t in tensors for d in getattr(t, "shape", ()) for v in free_vars(d)
                   if isinstance(v, Var)})
    unknown = sorted(set(map(str, by_name)) - set(free))
    if unknown:
        raise TuneError(f"task {name}: sizes= names {', '.join(unknown)}, which no tensor's shape uses "
                        f"(its symbolic sizes: {', '.join(free) or 'none'})")
    out = {}
    for v in free:
        value = by_name.get(v, REPRESENTATIVE_SIZE)
        if type(value) is not int or value < 1:
            raise TuneError(f"task {name}: sizes={{{v!r}: {value!r}}}: a size to measure at is a positive int")
        out[v] = value
    return out


def _check_arguments(name: str, func: Callable, call: tuple, args: tuple) -> None:
    """A template given the wrong number of arguments is the caller's mistake, said as such
    (not a TypeError from inside the template's call)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return  # a builtin without a signature: let the call say
    try:
        sig.bind(*call)
    except TypeError as e:
        raise TuneError(f"template {name} cannot take the arguments {args!r} ({e}); pass args= with one value "
                        f"per parameter of {getattr(func, '__name__', name)}{sig} (a first parameter named cfg "
                        "gets the config)") from None


def task_digest(task: Task) -> str:
    """A short digest of workload and target, for file names and messages."""
    return hashlib.sha256(f"{task.workload}|{task.target_key}".encode()).hexdigest()[:12]

"""``import tvm`` as tessel, for one process: what ``tessel tvm SCRIPT.py`` installs.

:func:`tvm_imports` puts a finder first on ``sys.meta_path`` that answers ``tvm`` and every
``tvm.X`` with the module ``tessel.tvm.X`` itself (one module object under both names, so
classes and state are shared), and answers a ``tvm.X`` that tessel does not have with
:class:`~tessel.errors.NotOfferedModuleError` (raised by ``tessel.tvm``'s own finder of
missing modules). On leaving, the finder and the ``tvm`` entries
it made are removed and any real TVM modules that were loaded before are put back. Nothing is
installed by importing tessel: a plain ``import tvm`` elsewhere finds a real TVM install, or
nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Iterator


def _ours(fullname: str) -> bool:
    return fullname == "tvm" or fullname.startswith("tvm.")


class _Alias(importlib.abc.Loader):
    """Hands the import system a module that already exists (tessel's), and runs nothing."""

    def __init__(self, module) -> None:
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        return None


class TvmFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path=None, target=None):
        if not _ours(fullname):
            return None
        # a tvm.X tessel lacks raises NotOfferedModuleError here (tessel.tvm._names.MissingModules)
        module = importlib.import_module("tessel." + fullname)
        return importlib.util.spec_from_loader(fullname, _Alias(module))


@contextlib.contextmanager
def tvm_imports() -> Iterator[None]:
    """While inside, ``import tvm`` (and ``from tvm import te`` ...) gives tessel's TVM spellings."""
    saved = {k: m for k, m in sys.modules.items() if _ours(k)}
    for k in saved:
        del sys.modules[k]
    finder = TvmFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if _ours(k)]:
            del sys.modules[k]
        sys.modules.update(saved)

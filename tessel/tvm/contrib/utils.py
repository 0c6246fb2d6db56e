"""``tvm.contrib.utils.tempdir()``: a temporary directory removed when it is collected."""

from __future__ import annotations

import os
import shutil
import tempfile

from .._names import missing_names


class TempDirectory:
    def __init__(self, custom_path: str | None = None, keep_for_debug: bool = False):
        if custom_path:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = custom_path
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="tessel-tvm-")
        self._keep = keep_for_debug or bool(custom_path)

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        return sorted(os.listdir(self.temp_dir))

    def remove(self) -> None:
        if not self._keep:
            shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __del__(self) -> None:
        self.remove()


def tempdir(custom_path: str | None = None, keep_for_debug: bool = False) -> TempDirectory:
    return TempDirectory(custom_path, keep_for_debug)


__getattr__ = missing_names(__name__)

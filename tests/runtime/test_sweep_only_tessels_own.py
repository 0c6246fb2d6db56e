"""Issue 30, item 1: the leftover sweep removes only what tessel named, never a user's file or
a folder tree, even when ``$TESSEL_CACHE_DIR`` is a project folder (or ``$HOME``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tessel.runtime import files


def _age(path: Path) -> None:
    old = time.time() - files.STALE_AGE_S - 3600
    os.utime(path, (old, old))


def _users_files(root: Path) -> list[Path]:
    made = [root / "notes.tmp", root / "draft.tmp" / "chapter1.txt", root / "tmp" / "tessel-thesis" / "ch1.tex",
            root / "kernels" / "notes.tmp", root / "lowered" / "plan.tmp", root / "tmp" / "tessel-cc-mine" / "a.c",
            root / ".notes.0123abcd-1.abcdefgh.bak.tmp" / "x"]  # a folder shaped almost like tessel's
    for p in made:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("the user's own")
    for p in [*made, *(p.parent for p in made)]:
        _age(p)
    return made


def test_the_sweep_leaves_every_file_it_did_not_name(fresh_cache):
    made = _users_files(fresh_cache)
    tag = files.owner_tag().replace(str(os.getpid()), "1")  # pid 1 lives: age alone decides
    ours = [fresh_cache / "kernels" / f".0123{tag}ab_c9xyz.so.tmp", fresh_cache / f".compilers{tag}k2j4h5g6.tmp"]
    scratch = fresh_cache / "tmp" / f"tessel-cc-{tag}q1w2e3r4"
    scratch.mkdir(parents=True)
    (scratch / "kernel.c").write_text("int x;")
    ours.append(scratch / "kernel.c")
    for p in ours[:2]:
        p.write_bytes(b"x")
    for p in [*ours, scratch]:
        _age(p)
    assert files.sweep_leftovers() == 3
    assert all(p.read_text() == "the user's own" for p in made)
    assert not any(p.exists() for p in ours) and not scratch.exists()


def test_a_scratch_folder_holding_a_folder_is_not_removed_as_a_tree(fresh_cache):
    tag = files.owner_tag().replace(str(os.getpid()), "1")
    scratch = fresh_cache / "tmp" / f"tessel-cc-{tag}q1w2e3r4"
    (scratch / "sub").mkdir(parents=True)
    (scratch / "sub" / "keep.txt").write_text("kept")
    _age(scratch)
    files.sweep_leftovers()
    assert (scratch / "sub" / "keep.txt").read_text() == "kept"

"""The documents stay true to the tree: every relative link (and its #anchor) resolves."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([REPO / "README.md", REPO / "SECURITY.md", *(REPO / "docs").glob("*.md"),
                    *(REPO / "benchmarks" / "results").glob("*.md")])
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(md: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces
    as hyphens), outside code blocks."""
    out, fenced = set(), False
    for line in md.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def broken_links(md: Path) -> list[str]:
    bad, where = [], md.relative_to(REPO) if md.is_relative_to(REPO) else md.name
    for target in _LINK.findall(md.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        dest = (md.parent / path).resolve() if path else md
        if not dest.exists():
            bad.append(f"{where}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{where}: {target} (no such heading)")
    return bad


def test_every_relative_link_resolves():
    assert len(DOCUMENTS) > 10
    bad = [b for md in DOCUMENTS for b in broken_links(md)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_the_link_check_sees_a_broken_link(tmp_path):
    (tmp_path / "b.md").write_text("# Tuning (`tessel.tune`)\n")
    md = tmp_path / "a.md"
    md.write_text("[ok](b.md#tuning-tesseltune) [gone](c.md) [bad](b.md#tuning) [web](https://x.org/a)\n")
    assert [b.split(": ")[1] for b in broken_links(md)] == ["c.md (no such file)", "b.md#tuning (no such heading)"]

"""Names are data: the one place where a user's string becomes part of generated text.

Tensors, stages, variables, thread tags and kernels carry names the user chose, and any
string is allowed (control characters, unpaired surrogates, ``*/``, a trailing backslash,
``linux``, a million characters). Two functions turn such a string into text, and every
generator goes through them instead of writing the name itself:

- :func:`identifier` spells it as an identifier of a generated language (C, Python, DOT):
  ASCII letters, digits and ``_`` only, so nothing in it can start a comment, a string, a
  preprocessor line or a new statement, whatever the characters were. The names the
  generated program itself relies on are kept apart by the caller's ``reserved`` set
  (``tessel.codegen.common.NameTable`` also makes them unique).
- :func:`shown` renders it for a person, in a comment, a picture or printed IR: printable
  characters stay as they are, everything else (line breaks, control and format characters
  such as bidirectional overrides, surrogates) becomes a visible ``\\x..``/``\\u....``
  escape, so the text is always one line that cannot end a comment, continue a line (no
  trailing backslash), form a trigraph (``??``) or close a block comment (``*/``), and is
  made only of characters XML allows. Its length is capped.

:func:`html_text`, :func:`xml_attr` and :func:`dot_string` add the one syntax escape of their
language on top of :func:`shown`; they are what the views and the explorer write.
"""

from __future__ import annotations

import keyword
import re

MAX_IDENTIFIER = 48  # longer identifiers are cut (the NameTable keeps them unique)
MAX_SHOWN = 200      # longer names shown in comments and pictures end in "..."

# C11/C23 keywords and the GNU extensions spelled without underscores (gcc -std=gnu11)
C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while bool true false nullptr alignas alignof constexpr static_assert thread_local
typeof typeof_unqual asm
""".split())
PYTHON_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
DOT_KEYWORDS = frozenset({"node", "edge", "graph", "digraph", "subgraph", "strict"})
_KEYWORDS = {"c": C_KEYWORDS, "python": PYTHON_KEYWORDS, "dot": DOT_KEYWORDS}

_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")
_TRAILING_BACKSLASH = re.compile(r"\\(?= *$)")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def as_text(name: object) -> str:
    """The string a name stands for (a name that is not a string is shown as its ``str``)."""
    return name if isinstance(name, str) else str(name)


def identifier(name: object, lang: str = "c", reserved: frozenset[str] | set[str] = frozenset(),
               reserved_prefixes: tuple[str, ...] = ()) -> str:
    """``name`` as a valid identifier of ``lang`` ("c", "python" or "dot").

    Runs of characters outside ``[A-Za-z0-9_]`` become one ``_`` (``i.outer`` -> ``i_outer``);
    leading underscores move to the end (C reserves ``_X`` and ``__x``; Python gives ``__x``
    a meaning in classes); a leading digit gets ``v_``; a keyword of the language, a name in
    ``reserved`` or one starting with a reserved prefix (compared without case) gets a
    trailing ``_``. The result is at most :data:`MAX_IDENTIFIER` characters (plus that ``_``).
    """
    if lang not in _KEYWORDS:
        raise ValueError(f"no identifier rules for language {lang!r}; known: {', '.join(sorted(_KEYWORDS))}")
    base = _UNSAFE.sub("_", as_text(name))
    if base.startswith("_"):
        base = base.lstrip("_") + "_"
    base = base[:MAX_IDENTIFIER]
    if not base or base == "_":
        base = "v"
    elif base[0].isdigit():
        base = ("v_" + base)[:MAX_IDENTIFIER]
    # DOT's keywords are case-insensitive; C's and Python's are not
    word = base.lower() if lang == "dot" else base
    if word in _KEYWORDS[lang] or base in reserved or base.lower().startswith(reserved_prefixes):
        base += "_"
    return base


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(name: object, limit: int | None = MAX_SHOWN, ascii_only: bool = False) -> str:
    """``name`` as one printable line that is safe inside any comment or label (see the module
    docstring): at most ``limit`` characters (the last three ``...`` when cut; ``None``: all).

    A backslash stays a backslash (``a\\b`` reads as typed) except at the end, where C would
    splice the next line onto a ``//`` comment (gcc does so even with spaces in between).
    ``shown(shown(x)) == shown(x)``, so text may pass through it twice without changing.
    ``ascii_only`` escapes every non-ASCII character too.
    """
    out: list[str] = []
    size = 0
    for ch in as_text(name):
        if not ch.isprintable() or (ascii_only and ch > "~"):
            piece = _escape(ch)
        elif out and out[-1][-1] + ch in ("??", "*/"):
            piece = _escape(ch)  # no trigraph (??/ is a backslash in C), no end of a /* comment
        else:
            piece = ch
        if limit is not None and size + len(piece) > limit:
            while out and size + 3 > limit:
                size -= len(out.pop())
            out.append("...")
            break
        out.append(piece)
        size += len(piece)
    return _TRAILING_BACKSLASH.sub(r"\\x5c", "".join(out))


def comment(name: object, limit: int | None = MAX_SHOWN) -> str:
    """``name`` inside a comment of generated C or Python: :func:`shown`, in ASCII, so the
    source reads the same whatever encoding a file system, a locale or a compiler assumes."""
    return shown(name, limit, ascii_only=True)


def html_text(name: object, limit: int | None = MAX_SHOWN) -> str:
    """``name`` for HTML or XML text content (and double-quoted attributes): valid XML 1.0
    characters only, with ``& < > " '`` as entities."""
    return (shown(name, limit).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


xml_attr = html_text  # the same escaping serves quoted attribute values


def dot_string(text: object, limit: int | None = MAX_SHOWN) -> str:
    """``text`` as a double-quoted DOT string; a list or tuple of strings is a label of several
    lines (DOT's ``\\n`` between them), each shown on its own."""
    parts = list(text) if isinstance(text, list | tuple) else [text]
    body = "\\n".join(shown(p, limit).replace("\\", "\\\\").replace('"', '\\"') for p in parts)
    return f'"{body}"'


def python_string(name: object) -> str:
    """``name`` as a Python string literal of exactly its characters, in ASCII. Not ``repr``:
    a ``str`` subclass (or a name that is not a string) may define its own ``__repr__``, and
    that text would become code; the literal is made from the plain characters alone."""
    return ascii(str.__str__(as_text(name)))


def c_bytes_literal(data: bytes, width: int = 96) -> str:
    """``data`` (any bytes) as C string literals, adjacent ones on lines of about ``width``
    characters: printable ASCII but ``"``, ``\\`` and ``?`` as itself, every other byte as a
    three-digit octal escape (which, unlike ``\\x``, cannot swallow a following digit), so no
    byte can end the string, start a trigraph or a comment, or splice lines."""
    lines: list[str] = []
    cur: list[str] = []
    size = 0
    for b in data:
        piece = chr(b) if 0x20 <= b < 0x7F and b not in b'"\\?' else f"\\{b:03o}"
        cur.append(piece)
        size += len(piece)
        if size >= width:
            lines.append('"' + "".join(cur) + '"')
            cur, size = [], 0
    if cur or not lines:
        lines.append('"' + "".join(cur) + '"')
    return "\n".join(lines)

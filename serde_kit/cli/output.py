"""What every command prints through: aligned tables, escaped text, JSON, progress bars.

Text views show data taken from the database (thread ids, channel and type
names, tags), so every piece of it goes through :func:`escape`: a control
character is shown as ``\\x1b`` and never reaches the terminal, and a newline
inside a value cannot start a line of its own.  A lone surrogate (JSON can
hold ``"\\ud800"``, which no UTF-8 stream can write) is shown as ``\\ud800``
in text and as that same JSON escape in ``--json``; whatever else the output
stream cannot encode is backslash-escaped by :func:`emit`, so no stored value
can end a command in a ``UnicodeEncodeError``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import unicodedata
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

__all__ = ["emit", "encodable", "escape", "escape_text", "json_text", "plain", "progress_for", "table"]


def _escape_char(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _unsafe(c: str) -> bool:
    # Cs: lone surrogates, which no UTF-8 stream can encode.
    return unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")


def escape(value: Any) -> str:
    """``value`` as one line of printable text: control and format characters (newlines too) escaped."""
    text = "" if value is None else str(value)
    if text.isprintable():
        return text
    return "".join(_escape_char(c) if _unsafe(c) else c for c in text)


def escape_text(text: str) -> str:
    """Whole text output with control characters escaped; its own newlines are kept."""
    return "\n".join(escape(line) for line in text.split("\n"))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Aligned plain-text columns, every cell escaped; numbers right-aligned."""
    cells = [[escape(h) for h in headers]] + [[escape(c) for c in r] for r in rows]
    numeric = [
        bool(rows) and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)
        for i in range(len(headers))
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    out = []
    for row in cells:
        parts = [row[i].rjust(widths[i]) if numeric[i] else row[i].ljust(widths[i]) for i in range(len(headers))]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)


def plain(value: Any) -> Any:
    """``value`` as JSON-able data: the one way every report becomes ``--json``.

    A dataclass becomes its fields by name, where a field's ``metadata["json"]``
    renames it (``None`` leaves it out), plus the derived values its class lists
    in ``json_extra`` (JSON key -> property, or method called without arguments).
    Tuples become lists, sets sorted lists, bytes hex.

    (Not ``dataclasses.asdict``: it rebuilds a Counter from its items, which counts them.)
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            key = f.metadata.get("json", f.name)
            if key is not None:
                out[key] = plain(getattr(value, f.name))
        for key, attr in getattr(value, "json_extra", {}).items():
            derived = getattr(value, attr)
            out[key] = plain(derived() if callable(derived) else derived)
        return out
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return [plain(v) for v in sorted(value, key=str)]
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


def json_text(data: Any, *, ascii_only: bool = False) -> str:
    """``data`` (dataclasses included, via :func:`plain`) as indented JSON.

    json escapes C0 controls itself; C1 and format characters and lone
    surrogates are escaped here too (``\\u....``), so the text is valid JSON
    that any UTF-8 stream can write; ``ascii_only`` escapes everything else too.
    """
    text = json.dumps(plain(data), indent=2, sort_keys=True, ensure_ascii=ascii_only, default=str)
    if text.isprintable():
        return text
    return "".join(f"\\u{ord(c):04x}" if c != "\n" and _unsafe(c) else c for c in text)


def encodable(text: str, stream: Any) -> str:
    """``text`` with every character ``stream``'s encoding cannot write backslash-escaped."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text.encode("ascii", "backslashreplace").decode("ascii")
    return text


def emit(data: Any, text: Callable[[], str], *, as_json: bool, file: Any = None) -> None:
    """Print ``data`` as JSON, or ``text()`` escaped; a closed pipe (``| head``) ends quietly."""
    out = file or sys.stdout
    try:
        if as_json:
            body = json_text(data)
            if encodable(body, out) != body:  # a stream that is not UTF-8: JSON's own escapes
                body = json_text(data, ascii_only=True)
        else:
            body = encodable(escape_text(text()), out)
        out.write(body + "\n")
        out.flush()
    except BrokenPipeError:
        # The reader left; keep the interpreter's final flush from raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def progress_for(quiet: bool) -> Any:
    """A tqdm factory on stderr, or None when quiet, stderr is not a terminal or tqdm is missing.

    tqdm comes with the ``[cli]`` extra; without it the commands run the same, without a bar.
    """
    if quiet or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None

    return partial(tqdm, file=sys.stderr, unit="row", mininterval=0.5, leave=False)
